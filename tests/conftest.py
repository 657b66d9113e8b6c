"""Shared fixtures: fake plugin distributions on sys.path, the way a real third-party plugin is found."""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest


class FakeDistributions:
    """Writes ``<module>.py`` and ``<dist>-<version>.dist-info/{METADATA,entry_points.txt}`` in a temp
    dir on ``sys.path``, so ``importlib.metadata`` finds them exactly as it finds installed plugins."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.modules: list[str] = []
        monkeypatch.syspath_prepend(str(root))

    def add(self, dist: str, module: str, source: str, version: str = "1.0", entry_point: str | None = None) -> None:
        (self.root / f"{module}.py").write_text(textwrap.dedent(source))
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[arena]\n{entry_point or module} = {module}\n")
        self.modules.append(module)

    def cleanup(self) -> None:
        for module in self.modules:
            sys.modules.pop(module, None)


@pytest.fixture
def fake_dists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from arena.plugins import reset_host

    dists = FakeDistributions(tmp_path, monkeypatch)
    reset_host()
    yield dists
    dists.cleanup()
    reset_host()



@pytest.fixture
def release():
    """An event that lets a test's hung agent moves return at its end, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()
    join_watchdogs()


def join_watchdogs(timeout: float = 10.0) -> None:
    """Wait for the watchdog threads of released agent moves: a thread still in torch code when the
    interpreter shuts down would abort the test process."""
    for thread in threading.enumerate():
        if thread.name.startswith("arena-") and thread is not threading.current_thread():
            thread.join(timeout)
