"""Statistics of the episodes that end in a rollout: what a trainer's metrics and console report."""

from __future__ import annotations

from typing import Any

import torch

from arena.env.teams import side_total

NAMES = ("done", "ret", "len", "win", "draw", "loss", "missiles")


class EpisodeTally:
    """Per-env sums over one rollout of p1's finished episodes: count, return (per aircraft), length,
    missiles, and wins, draws and losses (which the opponent pool also credits)."""

    def __init__(self, num_envs: int, seats: int, device: torch.device) -> None:
        self.seats = seats
        self.sums = {k: torch.zeros(num_envs, device=device) for k in NAMES}

    def add(self, dones: torch.Tensor, infos: dict[str, Any]) -> None:
        done, winner, episode = dones.float(), infos["winner"], infos["episode"]
        self.sums["done"] += done
        self.sums["ret"] += side_total(episode["return"]["p1"]) / self.seats * done
        self.sums["len"] += episode["length"] * done
        self.sums["missiles"] += side_total(episode["missiles_fired"]["p1"]) * done
        self.sums["win"] += (winner == 1).float()
        self.sums["loss"] += (winner == 2).float()
        self.sums["draw"] += (dones & (winner == 0)).float()

    def summary(self, sync: Any = None) -> dict[str, float]:
        """Means over the episodes that ended (of every process, with a run's
        :class:`~arena_ppo.process_sync.ProcessSync`); NaN when none did."""
        summed = torch.stack(list(self.sums.values())).sum(-1)
        if sync is not None:
            sync.sum_(summed)
        totals = dict(zip(NAMES, summed.tolist()))
        episodes = totals["done"]
        per = (lambda key: totals[key] / episodes) if episodes else (lambda key: float("nan"))
        return {"episode_return": per("ret"), "episode_length": per("len"), "win_rate": per("win"),
                "draw_rate": per("draw"), "missiles_fired": per("missiles"), "episodes": float(episodes)}
