"""A detector of tensors read back to the host, for the tests that a step path never waits for a GPU:
it watches the same calls on the CPU, where CI runs."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


class HostReads(TorchFunctionMode):
    """Records every tensor read back to the host: what would stall a GPU (``.item()``, ``bool()``,
    ``.tolist()``, ``.cpu()``, ``nonzero``, indexing with a bool mask) on the CPU too."""

    NAMES = {"__bool__", "item", "tolist", "cpu", "numpy", "nonzero", "__int__", "__float__", "__index__"}

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        masked = name == "__getitem__" and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool
                                               for i in (args[1] if isinstance(args[1], tuple) else (args[1],)))
        if name in self.NAMES or masked:
            self.seen.append(name)
        return func(*args, **(kwargs or {}))
