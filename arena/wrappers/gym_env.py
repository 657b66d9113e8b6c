"""Gymnasium interfaces: a vector env of many duels (``ArenaVectorEnv``) and a single duel (``ArenaEnv``)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from arena.battles import (
    ACTION_HIGH,
    ACTION_LOW,
    ACTION_SHAPE,
    OBS_HIGH,
    OBS_LOW,
    LearnerBattles,
    action_array,
    one_aircraft_a_side,
)
from arena.env import EnvConfig
from arena.seeds import check_seed


def one_a_side(env_config: EnvConfig | None) -> EnvConfig:
    return one_aircraft_a_side(env_config, "the Gymnasium wrappers fly one aircraft a side; use the PettingZoo "
                                           "env for teams")


def observation_space(size: int) -> spaces.Box:
    return spaces.Box(OBS_LOW, OBS_HIGH, shape=(size,), dtype=np.float32)


def action_space() -> spaces.Box:
    return spaces.Box(ACTION_LOW, ACTION_HIGH, dtype=np.float32)


class ArenaVectorEnv(VectorEnv):
    """``num_envs`` duels stepped at once; the learner flies p1 against ``opponent``.

    Observations ``[n, K]`` float32 (the env's observation keys, canonical order), actions ``[n, 3]``
    (rudder in [-1, 1], throttle in [0, 1], fire when > 0). Autoreset is same-step: where a battle ended,
    the returned observation is already the next battle's and ``info["final_obs"]`` (with the mask
    ``info["_final_obs"]``) holds the last one. ``as_torch=True`` returns torch tensors on ``device``
    instead of numpy arrays and takes torch actions, with no copy to the host.
    ``reward`` adds shaping to the env's reward (``"pursuit"``, the trainer's; :class:`LearnerBattles`).

    Actions of any other shape, or not real numbers, raise ``ValueError``. NaN values fly as 0 (no fire)
    and are counted per battle in ``info["nan_actions"]``, as the core env counts them.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1024, opponent: Any = "crank", env_config: EnvConfig | None = None,
                 device: str = "cpu", seed: int = 0, as_torch: bool = False, reward: Any = None) -> None:
        self.battles = LearnerBattles(num_envs, opponent, one_a_side(env_config), device, seed, reward=reward)
        self.num_envs = num_envs
        self.as_torch = as_torch
        self.single_observation_space = observation_space(len(self.battles.keys))
        single_action = action_space()
        self.single_action_space = single_action
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(single_action, num_envs)
        self.action_shape = (num_envs, *single_action.shape)  # what step() takes

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        seed = None if seed is None else check_seed(seed)  # a numpy integer too, as gymnasium's own is not
        obs = self.battles.reset(seed)
        super().reset(seed=seed)
        return self._out(obs), {}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, reward, done, extras = self.battles.step(action_array(actions, self.action_shape, "ArenaVectorEnv.step"))
        info: dict[str, Any] = {"final_obs": self._out(extras["final_obs"]), "_final_obs": self._out(done),
                                "nan_actions": self._out(extras["nan_actions"])}
        return (self._out(obs), self._out(reward), self._out(extras["terminated"]), self._out(extras["truncated"]),
                info)

    def _out(self, t: torch.Tensor) -> Any:
        return t if self.as_torch else t.cpu().numpy()


class ArenaEnv(gymnasium.Env):
    """One duel as a plain Gymnasium env (``gymnasium.make("Arena/Duel-v0")``): the learner flies p1.

    Spaces as :class:`ArenaVectorEnv`'s single spaces. After ``terminated`` or ``truncated`` call
    ``reset()``; ``reset(seed=S)`` replays the same battle start and the same opponent moves. Actions are
    checked as the vector env's; ``info["nan_actions"]`` counts the NaN values flown as 0.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, opponent: Any = "crank", env_config: EnvConfig | None = None, device: str = "cpu",
                 seed: int = 0, render_mode: str | None = None, reward: Any = None) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode: expected None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.battles = LearnerBattles(1, opponent, one_a_side(env_config), device, seed, reward=reward)
        self.observation_space = observation_space(len(self.battles.keys))
        self.action_space = action_space()
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        seed = None if seed is None else check_seed(seed)  # a numpy integer too, as gymnasium's own is not
        obs = self.battles.reset(seed)
        super().reset(seed=seed)
        self._done = False
        return obs[0].cpu().numpy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("the battle is over: call reset() first")
        obs, reward, _, extras = self.battles.step(action_array(action, ACTION_SHAPE, "ArenaEnv.step")[None])
        term, trunc = bool(extras["terminated"][0]), bool(extras["truncated"][0])
        self._done = term or trunc
        shown = extras["final_obs"] if self._done else obs  # the env has already started the next battle
        return shown[0].cpu().numpy(), float(reward[0]), term, trunc, {"nan_actions": int(extras["nan_actions"][0])}

    def render(self) -> np.ndarray | None:
        """``rgb_array``: a 256 × 256 top-down picture of the arena (p1 blue, p2 red, missiles white); the
        HTML replays (``arena replay``) are the way to watch a battle."""
        if self.render_mode != "rgb_array":
            return None
        size = 256
        image = np.full((size, size, 3), 20, dtype=np.uint8)
        state = self.battles.env.state
        scale = (size - 1) / self.battles.env.config.arena_size

        def dot(x: float, y: float, colour: tuple[int, int, int], r: int) -> None:
            cx, cy = int(np.clip(x * scale, 0, size - 1)), int(np.clip((size - 1) - y * scale, 0, size - 1))
            image[max(cy - r, 0):cy + r + 1, max(cx - r, 0):cx + r + 1] = colour

        flying = state.m_active.reshape(-1)
        for mx, my in zip(state.mx.reshape(-1)[flying].tolist(), state.my.reshape(-1)[flying].tolist()):
            dot(mx, my, (255, 255, 255), 1)
        for a, colour in ((0, (47, 111, 223)), (1, (216, 58, 58))):
            dot(float(state.x[0, a]), float(state.y[0, a]), colour, 3)
        return image
