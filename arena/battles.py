"""The learner's side of a batch of battles: TensorEnv plus opponents flying p2 through the game loop.

Core, at the game loop's level: the trainers (:mod:`arena.training.league_env`) and every interface to
another RL library (:mod:`arena.wrappers`: Gymnasium, TorchRL, rsl_rl) build on it. Actions come in as
one ``[n, 3]`` tensor (``[n, T, 3]`` in team battles: rudder, throttle, fire > 0) and observations go
out as one ``[n, K]`` (``[n, T, K]``) float32 tensor in the canonical key order, as any RL library
expects, on the env's device. The opponents are agent specs ``arena play`` accepts, or agent
objects; several share the envs in blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from arena.agent_calls import AgentFailure
from arena.agents import BaseAgent
from arena.env import EnvConfig, TensorEnv, env_config_of, obs_vector
from arena.env.config import REWARD_LIMIT
from arena.env.observations import obs_keys
from arena.env.selection import check_num_envs
from arena.env.teams import flatten_seats, seat_rows
from arena.loop import Controller, GameLoop, Seating, Turn, observation_config
from arena.seeds import INT64_MAX

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
        if action.is_meta:
            raise ValueError(f"{who}: expected {WANTED} of shape {shape}, got a tensor on the meta device "
                             "(it holds no values)")
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


def one_aircraft_a_side(env_config: EnvConfig | None, refusal: str) -> EnvConfig:
    """``env_config`` (the default when None) for an interface that flies duels; a team battle raises
    ``ValueError(refusal)``, formatted with its ``team_size``."""
    config = env_config_of(env_config)
    if config.team_size != 1:
        raise ValueError(refusal.format(team_size=config.team_size))
    return config


def opponent_blocks(num_envs: int, count: int) -> torch.Tensor:
    """[num_envs] index of the opponent flying each env: ``count`` contiguous blocks as even as can be."""
    if count > num_envs:
        raise ValueError(f"{count} opponents need at least {count} envs, got num_envs={num_envs}")
    return torch.arange(num_envs) * count // num_envs


REAL_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)  # and floating point


class Shaping:
    """A reward function (``arena_rewards``, or one given as a function), called as agent code is.

    ``shaping(obs, next_obs, rewards, dones, infos)`` calls ``fn`` through :func:`arena.guard.call_agent`
    and checks what it returns: a tensor of real numbers with ``rewards``' shape (one value per learner
    aircraft), on its device. Anything else, an exception (``sys.exit`` included) or a change of the
    process raises :class:`~arena.agent_calls.AgentFailure` with ``kind="reward"``, naming the reward, where
    it comes from (``source``), what it returned and what was expected:
    ``reward 'x' (from dist 1.0) returned a tensor of shape [7]; expected ...``. Its values are checked
    by :class:`LearnerSide` (on a GPU that takes a host read, so the largest is kept on the device and
    read once in a while: :meth:`LearnerSide.check_rewards`).
    """

    def __init__(self, fn: Callable[..., Any], name: str, source: str) -> None:
        self.fn, self.name, self.source = fn, name, source

    def __call__(self, obs: Any, next_obs: Any, rewards: torch.Tensor, dones: torch.Tensor,
                 infos: Any) -> torch.Tensor:
        from arena.guard import AgentCodeError, call_agent

        try:
            value = call_agent(self.name, "reward", self.fn, obs, next_obs, rewards, dones, infos)
        except AgentCodeError as exc:
            raise self.failure(exc.cause if exc.changed else f"raised {exc.cause}") from None
        return self.checked(value, rewards)

    def checked(self, value: Any, like: torch.Tensor) -> torch.Tensor:
        """``value`` as ``like``'s dtype, when it is a tensor of real numbers of ``like``'s shape and device."""
        if not isinstance(value, torch.Tensor):
            got = "None" if value is None else f"{type(value).__name__} {value!r:.40}"
        elif not (value.dtype.is_floating_point or value.dtype in REAL_DTYPES):
            got = f"a tensor of dtype {value.dtype}"
        elif tuple(value.shape) != tuple(like.shape):
            got = f"a tensor of shape {list(value.shape)}"
        elif value.device != like.device:
            got = f"a tensor on {value.device}"
        else:
            return value.to(like.dtype)
        raise self.failure(f"returned {got}; expected a tensor of real numbers of shape {list(like.shape)} on "
                           f"{like.device}, one value per learner aircraft")

    def failure(self, reason: str) -> AgentFailure:
        return AgentFailure(self.name, self.source, reason, kind="reward")

    def __repr__(self) -> str:
        return f"Shaping({self.name!r}, {self.source})"


def shaping(reward: str | Callable[..., torch.Tensor] | None) -> Shaping | None:
    """The reward function ``reward`` names (``arena_rewards``), or a function, to be called as a
    :class:`Shaping`; None for None."""
    if reward is None or isinstance(reward, Shaping):
        return reward
    if callable(reward):
        return Shaping(reward, str(getattr(reward, "__name__", type(reward).__name__)), "given as a function")
    if not isinstance(reward, str):
        raise ValueError(f"reward: expected the name of a reward (arena_rewards, such as 'pursuit' or 'zero'), a "
                         f"function or None, got {type(reward).__name__} {reward!r:.40}")
    from arena.agents import UnknownNameError, reward_registry

    try:
        entry = reward_registry().entry(reward)
    except UnknownNameError as exc:
        raise ValueError(f"reward: {exc}") from None
    return Shaping(entry.obj, entry.name, f"from {entry.source.distribution} {entry.source.version}")


class LearnerSide:
    """p1's side of a :class:`TensorEnv` whose p2 a :class:`Seating` flies: actions in, observation vectors
    and shaped rewards out. What :class:`LearnerBattles` (fixed opponents) and the training league env
    (an opponent pool, reseated each rollout) share."""

    def __init__(self, env: TensorEnv, seating: Seating, team_size: int, keys: tuple[str, ...],
                 reward_fn: str | Callable[..., torch.Tensor] | None = None, global_state: bool = False) -> None:
        self.env, self.team_size, self.keys = env, team_size, keys
        self.reward_fn, self.global_state = shaping(reward_fn), global_state
        self.num_envs, self.device = env.num_envs, env.device
        self.loop = GameLoop(env, seating)
        self.obs: dict[str, dict[str, torch.Tensor]] | None = None
        # The largest magnitude the shaping returned since the last check (NaN once it returned one), and
        # whether to check at every step: on the CPU the read costs nothing; on a GPU it would wait for the
        # device, and the trainer checks once a rollout, before the rollout is learned from.
        self.worst = torch.zeros((), device=self.device)
        self.check_every_step = self.device.type == "cpu"

    def reseat(self, seating: Seating) -> None:
        """Who flies p2 from the next step on (a league's draw for its next rollout); the battles go on."""
        self.loop.seating = seating

    def restart(self, envs: torch.Tensor) -> torch.Tensor:
        """Start the battles of the ``[n]`` bool mask ``envs`` over (their opponents forget them too); returns
        every battle's observation. No host sync: a mask with no battle set changes nothing."""
        if self.obs is None:
            raise RuntimeError("call reset() before restart()")
        self.env.restart_mask(envs)
        self.obs = self.env.observe()
        self.loop.reset_agents(envs)
        return self.vector(self.obs["p1"])

    def play(self, actions: np.ndarray | torch.Tensor) -> tuple[Turn, torch.Tensor]:
        """Step p1's ``[n, 3]`` (``[n, T, 3]``) actions; returns the turn and p1's shaped reward (``[n]``,
        ``[n, T]``). A NaN fire value compares False (no fire); the env replaces the other NaNs."""
        if self.obs is None:
            raise RuntimeError("call reset() before step()")
        a = torch.as_tensor(actions, dtype=torch.float32, device=self.device)
        given = {"p1": {"rudder": a[..., 0], "throttle": a[..., 1], "fire": a[..., 2] > 0}}
        before = self.obs["p1"]
        with torch.no_grad():
            turn = self.loop.step(self.obs, given=given)
            self.obs = turn.next_obs
            reward = turn.rewards["p1"]
            if self.reward_fn is not None:  # as the trainer calls it: a row per aircraft, next_obs before restarts
                extra = self.reward_fn(flatten_seats(before), flatten_seats(turn.infos["final_obs"]["p1"]),
                                       reward.reshape(-1), seat_rows(turn.dones, self.team_size), turn.infos)
                self.worst = torch.maximum(self.worst, extra.abs().amax())  # NaN wins: it stays NaN
                if self.check_every_step:
                    self.check_rewards()
                reward = reward + extra.reshape_as(reward)
        return turn, reward

    def check_rewards(self) -> None:
        """Refuse a reward function that returned NaN, an infinity, or a value beyond ``REWARD_LIMIT`` (the
        bound of the env's own reward parts) since the last check: one host read. Raises its
        :class:`~arena.agent_calls.AgentFailure`; nothing without a reward function."""
        if self.reward_fn is None:
            return
        worst = float(self.worst)
        if worst <= REWARD_LIMIT:
            return
        self.worst.zero_()
        found = ("NaN" if math.isnan(worst) else "an infinite value" if math.isinf(worst)
                 else f"a value of magnitude {worst:.3g}")
        raise self.reward_fn.failure(f"returned {found}; expected finite values within ±{REWARD_LIMIT:g}, as the "
                                     f"env's own reward parts are")

    def vector(self, observation: dict[str, torch.Tensor]) -> torch.Tensor:
        return obs_vector(observation, self.keys)


class LearnerBattles(LearnerSide):
    """``num_envs`` battles: the caller flies p1 (all ``team_size`` aircraft), the opponents fly p2.

    ``opponent`` is one agent spec (``crank``, ``ace``, ``NAME:CHECKPOINT``, a checkpoint file) or agent
    object, or a sequence of them: the envs are then split into as many even blocks, in order (the
    whole ladder at once, say). With ``global_state`` every step also returns p1's global state
    (:meth:`TensorEnv.global_state`), before and after a restart, for centralised critics.

    ``reward`` adds shaping to p1's env reward, as ``arena train --reward`` does: a name from the
    ``arena_rewards`` plugins (``pursuit``, the built-in trainer's default; ``zero``) or a function of
    the same signature, ``fn(obs, next_obs, rewards, dones, infos) -> [n·T]`` (one row per aircraft).
    None: the env's reward alone (a win or loss, a survival bonus, a missile's cost). It is called as
    agent code (:class:`Shaping`): one that raises, or returns anything but a real tensor of that
    shape on the env's device, fails the step with an :class:`~arena.agent_calls.AgentFailure` naming it.
    Its values are checked too (NaN, infinite, beyond ``REWARD_LIMIT``): at every step on the CPU; on a
    GPU, where that read would wait for the device, when :meth:`check_rewards` is called.
    """

    def __init__(self, num_envs: int, opponent: Any = "crank", env_config: EnvConfig | None = None,
                 device: str | torch.device = "cpu", seed: int = 0, global_state: bool = False,
                 reward: str | Callable[..., torch.Tensor] | None = None) -> None:
        from arena.agents import AgentSpecError, build_agent, ready_to_play

        num_envs = check_num_envs(num_envs)
        reward_fn = shaping(reward)
        config = env_config_of(env_config)
        many = isinstance(opponent, Sequence) and not isinstance(opponent, (str, bytes, bytearray))
        specs = list(opponent) if many else [opponent]
        if not specs:
            raise ValueError("opponent: expected an agent spec or a non-empty sequence of them, got an empty one")
        owner = torch.stack((torch.full((num_envs,), -1), opponent_blocks(num_envs, len(specs))))
        for i, o in enumerate(specs):
            if not isinstance(o, str) and not callable(getattr(o, "act", None)):
                raise ValueError(f"opponent[{i}]: expected an agent spec (a name or a checkpoint) or an agent "
                                 f"object with act(), got {type(o).__name__} {o!r:.40}")
        self.opponents = [build_agent(o, device, config) if isinstance(o, str) else o for o in specs]
        for i, (agent, spec) in enumerate(zip(self.opponents, specs)):
            if callable(getattr(agent, "eval", None)):
                try:
                    ready_to_play(agent, spec if isinstance(spec, str) else "opponent")
                except AgentSpecError as exc:
                    raise AgentSpecError(f"opponent[{i}]: {exc}") from None
        env = TensorEnv(num_envs, device=device, seed=seed, config=observation_config(config, self.opponents),
                        final_global_state="p1" if global_state else False)
        self.controllers = [Controller(agent, spec if isinstance(spec, str) else "opponent", "opponent",
                                       rng_seed=self.stream_seed(seed, i))
                            for i, (agent, spec) in enumerate(zip(self.opponents, specs))]
        # What the learner sees; the env may carry more for the opponent.
        super().__init__(env, Seating(self.controllers, owner, config.team_size, env.device), config.team_size,
                         obs_keys(config), reward_fn, global_state)

    @staticmethod
    def stream_seed(seed: int, index: int) -> int:
        """The random stream of opponent ``index``: the env's seed for the first, the next ones after."""
        return (seed + index) % (INT64_MAX + 1)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Restart every battle; the env checks ``seed`` first (:func:`arena.seeds.check_seed`)."""
        self.obs = self.env.reset(seed=seed)
        if seed is not None:  # the opponents' own random streams restart too: a seed fixes the battles
            for i, controller in enumerate(self.controllers):
                controller.rng_seed, controller.rng_state = self.stream_seed(self.env.seed, i), None
        self.loop.reset_agents()
        return self.vector(self.obs["p1"])

    def step(self, actions: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                  dict[str, torch.Tensor]]:
        """Step p1's ``[n, 3]`` (``[n, T, 3]``) actions (checked by the caller); finished battles restart at once.

        Returns rsl_rl's tuple, as the training league env does: the observations after the step
        (``[n, K]``, ``[n, T, K]``), p1's reward (``[n]``, ``[n, T]``), the dones per battle (``[n]``), and
        extras: ``terminated`` and ``truncated`` (cut off by the time limit) per battle, ``final_obs`` (before
        the restart), ``nan_actions`` (int32: NaN values in each aircraft's action, flown as 0, no
        fire) and, with ``global_state``, p1's ``state`` ``[n, S]`` after the step and ``final_state``
        before the restart. NaNs are counted here: the fire value becomes a bool in the step, where the
        core env can no longer see a NaN in it.
        """
        a = torch.as_tensor(actions, dtype=torch.float32, device=self.device)
        nan_actions = torch.isnan(a).sum(-1, dtype=torch.int32)
        turn, reward = self.play(a)
        infos = turn.infos
        extras = {"terminated": infos["terminated"], "truncated": infos["truncated"],
                  "final_obs": self.vector(infos["final_obs"]["p1"]), "nan_actions": nan_actions}
        if self.global_state:
            extras["state"], extras["final_state"] = self.env.global_state("p1"), infos["final_global_state"]["p1"]
        return self.vector(turn.next_obs["p1"]), reward, turn.dones, extras


class VectorPolicyAgent(BaseAgent):
    """A policy trained through a wrapper, as an arena agent: ``policy`` maps the ``[n, K]`` observation
    vector to ``[n, 3]`` actions, as the wrappers take them, so that a TorchRL or rsl_rl policy plays
    ``arena.match.play_match`` (and so is scored against any agent) without an adapter of the caller's.
    In team battles it is flown seat by seat (``[n·T, K]``), right for a policy shared by every
    aircraft; :class:`TeamVectorPolicyAgent` hands it whole sides (``[n, T, K]``) instead."""

    name = "vector-policy"

    def __init__(self, policy: Callable[[torch.Tensor], torch.Tensor], env_config: EnvConfig | None = None,
                 device: str | torch.device = "cpu") -> None:
        super().__init__(device, env_config)
        self.policy = policy
        self.keys = obs_keys(self.env_config)

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            a = self.policy(obs_vector(observation, self.keys))
        return {"rudder": a[..., 0], "throttle": a[..., 1], "fire": a[..., 2] > 0}


class TeamVectorPolicyAgent(VectorPolicyAgent):
    """:class:`VectorPolicyAgent` of a policy that reads a whole side, ``[n, T, K]`` to ``[n, T, 3]`` (a
    centralised actor, say)."""

    name = "team-vector-policy"
    plays_team = True
