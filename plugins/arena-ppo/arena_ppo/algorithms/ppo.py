"""PPO (cleanrl's checklist): acting in a rollout, and the update, pure tensors in, losses out.

The runner owns the env, I/O and schedules; this class owns the rollout it learns from, as rsl_rl's
does: :meth:`PPO.act` samples the learner's actions and :meth:`PPO.process_env_step` builds and stores
each step's transition from what the env returned. The update turns a filled rollout into gradient
steps, so it can be tested on a hand-made one.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch
from torch import nn

from arena.env.compiled import say_once, use_compile_cache
from arena.env.teams import seat_rows
from arena_ppo.modules import ActorCritic, ValueNorm, ValueNormalizer
from arena_ppo.modules.actor_critic import MASKED_LOGIT
from arena_ppo.storage import RolloutStorage, Transition
from arena_ppo.train_config import PPOConfig

if TYPE_CHECKING:
    from arena_ppo.agent import PPOAgent
    from arena_ppo.modules import RecurrentActorCritic

Hidden = dict[str, torch.Tensor]  # a recurrent learner's "actor" and "critic" state per aircraft row ({} otherwise)


class UpdateSync(Protocol):
    """What the update asks of the processes of a run (:class:`~arena_ppo.algorithms.update_sync.GroupUpdate`
    does it over a group; one process has none)."""

    def average_gradients(self, params: Iterable[torch.nn.Parameter], *scalars: torch.Tensor) -> torch.Tensor: ...

    def average(self, values: torch.Tensor) -> torch.Tensor: ...

    def mean_std(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

# The adaptive rate brakes, it does not accelerate: it stays in [LR_MIN, --learning-rate]. rsl_rl lets it
# climb to 1e-2; here it then swung between 2.6e-4 and 4.4e-3 and a policy winning 99 % fell to 78 %.
LR_MIN = 1e-5


def gaussian_kl(mean_old: torch.Tensor, log_std_old: torch.Tensor, mean: torch.Tensor,
                log_std: torch.Tensor) -> torch.Tensor:
    """KL(old ‖ new) of the pre-squash Gaussians — equal to the KL of the squashed ones (tanh is a bijection)."""
    var_old, var = torch.exp(2 * log_std_old), torch.exp(2 * log_std)
    return log_std - log_std_old + (var_old + (mean_old - mean).square()) / (2 * var) - 0.5


def bernoulli_kl(logit_old: torch.Tensor, logit: torch.Tensor) -> torch.Tensor:
    p_old = torch.sigmoid(logit_old)
    log_p, log_q = nn.functional.logsigmoid(logit_old), nn.functional.logsigmoid(logit)
    log_1p, log_1q = nn.functional.logsigmoid(-logit_old), nn.functional.logsigmoid(-logit)
    return p_old * (log_p - log_q) + (1 - p_old) * (log_1p - log_1q)


def distillation_loss(mean: torch.Tensor, logit: torch.Tensor, teacher_rudder: torch.Tensor,
                      teacher_fire: torch.Tensor) -> torch.Tensor:
    """Per-row distance of the policy from a teacher's action (kickstarting): the squared error of the
    mean rudder (the Gaussian's log-likelihood at a fixed std) plus the cross-entropy of the trigger,
    where the trigger is not masked (a masked one cannot follow a teacher that fires)."""
    rudder = (torch.tanh(mean) - teacher_rudder).square()
    trigger = nn.functional.binary_cross_entropy_with_logits(logit, teacher_fire, reduction="none")
    return rudder + trigger.masked_fill(logit <= MASKED_LOGIT, 0.0)


def compile_update(device: torch.device) -> tuple[bool, str]:
    """Whether the update's gradient step compiles on ``device``, and why not when it does not.

    ``ARENA_COMPILE`` (auto, 1, 0) decides as it does for the env step. Auto compiles on a GPU, where an
    eager step is bound by launching its kernels, and not on the CPU: there the compiled step measured
    1.37x the eager one alone, but nothing in a training run with another run beside it
    (docs/experiments/2026-11-26-compiled-update.md), and it costs 27 s to compile on an empty cache.
    """
    from arena.env.compiled import compile_setting, missing_compiler

    choice = compile_setting()
    if choice is False:
        return False, "ARENA_COMPILE=0"
    if choice is None and device.type != "cuda":
        return False, f"auto: eager on the {device.type.upper()}; ARENA_COMPILE=1 compiles"
    problem = missing_compiler(device)
    return (False, problem) if problem is not None else (True, "")


class _ProfilerNote(logging.Filter):
    """Drops torch's note that Adam's profiler annotation is left out of a compiled graph: true, harmless,
    and nothing a user can act on, printed in the middle of a training run's console."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Profiler record function" not in str(record.msg)


def quiet_profiler_note() -> None:
    log = logging.getLogger("torch._dynamo.variables.ctx_manager")
    if not any(isinstance(f, _ProfilerNote) for f in log.filters):
        log.addFilter(_ProfilerNote())


def adapt_learning_rate(lr: torch.Tensor, kl: torch.Tensor, cfg: PPOConfig) -> None:
    """rsl_rl's adaptive rate, in place on the device: keep the KL near its target, braking by 1.5 when it
    is over twice the target and easing back (up to ``cfg.learning_rate``) when under half of it.

    ``lr`` is a float64 tensor and ``kl`` is compared in float64, so the rate moves exactly as the same
    rule computed in Python floats would, without reading the KL to the host.
    """
    kl = kl.detach().to(torch.float64)
    lower = torch.clamp(lr / 1.5, min=LR_MIN)
    higher = torch.clamp(lr * 1.5, max=cfg.learning_rate)
    eased = torch.where((kl > 0.0) & (kl < cfg.desired_kl / 2.0), higher, lr)
    lr.copy_(torch.where(kl > 2.0 * cfg.desired_kl, lower, eased))


class PPO:
    """Clipped-surrogate PPO with value clipping and normalization, and a KL-adaptive learning rate (rsl_rl).

    The update is a function of tensors, as LeanRL's: a filled rollout in, the parameters and the
    optimizer's state moved in place, the mean of each loss part out as tensors; nothing inside it is
    read to the host (the learning rate is a tensor the optimizer reads, moved by
    :func:`adapt_learning_rate`), so the caller reads the statistics once an update.

    ``sync`` (training on several processes) makes every process take the same step: gradients and
    the KL that steers the adaptive learning rate are averaged over the processes, advantages are
    normalized with the statistics of all their rollouts, and the logged losses are the average.
    Without it, nothing leaves this process.
    """

    def __init__(self, model: ActorCritic, cfg: PPOConfig, value_normalizer: ValueNormalizer | ValueNorm | None = None,
                 sync: UpdateSync | None = None, compiled: bool = False) -> None:
        self.model = model
        self.cfg = cfg
        self.value_normalizer = value_normalizer
        self.sync = sync
        self.kickstart_coef = 0.0  # weight of the teacher's loss (the runner sets it when a teacher labels)
        self.storage: RolloutStorage | None = None  # the rollout this algorithm learns from (init_storage)
        self.hidden: Hidden = {}  # a recurrent policy's state per row while it collects (init_acting)
        # The gradient step compiled whole (loss, backward, clip, Adam), or eager.
        self.compiled = compiled
        self.eager_reason = ""  # the compiler's words when it failed here and the update fell back to eager
        if compiled:
            quiet_profiler_note()
            use_compile_cache()
        self.reset_optimizer()

    def reset_optimizer(self) -> None:
        """A fresh optimizer at the configured learning rate (a new stage of a run starts from here): the
        weights, the rollout, the acting state and the teacher's weight stay. A compiled step is traced
        again for the new optimizer; one that fell back to eager stays eager."""
        device = next(self.model.parameters()).device
        self.lr = torch.tensor(self.cfg.learning_rate, dtype=torch.float64, device=device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.cfg.learning_rate, eps=self.cfg.adam_eps)
        self.set_learning_rate(self.cfg.learning_rate)
        self._descend: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]] = (
            torch.compile(self.descend, dynamic=False) if self.compiled else self.descend)
        self._proven: set[int] = set()  # minibatch sizes the compiled step has compiled for (dynamic=False)

    # -- the rollout (rsl_rl's init_storage, act, process_env_step, compute_returns) --------------------

    def init_storage(self, storage: RolloutStorage) -> None:
        """Learn from ``storage``: transitions go in with :meth:`store`, returns with :meth:`compute_returns`."""
        self.storage = storage

    def init_acting(self, agent: PPOAgent, generator: torch.Generator, active_masks: bool = False,
                    hidden: Hidden | None = None) -> None:
        """Collect rollouts with ``agent``'s policy, sampling from ``generator`` (a recurrent one carries
        its ``hidden`` state per row, zeros when None). ``active_masks``: keep whether each aircraft was
        alive, so dead ones add no loss (MAPPO)."""
        assert self.storage is not None, "init_storage() first"
        self.agent, self.generator = agent, generator
        self.alive_column = agent.obs_keys.index("alive") if active_masks else None
        if hidden is None:
            model, rows = cast("RecurrentActorCritic", agent.model), self.storage.num_envs
            hidden = ({"actor": torch.zeros(rows, model.actor_hidden_size, device=self.storage.device),
                       "critic": torch.zeros(rows, model.critic_hidden_size, device=self.storage.device)}
                      if agent.recurrent else {})
        self.hidden = hidden

    def act(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[rows, 3]`` actions (rudder, throttle, fire as 0/1) sampled for the observation rows ``obs``
        (``"policy"``, and ``"critic"`` for a privileged critic); what the transition needs is kept for
        :meth:`process_env_step`."""
        agent = self.agent
        features = agent.training_input(obs["policy"])
        critic_in = agent.critic_input(features, obs.get("critic"))
        actor_h, critic_h = self.hidden.get("actor"), self.hidden.get("critic")
        out = agent.policy(features, self.generator, hidden=actor_h)
        value, critic_next = agent.values(critic_in, critic_h)
        active = None if self.alive_column is None else obs["policy"][:, self.alive_column] > 0.5
        self._acted = (features, critic_in, out, value, critic_next, active)
        return torch.stack((out.rudder, torch.ones_like(out.rudder), out.fire), dim=-1)

    def process_env_step(self, rewards: torch.Tensor, dones: torch.Tensor, extras: dict[str, Any]) -> None:
        """Store the step :meth:`act` began: battles cut off by the time limit bootstrap from the value of
        their final observation (``extras["final_obs"]``, where ``extras["truncated"]``), and a recurrent
        policy's state starts from zero where a battle ended."""
        agent, (features, critic_in, out, value, critic_next, active) = self.agent, self._acted
        final_value = self.value_of(extras["final_obs"], critic_next)  # = the next obs where the battle goes on
        teacher_rudder, teacher_fire = extras.get("teacher", (None, None))
        self.store(Transition(
            obs=features, critic_obs=critic_in if agent.privileged_critic else None, u=out.u, fire=out.fire,
            log_prob=out.log_prob, value=value, reward=rewards, done=dones,
            bootstrap=torch.where(extras["truncated"], final_value, torch.zeros_like(final_value)),
            mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit, active=active,
            actor_hidden=self.hidden.get("actor"), critic_hidden=self.hidden.get("critic"),
            teacher_rudder=teacher_rudder, teacher_fire=teacher_fire))
        if agent.recurrent:
            keep = (~dones).unsqueeze(-1).to(features.dtype)
            assert out.hidden is not None and critic_next is not None
            self.hidden = {"actor": out.hidden * keep, "critic": critic_next * keep}

    def forget(self, envs: torch.Tensor) -> None:
        """Battles of the ``[N]`` bool mask ``envs`` started over: a recurrent policy's state there is zero."""
        if self.hidden:
            seats = self.hidden["actor"].shape[0] // envs.shape[0]
            keep = (~seat_rows(envs, seats)).unsqueeze(-1).to(self.hidden["actor"].dtype)
            self.hidden = {k: v * keep for k, v in self.hidden.items()}

    def store(self, transition: Transition) -> None:
        """One step of every env."""
        assert self.storage is not None, "init_storage() first"
        self.storage.add(transition)

    def compute_returns(self, obs: dict[str, torch.Tensor]) -> None:
        """Advantages and returns of the full rollout (GAE, time-outs bootstrapped), from the value of
        ``obs``, the state after its last step."""
        assert self.storage is not None, "init_storage() first"
        self.storage.compute_returns(self.value_of(obs, self.hidden.get("critic")), self.cfg.gamma, self.cfg.gae_lambda)

    def value_of(self, obs: dict[str, torch.Tensor], critic_hidden: torch.Tensor | None) -> torch.Tensor:
        """V(``obs``) in return units, a look that leaves the normalizers alone (the bootstrap values)."""
        agent = self.agent
        features = agent.training_input(obs["policy"], commit=False)
        return agent.values(agent.critic_input(features, obs.get("critic"), commit=False), critic_hidden)[0]

    @property
    def learning_rate(self) -> float:
        """The current rate (a read to the host: between updates only)."""
        return float(self.lr)

    def set_learning_rate(self, lr: float) -> None:
        self.lr.fill_(float(lr))
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr  # every group reads the one tensor, so adapting it needs no host round trip
        # Eager Adam with a tensor rate takes torch's per-parameter path, which reads the rate per parameter:
        # free on the CPU, a wait per parameter on a GPU (compiled, the default there, it reads nothing).

    def loss(self, batch: dict[str, torch.Tensor],
             advantages: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Total loss of one minibatch (a scalar that back-propagates) and its parts, detached.

        With ``batch["active"]`` (MAPPO's active masks) only the rows of aircraft that were alive count:
        a dead aircraft's actions change nothing, so they add no policy, entropy or value loss.
        """
        cfg = self.cfg
        active = batch.get("active")

        def avg(x: torch.Tensor) -> torch.Tensor:
            return x.mean() if active is None else (x * active).sum() / active.sum().clamp(min=1.0)

        log_prob, entropy, mean, log_std, logit = self.model.evaluate_batch(batch)
        log_ratio = log_prob - batch["log_prob"]
        ratio = torch.exp(log_ratio)
        surrogate = -advantages * ratio
        clipped = -advantages * ratio.clamp(1 - cfg.clip_epsilon, 1 + cfg.clip_epsilon)
        policy_loss = avg(torch.max(surrogate, clipped))

        value = self.model.value_batch(batch)
        returns, old_value = batch["returns"], batch["value"]
        if self.value_normalizer is not None:  # compare in the critic's normalized units
            if getattr(self.value_normalizer, "per_minibatch", False):  # MAPPO's ValueNorm, as in its value loss
                self.value_normalizer.update(returns if active is None else returns[active > 0])
            returns, old_value = self.value_normalizer.normalize(returns), self.value_normalizer.normalize(old_value)
        if cfg.clip_value_loss:
            value_clipped = old_value + (value - old_value).clamp(-cfg.clip_epsilon, cfg.clip_epsilon)
            value_loss = avg(torch.max((value - returns).square(), (value_clipped - returns).square()))
        else:
            value_loss = avg((value - returns).square())

        entropy_mean = avg(entropy)
        total = policy_loss + cfg.value_loss_coef * value_loss - cfg.entropy_coef * entropy_mean
        teacher = None
        if self.kickstart_coef > 0 and "teacher_rudder" in batch:
            teacher = avg(distillation_loss(mean, logit, batch["teacher_rudder"], batch["teacher_fire"]))
            total = total + self.kickstart_coef * teacher
        with torch.no_grad():
            parts = {
                "policy_loss": policy_loss.detach(),
                "value_loss": value_loss.detach(),
                "entropy": entropy_mean.detach(),
                "approx_kl": avg((ratio - 1) - log_ratio),  # cleanrl's low-variance estimator
                "clip_fraction": avg(((ratio - 1).abs() > cfg.clip_epsilon).float()),
                "kl": avg(gaussian_kl(batch["mean"], batch["log_std"], mean, log_std)
                          + bernoulli_kl(batch["fire_logit"], logit)),
            }
            if teacher is not None:
                parts["kickstart_loss"] = teacher.detach()
        return total, parts

    def update(self, storage: RolloutStorage | None = None, generator: torch.Generator | None = None
               ) -> dict[str, torch.Tensor]:
        """Epochs of minibatch steps over a filled storage (its own by default); returns the mean of each loss
        part and the learning rate after the update, as tensors (float64: the reader's float)."""
        cfg = self.cfg
        storage = storage if storage is not None else self.storage
        assert storage is not None, "init_storage() first, or pass a filled storage"
        if self.value_normalizer is not None and not getattr(self.value_normalizer, "per_minibatch", False):
            self.value_normalizer.update(storage.returns.reshape(-1, 1))
        adv_all = storage.advantages
        if cfg.normalize_advantages:
            active = storage.active
            # the statistics of the rows that count (MAPPO normalizes over active rows only)
            rows = adv_all if active is None else adv_all[active]
            mean, std = (rows.mean(), rows.std()) if self.sync is None else self.sync.mean_std(rows)
            storage.advantages = (adv_all - mean) / (std + 1e-8)
        sums: dict[str, torch.Tensor] = {}
        batches = 0
        self.model.train()
        try:
            for batch in storage.mini_batches(cfg.batch_size, cfg.n_epochs, generator, chunk=cfg.data_chunk_length):
                for key, value in self.minibatch_step(batch).items():
                    sums[key] = sums.get(key, 0.0) + value
                batches += 1
        finally:
            storage.advantages = adv_all
        if self.sync is not None and sums:
            sums = dict(zip(sums, self.sync.average(torch.stack(list(sums.values())))))
        out = {key: value.double() / max(batches, 1) for key, value in sums.items()}
        out.pop("kl", None)
        out["learning_rate"] = self.lr.clone()
        return out

    def minibatch_step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One gradient step on one minibatch (:meth:`descend`, compiled when asked), then the adaptive rate
        (rsl_rl: per minibatch, capped at the configured rate); returns the loss parts, detached.

        The rate is moved outside the compiled step: the compiled optimizer reads the rate tensor at each
        call, but an in-place change made inside the compiled graph does not reach it.
        """
        rows = batch["advantages"].shape[0]
        parts = self._descend(batch) if not self.compiled or rows in self._proven else self._first_descent(batch)
        if self.cfg.lr_schedule == "adaptive":
            adapt_learning_rate(self.lr, parts["kl"], self.cfg)
        return parts

    def descend(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The loss, its gradient (averaged over the processes), the clip and Adam's step."""
        loss, parts = self.loss(batch, batch["advantages"])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.sync is not None:  # every process steps with the same gradient, and reads the same KL
            parts["kl"] = self.sync.average_gradients(self.model.parameters(), parts["kl"])
        nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm)
        self.optimizer.step()
        return parts

    def _first_descent(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The compiled step's first call for a minibatch size (a short last minibatch compiles a graph of
        its own). If the compiler fails on this machine (no C++ toolchain, a broken Triton), the weights,
        Adam's moments, the rate and the value normalizer go back to where the step found them, and this
        and every later step run eagerly (said once)."""
        normalizer = self.value_normalizer
        saved = ({k: v.detach().clone() for k, v in self.model.state_dict().items()},
                 copy.deepcopy(self.optimizer.state_dict()), float(self.lr),
                 {k: v.clone() for k, v in normalizer.state_dict().items()} if normalizer is not None else None)
        try:
            parts = self._descend(batch)
        except torch._dynamo.exc.TorchDynamoException as exc:
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            self.eager_reason = f"{type(exc).__name__}: {first}"
            say_once(f"arena: compiling the PPO update failed ({self.eager_reason}); it runs eagerly")
            self.model.load_state_dict(saved[0])
            self.optimizer.load_state_dict(saved[1])
            self.set_learning_rate(saved[2])
            if normalizer is not None and saved[3] is not None:
                normalizer.load_state_dict(saved[3])
            self.compiled, self._descend = False, self.descend
            return self._descend(batch)
        self._proven.add(batch["advantages"].shape[0])
        return parts

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state with its rate as a number (as checkpoints have always held it)."""
        optimizer = self.optimizer.state_dict()
        optimizer["param_groups"] = [{**group, "lr": self.learning_rate} for group in optimizer["param_groups"]]
        return {"optimizer": optimizer, "learning_rate": self.learning_rate}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.set_learning_rate(state["learning_rate"])
