"""Per-seat networks behind one module: :class:`SeatRouted` sends each row to its seat's network.

Both the feed-forward and the recurrent separated actor-critics (:mod:`.separated`) are built of it, and
the recurrent actor-critic (:mod:`.recurrent`) names it as the type of its per-seat actor and critic, so
it lives here, below both.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class SeatRouted(nn.Module):
    """Seat ``k``'s rows through ``nets[k]``: the seat is read from the one-hot tail of each row."""

    def __init__(self, nets: Sequence[nn.Module]) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        return self._route(x, (), lambda net, body: net(body))

    def step(self, x: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A recurrent step per seat: each row's hidden state goes with it."""
        return self._route(x, (hidden,), lambda net, body, h: net.step(body, h))  # type: ignore[return-value]

    def _route(self, x: torch.Tensor, extra: tuple[torch.Tensor, ...], call) -> torch.Tensor | tuple[torch.Tensor, ...]:
        seats = len(self.nets)
        seat = x[:, -seats:].argmax(-1)
        body = x[:, :-seats]
        outs: list[torch.Tensor] | None = None
        single = False
        for k, net in enumerate(self.nets):
            rows = torch.nonzero(seat == k).flatten()
            result = call(net, body.index_select(0, rows), *(e.index_select(0, rows) for e in extra))
            parts = (result,) if isinstance(result, torch.Tensor) else tuple(result)
            if outs is None:
                single = isinstance(result, torch.Tensor)
                outs = [p.new_zeros((x.shape[0], *p.shape[1:])) for p in parts]
            for out, part in zip(outs, parts):
                out.index_copy_(0, rows, part)
        assert outs is not None
        return outs[0] if single else tuple(outs)
