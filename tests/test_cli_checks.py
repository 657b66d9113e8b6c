"""The shared CLI checks can fail: an exception the command lets escape, a wrong exit code, a missing word."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from cli_checks import refused, succeeded


@click.command()
@click.argument("what")
def command(what: str) -> None:
    if what == "crash":
        raise ValueError("an exception the command did not handle")
    if what == "refuse":
        raise click.UsageError("what: expected ok")


def invoke(what: str):
    return CliRunner().invoke(command, [what])


def test_an_escaped_exception_is_never_a_refusal():
    result = invoke("crash")
    assert "Traceback" not in result.output  # what the old checks read: CliRunner keeps it in result.exception
    with pytest.raises(AssertionError, match="ValueError: an exception the command did not handle"):
        refused(result, exit_code=1)
    with pytest.raises(AssertionError, match="ValueError"):
        succeeded(result)


def test_a_refusal_needs_its_exit_code_and_its_words():
    assert "what: expected ok" in refused(invoke("refuse"), "expected ok")
    with pytest.raises(AssertionError, match="exit code 2, not 1"):
        refused(invoke("refuse"), exit_code=1)
    with pytest.raises(AssertionError, match="no such words"):
        refused(invoke("refuse"), "no such words")
    with pytest.raises(AssertionError, match="exit code 0"):
        refused(invoke("ok"))
    assert succeeded(invoke("ok")) == ""
