"""Training on several processes: who this process is, its device, and the collectives a trainer needs.

``torchrun --nproc-per-node N -m arena train …`` (or a trainer's own ``--nproc N``, see
:mod:`arena.training.launcher`) starts one process per rank and tells each who it is through the
environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``). Each process steps its own envs; a trainer keeps every process's weights equal by
averaging gradients and merging whatever else its update reads, and lets the main process (rank 0)
do the writing.

:class:`Group` wraps every collective so that a broken peer (a process that ended, was killed or lost
its connection) surfaces as one :class:`PeerFailure` instead of a backend traceback, and offers the
few agreement steps a run needs: the first error of any process, whether any process was asked to
stop, and whether all processes still hold bit-identical state. Nothing here knows a trainer.
This module imports torch only inside functions.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from arena.seeds import MAX_SEED, text_seed

if TYPE_CHECKING:
    import torch

ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
MAX_PROCESSES = 4096
# A collective waits this long for a peer that is alive but stuck; a peer that ended is noticed at once.
TIMEOUT_S = 30 * 60
T = TypeVar("T")


class DistributedError(ValueError):
    """A set-up that cannot run on several processes (bad environment, devices, sizes); one line."""


class PeerFailure(RuntimeError):
    """A collective failed: another process ended, was killed, or the connection to it broke."""


class DivergenceError(RuntimeError):
    """Processes that must hold identical state do not (a bug: their updates differed)."""


@dataclass(frozen=True)
class Rank:
    """This process's place in the run: global rank, how many processes, and the same on this machine."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1

    @property
    def main(self) -> bool:
        """Rank 0 writes checkpoints, metrics and the console; the others stay quiet."""
        return self.rank == 0

    def __str__(self) -> str:
        return f"process {self.rank} of {self.world_size}"


def launched(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process was started by torchrun (or ``--nproc``): a rank variable is set."""
    env = os.environ if environ is None else environ
    return any(key in env for key in (*ENV_KEYS, "TORCHELASTIC_RUN_ID"))


def rank_from_env(environ: Mapping[str, str] | None = None) -> Rank | None:
    """This process's :class:`Rank` from torchrun's variables; None when not launched that way.

    Only ``WORLD_SIZE`` and ``RANK`` are required (``LOCAL_*`` default to a single machine);
    anything malformed or inconsistent raises :class:`DistributedError` naming the variable.
    """
    env = os.environ if environ is None else environ
    if not launched(env):
        return None
    values: dict[str, int] = {}
    for key in ENV_KEYS:
        text = env.get(key)
        if text is None:
            if key in ("RANK", "WORLD_SIZE"):
                present = ", ".join(k for k in (*ENV_KEYS, "TORCHELASTIC_RUN_ID") if k in env)
                raise DistributedError(f"{key} is not set, but {present} is: start the processes with torchrun "
                                       f"--nproc-per-node N -m arena …")
            continue
        try:
            values[key] = int(text)
        except ValueError:
            raise DistributedError(f"{key}={text!r}: expected an integer") from None
    world = values["WORLD_SIZE"]
    rank = values["RANK"]
    local_world = values.get("LOCAL_WORLD_SIZE", world)
    local_rank = values.get("LOCAL_RANK", rank)
    if not 1 <= world <= MAX_PROCESSES:
        raise DistributedError(f"WORLD_SIZE={world}: expected 1 to {MAX_PROCESSES}")
    if not 0 <= rank < world:
        raise DistributedError(f"RANK={rank}: expected 0 to WORLD_SIZE-1 = {world - 1}")
    if not 1 <= local_world <= world or not 0 <= local_rank < local_world:
        raise DistributedError(f"LOCAL_RANK={local_rank}, LOCAL_WORLD_SIZE={local_world}: expected 0 <= LOCAL_RANK < "
                               f"LOCAL_WORLD_SIZE <= WORLD_SIZE = {world}")
    return Rank(rank, world, local_rank, local_world)


def rank_seed(seed: int, rank: int) -> int:
    """The seed of one rank's envs and random streams: ``seed`` itself on rank 0 (a one-process run
    repeats a plain run exactly), a hash of both elsewhere, so no rank replays another's battles."""
    if rank == 0:
        return seed
    return text_seed(f"arena-rank:{seed}:{rank}") & MAX_SEED


