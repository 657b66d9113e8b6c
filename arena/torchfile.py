"""Reading a file ``torch.save`` wrote, safely, with failures in the user's terms.

``torch.load(weights_only=True)`` runs no code from the file, but its errors run to paragraphs
(advice about ``weights_only``, internal zip-reader errors) that a one-line error would cut
mid-word. What a user needs is which file, that it is unreadable, and what to do. This module is a
leaf: checkpoints of every kind (a trainer's, an agent spec's) read through it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


class TorchFileError(ValueError):
    """A checkpoint file that is missing, unreadable, damaged, or not what ``torch.save`` writes; one line."""


def read_torch_file(path: str | os.PathLike[str], *, map_location: "str | torch.device" = "cpu",
                    mmap: bool = False) -> Any:
    """``torch.load(path, weights_only=True)``, every failure one whole line naming the file.

    ``mmap`` maps the tensors instead of reading them (a zip-format file only): for a look at a few
    entries of many checkpoints.
    """
    import torch

    file = Path(path)
    if not file.exists():
        raise TorchFileError(f"checkpoint {file}: no such file")
    if not file.is_file():
        raise TorchFileError(f"checkpoint {file}: not a file")
    if "constants.pkl" in zip_records(file):  # torch.load would hand it to torch.jit.load, with a warning
        raise TorchFileError(f"checkpoint {file}: a TorchScript file (an exported policy), not a checkpoint; "
                              f"expected a checkpoint written by an arena trainer")
    try:  # a file that cannot be opened is not a damaged one (torch raises OSError for both)
        with file.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise TorchFileError(f"checkpoint {file}: cannot be read ({exc.strerror or type(exc).__name__})") from exc
    try:
        return torch.load(file, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file; all mean "unreadable"
        raise TorchFileError(unreadable_message(file, exc)) from exc


def unreadable_message(file: Path, exc: BaseException) -> str:
    """Why ``torch.load`` refused ``file``, in the user's terms (torch's wording stays out)."""
    if "Unsupported global" in str(exc):  # the safe loader met a pickled Python object
        return (f"checkpoint {file}: holds Python objects besides tensors, numbers and strings, which are not "
                f"loaded because they could run code; expected a checkpoint written by an arena trainer")
    return (f"checkpoint {file}: not a readable torch checkpoint (truncated, corrupt, or not a file written by "
            f"torch.save); copy it again or use another checkpoint of the run")


# A torch.save file: a zip archive with a pickle record ``<name>/data.pkl`` (TorchScript archives also
# have one, beside ``constants.pkl`` and their code), or the legacy pickle stream that opens with
# protocol 2 and torch's magic number.
LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")


def is_torch_save_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file ``torch.save`` wrote: a checkpoint, best weights, another tool's state dict.

    Read from the file's structure, not its name, so that ``best.pt`` or a renamed checkpoint counts;
    TorchScript archives (``torch.jit.save``) and ONNX files do not. Only the zip directory or the
    first bytes are read, never the data.
    """
    file = Path(path)
    records = zip_records(file)
    if records:
        return "data.pkl" in records and "constants.pkl" not in records
    try:
        with file.open("rb") as handle:
            return handle.read(len(LEGACY_TORCH_MAGIC)) == LEGACY_TORCH_MAGIC
    except OSError:
        return False


def zip_records(file: Path) -> set[str]:
    """The record names of a torch zip archive (``<name>/data.pkl`` -> ``data.pkl``); empty for any other file."""
    import zipfile

    try:
        if not file.is_file() or not zipfile.is_zipfile(file):
            return set()
        with zipfile.ZipFile(file) as archive:
            return {n.split("/", 1)[1] for n in archive.namelist() if "/" in n}
    except (OSError, zipfile.BadZipFile):
        return set()
