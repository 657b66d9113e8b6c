"""Checkpoint files: atomic writes, weights_only reads, clear errors for bad files."""

from __future__ import annotations

import pytest
import torch

from arena.training import (
    CheckpointError,
    checkpoint_name,
    checkpoint_step,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)


def payload(**extra):
    return {"agent": "ppo", "format_version": 1, "weights": {"w": torch.arange(4.0)}, "rng": torch.get_rng_state(),
            **extra}


def test_round_trip_is_weights_only_loadable(tmp_path):
    path = save_checkpoint(payload(step=7), tmp_path / "run" / checkpoint_name(7))
    data = torch.load(path, weights_only=True)
    assert data["step"] == 7 and torch.equal(data["weights"]["w"], torch.arange(4.0))
    assert load_checkpoint(path, expect_agent="ppo", max_version=1)["agent"] == "ppo"
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["ckpt_000000007.pt"]  # no temp file left


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_tensors_are_saved_on_the_cpu(tmp_path):
    gpu = {"w": torch.arange(4.0, device="cuda"), "groups": [{"step": torch.ones(2, device="cuda")}], "n": 3,
           "pair": (torch.zeros(1, device="cuda"), "x")}
    path = save_checkpoint(payload(weights=gpu), tmp_path / checkpoint_name(1))
    data = torch.load(path, weights_only=True)  # no map_location: loads on a machine without a GPU
    weights = data["weights"]
    devices = {weights["w"].device.type, weights["groups"][0]["step"].device.type, weights["pair"][0].device.type}
    assert devices == {"cpu"}
    assert torch.equal(weights["w"], torch.arange(4.0)) and weights["n"] == 3 and weights["pair"][1] == "x"


def test_names_sort_by_step_and_temp_files_are_ignored(tmp_path):
    for step in (1200, 30, 5):
        save_checkpoint(payload(), tmp_path / checkpoint_name(step))
    (tmp_path / ".ckpt_000009999.pt.abc.tmp").write_bytes(b"partial")
    (tmp_path / "notes.txt").write_text("x")
    assert [checkpoint_step(p) for p in list_checkpoints(tmp_path)] == [5, 30, 1200]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "ckpt.pt"
    save_checkpoint(payload(step=1), target)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", boom)
    with pytest.raises(OSError):
        save_checkpoint(payload(step=2), target)
    assert load_checkpoint(target)["step"] == 1
    assert list(tmp_path.iterdir()) == [target]


def test_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match=r"nope\.pt: no such file"):
        load_checkpoint(tmp_path / "nope.pt")


def unreadable_error(path) -> str:
    """The message of loading ``path``, checked to be one whole line free of torch's own wording."""
    with pytest.raises(CheckpointError) as exc:
        load_checkpoint(path)
    text = str(exc.value)
    assert "\n" not in text and "weights_only" not in text and "torch.load" not in text, text
    assert "PytorchStreamReader" not in text and "Unpickl" not in text and text.endswith("of the run"), text
    return text


@pytest.mark.parametrize("content", [b"\x00garbage" * 10, b"", b"hello world"], ids=["garbage", "empty", "text"])
def test_corrupt_file(tmp_path, content):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(content)
    text = unreadable_error(bad)
    assert text.startswith(f"checkpoint {bad}: not a readable torch checkpoint (truncated, corrupt, or not a file")


