"""Rollout storage on the training device (rsl_rl's RolloutStorage).

Tensors are ``[n_steps, num_envs, ...]`` and allocated once; ``add`` writes one step in place, so a
rollout costs no allocation and no host round trip. Returns and advantages are computed in place by
:func:`compute_gae`, with episodes cut off by the time limit bootstrapped rather than treated as
terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Transition:
    """One step of every env, as the runner hands it to the storage."""

    obs: torch.Tensor  # [N, F] normalized actor input
    critic_obs: torch.Tensor | None  # [N, C] critic input when it differs from obs (privileged critic)
    u: torch.Tensor  # [N] pre-squash rudder
    fire: torch.Tensor  # [N] {0., 1.}
    log_prob: torch.Tensor  # [N]
    value: torch.Tensor  # [N] V(s) in return units
    reward: torch.Tensor  # [N]
    done: torch.Tensor  # [N] bool, episode ended (terminated or truncated)
    bootstrap: torch.Tensor  # [N] V(final obs) where the episode was truncated, else 0
    mean: torch.Tensor  # [N] policy parameters at collection time, for the KL of the adaptive LR
    log_std: torch.Tensor
    fire_logit: torch.Tensor
    active: torch.Tensor | None = None  # [N] bool: the aircraft was alive when it acted (MAPPO's active masks)
    actor_hidden: torch.Tensor | None = None  # [N, H] recurrent policies: the hidden states this step started from
    critic_hidden: torch.Tensor | None = None
    teacher_rudder: torch.Tensor | None = None  # [N] kickstarting: what the teacher would steer, in [-1, 1]
    teacher_fire: torch.Tensor | None = None  # [N] {0., 1.}: whether the teacher would fire


def compute_gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, last_values: torch.Tensor,
                gamma: float, lam: float, bootstrap: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation over ``[T, N]`` tensors; returns ``(advantages, returns)``.

    ``dones[t]`` ends the episode after step t: nothing flows back from ``t+1`` (which already
    belongs to the next episode). When the episode ended by the time limit, its true continuation
    value is not zero: ``bootstrap[t] = V(final_obs)`` is then added as ``γ·V`` to the reward
    (time-outs bootstrapped, not terminal).
    """
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    not_done = 1.0 - dones.float()
    rewards = rewards if bootstrap is None else rewards + gamma * bootstrap
    next_adv = torch.zeros_like(last_values)
    next_value = last_values
    for t in reversed(range(steps)):
        delta = rewards[t] + gamma * next_value * not_done[t] - values[t]
        next_adv = delta + gamma * lam * not_done[t] * next_adv
        advantages[t] = next_adv
        next_value = values[t]
    return advantages, advantages + values


