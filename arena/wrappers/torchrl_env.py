"""A TorchRL ``EnvBase`` of many battles: the learner flies p1, tensors stay on the env's device.

Duels come with TorchRL's single-agent keys (``observation``, ``action``, ``reward``); team battles
with its multi-agent grouping as VMAS and BenchMARL use it (one group ``agents`` of p1's aircraft).
Finished battles restart inside the step, as :class:`LearnerBattles` does, so ``("next", ...)``
holds the observation before the restart (GAE bootstraps a truncated battle from it) and the reset
that follows only hands over the restarted battles' observations: no host sync on the step path.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from arena.battles import ACTION_HIGH, ACTION_LOW, OBS_HIGH, OBS_LOW, LearnerBattles, action_array
from arena.env import EnvConfig, env_config_of

GROUP = "agents"  # TorchRL's name for the one group of a MarlGroupMapType.ALL_IN_ONE_GROUP map
DONE_KEYS = ("done", "terminated", "truncated")


class ArenaTorchRLEnv(EnvBase):
    """``num_envs`` battles against ``opponent`` as one TorchRL env of ``batch_size=[num_envs]``.

    Keys (``n`` battles, ``K`` observation floats, ``S`` global-state floats, ``T`` aircraft a side):

    - a duel: ``observation`` ``[n, K]``, ``action`` ``[n, 3]`` (rudder, throttle, fire > 0),
      ``reward`` ``[n, 1]``;
    - ``multi_agent`` (the default when ``team_size > 1``): ``("agents", "observation")`` ``[n, T, K]``,
      ``("agents", "action")`` ``[n, T, 3]``, ``("agents", "reward")`` ``[n, T, 1]``, and
      :attr:`group_map` ``{"agents": ["p1_0", ...]}``;
    - both: ``done``, ``terminated``, ``truncated`` ``[n, 1]`` per battle, and with ``global_state``
      (the default when grouped) ``state`` ``[n, S]``, p1's global state for a centralised critic.
      Off by default in a duel: computing it, before and after each restart, costs a third of a step.

    ``opponent`` is an agent spec, an agent object or a list of them sharing the envs in blocks
    (:class:`LearnerBattles`). ``set_seed(s)`` restarts every battle from ``s`` and reseeds the
    opponents' random streams: the same seed and actions give the same rollout.
    ``reward`` adds shaping to the env's reward (``"pursuit"``, the trainer's; :class:`LearnerBattles`).
    """

    def __init__(self, num_envs: int = 1024, opponent: Any = "crank", env_config: EnvConfig | None = None,
                 device: str | torch.device = "cpu", seed: int = 0, multi_agent: bool | None = None,
                 global_state: bool | None = None, reward: Any = None) -> None:
        config = env_config_of(env_config)
        team_size = config.team_size
        grouped = team_size > 1 if multi_agent is None else multi_agent
        if not grouped and team_size > 1:
            raise ValueError(f"multi_agent=False flies one aircraft a side, but env_config.team_size={team_size}; "
                             "expected multi_agent=True or None (grouped keys) for team battles")
        self.global_state = grouped if global_state is None else global_state
        self.battles = LearnerBattles(num_envs, opponent, config, device, seed, global_state=self.global_state,
                                      reward=reward)
        super().__init__(device=self.battles.device, batch_size=torch.Size([num_envs]))
        self.num_envs, self.team_size, self.multi_agent = num_envs, team_size, grouped
        self.group_map = {GROUP: [f"p1_{seat}" for seat in range(team_size)]} if grouped else {}
        self._action_key: str | tuple[str, str] = (GROUP, "action") if grouped else "action"
        self._action_shape = (num_envs, team_size, 3) if grouped else (num_envs, 3)
        self._make_specs(num_envs, len(self.battles.keys), self.battles.env.global_state_size)
        self._ended = torch.zeros(num_envs, dtype=torch.bool, device=self.device)  # restarted in the last step
        self._restarted: tuple[torch.Tensor, torch.Tensor | None] | None = None  # the last step's obs, state

    def _make_specs(self, n: int, k: int, s: int) -> None:
        d, t = self.device, self.team_size
        state = {"state": Unbounded(shape=(n, s), device=d)} if self.global_state else {}
        per = (n, t) if self.multi_agent else (n,)
        low, high = (torch.as_tensor(b, device=d).expand(*per, 3) for b in (ACTION_LOW, ACTION_HIGH))
        observation = Bounded(OBS_LOW, OBS_HIGH, shape=(*per, k), dtype=torch.float32, device=d)
        action = Bounded(low, high, shape=(*per, 3), dtype=torch.float32, device=d)
        reward = Unbounded(shape=(*per, 1), dtype=torch.float32, device=d)
        if self.multi_agent:
            self.observation_spec = Composite({GROUP: Composite(observation=observation, shape=per, device=d),
                                               **state}, shape=(n,), device=d)
            self.action_spec = Composite({GROUP: Composite(action=action, shape=per, device=d)}, shape=(n,), device=d)
            self.reward_spec = Composite({GROUP: Composite(reward=reward, shape=per, device=d)}, shape=(n,), device=d)
        else:
            self.observation_spec = Composite(observation=observation, **state, shape=(n,), device=d)
            self.action_spec = action
            self.reward_spec = reward
        self.done_spec = Composite({key: Categorical(2, shape=(n, 1), dtype=torch.bool, device=d) for key in DONE_KEYS},
                                   shape=(n,), device=d)

    def _out(self, obs: torch.Tensor, state: torch.Tensor | None, dones: tuple[torch.Tensor, ...],
             reward: torch.Tensor | None = None) -> TensorDict:
        root = dict(zip(DONE_KEYS, dones))
        if state is not None:
            root["state"] = state
        per: dict[str, torch.Tensor] = {"observation": obs}
        if reward is not None:
            per["reward"] = reward.reshape(*self._action_shape[:-1], 1)
        if self.multi_agent:  # the group's own batch is [n, T], as VMAS builds it
            per["observation"] = obs.reshape(self.num_envs, self.team_size, -1)  # a grouped duel gets T = 1
            group = TensorDict(per, batch_size=self._action_shape[:-1], device=self.device)
            return TensorDict({GROUP: group, **root}, batch_size=self.batch_size, device=self.device)
        return TensorDict({**per, **root}, batch_size=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(self._action_key, None)
        if action is None:
            raise KeyError(f"ArenaTorchRLEnv.step: no {self._action_key!r} in the tensordict; expected one of "
                           f"shape {self._action_shape}")
        a = action_array(action, self._action_shape, f"ArenaTorchRLEnv.step {self._action_key!r}")
        obs, reward, done, extras = self.battles.step(a.reshape(self.num_envs, 3) if self.team_size == 1 else a)
        self._ended, self._restarted = done, (obs, extras.get("state"))
        # Before the restart: where a battle goes on, final_obs is its observation as it stands.
        dones = (done.unsqueeze(-1), extras["terminated"].unsqueeze(-1), extras["truncated"].unsqueeze(-1))
        return self._out(extras["final_obs"], extras.get("final_state"), dones, reward)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is None:
            obs = self.battles.reset()
            self._ended = torch.zeros_like(self._ended)
        else:
            mask = self._reset_mask(mask)
            # The battles that ended in the last step have restarted already: restarting them again would
            # throw their first observation (already handed out in the step) away.
            obs = self.battles.restart(mask & ~self._ended)
            self._ended = self._ended & ~mask
        self._restarted = None
        return self._fresh(obs, self.battles.env.global_state("p1") if self.global_state else None)

    def _reset_mask(self, mask: Any) -> torch.Tensor:
        """The ``"_reset"`` entry as a ``[n]`` bool tensor: TorchRL hands ``[n, 1]``, ``[n]`` is taken too."""
        shapes = ((self.num_envs,), (self.num_envs, 1))
        if not isinstance(mask, torch.Tensor) or mask.is_meta or mask.dtype != torch.bool or \
                tuple(mask.shape) not in shapes:
            got = (f"{type(mask).__name__}" if not isinstance(mask, torch.Tensor) else
                   "a tensor on the meta device (it holds no values)" if mask.is_meta else
                   f"a tensor of dtype {mask.dtype} and shape {list(mask.shape)}")
            raise ValueError(f"ArenaTorchRLEnv.reset: expected '_reset' to be a bool tensor of shape "
                             f"[{self.num_envs}, 1] or [{self.num_envs}] (the battles to restart), got {got}")
        return mask.reshape(self.num_envs).to(self.device)

    def _fresh(self, obs: torch.Tensor, state: torch.Tensor | None) -> TensorDict:
        not_done = torch.zeros(self.num_envs, 1, dtype=torch.bool, device=self.device)
        return self._out(obs, state, (not_done, not_done.clone(), not_done.clone()))

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """After a step, hand over the observations of the battles that restarted inside it.

        TorchRL's own version reads ``done.any()`` on the host to decide whether to reset at all; here
        every battle that ended has restarted already, so the restarted observations replace the last
        ones (the same values where a battle goes on) and done becomes False, with no host sync.
        """
        if self._restarted is None:  # no step since the last reset: nothing ended
            return tensordict
        fresh = self._fresh(*self._restarted)
        self._restarted = None
        return tensordict.update(fresh)

    def _reset_proc_data(self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
                         ) -> TensorDictBase:
        # TorchRL's version checks the "_reset" mask and the done flags on the host (mask.all(),
        # done.any()). _reset returns every battle's values with done False, so a where on the mask
        # merges them into the caller's tensordict as TorchRL would, on the device.
        self._complete_done(self.full_done_spec, tensordict_reset)
        if tensordict is None:
            return tensordict_reset
        mask = tensordict.pop("_reset", None)
        if mask is None:
            return tensordict.update(tensordict_reset)
        keep = ~self._reset_mask(mask)
        for key in tensordict_reset.keys(True, True):
            old = tensordict.get(key, None)
            new = tensordict_reset.get(key)
            if old is None or old.shape != new.shape:
                tensordict.set(key, new)
            else:
                tensordict.set(key, torch.where(keep.reshape(-1, *([1] * (new.dim() - 1))), old, new))
        return tensordict

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self.battles.reset(seed)  # the env checks the seed, as every entry point does
            self._ended = torch.zeros_like(self._ended)
            self._restarted = None
