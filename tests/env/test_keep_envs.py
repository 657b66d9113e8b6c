"""TensorEnv.keep_envs: the battles kept go on exactly as in the whole batch, renumbered in order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.env import EnvConfig, TensorEnv, obs_vector


def actions(n: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    return {"rudder": torch.rand(n, generator=gen) * 2 - 1, "throttle": torch.rand(n, generator=gen),
            "fire": torch.rand(n, generator=gen) < 0.05}


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "dense"])
def test_kept_battles_go_on_as_in_the_whole_batch(packed: bool) -> None:
    config = EnvConfig(max_time=40.0)  # battles end and restart (from their game seeds) within the test
    whole, part = (TensorEnv(8, seed=3, config=config, packed_missiles=packed, compile=False) for _ in range(2))
    seeds = torch.arange(100, 108)
    whole.reset(game_seeds=seeds)
    part.reset(game_seeds=seeds)
    gen = torch.Generator().manual_seed(0)
    kept = torch.tensor([1, 4, 6])
    whole.watch(torch.tensor([4]))
    part.watch(torch.tensor([4]))
    restarted = False
    for step in range(80):
        a1, a2 = actions(8, gen), actions(8, gen)
        if step == 10:
            obs = part.keep_envs(kept)
            assert part.num_envs == 3 and part.watched.tolist() == [1]
            assert torch.equal(obs_vector(obs["p1"]), obs_vector(whole.observe()["p1"])[kept])
        if step >= 10:
            o, r, d, i = part.step({k: v[kept] for k, v in a1.items()}, {k: v[kept] for k, v in a2.items()})
            wo, wr, wd, wi = whole.step(a1, a2)
            assert torch.equal(obs_vector(o["p2"]), obs_vector(wo["p2"])[kept])
            assert torch.equal(r["p1"], wr["p1"][kept]) and torch.equal(d, wd[kept])
            assert torch.equal(i["watched_state"].x, wi["watched_state"].x)
            restarted |= bool(d.any())
        else:
            whole.step(a1, a2)
            part.step(a1, a2)
    assert restarted  # kept battles ended and began again from their game seeds


def test_watched_envs_must_be_kept_and_a_compiled_step_cannot_shrink() -> None:
    env = TensorEnv(4, seed=0, compile=False)
    env.reset()
    env.watch(torch.tensor([0]))
    with pytest.raises(ValueError, match="watched"):
        env.keep_envs(torch.tensor([1, 2]))
    env.compiled = True
    with pytest.raises(RuntimeError, match="fixed batch size"):
        env.keep_envs(torch.tensor([0]))


@pytest.mark.parametrize("envs, words", [
    ([-1], r"values in \[-1, -1\]"), ([4], r"values in \[4, 4\]"), ([1, 1], r"\[1, 1\]"), ([2, 1], r"\[2, 1\]"),
    (None, "None"), ([0.0, float("nan")], "float64"), (torch.tensor([0.0, 1.0]), "float32"),
    (torch.tensor([True, False, True, False]), "bool"), (torch.empty(2, dtype=torch.long, device="meta"), "meta"),
    ([[0, 1]], r"shape \[1, 2\]"), ([], r"shape \[0\]"), ("01", "str"),
    # past int64: the values as given, not wrapped to a negative number or read as floats
    (np.array([0, 2**63 + 5], dtype=np.uint64), r"values in \[0, 9223372036854775813\]"),
    (torch.tensor([0, 2**63 + 5], dtype=torch.uint64), r"values in \[0, 9223372036854775813\]"),
    ([0, 2**63 + 5], r"values in \[0, 9223372036854775813\]"), ([1, 2**70], rf"values in \[1, {2**70}\]"),
    (torch.tensor([1, 2**32 - 1], dtype=torch.uint32), r"values in \[1, 4294967295\]"),
])
def test_keep_envs_refuses_what_is_not_increasing_indices_and_changes_nothing(envs, words) -> None:
    env = TensorEnv(4, seed=3)
    env.reset()
    before = {key: value.clone() for key, value in env.state_dict()["world"].items()}
    with pytest.raises(ValueError, match=rf"keep_envs: expected a non-empty 1-D sequence of increasing distinct "
                                         rf"integer env indices in \[0, 4\), got .*{words}"):
        env.keep_envs(envs)
    assert env.num_envs == 4 and all(torch.equal(before[k], v) for k, v in env.state_dict()["world"].items())
    assert env.keep_envs([1, 3])["p1"]["x"].shape == (2,)


@pytest.mark.parametrize("method", ["watch", "restart_envs"])
def test_the_other_index_arguments_take_the_same_check(method: str) -> None:
    env = TensorEnv(4, seed=3)
    env.reset()
    with pytest.raises(ValueError, match=rf"{method}: expected .* in \[0, 4\), got values in \[2, 4\]"):
        getattr(env, method)([2, 4])
    with pytest.raises(ValueError, match=rf"{method}: expected .*got a tensor of dtype torch.float32"):
        getattr(env, method)(torch.tensor([1.0]))
    getattr(env, method)(torch.tensor([3, 0, 0]))  # any order, repeats too: a recorder parks battles on env 0
