"""The source of a plugin agent that changes the process under the arena on its ``call``-th ``act``: torch's
default dtype, the working directory, or a forked child that returns. The guard tests play it (``arena
play``) and train against it (``arena train --vs``)."""

from __future__ import annotations

SOURCE = '''
import os, sys
import torch
import arena

MODE = {mode!r}

class Meddler(arena.BaseAgent):
    name = "meddler"

    def __init__(self, device="cpu", env_config=None):
        super().__init__(device, env_config)
        self.calls = 0

    def act(self, obs):
        self.calls += 1
        n = obs["x"].shape[0]
        if self.calls == {call}:
            if MODE == "dtype":
                torch.set_default_dtype(torch.float64)
            if MODE == "cwd":
                os.chdir({elsewhere!r})
            if MODE == "fork" and os.fork() == 0:
                sys.exit(0)
        return {{"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}}

@arena.hookimpl
def arena_agents():
    return [Meddler]
'''


def meddler_plugin(mode: str, elsewhere: str, call: int) -> str:
    """The plugin module's source: ``mode`` is dtype, cwd (into ``elsewhere``) or fork."""
    return SOURCE.format(mode=mode, elsewhere=elsewhere, call=call)
