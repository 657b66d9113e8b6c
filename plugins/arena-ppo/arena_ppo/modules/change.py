"""Each observation with its change since the previous step (``--obs-delta``).

A feed-forward policy sees one instant. The scripted pilots it learns from and plays against keep
memory: the defender and the ace judge an incoming missile by how fast its range closes (two
warnings apart), and re-commit once it is beaten. One observation cannot tell a missile closing at
Mach 3 from one that has bled its energy and is falling behind; the change since the last step can.
Appending it gives the policy every rate at once (missile closure, enemy closure and turn rate)
without a recurrent network.

The memory is two tensors: the last raw observation of each row and the rows with none yet (a
battle that just started reads no change). :func:`stack_change` and :func:`forget` work on them;
the trainer keeps them in an :class:`ObservationChange`, a playing agent as two attributes of its
own (where the per-env memory of an opponent is looked for when a run is saved).
"""

from __future__ import annotations

import torch


def stack_change(x: torch.Tensor, last: torch.Tensor | None, fresh: torch.Tensor | None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``[x, x - last]`` and the memory after ``x``; rows marked ``fresh`` read no change. Memory of
    another shape (another set of battles), or none, starts every row fresh."""
    if last is None or fresh is None or last.shape != x.shape or last.device != x.device:
        last, fresh = x, torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    change = torch.where(fresh.unsqueeze(-1), torch.zeros_like(x), x - last)
    return torch.cat((x, change), -1), x, torch.zeros_like(fresh)


def forget(fresh: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor | None:
    """``fresh`` with ``rows`` ([N] bool: their battle restarted) marked as having no previous step."""
    if fresh is None or rows.shape != fresh.shape:
        return fresh
    return fresh | rows.to(fresh.device)


class ObservationChange:
    """The trainer's memory, allocated at once for ``rows`` rows of ``size`` features and saved with
    its checkpoints, so a resumed run goes on exactly."""

    def __init__(self, rows: int, size: int, device: "str | torch.device" = "cpu") -> None:
        self.last = torch.zeros(rows, size, device=device)
        self.fresh = torch.ones(rows, dtype=torch.bool, device=device)

    def stack(self, x: torch.Tensor, commit: bool = True) -> torch.Tensor:
        """``[N, 2K]``: ``x`` and its change since the last committed step. ``commit=False`` leaves the
        memory as it was (the bootstrap value of the step after, or a look at the rollout's end)."""
        out, last, fresh = stack_change(x, self.last, self.fresh)
        if commit:
            self.last, self.fresh = last, fresh
        return out

    def reset(self, rows: torch.Tensor) -> None:
        """Rows whose battle restarted: no previous step."""
        self.fresh = forget(self.fresh, rows)  # type: ignore[assignment]

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"last": self.last.clone(), "fresh": self.fresh.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Memory saved by :meth:`state_dict` (its shapes and dtypes checked by the caller)."""
        self.last, self.fresh = state["last"].to(self.last.device), state["fresh"].to(self.fresh.device)
