"""Plugin system: hook specifications, the plugin manager and entry-point loading.

Plugins are ordinary distributions that name a module under the entry-point group ``arena``::

    [project.entry-points.arena]
    crank = "arena_crank"

Each entry point is loaded on its own: one that fails to import, or that implements a hook that does
not exist (a misspelling), is reported once with its distribution and version and skipped, so one
broken plugin never takes the command line down. ``ARENA_STRICT_PLUGINS=1`` turns that into an error;
``ARENA_DISABLE_PLUGINS=dist-a,dist-b`` skips distributions by name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

PROJECT = "arena"
ENTRY_POINT_GROUP = "arena"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

RewardFn = Callable[..., Any]


class PluginError(RuntimeError):
    """A plugin could not be loaded or offers something that clashes with another plugin."""


class ArenaSpec:
    """The hooks a plugin may implement. Every hook name starts with ``arena_``.

    Only the signatures count: pluggy calls the plugins' implementations, never these bodies.
    """

    @hookspec
    def arena_agents(self) -> list[type]:
        """Return agent classes.

        Each class has a ``name`` (and optional ``aliases``), a ``create(device, env_config=None,
        **params)`` classmethod and, when it learns, a ``load(checkpoint, device, env_config=None)``
        classmethod. They become usable in ``arena play``, ``arena train --vs`` and tournaments.
        """
        raise NotImplementedError

    @hookspec
    def arena_trainers(self) -> list[type]:
        """Return trainer classes: ``arena train NAME`` runs the one whose ``name`` is NAME.

        A trainer class has a ``name``, a ``help`` line and a ``command()`` classmethod that returns the
        ``click.Command`` with its own options.
        """
        raise NotImplementedError

    @hookspec
    def arena_rewards(self) -> dict[str, RewardFn]:
        """Return ``{name: fn}`` reward-shaping functions selectable with ``--reward NAME``.

        ``fn(obs, next_obs, rewards, dones, infos)`` returns a [N] tensor added to the learner's reward;
        ``obs``/``next_obs`` are the learner's observation dicts before and after the step.
        """
        raise NotImplementedError

    @hookspec
    def arena_commands(self, cli: click.Group) -> None:
        """Add extra sub-commands to the ``arena`` command group with ``cli.add_command(...)``.

        Called the first time the command line needs a name it does not know (or lists its
        commands), so keep it cheap: build the ``click`` commands here, import heavy modules inside
        them.
        """

    @hookspec
    def arena_checkpoint_saved(self, path: str, step: int, metrics: dict[str, float]) -> None:
        """Observe every checkpoint written by a trainer: ``path``, environment ``step`` and the latest
        logged ``metrics``."""

    @hookspec
    def arena_tournament_finished(self, report: Any) -> None:
        """Observe a finished tournament. ``report`` carries the leaderboard and head-to-head
        DataFrames and the output directory."""


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded (or broken) plugin came from."""

    name: str  # entry-point name
    distribution: str
    version: str
    module: str
    error: str | None = None

    @property
    def broken(self) -> bool:
        return self.error is not None


class PluginHost:
    """A pluggy manager plus what it knows about each plugin's distribution."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(ArenaSpec)
        self.plugins: dict[str, PluginInfo] = {}  # registration name -> info
        self.broken: list[PluginInfo] = []
        self.problems: list[str] = []  # malformed entries a hook returned (skipped)

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def register(self, module: object, info: PluginInfo) -> bool:
        """Register one plugin module and validate its hook implementations at once.

        A hook implementation with an unknown name (a misspelling) or with arguments its spec does
        not offer makes the plugin broken: reported and skipped, never silently ignored. Returns
        whether the plugin was registered.
        """
        name = f"{info.distribution}:{info.name}"
        if self.pm.has_plugin(name) or self.pm.is_registered(module):
            return False
        unmarked = unmarked_hooks(module)
        if unmarked:  # pluggy would ignore these silently
            self.fail(replace(info, error=f"{', '.join(unmarked)} not marked with @arena.hookimpl"))
            return False
        try:
            self.pm.register(module, name=name)
        except pluggy.PluginValidationError as exc:  # an implementation does not match its spec
            self.fail(replace(info, error=str(exc)))
            return False
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=name)
            self.fail(replace(info, error=unknown_hook_message(exc)))
            return False
        except Exception:
            self.pm.unregister(name=name)
            raise
        self.plugins[name] = info
        return True

    def fail(self, info: PluginInfo) -> None:
        """Record a broken plugin; report it once on stderr, or raise in strict mode."""
        message = (f"arena: plugin {info.distribution} {info.version} ({info.name} = {info.module}) "
                   f"failed to load: {info.error}")
        if strict_mode():
            raise PluginError(message)
        if info in self.broken:  # a hook called again fails again: say it once
            return
        self.broken.append(info)
        print(message + " — skipped", file=sys.stderr)

    def bad_entry(self, info: PluginInfo, message: str) -> None:
        """Record one malformed thing a plugin offered (skipped); reported once, or raised in strict mode."""
        if strict_mode():
            raise PluginError(f"arena: plugin {info.distribution} {info.version}: {message}")
        if message in self.problems:
            return
        self.problems.append(message)
        print(f"arena: plugin {info.distribution} {info.version}: {message}", file=sys.stderr)

    def info_for(self, plugin_name: str) -> PluginInfo:
        return self.plugins.get(plugin_name) or PluginInfo(plugin_name, plugin_name, "", plugin_name)

    def collect(self, hook_name: str, **kwargs: Any) -> list[tuple[PluginInfo, Any]]:
        """Call ``hook_name`` on each plugin separately, pairing every result with its source.

        A hook implementation that raises marks its plugin broken instead of failing the caller,
        so a bug in one plugin never hides what the others offer.
        """
        from arena.guard import interrupt_count, user_interrupted

        results = []
        caller = getattr(self.pm.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):  # registration order
            info = self.info_for(impl.plugin_name)
            before = interrupt_count()
            try:
                value = impl.function(*[kwargs[arg] for arg in impl.argnames])
            except KeyboardInterrupt:
                if user_interrupted(before):
                    raise
                self.fail(replace(info, error=f"{hook_name}() raised KeyboardInterrupt (not a Ctrl-C)"))
                continue
            except BaseException as exc:  # noqa: BLE001 - a plugin bug (sys.exit too) must not take the host down
                self.fail(replace(info, error=f"{hook_name}() raised {describe_exception(exc)}"))
                continue
            if value is not None:
                results.append((info, value))
        return results

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call an observer hook (``arena_checkpoint_saved``, ``arena_tournament_finished``, …).

        Like ``collect``, each plugin is called on its own and a failing observer is reported, not
        raised: an uploader with a network error must not end a training run.
        """
        self.collect(hook_name, **kwargs)


