"""PPOAgent: the trained policy as an arena agent (``ppo``, or ``ppo:PATH`` to load a checkpoint).

Train mode samples (squashed-Gaussian rudder, Bernoulli fire); eval mode is deterministic, which is
how `arena play` and tournaments use it: the rudder is ``tanh(mean)`` and the trigger is pulled at the
median moment at which the sampling policy would have fired (see :meth:`PPOAgent.fire_decision`).
Throttle is always full. Observations are scaled with the normalizer statistics saved in the
checkpoint, so a policy sees the same inputs in evaluation as in training.
"""

from __future__ import annotations

import os
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

from arena.agents import BaseAgent
from arena.guard import head
from arena.training.checkpoint import CheckpointError, load_checkpoint
from arena_ppo.train_config import NetworkConfig

if TYPE_CHECKING:  # torch loads when an agent is built, not when `arena agents` lists this class
    from collections.abc import Hashable, Sequence

    import torch

    from arena.env import EnvConfig
    from arena.families import Stream
    from arena_ppo.modules import ActorCritic, PolicyOutput, RecurrentActorCritic, ValueNorm, ValueNormalizer
    from arena_ppo.policy_family import PolicyFamily

FORMAT_VERSION = 1


class PPOAgent(BaseAgent):
    """Actor-critic policy with its observation (and optional value) normalizers."""

    name: ClassVar[str] = "ppo"
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = "PPO policy (squashed-Gaussian rudder, Bernoulli fire); ppo:PATH loads a checkpoint"

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None,
                 network: NetworkConfig | dict[str, Any] | None = None, obs_norm: bool = True,
                 privileged_critic: bool = False, value_norm: bool = False) -> None:
        from arena.env.observations import LAUNCH_CLEAR_KEY, LAUNCH_KEY, global_state_size, obs_keys
        from arena_ppo.modules import RunningNormalizer

        super().__init__(device=device, env_config=env_config)
        # A copy: the input sizes resolved here never write into the caller's config.
        net = NetworkConfig.from_dict(network) if isinstance(network, dict) else replace(network or NetworkConfig())
        # The trigger's mask reads the first input (modules.actor_critic.mask_trigger).
        mask_key = LAUNCH_CLEAR_KEY if net.hold_fire_while_guiding else LAUNCH_KEY
        self.obs_keys = ((mask_key,) if net.fire_mask else ()) + obs_keys(self.env_config)
        obs_size = len(self.obs_keys)
        state_size = global_state_size(self.env_config)
        net.obs_dim = obs_size + self.seat_columns
        net.critic_obs_dim = state_size + self.seat_columns if privileged_critic else net.obs_dim
        self.network = net
        self.privileged_critic = privileged_critic
        self.model = self.build_model(net).to(self.device)
        self.obs_normalizer = RunningNormalizer(obs_size).to(self.device) if obs_norm else None
        self.critic_normalizer = (RunningNormalizer(state_size).to(self.device)
                                  if obs_norm and privileged_critic else None)
        self.value_normalizer = self.build_value_normalizer().to(self.device) if value_norm else None
        self.fire_rule = "median"  # eval-mode trigger; "threshold" fires when p > 0.5 (see fire_decision)
        self.fire_hazard: torch.Tensor | None = None  # [N] accumulated -log(1 - p) since the last launch
        self.play_hidden: torch.Tensor | None = None  # [N, H] recurrent actor state while playing (not training)
        self.model.eval()

    # -- what differs in subclasses (MAPPO) --------------------------------------------------------

    @property
    def seat_columns(self) -> int:
        """Columns appended to every actor and critic input to say which seat a row flies (none here)."""
        return 0

    def build_model(self, net: NetworkConfig) -> "ActorCritic":
        from arena_ppo.modules import ActorCritic, RecurrentActorCritic

        return RecurrentActorCritic(net) if net.recurrent else ActorCritic(net)

    def build_value_normalizer(self) -> "ValueNormalizer | ValueNorm":
        from arena_ppo.modules import ValueNormalizer

        return ValueNormalizer()

    def with_seats(self, rows: "torch.Tensor") -> "torch.Tensor":
        """Actor or critic input rows with the seat columns appended (unchanged here)."""
        return rows

    # -- acting -----------------------------------------------------------------------------------

    def features(self, observation: "dict[str, torch.Tensor]") -> "torch.Tensor":
        """The actor's input: the observation stacked in canonical order and normalized."""
        from arena.env import obs_vector

        x = obs_vector(observation, self.obs_keys)
        return self.obs_normalizer(x) if self.obs_normalizer is not None else x

    def critic_features(self, observation: "torch.Tensor", global_state: "torch.Tensor | None") -> "torch.Tensor":
        """The critic's input: the actor's features, or the (normalized) global state with a privileged critic."""
        if not self.privileged_critic:
            return observation
        if global_state is None:
            raise ValueError("this agent's critic reads the global state; pass env.global_state(player)")
        state = self.critic_normalizer(global_state) if self.critic_normalizer is not None else global_state
        return self.with_seats(state)

    @property
    def recurrent(self) -> bool:
        return bool(getattr(self.model, "recurrent", False))

    def policy(self, features: "torch.Tensor", generator: "torch.Generator | None" = None,
               hidden: "torch.Tensor | None" = None) -> "PolicyOutput":
        """One step of the policy. A recurrent one takes ``hidden`` from the trainer; when none is given
        (playing) it carries its own per-row state, cleared by :meth:`reset`."""
        deterministic = not self.training
        if not self.recurrent:
            return self.model.act(features, deterministic=deterministic, generator=generator)
        model = cast("RecurrentActorCritic", self.model)  # what a recurrent model is
        playing = hidden is None
        if playing:
            rows = features.shape[0]
            state = self.play_hidden
            if state is None or state.shape[0] != rows or state.device != features.device:
                state = features.new_zeros(rows, model.actor_hidden_size)
            hidden = state
        out = model.act(features, deterministic=deterministic, generator=generator, hidden=hidden)
        if playing:
            self.play_hidden = out.hidden
        return out

    def value(self, critic_features: "torch.Tensor") -> "torch.Tensor":
        """V(s) in return units (undoing value normalization)."""
        return self.denormalized(self.model.value(critic_features))

    def value_step(self, critic_features: "torch.Tensor", hidden: "torch.Tensor"
                   ) -> "tuple[torch.Tensor, torch.Tensor]":
        """A recurrent critic's V(s) in return units and its next hidden state."""
        v, h = cast("RecurrentActorCritic", self.model).value_step(critic_features, hidden)
        return self.denormalized(v), h

    def values(self, critic_features: "torch.Tensor", hidden: "torch.Tensor | None" = None
               ) -> "tuple[torch.Tensor, torch.Tensor | None]":
        """V(s) in return units, and a recurrent critic's next hidden state (given its ``hidden``)."""
        return self.value_step(critic_features, hidden) if hidden is not None else (self.value(critic_features), None)

    # -- the learner's inputs while it trains --------------------------------------------------------

    def training_input(self, x: "torch.Tensor", commit: bool = True) -> "torch.Tensor":
        """The actor's input for ``[rows, K]`` observation vectors (this agent's keys, in order), with seats.
        ``commit``: the step being played, which moves the normalizer's statistics; otherwise a look
        (bootstrap values) that leaves them alone."""
        if self.obs_normalizer is not None:
            if commit:
                self.obs_normalizer.update(x)
            x = self.obs_normalizer(x)
        return self.with_seats(x)

    def critic_input(self, features: "torch.Tensor", global_state: "torch.Tensor | None",
                     commit: bool = True) -> "torch.Tensor":
        """The critic's input while training: ``features``, or the global state with a privileged critic
        (``commit`` as in :meth:`training_input`)."""
        if commit and self.privileged_critic and self.critic_normalizer is not None and global_state is not None:
            self.critic_normalizer.update(global_state)  # none: critic_features says it is missing
        return self.critic_features(features, global_state)

    def denormalized(self, v: "torch.Tensor") -> "torch.Tensor":
        return self.value_normalizer.denormalize(v) if self.value_normalizer is not None else v

    def act(self, observation: "dict[str, torch.Tensor]") -> "dict[str, torch.Tensor]":
        """The action only: play computes no log-probability and no value."""
        import torch

        from arena_ppo.policy_family import draws, sampled_controls

        with torch.no_grad():
            features = self.features(observation)
            if self.recurrent:
                out = self.policy(features)
                rudder, fire, logit = out.rudder, out.fire > 0.5, out.fire_logit
            else:
                mean, log_std, logit = self.model.actor(features)
                if self.training:
                    rudder, fire = sampled_controls(mean, log_std, logit, *draws(mean.shape[0], mean))
                else:
                    rudder = torch.tanh(mean)
            if not self.training:
                fire = self.fire_decision(logit)
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}

    def fire_decision(self, logit: "torch.Tensor") -> "torch.Tensor":
        """The deterministic trigger of eval mode.

        The policy learns a per-step launch probability p. Where firing now or a few seconds later
        is worth about the same, it settles on a moderate p (0.1–0.4) held over several steps, and
        "fire when p > 0.5" then never fires: a policy that wins 99 % of its sampled games drew most
        of its deterministic ones. The "median" rule fires when the hazard accumulated since the
        last launch, sum of -log(1 - p) = softplus(logit), reaches ln 2: the median step at which
        the sampling policy would have launched along the same states. A p above 0.5 still fires at
        once. Per-env memory, cleared by :meth:`reset` and by each launch.
        """
        from arena_ppo.policy_family import played_trigger

        fire, self.fire_hazard = played_trigger(self.fire_rule, self.fire_hazard, logit)
        return fire

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        """New battles start with no accumulated launch hazard (and a zero recurrent state)."""
        if env_mask is None:
            self.fire_hazard = self.play_hidden = None
            return
        if self.fire_hazard is not None and env_mask.shape == self.fire_hazard.shape:
            self.fire_hazard = self.fire_hazard.masked_fill(env_mask.to(self.fire_hazard.device), 0.0)
        if self.play_hidden is not None and env_mask.shape[0] == self.play_hidden.shape[0]:
            self.play_hidden = self.play_hidden.masked_fill(env_mask.to(self.play_hidden.device).unsqueeze(-1), 0.0)

    def keep_rows(self, rows: "torch.Tensor") -> None:
        """Keep the per-env memory of ``rows`` only, in that order (a batch dropped its finished battles)."""
        if self.fire_hazard is not None:
            self.fire_hazard = self.fire_hazard[rows.to(self.fire_hazard.device)]
        if self.play_hidden is not None:
            self.play_hidden = self.play_hidden[rows.to(self.play_hidden.device)]

    # -- acting as one with policies of the same shape (a league's checkpoints) ---------------------

    def family_key(self) -> "Hashable | None":
        from arena_ppo.policy_family import family_key

        return family_key(self)

    @classmethod
    def act_together(cls, members: "Sequence[PPOAgent]", rows: "Sequence[int]",
                     streams: "Sequence[Stream]") -> "PolicyFamily":
        from arena_ppo.policy_family import PolicyFamily

        return PolicyFamily(members, rows, streams)

    def train(self, mode: bool = True) -> "PPOAgent":
        super().train(mode)
        self.model.train(mode)
        return self

    def eval(self) -> "PPOAgent":
        return self.train(False)

    def to(self, device: "str | torch.device") -> "PPOAgent":
        super().to(device)
        for module in (self.model, self.obs_normalizer, self.critic_normalizer, self.value_normalizer):
            if module is not None:
                module.to(self.device)
        return self

    # -- export -----------------------------------------------------------------------------------

    def export_module(self) -> "torch.nn.Module":
        """The deterministic actor as one stateless module for ``arena export``: observation vector
        ([n, len(obs_keys)], canonical order) in; ``action`` [n, 3] (rudder, throttle, fire as 0/1) and
        ``fire_logit`` [n] out. The trigger is "fire when p > 0.5" (``fire_rule = "threshold"``); the
        default median rule keeps a per-battle hazard, which a caller can keep from ``fire_logit``."""
        import copy

        from torch import nn

        if self.recurrent:
            raise ValueError("a recurrent policy carries a state between steps; arena export takes policies of one "
                             "observation only")
        if self.seat_columns:
            raise ValueError(f"{self.name} reads a seat one-hot beside the observation; arena export takes "
                             f"feed-forward PPO policies only")
        actor = copy.deepcopy(self.model.actor).cpu().eval()
        normalizer = copy.deepcopy(self.obs_normalizer).cpu().eval() if self.obs_normalizer is not None else None

        class ExportedPolicy(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.normalizer = normalizer if normalizer is not None else nn.Identity()
                self.actor = actor

            def forward(self, obs: "torch.Tensor") -> "tuple[torch.Tensor, torch.Tensor]":
                import torch

                mean, _, logit = self.actor(self.normalizer(obs))
                rudder = torch.tanh(mean)
                fire = (logit > 0).to(rudder.dtype)
                return torch.stack((rudder, torch.ones_like(rudder), fire), -1), logit

        return ExportedPolicy().eval()

    # -- checkpoints ------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        return {"obs_norm": self.obs_normalizer is not None, "privileged_critic": self.privileged_critic,
                "value_norm": self.value_normalizer is not None}

    def weights(self) -> dict[str, Any]:
        """Network weights and normalizer statistics: everything needed to act and to evaluate the critic."""
        out: dict[str, Any] = {"model": self.model.state_dict()}
        for key in ("obs_normalizer", "critic_normalizer", "value_normalizer"):
            module = getattr(self, key)
            if module is not None:
                out[key] = module.state_dict()
        return out

    def checkpoint(self, **extra: Any) -> dict[str, Any]:
        """A weights_only-loadable checkpoint dict; ``extra`` adds trainer state (optimizer, counters, RNG)."""
        net = asdict(self.network)
        net["actor_hidden"], net["critic_hidden"] = list(net["actor_hidden"]), list(net["critic_hidden"])
        return {"format_version": FORMAT_VERSION, "agent": self.name, "network": net, "options": self.options(),
                "env_config": self.env_config.to_dict(), **self.weights(), **extra}

    def load_weights(self, data: dict[str, Any]) -> None:
        """Weights and normalizer statistics from a checkpoint dict.

        Each state dict is compared with this agent's before loading, so a damaged file is refused
        with the first mismatched key and both shapes (torch's own message lists them on lines that a
        one-line error cuts off), and NaN or infinite weights are refused instead of playing NaN moves,
        as are normalizer statistics no run can produce (a negative variance: NaN for every input).
        """
        from arena.training.state_checks import check_like

        for key in ("model", "obs_normalizer", "critic_normalizer", "value_normalizer"):
            module = self.model if key == "model" else getattr(self, key)
            if module is None:
                continue
            if key not in data:
                raise ValueError(f"{key!r} missing; expected the {key} state of this network")
            check_like(data[key], dict(module.state_dict()), key)
            check_state = getattr(module, "check_state", None)  # the normalizers' own bounds
            if check_state is not None:
                check_state(data[key], key)
            module.load_state_dict(data[key])

    @classmethod
    def check_options(cls, value: Any) -> dict[str, Any]:
        return check_options(value)

    @classmethod
    def check_env(cls, saved: "EnvConfig", env: "EnvConfig", where: str) -> None:
        """Refuse an env this checkpoint cannot play in (before anything is built)."""
        check_seat(saved, env, where)

    @classmethod
    def load(cls, checkpoint: str | os.PathLike[str] | dict[str, Any], device: "str | torch.device" = "cpu",
             env_config: "EnvConfig | None" = None) -> "PPOAgent":
        """Rebuild an agent from a checkpoint file (or its loaded dict), in eval mode.

        Without ``env_config`` the env settings saved in the checkpoint are used; with one, its
        observation mode must match what the network was trained on.
        """
        import torch

        from arena.env import EnvConfig

        where = "checkpoint" if isinstance(checkpoint, dict) else f"checkpoint {checkpoint}"
        data = checkpoint if isinstance(checkpoint, dict) else load_checkpoint(checkpoint, expect_agent=cls.name,
                                                                               max_version=FORMAT_VERSION)
        if data.get("agent") != cls.name:
            raise CheckpointError(f"{where}: written by agent {data.get('agent')!r}, not {cls.name!r}")
        try:
            network, options = check_network(data.get("network")), cls.check_options(data.get("options"))
            if not isinstance(data.get("env_config"), dict):
                raise ValueError(f"env_config: expected a dict, got {type(data.get('env_config')).__name__}")
            saved_env = EnvConfig.from_dict(data["env_config"])
            if env_config is not None:
                cls.check_env(saved_env, env_config, where)
            # The network's inputs are those it was trained on: a 1-v-1 policy flies any seat of a team
            # on the standard keys; a team policy needs the same neighbour slots.
            # The initial weights are overwritten at once: drawn apart from the caller's random streams, so
            # that loading a checkpoint (a league's past self, say) leaves a training run's draws as they were.
            with torch.random.fork_rng(devices=[device] if torch.device(device).type == "cuda" else []):
                agent = cls(device=device, env_config=saved_env, network=network, **options)
            agent.load_weights(data)
            agent.env_config = env_config or saved_env
        except CheckpointError:
            raise
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{where}: damaged or incompatible PPO checkpoint "
                                  f"({type(exc).__name__}: {head(str(exc))})") from exc
        return agent.eval()


