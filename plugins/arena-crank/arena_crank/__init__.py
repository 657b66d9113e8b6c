"""Arena plugin that provides CrankAgent (``crank``, alias ``rule_based``) and the ladder of scripted
opponents above it: ``sniper``, ``defender`` and ``ace`` (arena_crank/ladder.py).

The agent module is imported inside the hook and imports torch only when an agent acts, so listing
plugins stays fast.
"""

from __future__ import annotations

import arena


@arena.hookimpl
def arena_agents() -> list[type]:
    from arena_crank.agent import CrankAgent
    from arena_crank.ladder import Ace, Defender, Salvo, Sniper

    return [CrankAgent, Sniper, Salvo, Defender, Ace]