def split_count(total: int, rank: Rank) -> int:
    """This rank's share of ``total`` items (evaluation games): the first ``total % world`` ranks get one more."""
    base, extra = divmod(total, rank.world_size)
    return base + (1 if rank.rank < extra else 0)


def to_cpu(value: T) -> T:
    """``value`` with every tensor moved to the CPU (containers rebuilt), to be pickled to another process."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(v) for v in value)
    return value


def fingerprint(tensors: Mapping[str, Any]) -> dict[str, str]:
    """A digest of each tensor's exact bytes (dtype and shape included); numbers by their repr."""
    import torch

    out = {}
    for name, value in tensors.items():
        digest = hashlib.sha256()
        if isinstance(value, torch.Tensor):
            data = value.detach().cpu().contiguous()
            digest.update(f"{data.dtype}{tuple(data.shape)}".encode())
            digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            digest.update(repr(value).encode())
        out[name] = digest.hexdigest()[:16]
    return out


class Group:
    """The process group of a run, as this process sees it.

    Every method is a collective: all processes must call it, in the same order. Tensor collectives
    run where the tensor lives (gloo on the CPU, NCCL on CUDA); object collectives and the
    agreement steps always go through gloo on the CPU.
    """

    def __init__(self, rank: Rank) -> None:
        self.rank = rank

    @classmethod
    def join(cls, rank: Rank | None = None, timeout_s: float = TIMEOUT_S) -> "Group":
        """Join the run's process group (``env://``: the address torchrun or ``--nproc`` published).

        The group is created with gloo for the CPU and, where CUDA is present, NCCL for GPU
        tensors; NCCL connects only when a GPU tensor is first reduced, so a CPU run never needs it.
        A process started by ``--nproc`` first arranges to end with its launcher
        (:func:`~arena.training.launcher.follow_launcher`): before the rendezvous, which would wait
        for a launcher already gone.
        """
        import torch
        import torch.distributed as dist

        from arena.guard import note_native_threads
        from arena.training.launcher import LauncherGone, follow_launcher

        rank = rank or rank_from_env()
        if rank is None:
            raise DistributedError("not started by torchrun: RANK and WORLD_SIZE are not set")
        try:
            follow_launcher()
        except ValueError as exc:
            raise DistributedError(str(exc)) from None
        except LauncherGone as exc:
            raise PeerFailure(f"{exc}; {rank} stops") from None
        if not dist.is_available():
            raise DistributedError("this torch build has no torch.distributed")
        note_native_threads()  # gloo's threads can abort the interpreter's shutdown after a clean end
        if not dist.is_initialized():
            backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
            try:
                dist.init_process_group(backend, init_method="env://", rank=rank.rank, world_size=rank.world_size,
                                        timeout=timedelta(seconds=timeout_s))
            except (RuntimeError, ValueError, OSError) as exc:
                raise PeerFailure(f"cannot join the other {rank.world_size - 1} process(es) at "
                                  f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}: "
                                  f"{first_line(exc)}") from exc
        return cls(rank)

    def use_device(self, device: "torch.device") -> None:
        """Make ``device`` this process's current GPU (NCCL reduces on the current device)."""
        import torch

        if device.type == "cuda":
            torch.cuda.set_device(device)

    def close(self, wait: bool = True) -> None:
        """Leave the group. With ``wait`` (a clean end) every process first waits for the others, so
        none tears its connections down while another still talks on them: gloo can abort a process
        whose peer left first ("terminate called without an active exception")."""
        import torch.distributed as dist

        if not dist.is_initialized():
            return
        if wait:
            try:
                self.barrier()
            except PeerFailure:
                pass  # a peer is already gone: nothing left to wait for
        dist.destroy_process_group()

    # -- tensors ----------------------------------------------------------------------------------

    def all_reduce_(self, tensor: "torch.Tensor", op: str = "sum") -> "torch.Tensor":
        """Reduce ``tensor`` in place over all processes (``sum`` or ``max``); every process gets the same bits."""
        import torch.distributed as dist

        ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}
        with self._guard():
            dist.all_reduce(tensor, op=ops[op])
        return tensor

    def all_gather(self, tensor: "torch.Tensor") -> "torch.Tensor":
        """Every process's ``tensor`` stacked in rank order: ``[world_size, *tensor.shape]``."""
        import torch
        import torch.distributed as dist

        tensor = tensor.contiguous()
        parts = [torch.empty_like(tensor) for _ in range(self.rank.world_size)]
        with self._guard():
            dist.all_gather(parts, tensor)
        return torch.stack(parts)

    def broadcast_(self, tensor: "torch.Tensor", src: int = 0) -> "torch.Tensor":
        import torch.distributed as dist

        with self._guard():
            dist.broadcast(tensor, src=src)
        return tensor

    # -- objects ----------------------------------------------------------------------------------

    def all_gather_object(self, obj: Any) -> list[Any]:
        """Every process's ``obj`` (picklable, tensors on the CPU) in rank order."""
        import torch.distributed as dist

        out: list[Any] = [None] * self.rank.world_size
        with self._guard():
            dist.all_gather_object(out, obj)
        return out

    def gather_object(self, obj: Any, dst: int = 0) -> list[Any] | None:
        """Every process's ``obj`` on ``dst`` (rank order); None on the other processes."""
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.rank.world_size if self.rank.rank == dst else None
        with self._guard():
            dist.gather_object(obj, out, dst=dst)
        return out

    def broadcast_object(self, obj: T, src: int = 0) -> T:
        """``obj`` as process ``src`` has it, on every process."""
        import torch.distributed as dist

        box = [obj]
        with self._guard():
            dist.broadcast_object_list(box, src=src)
        return box[0]

    def barrier(self) -> None:
        import torch.distributed as dist

        with self._guard():
            dist.barrier()

    # -- agreement --------------------------------------------------------------------------------

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on any process (a stop request, a time limit reached)."""
        import torch

        return bool(self.all_reduce_(torch.tensor([1.0 if flag else 0.0]), op="max").item())

    def first_error(self, message: str | None) -> tuple[int, str] | None:
        """The lowest rank whose ``message`` is not None, with its message; None when every process is fine."""
        for rank, text in enumerate(self.all_gather_object(message)):
            if text is not None:
                return rank, str(text)
        return None

    def check_identical(self, digests: Mapping[str, str], what: str) -> None:
        """Raise :class:`DivergenceError` on every process unless all hold the same ``digests``
        (see :func:`fingerprint`); the message names the first differing entry and process."""
        every = self.all_gather_object(dict(digests))
        reference = every[0]
        for rank, mine in enumerate(every[1:], start=1):
            if mine == reference:
                continue
            keys = [k for k in reference if mine.get(k) != reference[k]] + [k for k in mine if k not in reference]
            raise DivergenceError(f"{what}: process {rank} holds a different {keys[0] if keys else 'state'} than "
                                  f"process 0" + (f" (and {len(keys) - 1} more)" if len(keys) > 1 else ""))

    # -- internals --------------------------------------------------------------------------------

    def _guard(self) -> "_Guard":
        return _Guard(self.rank)


class _Guard:
    """Turns a failing collective into a :class:`PeerFailure` with the backend's first line."""

    def __init__(self, rank: Rank) -> None:
        self.rank = rank

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None or isinstance(exc, (PeerFailure, KeyboardInterrupt)) or not isinstance(exc, RuntimeError):
            return False
        raise PeerFailure(f"lost contact with the other processes ({first_line(exc)})") from exc


def first_line(exc: BaseException) -> str:
    """The first line of an error, without the source-file prefix backends put in front (``[…/pair.cc:553]``)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"^\[[^\]]*\]\s*", "", line)[:300]
