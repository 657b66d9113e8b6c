"""Who a run trains against, as the command line says it: ``--vs`` specs and how envs are split among them.

``--vs`` specs read ``NAME[=WEIGHT]``: an agent name (``crank``), a frozen checkpoint
(``ckpt:runs/a/ckpt_000500000.pt``), ``self`` — this run's own past checkpoints, drawn by
prioritized fictitious self-play (:mod:`arena.training.pfsp`) — or ``league``: PFSP over the ladder of
scripted opponents (every agent that declares a ``ladder_rung``, the placeholder included), the
training partners (``league_partner``) and the run's own past checkpoints together. The batch of envs
is cut into contiguous slices, one per opponent, sized by weight (:func:`split_envs`), so every
opponent acts once per step on its whole slice (:mod:`arena.training.opponents`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

OpponentKind = Literal["agent", "checkpoint", "self", "league"]
SELF = "self"
LEAGUE = "league"
DRAWN = ("self", "league")  # kinds whose envs are shared among opponents re-drawn each rollout
CKPT_PREFIX = "ckpt:"


class OpponentSpecError(ValueError):
    """A ``--vs`` value that cannot be understood."""


@dataclass(frozen=True)
class OpponentSpec:
    """One parsed ``--vs`` entry."""

    kind: OpponentKind
    target: str  # agent name, checkpoint path, or "self"
    weight: float = 1.0

    @property
    def label(self) -> str:
        """Short name for logs and metric columns."""
        if self.kind == "checkpoint":
            return f"ckpt:{Path(self.target).stem}"
        return self.target

    def __str__(self) -> str:
        head = CKPT_PREFIX + self.target if self.kind == "checkpoint" else self.target
        return head if self.weight == 1.0 else f"{head}={self.weight:g}"


def parse_opponent_spec(text: str) -> OpponentSpec:
    """Parse ``NAME[=WEIGHT]``; the weight is a positive finite number (default 1)."""
    raw = text.strip()
    if not raw:
        raise OpponentSpecError("empty --vs value; expected NAME[=WEIGHT], "
                                "e.g. crank, placeholder=0.2, ckpt:PATH, self")
    name, weight = raw, 1.0
    if "=" in raw:
        name, _, wtext = raw.rpartition("=")
        try:
            weight = float(wtext)
        except ValueError:
            raise OpponentSpecError(f"--vs {text!r}: weight {wtext!r} is not a number; "
                                    "expected NAME[=WEIGHT]") from None
        if not math.isfinite(weight) or weight <= 0:
            raise OpponentSpecError(f"--vs {text!r}: weight must be a positive number, got {wtext}")
        name = name.strip()
    if not name:
        raise OpponentSpecError(f"--vs {text!r}: missing opponent name before '='")
    if name.startswith(CKPT_PREFIX):
        path = name[len(CKPT_PREFIX):]
        if not path:
            raise OpponentSpecError(f"--vs {text!r}: ckpt: needs a path, e.g. ckpt:runs/a/ckpt_000500000.pt")
        return OpponentSpec("checkpoint", path, weight)
    if name == SELF:
        return OpponentSpec("self", SELF, weight)
    if name == LEAGUE:
        return OpponentSpec("league", LEAGUE, weight)
    if any(ch in name for ch in "/\\") or name.endswith(".pt"):
        raise OpponentSpecError(f"--vs {text!r}: looks like a path; write ckpt:{name} for a checkpoint opponent")
    return OpponentSpec("agent", name, weight)


def parse_opponent_specs(texts: Iterable[str]) -> list[OpponentSpec]:
    """Parse every ``--vs`` value; the same opponent twice is refused (give it a weight instead)."""
    specs = [parse_opponent_spec(t) for t in texts]
    if not specs:
        raise OpponentSpecError("no opponent: give at least one --vs")
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        key = (spec.kind, spec.target)
        if key in seen:
            raise OpponentSpecError(f"--vs {spec.label} given twice; use one entry with a weight (NAME=WEIGHT)")
        seen.add(key)
    if {s.kind for s in specs} >= {"self", "league"}:
        raise OpponentSpecError("--vs league already plays the run's own past checkpoints; drop --vs self")
    check_weight_sum(specs, sum(s.weight for s in specs))
    return specs


def check_weight_sum(specs: Sequence[OpponentSpec], total: float, floor: str = "") -> None:
    """Refuse weights whose sum (``total``, with ``floor``'s share where one is added) is past the largest
    float: the envs are split by each weight's share of it, which would be NaN."""
    if math.isfinite(total):
        return
    top = max(s.weight for s in specs)
    alike = " and ".join(f"{str(replace(s, weight=1.0))}={s.weight / top:.3g}" for s in specs)
    raise OpponentSpecError(f"--vs {' --vs '.join(map(str, specs))}: the weights{floor} add up to more than the "
                            f"largest number ({sys.float_info.max:.3g}); only their ratios count, so give "
                            f"smaller ones ({alike} split the envs alike)")


def league_agents(registry: Any = None) -> list[str]:
    """The ladder: every registered agent that declares a ``ladder_rung`` (an int), weakest first."""
    from arena.agents import agent_registry

    registry = registry if registry is not None else agent_registry()
    rungs = []
    for name in registry.names():
        rung = getattr(registry.get(name), "ladder_rung", None)
        if isinstance(rung, int) and not isinstance(rung, bool):
            rungs.append((rung, name))
    return [name for _, name in sorted(rungs)]


def league_partners(registry: Any = None) -> list[str]:
    """Training partners: agents that declare ``league_partner = True`` without being a rung. ``--vs
    league`` draws them with the ladder (so a learner meets, early and often, a situation a rung shows
    only late), but they are not rated as rungs or scored at evaluation."""
    from arena.agents import agent_registry

    registry = registry if registry is not None else agent_registry()
    ladder = set(league_agents(registry))
    return sorted(name for name in registry.names()
                  if getattr(registry.get(name), "league_partner", False) is True and name not in ladder)


FLOOR_AGENT = "placeholder"  # the league's floor: what anything that learns must beat


def with_floor(specs: list[OpponentSpec], share: float, num_envs: int,
               agent: str = FLOOR_AGENT) -> list[OpponentSpec]:
    """``specs`` plus the floor ``agent`` weighted to get ``share`` of the envs.

    Opponents that always attack never show a learner an enemy it has to find; a floor share keeps
    that situation in every run. Nothing is added when ``agent`` is already an opponent, or when
    there are too few envs to give it one of its own.
    """
    if not 0.0 <= share < 1.0:
        raise OpponentSpecError(f"floor: expected a share in [0, 1), got {share!r}")
    listed = any(s.kind == "agent" and s.target == agent for s in specs)
    if share == 0.0 or listed or num_envs <= len(specs):
        return specs
    total = sum(s.weight for s in specs)
    weight = total * share / (1.0 - share)
    check_weight_sum(specs, total + weight, f" and the floor's ({agent} on {share:g} of the envs)")
    return [*specs, OpponentSpec("agent", agent, weight)]


def split_envs(weights: Sequence[float], num_envs: int) -> list[int]:
    """Env counts proportional to ``weights`` (largest remainder), each at least 1, summing to ``num_envs``."""
    if not weights:
        raise ValueError("no weights to split envs by")
    if num_envs < len(weights):
        raise OpponentSpecError(f"{len(weights)} opponents need at least {len(weights)} envs, "
                                f"got --num-envs {num_envs}")
    total = float(sum(weights))
    if not (math.isfinite(total) and total > 0 and all(math.isfinite(w) and w > 0 for w in weights)):
        raise ValueError(f"weights: expected positive finite numbers with a finite sum, got "
                         f"{', '.join(f'{w:g}' for w in weights[:8])}{' ...' if len(weights) > 8 else ''}")
    spare = num_envs - len(weights)  # everyone gets one env first
    # A weight near the largest float times the spare envs would overflow: its share first, there alone.
    exact = [spare * w / total if math.isfinite(spare * w) else spare * (w / total) for w in weights]
    counts = [int(math.floor(x)) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: spare - sum(counts)]:
        counts[i] += 1
    return [c + 1 for c in counts]
