"""Arena: a plugin-based arena for training and rating agents in vectorized air combat.

Plugin modules mark their hook implementations with ``@arena.hookimpl``. It is resolved on first
use, so ``import arena`` stays as cheap as the command line needs it to be. Importing arena before
torch also lets it choose OpenMP's wait policy (:mod:`arena.threads`).
"""

from __future__ import annotations

from typing import Any

from arena.threads import prepare_openmp

prepare_openmp()  # before anything loads torch: OpenMP reads its wait policy once (see arena.threads)

__version__ = "0.1.0"

_LAZY = {"hookimpl": "arena.plugins", "BaseAgent": "arena.agents", "build_agent": "arena.agents"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'arena' has no attribute {name!r}")


__all__ = ["BaseAgent", "__version__", "build_agent", "hookimpl"]
