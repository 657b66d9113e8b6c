"""A detector of what makes a GPU wait for the host, for the tests that a step path never does. It works
on the CPU, where CI runs, and names the call and the line where it does not.

On a GPU, torch's sync debug mode (``torch.cuda.set_sync_debug_mode("error")``) fails on the calls below,
and each leaves a trace on the CPU too:

- ``host read``: a value read back to the host, ``.item()``, ``bool()``, ``.tolist()``, ``nonzero``, indexing
  with a bool mask, ``unique``, ``repeat_interleave`` without its output size. Seen as aten calls, so
  inside torch and the libraries as well as in our code.
- ``host data``: a tensor made from a Python list (``torch.tensor([...])``, indexing with a list), which a
  GPU gets by a copy from pageable host memory. A Python number is passed to the kernel by value: not a copy.
- ``copy``: a copy between two devices (``.to(device)``, ``copy_``), seen on a GPU.
- ``made on the CPU``: a tensor made in the watched code by a factory (``torch.randperm``, ``torch.zeros``,
  ...) and then moved with ``.to(...)`` or ``copy_``: on a GPU, made on the CPU and copied over. Made on
  the device in the first place, it is neither.
"""

from __future__ import annotations

import traceback
import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

HOST_READS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default,
              aten._unique2.default, aten.unique_dim.default, aten.unique_consecutive.default, aten.equal.default,
              aten.is_nonzero.default, aten.repeat_interleave.Tensor}
HOST_DATA = {aten.lift_fresh.default, aten.lift_fresh_copy.default}
INDEXING = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default, aten._index_put_impl_.default}
COPIES = {aten._to_copy.default, aten.copy_.default}
MOVES = {"to", "cuda", "copy_"}
READS = {"tolist", "numpy", "cpu"}  # host reads that reach no aten call on the CPU


def _where() -> str:
    """The innermost line of the watched code (not torch's, not this file's)."""
    frames = [f for f in traceback.extract_stack()[:-2]
              if "/torch/" not in f.filename and f.filename != __file__]
    if not frames:
        return "?"
    f = frames[-1]
    return f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}"


class _Calls(TorchDispatchMode):
    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        kind = self._kind(func, args, kwargs, out)
        if kind:
            self.seen.append(f"{kind}: {func.__name__} at {_where()}")
        return out

    @staticmethod
    def _kind(func: Any, args: tuple, kwargs: dict, out: Any) -> str:
        if func in HOST_READS and not (func is aten.repeat_interleave.Tensor and kwargs.get("output_size")):
            return "host read"
        if func in HOST_DATA and out.dim() > 0:
            return "host data"
        if func in INDEXING:
            if any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in args[1]):
                return "host read"
        if func in COPIES:
            source = args[1] if func is aten.copy_.default else args[0]
            target = args[0].device if func is aten.copy_.default else kwargs.get("device", source.device)
            if source.device != torch.device(target):
                return "copy"
        return ""


class HostReads(TorchFunctionMode):
    """Records each call in its block that would make a GPU wait for the host, as ``"KIND: op at FILE:LINE"``
    (:attr:`seen`; empty when the block never would)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self._made: dict[int, weakref.ref[torch.Tensor]] = {}  # by id: tensors made by a factory here
        self._calls = _Calls(self.seen)

    def __enter__(self) -> "HostReads":
        super().__enter__()
        self._calls.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._calls.__exit__(*exc)
        super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in READS:
            self.seen.append(f"host read: {name} at {_where()}")
        if name in MOVES and args and isinstance(args[0], torch.Tensor) and self._moves(name, args, kwargs):
            source = args[1] if name == "copy_" else args[0]
            made = self._made.get(id(source))
            if made is not None and made() is source:
                self.seen.append(f"made on the CPU: {name} at {_where()}")
        out = func(*args, **kwargs)
        if isinstance(out, torch.Tensor) and name not in MOVES and getattr(func, "__module__", "") == "torch" \
                and not _has_tensor(list(args) + list(kwargs.values())):
            self._made[id(out)] = weakref.ref(out)  # a factory: torch.randperm, torch.zeros, torch.tensor, ...
        return out

    @staticmethod
    def _moves(name: str, args: tuple, kwargs: dict) -> bool:
        """Whether the call names a device to move to (``.to(torch.int64)`` does not)."""
        if name != "to":
            return True
        given = list(args[1:]) + [kwargs.get("device")]
        return any(isinstance(a, (str, torch.device)) or (isinstance(a, torch.Tensor) and a is not args[0])
                   for a in given)


def _has_tensor(values: list[Any]) -> bool:
    return any(isinstance(v, torch.Tensor) or (isinstance(v, (list, tuple)) and _has_tensor(list(v))) for v in values)
