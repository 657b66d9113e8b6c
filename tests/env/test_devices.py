"""arena.env.resolve_device: the one place a device request becomes a torch.device or a one-line ValueError.

The CUDA cases run anywhere: torch.cuda's answers are patched (a machine with two GPUs, or none).
"""

from __future__ import annotations

import pytest
import torch

from arena.env import DeviceUnavailableError, TensorEnv, resolve_device


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("device, words", [
    ("cpu:5", "invalid device 'cpu:5': the CPU has no device index; use cpu"),
    ("tpu", "invalid device 'tpu': expected cpu, cuda, cuda:N or auto"),
    ("", "invalid device '': expected cpu, cuda, cuda:N or auto"),
    ("cuda:x", "invalid device 'cuda:x'"),
    (torch.device("meta"), "unsupported device 'meta': expected cpu, cuda, cuda:N or auto"),
])
def test_bad_devices_are_one_line(device, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")) as info:
        resolve_device(device)
    assert "\n" not in str(info.value)


def test_the_cpu_by_any_name_is_the_cpu(no_gpu):
    for device in ("cpu", "cpu:0", torch.device("cpu"), "auto", None):
        assert resolve_device(device) == torch.device("cpu")
    assert TensorEnv(2, device="cpu:0").device == torch.device("cpu")


def test_mps_without_mps_is_refused():
    if torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    with pytest.raises(ValueError, match="MPS is not available"):
        resolve_device("mps")


def test_cuda_without_cuda_is_its_own_error(no_gpu):
    """Another machine may have the GPU (a Ray worker): callers can tell this case from a typo."""
    for device in ("cuda", "cuda:1"):
        with pytest.raises(DeviceUnavailableError, match=f"device '{device}' requested but CUDA is not available"):
            resolve_device(device)


def test_cuda_gets_its_index_and_must_exist(two_gpus):
    assert resolve_device("cuda") == resolve_device("cuda:0") == resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    with pytest.raises(ValueError, match=r"device 'cuda:7': only 2 CUDA device\(s\) present"):
        resolve_device("cuda:7")


def test_each_process_of_a_run_takes_the_gpu_of_its_local_rank(two_gpus):
    assert resolve_device("cuda", local_rank=1, local_world_size=2) == torch.device("cuda", 1)
    assert resolve_device("auto", local_rank=0, local_world_size=2) == torch.device("cuda", 0)
    assert resolve_device("cpu", local_rank=3, local_world_size=4) == torch.device("cpu")
    assert resolve_device("cuda:1", local_rank=0, local_world_size=1) == torch.device("cuda", 1)
    with pytest.raises(ValueError, match="3 processes on this machine need one GPU each, found 2"):
        resolve_device("cuda", local_rank=0, local_world_size=3)
    with pytest.raises(ValueError, match="names one GPU for the 2 processes"):
        resolve_device("cuda:1", local_rank=0, local_world_size=2)
    with pytest.raises(ValueError, match="local rank 2: expected 0 to 1"):
        resolve_device("cuda", local_rank=2, local_world_size=2)
    with pytest.raises(ValueError, match="several processes runs on cpu or cuda, not mps"):
        resolve_device("mps", local_rank=0, local_world_size=1)


def test_processes_without_a_gpu_run_on_the_cpu(no_gpu):
    assert resolve_device("auto", local_rank=1, local_world_size=2) == torch.device("cpu")
    with pytest.raises(DeviceUnavailableError):
        resolve_device("cuda", local_rank=1, local_world_size=2)
