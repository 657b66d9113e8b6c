"""The command line's side of training on several processes: ``--nproc N``, and agreeing on errors.

``--nproc N`` checks the run in this process (every check a training process would make, so a bad
flag is one line before anything starts), then starts N processes running the same command without
``--nproc`` and with the output directory fixed (:func:`arena.training.launcher.launch`). From there
on each process is exactly what ``torchrun --nproc-per-node N -m arena train …`` would have started.

A process that fails while the run is set up must not leave the others waiting, and N copies of
the same message help nobody: :meth:`arena_ppo.process_sync.ProcessSync.agreed` makes every step
that can fail a collective one, after which the main process prints the first failure and the
others exit quietly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from arena.errors import ArenaError


def fail(message: str, status: int = 2) -> ArenaError:
    """A mistake the user can fix: one line, exit status 2 (or the ``status`` given), no traceback."""
    return ArenaError(message, status)


def replay_options(ctx: click.Context, skip: set[str], overrides: dict[str, Any]) -> list[str]:
    """The options the user typed (plus ``overrides``), as command-line tokens for the same command.

    Options left at their defaults are left out, so a process started with these tokens resolves
    them exactly as this one did (a resumed run's saved settings included).
    """
    from click.core import ParameterSource

    tokens: list[str] = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name is None or param.name in skip:
            continue
        name = param.name
        if name in overrides:
            value = overrides[name]
        elif ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            value = ctx.params[name]
        else:
            continue
        if value is None:
            continue
        if param.is_flag and param.secondary_opts:
            tokens.append(param.opts[0] if value else param.secondary_opts[0])
        elif param.is_flag:
            if value:
                tokens.append(param.opts[0])
        else:
            for item in (value if param.multiple else (value,)):
                tokens += [param.opts[0], token(item)]
    return tokens


def token(value: Any) -> str:
    """A value as the option parser reads it back exactly (``repr`` keeps every bit of a float)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)
