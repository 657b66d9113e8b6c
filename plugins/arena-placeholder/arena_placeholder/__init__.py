"""Arena plugin: a seeded random agent, ``placeholder``.

This is the example to copy when writing an agent plugin. The whole plugin is three parts:

1. ``pyproject.toml`` names this module under the entry-point group ``arena``;
2. this module implements the ``arena_agents`` hook, marked with ``@arena.hookimpl``;
3. ``agent.py`` holds the agent class.

The hook imports the agent module only when it is called, and the agent imports torch only inside
its methods, so ``arena --help`` and ``arena agents`` stay fast however many plugins are installed.
"""

from __future__ import annotations

import arena


@arena.hookimpl
def arena_agents() -> list[type]:
    """The agent classes this plugin offers."""
    from arena_placeholder.agent import PlaceholderAgent

    return [PlaceholderAgent]
