"""The interfaces to other RL libraries load lazily: each needs only its own library."""

from __future__ import annotations

import pytest


def test_each_interface_needs_only_its_own_library():
    """Without gymnasium the TorchRL interface still imports; without torchrl its name says which extra."""
    import subprocess
    import sys

    script = """
import sys
sys.modules["gymnasium"] = None  # as if not installed
import arena.wrappers as w
assert w.ArenaTorchRLEnv.__name__ == "ArenaTorchRLEnv"
try:
    w.ArenaVectorEnv
except ImportError as exc:
    print("gym:", exc)
sys.modules["rsl_rl"] = None
try:
    w.ArenaRslRlEnv
except ImportError as exc:
    print("rsl:", exc)
"""
    pytest.importorskip("torchrl")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "gym: arena.wrappers.ArenaVectorEnv needs gymnasium, which is not installed: pip install " \
           "'agent-arena[wrappers]'" in out.stdout
    assert "rsl: arena.wrappers.ArenaRslRlEnv needs rsl_rl, which is not installed: pip install " \
           "'agent-arena[rsl-rl]'" in out.stdout
