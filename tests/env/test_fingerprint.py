"""A fingerprint of 1-v-1 battles: every output of a long seeded rollout, hashed bit for bit.

It pins what the env computes today, so that a rewrite of the state layout (a team axis, say) can be
shown to leave 1-v-1 battles exactly as they were: same observations, rewards, dones, winners,
episode statistics and global states for the same seed, device and thread count. The digests were
recorded on the CPU with one torch thread and torch 2.13.0, once for each of torch's CPU kernel sets
(``torch.backends.cpu.get_cpu_capability()``): the AVX2 and the AVX-512 kernels round transcendental
functions differently. Another torch release, or another kernel set, may change those bits too, so
there the test is skipped (users bring their own torch build); when the project moves to a new torch,
re-record, and say so in the commit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import torch

from arena.env import EnvConfig, TensorEnv

# What a 1-v-1 step returned when the fingerprint was taken; entries added since are not pinned here.
PINNED_INFOS = ("terminated", "truncated", "winner", "final_obs", "episode", "nan_actions", "final_global_state")
PINNED_EPISODE = ("return", "length", "missiles_fired")
RECORDED_WITH = "2.13.0"  # torch release the digests below were taken with
STEPS = 600  # long enough for launches, hits, time-outs and auto-resets at max_time 120 s
NUM_ENVS = 48


def tensors(value: Any, prefix: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in a nest of dicts, in sorted key order, with its path."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, Mapping):
        for key in sorted(value):
            yield from tensors(value[key], f"{prefix}/{key}")
    else:
        raise TypeError(f"{prefix}: unexpected {type(value).__name__}")


def pursue(obs: dict[str, torch.Tensor], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Noisy pursuit that fires when close and ahead: battles with launches, hits, kills and winners.

    Rudders overshoot [-1, 1] and are now and then NaN, so clamping and NaN counting are covered too.
    """
    n = obs["x"].shape[0]
    noise = torch.rand(n, generator=gen) * 1.2 - 0.6
    rudder = obs["enemy_relative_angle"] * 4.0 + noise
    rudder = torch.where(torch.rand(n, generator=gen) < 0.005, torch.full_like(rudder, float("nan")), rudder)
    ahead = obs["enemy_relative_angle"].abs() < 0.08
    fire = ahead & (obs["enemy_distance"] < 0.25) & (torch.rand(n, generator=gen) < 0.3)
    return {"rudder": rudder, "throttle": 0.6 + 0.4 * torch.rand(n, generator=gen), "fire": fire}


def fingerprint(config: EnvConfig, packed: bool, seed: int) -> str:
    torch.set_num_threads(1)
    env = TensorEnv(NUM_ENVS, device="cpu", seed=seed, config=config, packed_missiles=packed,
                    final_global_state=True)
    digest = hashlib.sha256()

    def feed(value: Any) -> None:
        for path, t in tensors(value):
            digest.update(path.encode())
            digest.update(t.detach().contiguous().cpu().numpy().tobytes())

    obs = env.reset()
    feed(obs)
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(STEPS):
        obs, rewards, dones, infos = env.step(*(pursue(obs[p], gen) for p in ("p1", "p2")))
        infos = {k: v for k, v in infos.items() if k in PINNED_INFOS}
        infos["episode"] = {k: v for k, v in infos["episode"].items() if k in PINNED_EPISODE}
        feed({"obs": obs, "rewards": rewards, "dones": dones, "infos": infos,
              "global": {"p1": env.global_state("p1"), "p2": env.global_state("p2")}})
    return digest.hexdigest()


CASES = {  # name: (config, packed missiles, seed, {CPU capability: digest})
    "default-packed": (EnvConfig(max_time=120.0), True, 0, {
        "AVX2": "e4b1dad6622c0cee5079a829ae45a91cbd3674ba99c877185271af62e5c79750",
        "AVX512": "d383a7655827a2cc12577a31bafbf7290d5f18114c7ea408dd8a8b348f86b9b4"}),
    "default-dense": (EnvConfig(max_time=120.0), False, 0, {
        "AVX2": "bb5a4280fb5d0331989417d5833e3e93b8d8d6b60db51d1045cdc90f7f3fbc41",
        "AVX512": "5fe5fa14cee326fa0d51169241c460f96f6295781a2fc85fbbd4375d341de9fb"}),
    "extended": (EnvConfig(max_time=120.0, obs_mode="extended"), True, 1, {
        "AVX2": "5397ecce1e3038d293defbf26f785fc5b19589e40f26a490065523d2c4e15477",
        "AVX512": "3b95eccc1ae16cce667ac02608450b71ecf1d2cfa5983c8ee16a90a0d1a6711a"}),
    "two-missiles-rewards": (EnvConfig.from_dict({"max_time": 200.0, "missiles": 2,
                                                  "reward": {"survival": 0.01, "missile_cost": 0.1}}), True, 2, {
        "AVX2": "6a95e2b3874a28ae4387ae1950ec5c16121d44c0daa89b26280a6f3fb7ef6ac8",
        "AVX512": "d8bd16944dd7a284647d6c2021a25ef1d30f78e725a1501d0127ab6ea5e75aab"}),
}
CAPABILITY = torch.backends.cpu.get_cpu_capability()  # the CPU kernels torch dispatches to here


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.skipif(torch.__version__.split("+")[0] != RECORDED_WITH,
                    reason=f"digests recorded with torch {RECORDED_WITH}, this is torch {torch.__version__}")
@pytest.mark.skipif(CAPABILITY not in CASES["extended"][3],
                    reason=f"digests recorded with the AVX2 and AVX512 CPU kernels, this CPU runs {CAPABILITY}")
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_vs_one_battles_are_unchanged(case: str) -> None:
    config, packed, seed, digests = CASES[case]
    assert fingerprint(config, packed, seed) == digests[CAPABILITY]