class RolloutStorage:
    """Fixed-size buffer of ``n_steps`` transitions of ``num_envs`` envs."""

    def __init__(self, n_steps: int, num_envs: int, obs_dim: int, critic_obs_dim: int | None,
                 device: torch.device | str, active_masks: bool = False,
                 hidden_sizes: tuple[int, int] | None = None, teacher: bool = False) -> None:
        self.n_steps, self.num_envs, self.device = n_steps, num_envs, torch.device(device)
        self._device_generator: torch.Generator | None = None  # the minibatch order's stream on a GPU (_order)
        f: dict[str, Any] = dict(device=self.device, dtype=torch.float32)
        shape = (n_steps, num_envs)
        self.obs = torch.zeros(*shape, obs_dim, **f)
        self.critic_obs = torch.zeros(*shape, critic_obs_dim, **f) if critic_obs_dim else None
        self.u = torch.zeros(shape, **f)
        self.fire = torch.zeros(shape, **f)
        self.log_prob = torch.zeros(shape, **f)
        self.value = torch.zeros(shape, **f)
        self.reward = torch.zeros(shape, **f)
        self.done = torch.zeros(shape, dtype=torch.bool, device=self.device)
        self.bootstrap = torch.zeros(shape, **f)
        self.mean = torch.zeros(shape, **f)
        self.log_std = torch.zeros(shape, **f)
        self.fire_logit = torch.zeros(shape, **f)
        self.advantages = torch.zeros(shape, **f)
        self.returns = torch.zeros(shape, **f)
        self.active = torch.zeros(shape, dtype=torch.bool, device=self.device) if active_masks else None
        self.actor_hidden = torch.zeros(*shape, hidden_sizes[0], **f) if hidden_sizes else None
        self.critic_hidden = torch.zeros(*shape, hidden_sizes[1], **f) if hidden_sizes else None
        self.teacher_rudder = torch.zeros(shape, **f) if teacher else None
        self.teacher_fire = torch.zeros(shape, **f) if teacher else None
        # Fields every minibatch carries: the teacher's labels only while a rollout holds them.
        self.fields: tuple[str, ...] = self.FIELDS
        self.step = 0

    @property
    def full(self) -> bool:
        return self.step >= self.n_steps

    def add(self, t: Transition) -> None:
        if self.full:
            raise RuntimeError(f"rollout storage is full ({self.n_steps} steps); call clear() after the update")
        i = self.step
        self.obs[i] = t.obs
        if self.critic_obs is not None:
            if t.critic_obs is None:
                raise ValueError("this storage keeps a separate critic observation; the transition has none")
            self.critic_obs[i] = t.critic_obs
        for name in ("u", "fire", "log_prob", "value", "reward", "done", "bootstrap", "mean", "log_std", "fire_logit"):
            getattr(self, name)[i] = getattr(t, name)
        if self.active is not None:
            if t.active is None:
                raise ValueError("this storage keeps active masks; the transition has none")
            self.active[i] = t.active
        if self.actor_hidden is not None and self.critic_hidden is not None:
            if t.actor_hidden is None or t.critic_hidden is None:
                raise ValueError("this storage keeps recurrent hidden states; the transition has none")
            self.actor_hidden[i] = t.actor_hidden
            self.critic_hidden[i] = t.critic_hidden
        if self.teacher_rudder is not None and self.teacher_fire is not None:
            rudder, fire = t.teacher_rudder, t.teacher_fire
            labelled = rudder is not None and fire is not None
            if i == 0:
                self.fields = self.FIELDS + (("teacher_rudder", "teacher_fire") if labelled else ())
            elif labelled != ("teacher_rudder" in self.fields):
                raise ValueError("a rollout is labelled by the teacher at every step or at none")
            if rudder is not None and fire is not None:  # labelled
                self.teacher_rudder[i] = rudder
                self.teacher_fire[i] = fire
        self.step += 1

    def clear(self) -> None:
        """Start a new rollout; tensors are overwritten, not reallocated."""
        self.step = 0

    def compute_returns(self, last_values: torch.Tensor, gamma: float, lam: float) -> None:
        if not self.full:
            raise RuntimeError(f"rollout incomplete: {self.step}/{self.n_steps} steps")
        self.advantages, self.returns = compute_gae(self.reward, self.value, self.done, last_values, gamma, lam,
                                                    self.bootstrap)

    FIELDS = ("obs", "u", "fire", "log_prob", "value", "advantages", "returns", "mean", "log_std", "fire_logit")

    def mini_batches(self, batch_size: int, n_epochs: int, generator: torch.Generator | None = None,
                     chunk: int = 1) -> Iterator[dict[str, torch.Tensor]]:
        """Shuffled minibatches of ``batch_size`` transitions, ``n_epochs`` passes over the rollout.

        A last partial batch is kept (merged into no other), so every sample is used each epoch. With
        recurrent hidden states the rollout is cut into sequences of ``chunk`` steps instead
        (:meth:`chunked_batches`).
        """
        if self.actor_hidden is not None:
            yield from self.chunked_batches(batch_size, n_epochs, chunk, generator)
            return
        total = self.n_steps * self.num_envs
        flat = {name: getattr(self, name).reshape(total, *getattr(self, name).shape[2:]) for name in self.fields}
        flat["critic_obs"] = (self.critic_obs.reshape(total, -1) if self.critic_obs is not None else flat["obs"])
        if self.active is not None:
            flat["active"] = self.active.reshape(total).float()
        size = max(1, min(batch_size, total))
        for _ in range(n_epochs):
            order = self._order(total, generator)
            for start in range(0, total, size):
                idx = order[start:start + size]
                yield {name: value[idx] for name, value in flat.items()}

    def _order(self, total: int, generator: torch.Generator | None) -> torch.Tensor:
        """An epoch's minibatch order, drawn where the rollout is. On a GPU it comes from a stream of the
        GPU's seeded by a draw of ``generator`` (a CPU stream, which a checkpoint keeps): an order drawn on
        the CPU would reach the GPU by a copy from pageable memory, a quarter of an update at 65,536 envs."""
        if self.device.type == "cpu" or generator is None:
            return torch.randperm(total, generator=generator, device=self.device)
        if self._device_generator is None:
            self._device_generator = torch.Generator(device=self.device)
        self._device_generator.manual_seed(int(torch.randint(1 << 62, (), generator=generator)))
        return torch.randperm(total, generator=self._device_generator, device=self.device)

    def chunked_batches(self, batch_size: int, n_epochs: int, chunk: int, generator: torch.Generator | None = None
                        ) -> Iterator[dict[str, torch.Tensor]]:
        """Minibatches of whole sequences for recurrent policies (MAPPO's data chunks).

        Each env's rollout is cut into ``n_steps / chunk`` sequences of ``chunk`` steps; a minibatch
        holds ``batch_size / chunk`` of them, shuffled. It carries the inputs as ``[chunk, B, ...]``
        (``obs_seq``, ``critic_seq``), the hidden states stored at each sequence's first step
        (``actor_h0``, ``critic_h0``), ``starts`` (an episode began at that step: zero the state
        first), and every other field flattened time-major, the order the model's outputs come in.
        """
        if chunk < 1 or self.n_steps % chunk:
            raise ValueError(f"data_chunk_length {chunk} must divide n_steps {self.n_steps}")
        assert self.actor_hidden is not None and self.critic_hidden is not None
        count, envs = self.n_steps // chunk, self.num_envs

        def seq(x: torch.Tensor) -> torch.Tensor:  # [T, R, ...] -> [chunk, count·R, ...]
            rest = x.shape[2:]
            return x.reshape(count, chunk, envs, *rest).transpose(0, 1).reshape(chunk, count * envs, *rest)

        starts = torch.zeros_like(self.done)
        starts[1:] = self.done[:-1]  # the state stored at a sequence's first step is already reset
        data = {name: seq(getattr(self, name)) for name in self.fields}
        data["critic_seq"] = seq(self.critic_obs) if self.critic_obs is not None else data["obs"]
        if self.active is not None:
            data["active"] = seq(self.active.float())
        data["starts"] = seq(starts)
        h0 = {"actor_h0": self.actor_hidden[::chunk].reshape(count * envs, -1),
              "critic_h0": self.critic_hidden[::chunk].reshape(count * envs, -1)}
        total = count * envs
        size = max(1, min(batch_size // chunk, total))
        for _ in range(n_epochs):
            order = self._order(total, generator)
            for start in range(0, total, size):
                idx = order[start:start + size]
                batch = {name: value[:, idx].reshape(-1, *value.shape[2:]) for name, value in data.items()
                         if name not in ("starts", "critic_seq")}
                batch["obs_seq"], batch["critic_seq"] = data["obs"][:, idx], data["critic_seq"][:, idx]
                batch["critic_obs"] = batch["critic_seq"].reshape(-1, batch["critic_seq"].shape[-1])
                batch["starts"] = data["starts"][:, idx]
                batch.update({name: value[idx] for name, value in h0.items()})
                yield batch
