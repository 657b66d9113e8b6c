"""Each observation with its change since the previous step (``--obs-delta``).

A feed-forward policy sees one instant. The scripted pilots it learns from and plays against keep
memory: the defender and the ace judge an incoming missile by how fast its range closes (two
warnings apart), and re-commit once it is beaten. One observation cannot tell a missile closing at
Mach 3 from one that has bled its energy and is falling behind; the change since the last step can.
Appending it gives the policy every rate at once (missile closure, enemy closure and turn rate)
without a recurrent network.
"""

from __future__ import annotations

import torch


class ObservationChange:
    """Per-row memory of the last raw observation vector; ``stack`` returns ``[x, x - last]``.

    A row whose battle just (re)started has no previous step: its change reads 0 until it has one.
    Batches of another shape (another set of battles) start fresh too. ``rows`` and ``size`` allocate
    the memory at once (a trainer saves it with its checkpoints, so a resumed run goes on exactly).
    """

    def __init__(self, rows: int = 0, size: int = 0, device: "str | torch.device" = "cpu") -> None:
        self.last: torch.Tensor | None = None  # [N, K] last raw observation of each row
        self.fresh: torch.Tensor | None = None  # [N] rows with no previous step
        if rows:
            self.last = torch.zeros(rows, size, device=device)
            self.fresh = torch.ones(rows, dtype=torch.bool, device=device)

    def stack(self, x: torch.Tensor, commit: bool = True) -> torch.Tensor:
        """``[N, 2K]``: ``x`` and its change since the last committed step. ``commit=False`` leaves the
        memory as it was (a bootstrap value of the step after, or a look at the rollout's end)."""
        last, fresh = self.last, self.fresh
        if last is None or fresh is None or last.shape != x.shape or last.device != x.device:
            last, fresh = x, torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
        change = torch.where(fresh.unsqueeze(-1), torch.zeros_like(x), x - last)
        if commit:
            self.last, self.fresh = x, torch.zeros_like(fresh)
        return torch.cat((x, change), -1)

    def reset(self, rows: torch.Tensor | None = None) -> None:
        """Forget the previous step of ``rows`` ([N] bool; all rows when None): their battle restarted."""
        if rows is None:
            self.last = self.fresh = None
        elif self.fresh is not None and rows.shape == self.fresh.shape:
            self.fresh = self.fresh | rows.to(self.fresh.device)

    def state_dict(self) -> dict[str, torch.Tensor]:
        if self.last is None or self.fresh is None:
            raise ValueError("no observation seen yet: nothing to save")
        return {"last": self.last.clone(), "fresh": self.fresh.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Memory saved by :meth:`state_dict` (its shapes and dtypes checked by the caller)."""
        device = self.last.device if self.last is not None else "cpu"
        self.last, self.fresh = state["last"].to(device), state["fresh"].to(device)
