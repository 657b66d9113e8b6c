"""One writer per output folder: a tournament's, a training run's.

Two processes writing one folder interleave rows and overwrite each other's files, so each command
that owns a folder holds an exclusive ``flock`` on a lock file in it for as long as it writes. The
kernel releases the lock when its holder dies, so a killed run never leaves a stale lock behind; the
file keeps the holder's pid only for the message.
"""

from __future__ import annotations

import os
from pathlib import Path

from arena.output_files import LinkedOutputError


class FolderBusy(Exception):
    """The folder is locked by another live process (``holder``: its pid as the lock file says)."""

    def __init__(self, folder: Path, holder: str) -> None:
        super().__init__(f"{folder}: held by pid {holder}")
        self.folder, self.holder = folder, holder


class FolderUnusable(Exception):
    """The folder cannot be created or its lock file opened (``reason``: why, in a few words)."""

    def __init__(self, folder: Path, reason: str) -> None:
        super().__init__(f"{folder}: {reason}")
        self.folder, self.reason = folder, reason


class FolderLock:
    """An exclusive, non-blocking lock on ``folder`` through the file ``folder/name`` (created with the
    folder when missing). Where ``flock`` does not exist the folder is used unlocked."""

    def __init__(self, folder: str | os.PathLike[str], name: str) -> None:
        self.folder = Path(folder)
        self.path = self.folder / name
        self.fd: int | None = None

    def acquire(self) -> "FolderLock":
        """Take the lock; :class:`FolderBusy` when another process holds it, :class:`FolderUnusable` when
        the folder cannot hold a lock file, :class:`~arena.output_files.LinkedOutputError` when the lock file
        is a symbolic link. A lock already held stays as it is."""
        if self.fd is not None:
            return self
        try:
            import fcntl
        except ImportError:  # no flock on this platform: run unlocked
            return self
        if self.path.is_symlink():  # it gets our pid written into it: never another file through a link
            raise LinkedOutputError(self.path, "write a lock into")
        try:
            if self.folder.exists() and not self.folder.is_dir():
                raise NotADirectoryError(20, "a file, not a folder")
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except (OSError, ValueError) as exc:
            reason = (exc.strerror + (f": {exc.filename}" if exc.filename else "")
                      if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__)
            raise FolderUnusable(self.folder, reason) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise FolderBusy(self.folder, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        import fcntl

        fd, self.fd = self.fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
