"""MAPPOAgent: a team policy (``mappo``, or ``mappo:PATH``) trained by ``arena train mappo``.

One actor flies every seat of a side on that aircraft's own observation plus the one-hot of its seat
(``--policy shared``), or each seat has its own actor (``--policy separated``); the critic reads the
side's global state, so it is trained centrally and never needed to act. The agent takes its side as
a whole (``plays_team``): it needs to know which seat each aircraft flies, so it plays the team size
it was trained at. Everything else — normalizers, checkpoints, the deterministic eval-mode trigger —
is the PPO agent's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from arena.training.checkpoint import CheckpointError
from arena_ppo.agent import PPOAgent, check_options, check_seat
from arena_ppo.train_config import NetworkConfig

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig
    from arena_ppo.modules import ActorCritic, ValueNorm

POLICIES: tuple[str, ...] = ("shared", "separated")


class MAPPOAgent(PPOAgent):
    """Actor(s) on each aircraft's observation and seat, critic on the side's global state."""

    name: ClassVar[str] = "mappo"
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = "MAPPO team policy (shared or per-seat actors, central critic); mappo:PATH loads one"
    plays_team: ClassVar[bool] = True

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None,
                 network: NetworkConfig | dict[str, Any] | None = None, obs_norm: bool = True,
                 privileged_critic: bool = True, value_norm: bool = True, policy: str = "shared") -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if not privileged_critic:
            raise ValueError("MAPPO's critic reads the global state: privileged_critic must be true")
        self.policy_kind = policy
        super().__init__(device, env_config, network=network, obs_norm=obs_norm, privileged_critic=True,
                         value_norm=value_norm)

    @property
    def seats(self) -> int:
        return self.env_config.team_size

    @property
    def seat_columns(self) -> int:
        return self.seats

    def build_model(self, net: NetworkConfig) -> "ActorCritic":
        from arena_ppo.modules import RecurrentSeparatedActorCritic, SeparatedActorCritic

        if self.policy_kind == "separated":
            kind = RecurrentSeparatedActorCritic if net.recurrent else SeparatedActorCritic
            return kind(net, self.seats)
        return super().build_model(net)

    def build_value_normalizer(self) -> "ValueNorm":
        from arena_ppo.modules import ValueNorm

        return ValueNorm()

    def with_seats(self, rows: "torch.Tensor") -> "torch.Tensor":
        """Rows are a side's aircraft, seats next to each other: row r flies seat r mod T, its one-hot the
        identity's row r mod T (``one_hot`` checks its classes by reading them back on the CPU)."""
        import torch

        seats = torch.eye(self.seats, dtype=rows.dtype, device=rows.device).repeat(rows.shape[0] // self.seats, 1)
        return torch.cat((rows, seats), -1)

    # -- acting: a side at a time ------------------------------------------------------------------

    def features(self, observation: "dict[str, torch.Tensor]") -> "torch.Tensor":
        """[n·T, F + T]: every aircraft of the n sides, normalized, with its seat."""
        from arena.env.teams import flatten_seats

        return self.with_seats(super().features(flatten_seats(observation)))

    def act(self, observation: "dict[str, torch.Tensor]") -> "dict[str, torch.Tensor]":
        action = super().act(observation)
        n = next(iter(observation.values())).shape[0]
        return {k: v.view(n, self.seats) if self.seats > 1 else v for k, v in action.items()}

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        """``env_mask`` [n] marks sides whose battle restarted: every seat of them forgets its hazard."""
        if env_mask is not None:
            env_mask = env_mask.repeat_interleave(self.seats)
        super().reset(env_mask)

    # -- checkpoints -------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        return {"obs_norm": self.obs_normalizer is not None, "value_norm": self.value_normalizer is not None,
                "policy": self.policy_kind}

    @classmethod
    def check_options(cls, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or value.get("policy") not in POLICIES:
            shown = value.get("policy") if isinstance(value, dict) else value
            raise ValueError(f"options.policy: expected one of {', '.join(POLICIES)}, got {shown!r}"[:200])
        rest = check_options({k: v for k, v in value.items() if k != "policy"})
        return {**rest, "policy": value["policy"]}

    @classmethod
    def check_env(cls, saved: "EnvConfig", env: "EnvConfig", where: str) -> None:
        if env.team_size != saved.team_size:
            raise CheckpointError(f"{where}: a MAPPO team of {saved.team_size} (its seats are part of its input); "
                                  f"it plays teams of {saved.team_size}, got team_size {env.team_size}")
        check_seat(saved, env, where)