def check_seat(saved: "EnvConfig", env: "EnvConfig", where: str) -> None:
    """Refuse an env whose observation lacks keys the network was trained on.

    A 1-v-1 policy reads the standard keys, which every seat of every team size has; a team policy
    also reads its neighbour slots (``ally1_…``, ``enemy2_…``), which a larger team has too.
    """
    from arena.env.observations import obs_keys

    if env.obs_mode != saved.obs_mode:
        raise CheckpointError(f"{where}: trained with obs_mode={saved.obs_mode!r}, but the env uses "
                              f"obs_mode={env.obs_mode!r}; give it that observation (arena play --env "
                              f"obs_mode={saved.obs_mode}, or env: {{obs_mode: {saved.obs_mode}}} in a tournament)")
    missing = [k for k in obs_keys(saved) if k not in set(obs_keys(env))]
    if missing:
        raise CheckpointError(f"{where}: trained in team battles of {saved.team_size} (obs_neighbours "
                              f"{saved.obs_neighbours}); an env with team_size {env.team_size} and obs_neighbours "
                              f"{env.obs_neighbours} lacks the observation keys {', '.join(missing[:4])}"
                              f"{', …' if len(missing) > 4 else ''}; play it in teams of {saved.team_size} or more")


OPTION_KEYS = ("obs_norm", "privileged_critic", "value_norm")


def check_network(value: Any) -> dict[str, Any]:
    """A checkpoint's ``network`` entry, each value checked against its setting's declared range before
    anything is allocated (a hostile ``actor_hidden: [100000000]`` would otherwise take gigabytes)."""
    from arena.training.settings import check_value, settings_of
    from arena_ppo.train_config import SAVED_BEFORE, TrainConfig

    if not isinstance(value, dict):
        raise ValueError(f"network: expected a dict, got {type(value).__name__}")
    known = {s.name: s for s in settings_of(TrainConfig()) if s.section == "network"}
    checked = {key: check_value(known[key], item) for key, item in value.items() if key in known}
    return SAVED_BEFORE | checked


def check_options(value: Any) -> dict[str, bool]:
    if not isinstance(value, dict):
        raise ValueError(f"options: expected a dict, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in OPTION_KEYS)
    bad = [k for k in OPTION_KEYS if k in value and not isinstance(value[k], bool)]
    if unknown or bad:
        raise ValueError(f"options: expected true/false for {list(OPTION_KEYS)}, got {value!r}"[:300])
    return dict(value)
