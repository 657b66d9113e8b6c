"""arena.errors: the one user-error class of every command (plugins' included) and the one out-of-memory check."""

from __future__ import annotations

import click
import pytest
import torch
from click.testing import CliRunner

from arena.errors import ArenaError, is_out_of_memory


def test_a_user_error_is_one_line_with_exit_status_2_or_the_status_given():
    @click.command()
    @click.option("--status", type=int, default=None)
    def command(status):
        raise ArenaError("--num-envs 0: expected at least 1") if status is None else ArenaError("launch", status)

    result = CliRunner().invoke(command, [])
    assert result.exit_code == 2 and result.output == "Error: --num-envs 0: expected at least 1\n"
    assert CliRunner().invoke(command, ["--status", "3"]).exit_code == 3


def test_the_cli_and_the_trainer_raise_the_same_class():
    import arena.cli
    from arena_ppo.launch import fail

    assert arena.cli.ArenaError is ArenaError
    assert type(fail("x")) is ArenaError and fail("x", 5).exit_code == 5


class CudaOutOfMemory(torch.OutOfMemoryError):
    pass


@pytest.mark.parametrize("exc, expected", [
    (MemoryError(), True),
    (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
    (CudaOutOfMemory("no text needed"), True),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: not enough memory: you tried to "
                  "allocate 1099511627776 bytes."), True),
    (RuntimeError("CUDA error: out of memory"), True),
    (RuntimeError("shape mismatch"), False),
    (RuntimeError("disk on fire"), False),
    (ValueError("memory_size must be positive"), False),
])
def test_out_of_memory_is_told_from_a_bug(exc, expected):
    assert is_out_of_memory(exc) is expected
