"""The Makefile's set-up, read through ``make -n`` (a dry run: nothing is installed or trained).

`make demo` is what a new user runs first, so it installs the core and the built-in plugins and no
more; the development extras (pytest, ruff, mypy, Ray, Stable-Baselines3, ...) take minutes to install
and only `make test` (and `make lint`) need them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make on the PATH")


def dry_run(target: str, venv: Path) -> list[str]:
    """The commands ``make <target>`` would run for a venv at ``venv``."""
    done = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.splitlines()


def installs(commands: list[str]) -> list[str]:
    return [line for line in commands if " install " in line and "/pip " in line]


def test_demo_installs_the_core_and_the_built_in_plugins_only(tmp_path: Path) -> None:
    pips = installs(dry_run("demo", tmp_path / "venv"))
    packages = [line.split(" install ", 1)[1] for line in pips if "torch" not in line]
    assert len(packages) == 1, pips
    assert "[" not in packages[0], f"make demo installs an extra: {packages[0]}"
    plugins = sorted(p.parent.name for p in ROOT.glob("plugins/*/pyproject.toml"))
    assert plugins and all(f"-e plugins/{name}" in packages[0] for name in plugins), packages[0]


def test_test_installs_the_development_extras_after_the_core(tmp_path: Path) -> None:
    commands = dry_run("test", tmp_path / "venv")
    pips = installs(commands)
    dev = [i for i, line in enumerate(pips) if '".[dev]"' in line]
    core = [i for i, line in enumerate(pips) if "-e plugins/" in line]
    assert dev and core and core[0] < dev[0], pips
    assert any("pytest" in line for line in commands)


def test_test_after_demo_adds_only_the_extras(tmp_path: Path) -> None:
    """A venv that `make demo` set up is not set up again: `make test` adds the extras to it."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    (venv / ".installed-core").touch()
    pips = installs(dry_run("test", venv))
    assert len(pips) == 1 and '".[dev]"' in pips[0], pips


def test_test_portable_runs_the_suite_under_the_plainest_kernels(tmp_path: Path) -> None:
    commands = dry_run("test-portable", tmp_path / "venv")
    suite = [line for line in commands if " -m pytest " in line]
    assert suite == [f"ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Prescott {tmp_path / 'venv'}/bin/python -m pytest "
                     f"-q -n auto --dist loadgroup"], commands
