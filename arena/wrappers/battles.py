"""The learner's side of a batch of battles: TensorEnv plus an opponent flying p2 through the game loop.

Shared by the Gymnasium wrappers: actions come in as one ``[n, 3]`` array (rudder, throttle, fire > 0)
and observations go out as one ``[n, K]`` float32 array in the canonical key order, as any RL library
expects; the opponent is any agent spec ``arena play`` accepts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arena.env import EnvConfig, TensorEnv, obs_vector
from arena.env.observations import obs_keys
from arena.loop import Controller, GameLoop, Seating, observation_config

OBS_LOW, OBS_HIGH = -1.0, 2.0  # every standard and extended feature lies in this range (docs/env.md)
ACTION_LOW = np.array([-1.0, 0.0, -1.0], dtype=np.float32)  # rudder, throttle, fire (fires above 0)
ACTION_HIGH = np.array([1.0, 1.0, 1.0], dtype=np.float32)


class LearnerBattles:
    """``num_envs`` duels: the caller flies p1, ``opponent`` (an agent spec or object) flies p2."""

    def __init__(self, num_envs: int, opponent: Any = "crank", env_config: EnvConfig | None = None,
                 device: str | torch.device = "cpu", seed: int = 0) -> None:
        from arena.agents import build_agent

        config = env_config or EnvConfig()
        if config.team_size != 1:
            raise ValueError("the Gymnasium wrappers fly one aircraft a side; use the PettingZoo env for teams")
        self.opponent = build_agent(opponent, device, config) if isinstance(opponent, str) else opponent
        self.opponent.eval()
        self.keys = obs_keys(config)  # what the learner sees; the env may carry more for the opponent
        self.env = TensorEnv(num_envs, device=device, seed=seed, config=observation_config(config, [self.opponent]))
        self.num_envs, self.device = num_envs, self.env.device
        owner = torch.stack((torch.full((num_envs,), -1), torch.zeros(num_envs, dtype=torch.long)))
        self.controller = Controller(self.opponent, str(opponent) if isinstance(opponent, str) else "opponent",
                                     "opponent", rng_seed=seed)
        self.loop = GameLoop(self.env, Seating([self.controller], owner, 1, self.device))
        self.obs: dict[str, dict[str, torch.Tensor]] | None = None

    def reset(self, seed: int | None = None) -> torch.Tensor:
        if seed is not None:  # the opponent's own random stream restarts too: a seed fixes the battles
            self.controller.rng_seed, self.controller.rng_state = seed, None
        self.obs = self.env.reset(seed=seed)
        self.loop.reset_agents()
        return self.vector(self.obs["p1"])

    def step(self, actions: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(next obs, reward, terminated, truncated, final obs) for p1; finished battles restart at once."""
        if self.obs is None:
            raise RuntimeError("call reset() before step()")
        a = torch.as_tensor(np.asarray(actions) if not isinstance(actions, torch.Tensor) else actions,
                            dtype=torch.float32, device=self.device).reshape(self.num_envs, 3)
        given = {"p1": {"rudder": a[:, 0], "throttle": a[:, 1], "fire": a[:, 2] > 0}}
        with torch.no_grad():
            turn = self.loop.step(self.obs, given=given)
        self.obs = turn.next_obs
        infos = turn.infos
        return (self.vector(turn.next_obs["p1"]), turn.rewards["p1"], infos["terminated"], infos["truncated"],
                self.vector(infos["final_obs"]["p1"]))

    def vector(self, observation: dict[str, torch.Tensor]) -> torch.Tensor:
        return obs_vector(observation, self.keys)
