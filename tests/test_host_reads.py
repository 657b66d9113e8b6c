"""The detector the step-path tests rely on: it sees each kind of call that makes a GPU wait, and lets by
the calls that do not, so that an empty list means something."""

from __future__ import annotations

import torch

from host_reads import HostReads


def kinds(block) -> list[str]:
    with HostReads() as reads:
        block()
    return [r.split(" at ")[0] for r in reads.seen]


def test_each_kind_of_wait_is_seen_and_named_by_its_line() -> None:
    x = torch.arange(6.0)
    with HostReads() as reads:
        x.sum().item()
    assert len(reads.seen) == 1
    assert reads.seen[0].startswith("host read: _local_scalar_dense.default at test_host_reads.py:")
    assert kinds(lambda: bool(x.any())) == ["host read: _local_scalar_dense.default"]
    assert kinds(lambda: x[x > 2]) == ["host read: index.Tensor"]
    assert kinds(lambda: x.tolist()) == ["host read: tolist"]
    assert kinds(lambda: x.nonzero()) == ["host read: nonzero.default"]
    assert kinds(lambda: x[[0, 2]]) == ["host data: lift_fresh.default"]
    assert kinds(lambda: torch.randperm(6, device="cpu").to(x.device, non_blocking=True)) == ["made on the CPU: to"]
    assert kinds(lambda: torch.zeros(6).copy_(torch.ones(6))) == ["made on the CPU: copy_"]


def test_what_a_gpu_does_without_waiting_is_not_seen() -> None:
    x = torch.arange(6.0)

    def fine() -> None:
        torch.randperm(6, device=x.device)  # made where it is used
        torch.stack([x, x]).to(torch.int64)  # a dtype, no device
        y = x.clone()
        y[2] = 1.0  # a Python number goes to the kernel by value
        torch.where(x > 2, x, 0.0).sum() * 2
        x.repeat_interleave(2)

    assert kinds(fine) == []