def unknown_hook_message(exc: pluggy.PluginValidationError) -> str:
    import difflib

    text = str(exc)
    known = hook_names()
    for word in text.replace("'", " ").replace('"', " ").split():
        if word.startswith("arena") and word not in known:
            close = difflib.get_close_matches(word, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"unknown hook {word!r}{hint}; known hooks: {', '.join(known)}"
    return text


def hook_names() -> list[str]:
    """The names of every hook a plugin may implement."""
    return sorted(n for n in vars(ArenaSpec) if n.startswith("arena_"))


def unmarked_hooks(module: object) -> list[str]:
    """Functions named like a hook but missing the ``@arena.hookimpl`` marker (a common slip)."""
    marker = f"{PROJECT}_impl"
    return [n for n in hook_names() if callable(getattr(module, n, None)) and not hasattr(getattr(module, n), marker)]


def strict_mode() -> bool:
    """``ARENA_STRICT_PLUGINS=1``: a broken plugin is an error (CI of a plugin, debugging)."""
    return os.environ.get("ARENA_STRICT_PLUGINS", "").strip().lower() not in ("", "0", "false", "no")


def disabled_distributions() -> set[str]:
    raw = os.environ.get("ARENA_DISABLE_PLUGINS", "")
    return {normalize(d) for d in raw.split(",") if d.strip()}


def normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def load_entry_points(host: PluginHost, group: str = ENTRY_POINT_GROUP) -> None:
    """Load every entry point of ``group`` on its own, honouring the disable list.

    Whatever a plugin's import raises — ``sys.exit()`` and a ``KeyboardInterrupt`` the user did not
    cause included — makes that plugin broken, never the command (``arena --help`` must keep working).
    """
    from arena.guard import interrupt_count, user_interrupted

    disabled = disabled_distributions()
    seen: set[tuple[str, str]] = set()
    for ep in metadata.entry_points(group=group):
        dist = ep.dist
        dist_name = dist.metadata["Name"] if dist is not None else "?"
        version = dist.version if dist is not None else "?"
        if normalize(dist_name) in disabled or (dist_name, ep.name) in seen:
            continue
        seen.add((dist_name, ep.name))
        info = PluginInfo(ep.name, dist_name, version, ep.value)
        before = interrupt_count()
        try:
            module = ep.load()
        except KeyboardInterrupt:
            if user_interrupted(before):
                raise
            host.fail(replace(info, error="KeyboardInterrupt raised at import (not a Ctrl-C)"))
            continue
        except BaseException as exc:  # noqa: BLE001 - report and carry on; sys.exit() at import included
            host.fail(replace(info, error=describe_exception(exc)))
            continue
        host.register(module, info)


def describe_exception(exc: BaseException) -> str:
    """``Type: first line`` of a plugin's failure; ``sys.exit`` is said as such."""
    if isinstance(exc, SystemExit):
        return f"SystemExit (called sys.exit({exc.code!r}))"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


_host: PluginHost | None = None


def get_host() -> PluginHost:
    """The process-wide plugin host, loaded on first use."""
    global _host
    if _host is None:
        host = PluginHost()
        load_entry_points(host)
        _host = host
    return _host


def reset_host() -> None:
    """Forget the loaded plugins (tests, or after installing a plugin at run time)."""
    global _host
    _host = None
