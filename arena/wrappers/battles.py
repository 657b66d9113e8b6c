"""The learner's side of a batch of battles: TensorEnv plus an opponent flying p2 through the game loop.

Shared by the Gymnasium wrappers: actions come in as one ``[n, 3]`` array (rudder, throttle, fire > 0)
and observations go out as one ``[n, K]`` float32 array in the canonical key order, as any RL library
expects; the opponent is any agent spec ``arena play`` accepts.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from arena.env import EnvConfig, TensorEnv, obs_vector
from arena.env.observations import obs_keys
from arena.loop import Controller, GameLoop, Seating, observation_config

OBS_LOW, OBS_HIGH = -1.0, 2.0  # every standard and extended feature lies in this range (docs/env.md)
ACTION_LOW = np.array([-1.0, 0.0, -1.0], dtype=np.float32)  # rudder, throttle, fire (fires above 0)
ACTION_HIGH = np.array([1.0, 1.0, 1.0], dtype=np.float32)
ACTION_SHAPE = (3,)  # one aircraft's action
NUMERIC_KINDS = "biuf"  # numpy dtype kinds that are real numbers: bool, signed, unsigned, float
WANTED = "an array of real numbers (bool, int or float)"


def action_array(action: Any, shape: tuple[int, ...], who: str) -> np.ndarray | torch.Tensor:
    """``action`` as a numpy array (a torch tensor stays one) of exactly ``shape``, else a ValueError.

    Nothing is reshaped: a flat ``[12]`` or a ``[2, 6]`` read as ``[4, 3]`` would hand one battle's
    values to another without a word. Only real numbers pass; a string or a complex value is a
    mistake, not an action. The message names ``who`` (the method, or the PettingZoo agent), the shape
    expected and what came, as the core env's action check does. An array or tensor of the right shape
    passes as it is: only its shape and dtype are read (no copy, no sync with a GPU).
    """
    if isinstance(action, torch.Tensor):
        if not action.dtype.is_complex and tuple(action.shape) == shape:
            return action
        raise ValueError(f"{who}: expected {WANTED} of shape {shape}, "
                         f"got Tensor of dtype {action.dtype} and shape {tuple(action.shape)}")
    try:
        array = np.asarray(action)
    except (TypeError, ValueError) as exc:  # ragged nested lists, objects numpy cannot read
        raise ValueError(f"{who}: expected {WANTED} of shape {shape}, "
                         f"got {type(action).__name__} that numpy cannot read as an array ({exc})") from exc
    if array.dtype.kind in NUMERIC_KINDS and array.shape == shape:
        return array
    if array.ndim == 0:
        got = f"{type(action).__name__} {action!r:.40}"
    else:
        got = f"{type(action).__name__} of dtype {array.dtype} and shape {array.shape}"
    raise ValueError(f"{who}: expected {WANTED} of shape {shape}, got {got}")


class LearnerStep(NamedTuple):
    """What one step gives the learner (p1); every tensor is ``[n]`` but the observations ``[n, K]``."""

    obs: torch.Tensor  # after the step; finished battles have already restarted
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor  # before the restart
    nan_actions: torch.Tensor  # int32: NaN values in each battle's action, flown as 0 (no fire)


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
        """Restart every battle; the env checks ``seed`` first (:func:`arena.seeds.check_seed`)."""
        self.obs = self.env.reset(seed=seed)
        if seed is not None:  # the opponent's own random stream restarts too: a seed fixes the battles
            self.controller.rng_seed, self.controller.rng_state = self.env.seed, None
        self.loop.reset_agents()
        return self.vector(self.obs["p1"])

    def step(self, actions: np.ndarray | torch.Tensor) -> LearnerStep:
        """Step p1's ``[n, 3]`` actions (checked by :func:`action_array`); finished battles restart at once.

        NaNs are counted here: the fire value becomes a bool below, where the core env can no longer see
        a NaN in it. The env replaces the rest (NaN fire compares False: no fire).
        """
        if self.obs is None:
            raise RuntimeError("call reset() before step()")
        a = torch.as_tensor(actions, dtype=torch.float32, device=self.device)
        nan_actions = torch.isnan(a).sum(-1, dtype=torch.int32)
        given = {"p1": {"rudder": a[:, 0], "throttle": a[:, 1], "fire": a[:, 2] > 0}}
        with torch.no_grad():
            turn = self.loop.step(self.obs, given=given)
        self.obs = turn.next_obs
        infos = turn.infos
        return LearnerStep(self.vector(turn.next_obs["p1"]), turn.rewards["p1"], infos["terminated"],
                           infos["truncated"], self.vector(infos["final_obs"]["p1"]), nan_actions)

    def vector(self, observation: dict[str, torch.Tensor]) -> torch.Tensor:
        return obs_vector(observation, self.keys)
