"""Deterministic evaluation of a learner against one opponent: wins, draws and losses.

A thin layer over :func:`arena.match.play_match` (the learner flies p1 in half the envs and p2 in
the other half; each env's first episode counts) that returns only what a trainer logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig


@dataclass(frozen=True)
class EvalResult:
    games: int
    wins: int
    draws: int
    losses: int

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    @property
    def score(self) -> float:
        """Wins plus half the draws, per game (what a rating counts)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0

    def as_row(self, label: str) -> dict[str, float]:
        """``eval_<label>_win/_draw/_loss`` fractions for eval.csv."""
        games = max(self.games, 1)
        return {f"eval_{label}_win": self.wins / games, f"eval_{label}_draw": self.draws / games,
                f"eval_{label}_loss": self.losses / games}


def evaluate(agent: Any, opponent: Any, games: int, *, env_config: "EnvConfig | None" = None,
             device: "str | torch.device" = "cpu", seed: int = 0) -> EvalResult:
    """Play ``games`` battles with both agents in eval mode (deterministic where they support it)."""
    from arena.match import play_match

    result = play_match(agent, opponent, games, env_config=env_config, device=device, seed=seed)
    return EvalResult(int(result.games), int(result.wins), int(result.draws), int(result.losses))
