"""Arena plugin that provides CrankAgent (``crank``, alias ``rule_based``).

The agent module is imported inside the hook and imports torch only when an agent acts, so listing
plugins stays fast.
"""

from __future__ import annotations

import arena


@arena.hookimpl
def arena_agents() -> list[type]:
    from arena_crank.agent import CrankAgent

    return [CrankAgent]
