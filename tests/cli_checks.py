"""What a command-line test checks of a click ``CliRunner`` result, for the tests here and the plugins'.

``CliRunner`` never prints a traceback: an exception the command lets escape is kept in
``result.exception`` (and the exit code is 1), so ``"Traceback" not in result.output`` holds whatever
happened. These checks read the exception instead: a command that refuses bad input stops on its own
(click's ``SystemExit``) with the exit code asked for.
"""

from __future__ import annotations

import traceback

from click.testing import Result


def escaped(result: Result) -> str:
    """The traceback of an exception the command let escape ("" when it exited on its own)."""
    if result.exception is None or isinstance(result.exception, SystemExit):
        return ""
    return "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else repr(result.exception)


def refused(result: Result, *words: str, exit_code: int = 2) -> str:
    """The command stopped on its own with ``exit_code`` (2: a usage error, the arena's errors) and its
    output names every one of ``words``; returns the output."""
    crash = escaped(result)
    assert not crash, crash
    assert result.exit_code == exit_code, f"exit code {result.exit_code}, not {exit_code}: {result.output}"
    for word in words:
        assert word in result.output, (word, result.output)
    return result.output


def succeeded(result: Result) -> str:
    """The command ran to its end (exit code 0, no exception); returns the output."""
    crash = escaped(result)
    assert not crash, crash
    assert result.exit_code == 0, result.output
    return result.output
