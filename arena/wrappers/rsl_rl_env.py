"""An rsl_rl ``VecEnv`` of many duels (``ArenaRslRlEnv``): the learner flies p1, an opponent p2.

rsl_rl (rsl-rl-lib 5.x, the library behind Isaac Lab's PPO) trains one policy on a batch of envs
whose observations come as a TensorDict of groups. Here the group ``"policy"`` is the learner's
``[n, K]`` observation and ``"critic"`` p1's ``[n, S]`` global state (privileged: both aircraft and
every missile), so ``obs_groups={"actor": ["policy"], "critic": ["critic"]}`` gives PPO an
asymmetric critic. Every tensor stays on the env's device and ``step`` never waits for the host.
The global state costs about a fifth of a CPU step at a few thousand envs; ``privileged=False``
leaves the ``"critic"`` group out (a critic then reads ``"policy"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from arena.battles import ACTION_SHAPE, LearnerBattles, action_array, one_aircraft_a_side
from arena.env import EnvConfig
from arena.env.selection import WIDE_UNSIGNED
from arena.loop import Turn

DECAY = 0.99  # per step, of the won/drawn/lost tallies behind extras["log"]: about the last 100 steps count
OUTCOMES = ("won", "drawn", "lost")
WINNER_CODES = (1, 0, 2)  # TensorEnv's infos["winner"] for each outcome, seen from p1: p1, nobody, p2


class ArenaRslRlEnv(VecEnv):
    """``num_envs`` duels against ``opponent`` (an agent spec, an agent object or a list of them sharing
    the envs in blocks), as rsl_rl's ``OnPolicyRunner`` steps them.

    ``step(actions)`` takes ``[n, 3]`` actions (rudder, throttle, fire when > 0; out-of-range values
    are clamped, NaN flies as 0) and returns ``(obs, rewards [n], dones [n] bool, extras)``. Where a
    battle ended, ``obs`` is already the next battle's (rsl_rl's convention); ``dones`` is terminated or
    truncated, and ``extras["time_outs"]`` the truncations (the time limit, a draw), which rsl_rl's PPO
    bootstraps. ``extras["log"]`` holds 0-dim tensors that rsl_rl's logger prints: the shares of
    battles won, drawn and lost among those finished over roughly the last 100 steps (NaN until one
    has finished) and the battles finished this step. ``extras["nan_actions"]`` counts NaN values
    per battle.

    ``privileged=False`` leaves the ``"critic"`` group out, and its cost with it.
    ``reward`` adds shaping to the env's reward (``"pursuit"``, the trainer's; :class:`LearnerBattles`).

    ``episode_length_buf`` ([n] int64) is the decision steps into each battle, updated on the device.
    Assigning to it sets each battle's clock: the battle itself goes on from where it stands, and
    ends by the time limit ``max_episode_length - value`` steps later. This is what the runner's
    ``learn(..., init_at_random_ep_len=True)`` asks for (staggered time-outs); the arena cannot put a
    battle's aircraft midway through one, only its clock. Changing the tensor in place does nothing.
    """

    def __init__(self, num_envs: int = 4096, opponent: Any = "crank", env_config: EnvConfig | None = None,
                 device: str | torch.device = "cpu", seed: int = 0, privileged: bool = True,
                 reward: Any = None) -> None:
        config = one_aircraft_a_side(env_config, "ArenaRslRlEnv flies duels (rsl_rl trains a single agent), got "
                                             "team_size={team_size}; for team battles use the TorchRL or "
                                             "PettingZoo interface (docs/interfaces.md)")
        self.privileged = privileged
        self.battles = LearnerBattles(num_envs, opponent, config, device, seed, reward=reward)
        self.num_envs = num_envs
        self.num_actions = ACTION_SHAPE[0]
        self.max_episode_length = config.max_steps
        self.device = self.battles.device
        self.cfg = {"num_envs": num_envs, "opponent": [c.name for c in self.battles.controllers], "seed": seed,
                    "privileged": privileged, "env_config": config.to_dict()}
        self._action_shape = (num_envs, *ACTION_SHAPE)
        self._length = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self._codes = torch.tensor(WINNER_CODES, dtype=torch.int8, device=self.device)
        self._tally = torch.zeros(len(OUTCOMES), device=self.device)
        self._winner: torch.Tensor | None = None
        self.battles.loop.observers.append(self._see)
        self._obs = self._observations(self.battles.reset())

    @property
    def num_obs(self) -> int:
        """K, the size of the ``"policy"`` group."""
        return len(self.battles.keys)

    @property
    def num_privileged_obs(self) -> int:
        """S, the size of the ``"critic"`` group (p1's global state)."""
        return self.battles.env.global_state_size

    def get_observations(self) -> TensorDict:
        return self._obs

    def reset(self, seed: int | None = None) -> TensorDict:
        """Restart every battle (rsl_rl never calls it: battles restart inside :meth:`step`); ``seed``
        replays the same starts and opponent moves."""
        self._obs = self._observations(self.battles.reset(seed))
        self._length.zero_()
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict[str, Any]]:
        obs, reward, done, out = self.battles.step(action_array(actions, self._action_shape, "ArenaRslRlEnv.step"))
        self._length.copy_(self.battles.env.state.time)  # 0 where a battle has just restarted
        self._obs = self._observations(obs)
        extras = {"time_outs": out["truncated"], "log": self._log(), "nan_actions": out["nan_actions"]}
        return self._obs, reward, done, extras

    @property
    def episode_length_buf(self) -> torch.Tensor:
        return self._length

    @episode_length_buf.setter
    def episode_length_buf(self, value: Any) -> None:
        wanted = f"ArenaRslRlEnv.episode_length_buf: expected [{self.num_envs}] decision steps"
        if isinstance(value, torch.Tensor) and value.is_meta:
            raise ValueError(f"{wanted}, got a tensor on the meta device (it holds no values)")
        if isinstance(value, torch.Tensor) and value.dtype in WIDE_UNSIGNED:
            value = value.detach().cpu().numpy()  # torch has no min, max or exact cast for these
        if isinstance(value, np.ndarray) and value.dtype.kind == "u":
            value = value.astype(np.float64)  # a uint64 above 2**63 is no int64: its value, as a float
        try:
            steps = torch.as_tensor(value, device=self.device)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"{wanted}, got {type(value).__name__} {value!r:.40}") from None
        if tuple(steps.shape) != (self.num_envs,) or steps.dtype.is_complex or steps.dtype == torch.bool:
            raise ValueError(f"{wanted}, got {type(value).__name__} of dtype {steps.dtype} and shape "
                             f"{tuple(steps.shape)}")
        nan = steps.isnan()
        if bool(nan.any()):
            raise ValueError(f"{wanted}, got NaN in battle {int(nan.nonzero()[0])}")
        low, high = float(steps.min()), float(steps.max())  # once, not on the step path
        if low < 0 or high >= self.max_episode_length:
            raise ValueError(f"ArenaRslRlEnv.episode_length_buf: expected decision steps in "
                             f"[0, {self.max_episode_length - 1}], got values in [{low:g}, {high:g}]")
        steps = steps.floor()
        self.battles.env.state.time = steps.to(self.battles.env.state.time.dtype)
        self._length.copy_(steps)
        self._obs = self._observations(self._obs["policy"])  # the global state shows the time elapsed

    def _observations(self, obs: torch.Tensor) -> TensorDict:
        groups = {"policy": obs}
        if self.privileged:
            groups["critic"] = self.battles.env.global_state("p1")
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)

    def _see(self, turn: Turn) -> None:  # a game-loop observer: keeps the step's winners for _log
        self._winner = turn.infos["winner"]

    def outcome_shares(self) -> dict[str, torch.Tensor]:
        """0-dim tensors ``won``, ``drawn``, ``lost``: the learner's shares among the battles finished over
        roughly the last 100 steps (NaN before any), as ``extras["log"]`` gives them."""
        return dict(zip(OUTCOMES, (self._tally / self._tally.sum()).unbind()))

    def _log(self) -> dict[str, torch.Tensor]:
        assert self._winner is not None
        finished = (self._winner.unsqueeze(-1) == self._codes).sum(0)  # [3] won, drawn, lost this step
        self._tally.mul_(DECAY).add_(finished)
        log = {f"/arena/{name}": share for name, share in self.outcome_shares().items()}
        log["/arena/finished_per_step"] = finished.sum().float()
        return log
