"""TensorEnv.keep_envs: the battles kept go on exactly as in the whole batch, renumbered in order."""

from __future__ import annotations

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