@pytest.mark.parametrize("keep", [100, -50])
def test_truncated_file(tmp_path, keep):
    path = save_checkpoint(payload(), tmp_path / "t.pt")
    path.write_bytes(path.read_bytes()[:keep])
    assert "t.pt: not a readable torch checkpoint" in unreadable_error(path)


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")  # writes a TorchScript file
def test_torchscript_file_is_named_as_such(tmp_path):
    path = tmp_path / "policy.pt"
    torch.jit.trace(torch.nn.Linear(2, 1), torch.zeros(1, 2)).save(str(path))
    with pytest.raises(CheckpointError, match=r"policy\.pt: a TorchScript file \(an exported policy\), not a "
                                              r"checkpoint"):
        load_checkpoint(path)


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")  # writes a TorchScript file
def test_torch_save_files_are_told_by_their_structure(tmp_path):
    import io

    from arena.torchfile import is_torch_save_file

    best = save_checkpoint(payload(), tmp_path / "best.pt")  # not named like a checkpoint: still one
    legacy = io.BytesIO()
    torch.save({"w": torch.zeros(2)}, legacy, _use_new_zipfile_serialization=False)
    (tmp_path / "old.pt").write_bytes(legacy.getvalue())
    torch.jit.trace(torch.nn.Linear(2, 1), torch.zeros(1, 2)).save(str(tmp_path / "script.pt"))
    (tmp_path / "policy.onnx").write_bytes(b"\x08\x07\x12\x07pytorch")
    (tmp_path / "ckpt_000000001.pt").write_bytes(b"partial")
    assert is_torch_save_file(best) and is_torch_save_file(tmp_path / "old.pt")
    for name in ("script.pt", "policy.onnx", "ckpt_000000001.pt", "missing.pt"):
        assert not is_torch_save_file(tmp_path / name), name
    assert not is_torch_save_file(tmp_path)


class Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_pickled_objects_are_refused(tmp_path, capsys):
    path = tmp_path / "evil.pt"
    torch.save({"agent": "ppo", "format_version": 1, "x": Evil()}, path)
    with pytest.raises(CheckpointError, match=r"evil\.pt: holds Python objects besides tensors") as exc:
        load_checkpoint(path)
    assert "weights_only" not in str(exc.value) and "\n" not in str(exc.value)
    assert "pwned" not in capsys.readouterr().out


def test_foreign_checkpoint(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"state_dict": {"w": torch.zeros(2)}}, path)
    with pytest.raises(CheckpointError, match=r"model\.pt: not an arena checkpoint"):
        load_checkpoint(path)


def test_other_agent_and_newer_version(tmp_path):
    path = save_checkpoint({"agent": "other", "format_version": 1}, tmp_path / "o.pt")
    with pytest.raises(CheckpointError, match="written by agent 'other', not 'ppo'"):
        load_checkpoint(path, expect_agent="ppo")
    path = save_checkpoint({"agent": "ppo", "format_version": 9}, tmp_path / "n.pt")
    with pytest.raises(CheckpointError, match="format version 9 is newer"):
        load_checkpoint(path, max_version=1)


def test_payload_must_name_agent_and_version(tmp_path):
    with pytest.raises(ValueError, match="agent"):
        save_checkpoint({"weights": 1}, tmp_path / "x.pt")


@pytest.mark.parametrize("version", ["1", 1.0, True, 0, None, [1]])
def test_malformed_format_version_is_not_called_newer(tmp_path, version):
    path = tmp_path / "v.pt"
    torch.save({"agent": "ppo", "format_version": version}, path)
    with pytest.raises(CheckpointError, match="malformed: expected an int") as exc:
        load_checkpoint(path, max_version=1)
    assert "newer" not in str(exc.value) and "v.pt" in str(exc.value)


def test_stale_temp_files_are_cleaned_only_when_their_writer_is_gone(tmp_path):
    import os
    import time

    from arena.training import clean_stale_temp_files

    dead = tmp_path / ".ckpt_000000005.pt.999999999.k2j3.tmp"
    alive = tmp_path / f".ckpt_000000006.pt.{os.getppid()}.k2j3.tmp"  # the parent process is running
    old_legacy = tmp_path / ".ckpt_000000007.pt.abc.tmp"
    new_legacy = tmp_path / ".ckpt_000000008.pt.def.tmp"
    for path in (dead, alive, old_legacy, new_legacy):
        path.write_bytes(b"partial")
    os.utime(old_legacy, (time.time() - 7200, time.time() - 7200))
    assert sorted(clean_stale_temp_files(tmp_path)) == sorted([dead, old_legacy])
    assert alive.exists() and new_legacy.exists()
    assert clean_stale_temp_files(tmp_path / "missing") == []
