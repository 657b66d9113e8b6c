"""The command line's side of training on several processes: ``--nproc N``, and agreeing on errors.

``--nproc N`` checks the run in this process (every check a training process would make, so a bad
flag is one line before anything starts), then starts N processes running the same command without
``--nproc`` and with the output directory fixed (:func:`arena.training.launcher.launch`). From there
on each process is exactly what ``torchrun --nproc-per-node N -m arena train …`` would have started.

A process that fails while the run is set up must not leave the others waiting, and N copies of
the same message help nobody: :meth:`Agreement.agreed` makes every step that can fail a collective
one, after which the main process prints the first failure and the others exit quietly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from arena.errors import ArenaError
from arena.training.process_group import Group, Rank

if TYPE_CHECKING:
    from arena_ppo.process_sync import ProcessSync

T = TypeVar("T")


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


class Agreement:
    """How the processes of a run agree while it is set up and when it stops, for one process: each
    step runs as it is, and a failure is this process's one line.

    :class:`GroupAgreement` is the same over a group. The run itself (runner, rollouts, evaluation)
    never sees this object: the build gets its :attr:`sync`, which says who this process is.
    """

    def __init__(self, sync: "ProcessSync | None" = None) -> None:
        if sync is None:  # imported here: torch loads when a run starts, not for `arena train --help`
            from arena_ppo.process_sync import ProcessSync

            sync = ProcessSync()
        self.sync = sync

    @property
    def rank(self) -> Rank:
        return self.sync.rank

    @property
    def main(self) -> bool:
        """Only the main process creates the output folder and prints."""
        return self.sync.main

    @property
    def several(self) -> bool:
        return self.sync.several

    def agreed(self, step: Callable[[], T]) -> T:
        """Run ``step`` on every process; if it fails (one line) on any of them, all stop: the main process
        with the failure of the lowest rank, the others with exit status 2 and no message. One process
        raises its failure as it is."""
        return step()

    def everyone(self, message: str) -> click.exceptions.ClickException | click.exceptions.Exit:
        """The exception for a failure every process meets: the main process says it, the others leave quietly."""
        return fail(message)

    def share(self, value: T) -> T:
        """The main process's ``value`` on every process (the output folder it named, by its clock)."""
        return value

    @property
    def suffix(self) -> str:
        """What a line from a process other than the main one ends with: which process said it."""
        return "" if self.main else f" ({self.rank})"

    def close(self, wait: bool = True) -> None:
        """Leave the other processes (``wait=False``: without waiting for them, which could hang)."""


class GroupAgreement(Agreement):
    """:class:`Agreement` over a group of processes (``--nproc N``, torchrun)."""

    def __init__(self, group: Group) -> None:
        from arena_ppo.process_sync import GroupSync

        super().__init__(GroupSync(group))
        self.group = group

    @classmethod
    def join(cls, rank: Rank) -> "GroupAgreement":
        """Join the other processes started by torchrun (or ``--nproc``); one line when that fails."""
        from arena.training.process_group import DistributedError, PeerFailure

        try:
            return cls(Group.join(rank))
        except (DistributedError, PeerFailure) as exc:
            raise fail(str(exc)) from None

    def agreed(self, step: Callable[[], T]) -> T:
        error = None
        result: Any = None
        try:
            result = step()
        except click.ClickException as exc:
            error = exc.format_message()
        failed = self.group.first_error(error)
        if failed is None:
            return result
        rank, message = failed
        raise self.everyone(message if rank == 0 else f"{message} (process {rank} of {self.rank.world_size})")

    def everyone(self, message: str) -> click.exceptions.ClickException | click.exceptions.Exit:
        return fail(message) if self.main else click.exceptions.Exit(2)

    def share(self, value: T) -> T:
        return self.group.broadcast_object(value)

    def close(self, wait: bool = True) -> None:
        self.group.close(wait=wait)
