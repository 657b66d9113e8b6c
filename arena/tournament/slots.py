"""One batch's env slots as a table: who plays in each, which game, from which start, since when.

Every column is a ``[n]`` int64 tensor on the CPU, one row per env of the batch, so that dropping the
finished battles (:meth:`SlotTable.keep`) renumbers every column at once, and who still plays is a
mask, not a walk over the slots.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads when a batch plays, not when the tournament package is imported
    import torch

    from arena.tournament.batching import Batch


@dataclass
class SlotTable:
    """The batch's slots; a slot's pairing and players never change while the batch plays."""

    unit: torch.Tensor  # the pairing (the batch's unit) each slot serves
    p1: torch.Tensor  # participant indices of its two sides
    p2: torch.Tensor
    game: torch.Tensor  # the game it plays, -1 while it idles
    began: torch.Tensor  # the batch step at which that game began
    aimed: torch.Tensor  # the start seed its env restarts from next
    slot: torch.Tensor  # its place in the batch's layout (the envs are renumbered when some are dropped)

    @classmethod
    def of(cls, batch: Batch) -> "SlotTable":
        """Every slot idle, in the batch's layout: each pairing's slots next to each other."""
        import torch

        unit = torch.repeat_interleave(torch.arange(len(batch.units)), torch.tensor(batch.slots))
        n = int(unit.numel())
        p1 = torch.tensor([u.p1 for u in batch.units], dtype=torch.long)[unit]
        p2 = torch.tensor([u.p2 for u in batch.units], dtype=torch.long)[unit]
        idle = torch.full((n,), -1, dtype=torch.long)
        return cls(unit, p1, p2, idle, torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.long),
                   torch.arange(n))

    def __len__(self) -> int:
        return int(self.unit.numel())

    @property
    def playing(self) -> torch.Tensor:
        """``[n]`` bool: the slots with a game in play."""
        return self.game >= 0

    def keep(self, envs: torch.Tensor) -> None:
        """Keep the slots ``envs`` ([k] increasing indices) only, renumbered in that order."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name)[envs])

    def unit_slots(self, units: int) -> list[range]:
        """The slots of each pairing (next to each other), empty for one with none left."""
        import torch

        counts = torch.bincount(self.unit, minlength=units).tolist()
        firsts = torch.searchsorted(self.unit, torch.arange(units)).tolist()
        return [range(f, f + c) for f, c in zip(firsts, counts)]

    def busy(self, participants: torch.Tensor) -> torch.Tensor:
        """How many slots with a game in play each of ``participants`` ([m] indices) sits in."""
        import torch

        playing = self.playing
        seated = torch.cat((self.p1[playing], self.p2[playing]))
        return torch.bincount(seated, minlength=int(participants.max()) + 1)[participants]

    def involving(self, k: int) -> list[int]:
        """The slots where participant ``k`` has a game in play."""
        import torch

        return torch.nonzero(self.playing & ((self.p1 == k) | (self.p2 == k))).flatten().tolist()
