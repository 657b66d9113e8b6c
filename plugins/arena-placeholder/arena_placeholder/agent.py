"""PlaceholderAgent: random controls from its own seeded generator.

Every league needs a floor — an agent anything that learns should beat — and every plugin author
needs a short, complete agent to start from. This is both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from arena.agents import BaseAgent
from arena.families import MemberRows

if TYPE_CHECKING:  # for type hints only: importing torch here would slow down `arena agents`
    from collections.abc import Sequence

    import torch

    from arena.env import EnvConfig
    from arena.families import Stream


class PlaceholderAgent(BaseAgent):
    """Random rudder and throttle each step, and a launch with probability ``fire_prob``.

    The default ``fire_prob`` (about one launch per five minutes of battle) keeps it a floor: a
    random shot at a target that keeps coming often hits, and a trigger-happy random agent would
    beat CrankAgent, which cannot see missiles, in one game out of five.
    """

    name: ClassVar[str] = "placeholder"  # what `arena play` and tournament files call it
    aliases: ClassVar[tuple[str, ...]] = ("random",)
    description: ClassVar[str] = "seeded random controls; the floor of every league"
    ladder_rung: ClassVar[int] = 0  # the bottom of the training league (--vs league)

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                 seed: int = 0, fire_prob: float = 0.003) -> None:
        # Keyword parameters come from `create(**params)`: a tournament file's `params:` mapping.
        super().__init__(device, env_config)  # sets self.device, self.env_config, self.training
        # Check parameters here, so that a bad one stops a tournament before it starts.
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        if isinstance(fire_prob, bool) or not isinstance(fire_prob, (int, float)) or not 0.0 <= fire_prob <= 1.0:
            raise ValueError(f"fire_prob must be a number in [0, 1], got {fire_prob!r}")
        self.seed = seed
        self.fire_prob = fire_prob
        self._generator: torch.Generator | None = None

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        """One action per env: each value a [N] tensor on the observation's device."""
        n = observation["enemy_distance"].shape[0]
        u = self.draw(n, observation["enemy_distance"].device)
        return {
            "rudder": u[0] * 2.0 - 1.0,  # [-1, 1]; positive turns left
            "throttle": u[1],  # [0, 1]
            "fire": u[2] < self.fire_prob,  # bool; the env ignores it when no missile is left
        }

    def draw(self, n: int, device: "torch.device") -> "torch.Tensor":
        """[3, n] uniforms from this agent's own stream: rudder, throttle and trigger of n envs."""
        import torch

        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device)
            self._generator.manual_seed(self.seed)  # same seed, same play: results can be reproduced
        return torch.rand(3, n, generator=self._generator, device=device)

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        """Called when battles restart: ``env_mask`` [N] bool marks them, None means all of them.

        This agent keeps no per-env memory (a recurrent one would zero its hidden state where
        ``env_mask`` is set); a full reset restarts the random stream so a match replays exactly.
        """
        if env_mask is None:
            self._generator = None

    # -- optional: acting as one with other placeholders (a league of many seeds: one call a step) --

    def family_key(self) -> str:
        """Placeholders on one device act together; each still draws from its own seeded stream."""
        return str(self.device)

    def keep_rows(self, rows: "torch.Tensor") -> None:
        """No per-env memory to keep when a batch drops its finished battles."""

    @classmethod
    def act_together(cls, members: "Sequence[PlaceholderAgent]", rows: "Sequence[int]",
                     streams: "Sequence[Stream]") -> "PlaceholderFamily":
        return PlaceholderFamily(members, rows)


class PlaceholderFamily:
    """Seeded placeholders acting as one call: each member draws its rows' controls from its own stream,
    exactly as it would alone, and the trigger compares with each row's ``fire_prob``."""

    def __init__(self, members: "Sequence[PlaceholderAgent]", rows: "Sequence[int]") -> None:
        import torch

        self.members = list(members)
        self.rows = MemberRows(rows, self.members[0].device)
        self.fire_prob = self.rows.per_row([m.fire_prob for m in self.members], torch.float32)

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        import torch

        device = observation["enemy_distance"].device
        u = torch.cat([self.members[m].draw(stop - start, device) for m, start, stop in self.rows.spans()], 1)
        return {"rudder": u[0] * 2.0 - 1.0, "throttle": u[1], "fire": u[2] < self.fire_prob}

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        if env_mask is None:  # a full reset restarts each member's stream; battles restarting need nothing
            for member in self.members:
                member.reset(None)

    def keep_rows(self, rows: "torch.Tensor") -> None:
        self.rows.keep(rows)
        self.fire_prob = self.fire_prob[rows]
