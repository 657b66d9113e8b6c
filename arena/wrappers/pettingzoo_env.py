"""A PettingZoo ``ParallelEnv``: one battle, every aircraft an agent (``p1_0`` … ``p2_{T-1}``).

Each agent observes its own aircraft (the standard keys against its nearest enemy, plus the
neighbour slots of team battles) as one float32 vector and acts with ``[rudder, throttle, fire]``. An
aircraft that is shot down (or leaves the arena) is terminated and leaves ``agents``; when the battle
ends every aircraft still flying is terminated (a side was destroyed) or truncated (time limit).
An action of another shape, or not real numbers, raises ``ValueError`` naming the agent, and so does
a live agent left out of the actions (flying it with a zero action would corrupt the caller's data
without a word); NaN values fly as 0 (no fire) and are counted in ``infos[agent]["nan_actions"]``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from pettingzoo import ParallelEnv

from arena.battles import ACTION_HIGH, ACTION_LOW, ACTION_SHAPE, OBS_HIGH, OBS_LOW, action_array
from arena.env import EnvConfig, TensorEnv, env_config_of, obs_vector
from arena.env.observations import obs_keys

SIDE_NAMES = ("p1", "p2")


class ArenaParallelEnv(ParallelEnv):
    """One battle of ``team_size`` aircraft a side, every aircraft a PettingZoo agent."""

    metadata = {"name": "arena_battle_v0", "render_modes": []}

    def __init__(self, team_size: int = 1, env_config: EnvConfig | None = None, device: str = "cpu",
                 seed: int = 0) -> None:
        from dataclasses import replace

        config = replace(env_config_of(env_config), team_size=team_size)
        self.env = TensorEnv(1, device=device, seed=seed, config=config)
        self.team_size = team_size
        self.keys = obs_keys(config)
        self.possible_agents = [f"{side}_{seat}" for side in SIDE_NAMES for seat in range(team_size)]
        self.agents: list[str] = []
        self._obs: dict[str, dict[str, torch.Tensor]] | None = None

    @functools.lru_cache(maxsize=None)  # noqa: B019 - PettingZoo's own idiom: spaces are fixed per agent
    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(OBS_LOW, OBS_HIGH, shape=(len(self.keys),), dtype=np.float32)

    @functools.lru_cache(maxsize=None)  # noqa: B019
    def action_space(self, agent: str) -> spaces.Box:
        return spaces.Box(ACTION_LOW, ACTION_HIGH, dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        self._obs = self.env.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return self._observations(self._obs), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, bool],
                                                     dict[str, bool], dict[str, dict[str, Any]]]:
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        missing = [name for name in self.agents if name not in actions]
        if missing:
            raise ValueError(f"actions: no action for live agent(s) {', '.join(map(repr, missing))}; expected one "
                             f"for every agent in env.agents ({', '.join(self.agents)})")
        t = self.team_size
        table = np.zeros((2, t, 3), dtype=np.float32)
        for name, action in actions.items():
            side, seat = self._where(name)
            checked = action_array(action, ACTION_SHAPE, f"action of agent {name!r}")
            table[side, seat] = checked.detach().cpu().numpy() if isinstance(checked, torch.Tensor) else checked
        nan_actions = np.isnan(table).sum(-1)  # [2, T]; fire becomes a bool below, hiding its NaN from the env
        moves = []
        for side in range(2):
            a = torch.as_tensor(table[side], device=self.env.device)
            shape = (1,) if t == 1 else (1, t)
            moves.append({"rudder": a[:, 0].reshape(shape), "throttle": a[:, 1].reshape(shape),
                          "fire": (a[:, 2] > 0).reshape(shape)})
        obs, rewards, dones, infos = self.env.step(moves[0], moves[1])
        final = infos["final_obs"]
        ended = bool(dones[0])
        alive = {side: final[side]["alive"].reshape(-1) for side in SIDE_NAMES}
        truncated = bool(infos["truncated"][0])
        observations = self._observations(final)
        out_obs, out_rew, out_term, out_trunc, out_info = {}, {}, {}, {}, {}
        for name in self.agents:
            side, seat = self._where(name)
            side_name = SIDE_NAMES[side]
            dead = float(alive[side_name][seat]) < 0.5
            out_obs[name] = observations[name]
            out_rew[name] = float(rewards[side_name].reshape(-1)[seat])
            out_term[name] = dead or (ended and not truncated)
            out_trunc[name] = ended and truncated and not dead
            out_info[name] = {"nan_actions": int(nan_actions[side, seat])}
        self.agents = [a for a in self.agents if not (out_term[a] or out_trunc[a])]
        self._obs = obs
        return out_obs, out_rew, out_term, out_trunc, out_info

    def _where(self, name: str) -> tuple[int, int]:
        if name not in self.possible_agents:
            raise KeyError(f"unknown agent {name!r}; expected one of {self.possible_agents}")
        side, seat = name.split("_")
        return SIDE_NAMES.index(side), int(seat)

    def _observations(self, obs: dict[str, dict[str, torch.Tensor]]) -> dict[str, np.ndarray]:
        out = {}
        for side in SIDE_NAMES:
            rows = obs_vector({k: v.reshape(-1) for k, v in obs[side].items()}, self.keys).cpu().numpy()
            for seat in range(self.team_size):
                name = f"{side}_{seat}"
                if name in self.agents:
                    out[name] = rows[seat].astype(np.float32)
        return out
