"""A run's state beyond the weights, and reading it back from a checkpoint for an exact resume.

:func:`read_state` is handed a learner, whose parts hold state (the agent, the update, the env, the
random generators, the opponents, the recurrent state, the teacher), and puts each part of a
checkpoint back into its part, after checking it against what the part holds now; a damaged part
raises ``ValueError`` naming its key, so a bad file is refused at start-up rather than crashing later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

import torch

from arena.guard import head
from arena.match import AgentFailure
from arena.training import BestRecord
from arena.training.state_checks import check_like, check_optimizer_state


class StatefulParts(Protocol):
    """The parts of a learner that a checkpoint restores (:class:`~arena_ppo.runners.learner.Learner`)."""

    agent: Any
    algorithm: Any
    env: Any  # the league env; its battles (``env.env``) hold the state
    generators: dict[str, torch.Generator]
    opponents: Any
    teacher: Any

    @property
    def device(self) -> torch.device: ...


@dataclass
class Counters:
    env_steps: int = 0
    updates: int = 0
    episodes: int = 0
    last_save: int = 0  # env_steps at the last checkpoint
    last_log: int = 0
    last_eval: int = 0
    elapsed: float = 0.0  # training wall time before this process (resumed runs)


@dataclass
class Restored:
    """What :func:`read_state` read that the runner keeps itself."""

    counters: Counters
    metrics: dict[str, float]
    obs: dict[str, Any]
    hidden: dict[str, torch.Tensor] = field(default_factory=dict)
    best: BestRecord | None = None


def rng_state(generators: dict[str, torch.Generator], device: torch.device) -> dict[str, Any]:
    """The global and named random streams (the CUDA one on a GPU)."""
    rng: dict[str, Any] = {"torch": torch.get_rng_state(), **{k: g.get_state() for k, g in generators.items()}}
    if device.type == "cuda":
        rng["cuda"] = torch.cuda.get_rng_state(device)
    return rng


def read_state(data: dict[str, Any], learner: StatefulParts) -> Restored:
    """Load a checkpoint written by the runner's ``save`` into ``learner``'s parts; ``ValueError`` naming the part."""
    agent, algorithm, env, generators = learner.agent, learner.algorithm, learner.env.env, learner.generators
    opponents, hidden, teacher, device = learner.opponents, learner.algorithm.hidden, learner.teacher, learner.device
    stage = ""  # the weights' own messages name their key (model.…, obs_normalizer)
    try:
        agent.load_weights(data)
        stage = "algorithm"
        saved = expect_dict(data, "algorithm")
        check_optimizer_state(saved.get("optimizer"), algorithm.optimizer, "algorithm.optimizer")
        lr = saved.get("learning_rate")
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr < 0:
            raise ValueError(f"algorithm.learning_rate: expected a finite number >= 0, got {lr!r}")
        algorithm.load_state_dict(saved)
        stage = "counters"
        counters = counters_from(expect_dict(data, "counters"))
        stage = "metrics"
        metrics = data.get("metrics", {})
        if not isinstance(metrics, dict):
            raise ValueError(f"metrics: expected a dict, got {type(metrics).__name__}")
        stage = "rng"
        rng = expect_dict(data, "rng")
        check_like(rng, rng_state(generators, device), "rng", extra_ok=("cuda",))
        torch.set_rng_state(rng["torch"])
        for name, generator in generators.items():
            generator.set_state(rng[name])
        if "cuda" in rng and device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"], device)
        stage = "env"
        saved_env = expect_dict(data, "env")
        saved_envs = saved_env.get("num_envs")
        if isinstance(saved_envs, int) and not isinstance(saved_envs, bool) and saved_envs != env.num_envs:
            raise ValueError(f"the checkpoint ran {saved_envs} envs; --num-envs is {env.num_envs}")
        check_like(saved_env, env.state_dict(), "env")
        obs = env.load_state_dict(saved_env)
        stage = "opponents"
        opponents.load_state_dict(data.get("opponents"))
        restored_hidden: dict[str, torch.Tensor] = {}
        if hidden:
            stage = "hidden"
            saved_hidden = expect_dict(data, "hidden")
            check_like(saved_hidden, hidden, "hidden")
            restored_hidden = {k: saved_hidden[k].to(device) for k in hidden}
        if teacher is not None:
            stage = "teacher"
            teacher.load_state_dict(data.get("teacher"))
        stage = "best"
        best = BestRecord.from_dict(data["best"]) if data.get("best") is not None else None
    except AgentFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage to any part: one line naming the part
        text = head(str(exc)) or type(exc).__name__
        if stage and not text.startswith(stage) and not text.startswith(("the checkpoint", "the run")):
            text = f"{stage}: {text}"
        raise ValueError(text) from exc
    return Restored(counters, {str(k): float(v) for k, v in metrics.items()}, obs, restored_hidden, best)


def expect_dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"{key}: expected a dict, got {type(value).__name__}")
    return value


def counters_from(data: dict[str, Any]) -> Counters:
    """Counters from a checkpoint: every field present, integers >= 0 (``elapsed`` a finite float)."""
    names = [f.name for f in fields(Counters)]
    unknown = sorted(str(k) for k in data if k not in names)
    if unknown:
        raise ValueError(f"counters: unknown key(s) {unknown}; expected {names}")
    values: dict[str, Any] = {}
    for name in names:
        value = data.get(name)
        if name == "elapsed":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62
        if not ok:
            kind = "a finite number >= 0" if name == "elapsed" else "an int >= 0"
            raise ValueError(f"counters.{name}: expected {kind}, got {value!r}"[:200])
        values[name] = value
    counters = Counters(**values)
    if max(counters.last_save, counters.last_log, counters.last_eval) > counters.env_steps:
        raise ValueError(f"counters: last_save/last_log/last_eval exceed env_steps {counters.env_steps}")
    return counters
