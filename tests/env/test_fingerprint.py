"""1-v-1 battles as they were: a stored trajectory within float tolerance, and outcome statistics.

The env may be rewritten (a team axis, a new missile layout, a compiled step) but a 1-v-1 battle must
stay the battle it was. Bit-for-bit digests cannot say so across machines: torch's CPU kernels round
transcendental functions differently from one processor to the next, so this test compares instead

- **a trajectory**: every output of the first ``TRAJECTORY_STEPS`` steps of a seeded rollout
  (observations, final observations, rewards, dones, winners, episode statistics, NaN counts, kills)
  for a few battles picked for their events (launches, hits, time-outs, auto-resets), and the global
  states every ``GLOBAL_EVERY`` steps, all within a float tolerance far above rounding and far below
  any change of the physics;
- **outcome statistics** of the whole ``STEPS``-step rollout of ``NUM_ENVS`` battles (wins, draws,
  length, missiles, kills), within sampling noise: past the first episode, a rounding difference may
  send a battle another way, but not the distribution of battles.

The reference (``data/battles_1v1.npz``) was recorded with torch 2.13.0 on the CPU with one thread:
``python tests/env/test_fingerprint.py --record`` writes it again. Record only when a change of the
battles is intended, and say so in the commit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from arena.env import EnvConfig, TensorEnv
from arena.env.compiled import missing_compiler

REFERENCE = Path(__file__).with_name("data") / "battles_1v1.npz"
STEPS = 600  # long enough for launches, hits, time-outs and auto-resets at max_time 120 s
NUM_ENVS = 48
TRAJECTORY_STEPS = 130  # past the first episode's end (at most 120 steps) and its auto-reset
TRAJECTORY_ENVS = 6  # battles stored step by step, those with the most events first
GLOBAL_EVERY = 10  # steps between stored global states (71 values a player: sampled, not every step)
RTOL, ATOL = 1e-4, 1e-4  # rounding across CPUs and thread counts stays below 1e-5 over these steps
NOISE_SIGMAS = 5.0  # outcome statistics may differ by this many standard errors of a difference

CASES = {  # name: (config, step path, seed, reference case)
    "default-packed": (EnvConfig(max_time=120.0), "packed", 0, "default"),
    "default-dense": (EnvConfig(max_time=120.0), "dense", 0, "default"),  # the same battles as packed
    "default-compiled": (EnvConfig(max_time=120.0), "compiled", 0, "default"),  # the dense step, compiled
    "extended": (EnvConfig(max_time=120.0, obs_mode="extended"), "packed", 1, "extended"),
    "two-missiles-rewards": (EnvConfig.from_dict({"max_time": 200.0, "missiles": 2,
                                                  "reward": {"survival": 0.01, "missile_cost": 0.1}}), "packed", 2,
                             "two-missiles-rewards"),
}


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


class Rollout:
    """One seeded rollout: its per-step outputs (all battles) and the outcomes of its finished episodes."""

    def __init__(self, config: EnvConfig, step_path: str, seed: int) -> None:
        env = TensorEnv(NUM_ENVS, device="cpu", seed=seed, config=config, packed_missiles=step_path == "packed",
                        final_global_state=True, compile=step_path == "compiled")
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            self.steps, self.globals, self.outcomes = self._play(env, seed)
        finally:
            torch.set_num_threads(before)
        self.step_path = env.step_path  # how the steps ran: "compiled", or "eager (why)" after a fallback

    @staticmethod
    def _play(env: TensorEnv, seed: int
              ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
        obs = env.reset()
        gen = torch.Generator().manual_seed(seed + 1)
        steps: dict[str, list[np.ndarray]] = {}
        globals_: dict[str, list[np.ndarray]] = {}
        outcomes: dict[str, list[np.ndarray]] = {}
        for t in range(STEPS):
            obs, rewards, dones, infos = env.step(*(pursue(obs[p], gen) for p in ("p1", "p2")))
            done = dones.numpy()
            episode = {k: v for k, v in infos["episode"].items()}
            for name, value in (("winner", infos["winner"]), ("length", episode["length"]),
                                ("missiles_fired", episode["missiles_fired"]["p1"] + episode["missiles_fired"]["p2"]),
                                ("kills", episode["kills"]["p1"] + episode["kills"]["p2"]),
                                ("nan_actions", infos["nan_actions"]["p1"] + infos["nan_actions"]["p2"])):
                array = value.float().numpy()
                outcomes.setdefault(name, []).append(array if name == "nan_actions" else array[done])
            if t < TRAJECTORY_STEPS:
                step = {k: v for k, v in infos.items() if k != "final_global_state"}
                for path, value in tensors({"obs": obs, "rewards": rewards, "dones": dones, "infos": step}):
                    steps.setdefault(path, []).append(value.float().numpy().copy())
                if t % GLOBAL_EVERY == 0:
                    for p in ("p1", "p2"):
                        globals_.setdefault(p, []).append(env.global_state(p).numpy().copy())
        return ({k: np.stack(v) for k, v in steps.items()}, {k: np.stack(v) for k, v in globals_.items()},
                {k: np.concatenate([np.atleast_1d(a) for a in v]) for k, v in outcomes.items()})

    def eventful_envs(self) -> np.ndarray:
        """The battles with the most launches, hits and episode ends in the stored steps."""
        events = sum(self.steps[path].reshape(TRAJECTORY_STEPS, NUM_ENVS, -1).sum((0, 2))
                     for path in self.steps if path.endswith(("/kills/p1", "/kills/p2", "/dones")))
        fired = -np.diff(self.steps["/obs/p1/missiles"], axis=0).clip(max=0).sum(0)
        return np.argsort(-(events + fired), kind="stable")[:TRAJECTORY_ENVS]

    def statistics(self) -> dict[str, tuple[float, float, int]]:
        """(mean, standard deviation, count) of each outcome over the finished episodes."""
        winner = self.outcomes["winner"]
        stats = {name: (float((winner == code).mean()), float((winner == code).std()), winner.size)
                 for name, code in (("p1 wins", 1), ("p2 wins", 2), ("draws", 0))}
        for name in ("length", "missiles_fired", "kills"):
            values = self.outcomes[name]
            stats[f"mean {name}"] = (float(values.mean()), float(values.std()), values.size)
        nan = self.outcomes["nan_actions"]
        stats["nan actions per step"] = (float(nan.mean()), float(nan.std()), nan.size)
        return stats


def record(path: Path = REFERENCE) -> None:
    arrays: dict[str, np.ndarray] = {}
    for config, step_path, seed, case in CASES.values():
        if f"{case}|envs" in arrays:  # another layout of battles already recorded
            continue
        rollout = Rollout(config, step_path, seed)
        envs = rollout.eventful_envs()
        arrays[f"{case}|envs"] = envs
        for key, value in rollout.steps.items():
            arrays[f"{case}|step|{key}"] = value[:, envs]
        for key, value in rollout.globals.items():
            arrays[f"{case}|global|{key}"] = value[:, envs]
        for key, (mean, std, count) in rollout.statistics().items():
            arrays[f"{case}|stat|{key}"] = np.array([mean, std, count], dtype=np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as data:
        return {key: data[key] for key in data.files}


def play(case: str) -> tuple[str, Rollout]:
    config, step_path, seed, reference_case = CASES[case]
    return reference_case, Rollout(config, step_path, seed)


def wrap_period(key: str) -> float | None:
    """Angles are compared around the circle: a bearing of -1 (behind, turning left) is +1 (right)."""
    leaf = key.rsplit("/", 1)[-1]
    if leaf == "angle":
        return 1.0  # heading / 2 pi
    return 2.0 if leaf.endswith(("_angle", "_aspect")) else None  # wrapped angle / pi


def assert_close(actual: np.ndarray, expected: np.ndarray, what: str, period: float | None = None) -> None:
    diff = actual - expected
    if period is not None:
        diff = (diff + period / 2) % period - period / 2
    bad = (np.abs(diff) > ATOL + RTOL * np.abs(expected)) | (np.isnan(actual) != np.isnan(expected))
    if bad.any():
        pytest.fail(f"{what}: {actual[bad][:4].tolist()} against {expected[bad][:4].tolist()} recorded "
                    f"(tolerance {ATOL:g} + {RTOL:g} x value)")


@pytest.mark.parametrize("name", sorted(CASES))
def test_battles_match_the_reference(name: str, reference: dict[str, np.ndarray]) -> None:
    """One rollout a case (the 600 steps cost seconds): its trajectory, then its outcome statistics. The
    compiled case compares compiled battles or is skipped, naming why, where the compiler cannot run (no
    C++ compiler, or inductor failing on this CPU's settings): an env that fell back to eager would only
    repeat the dense case."""
    compiled = CASES[name][1] == "compiled"
    if compiled and (problem := missing_compiler(torch.device("cpu"))) is not None:
        pytest.skip(f"{problem}: the env steps eagerly here, so there are no compiled battles to compare")
    case, rollout = play(name)
    if compiled and rollout.step_path != "compiled":
        pytest.skip(f"the compiler cannot run here, the env fell back to {rollout.step_path}")
    check_trajectory(case, rollout, reference)
    check_statistics(case, rollout, reference)


def check_trajectory(case: str, rollout: Rollout, reference: dict[str, np.ndarray]) -> None:
    envs = reference[f"{case}|envs"]
    stored = {key.split("|", 2)[2]: value for key, value in reference.items() if key.startswith(f"{case}|step|")}
    assert sorted(stored) == sorted(rollout.steps), "the step's outputs are not the ones recorded"
    for t in range(TRAJECTORY_STEPS):  # the first step that differs is the one worth reading
        for key, expected in stored.items():
            assert_close(rollout.steps[key][t, envs], expected[t], f"{key} at step {t} of battles {envs.tolist()}",
                         wrap_period(key))
    for player in ("p1", "p2"):
        assert_close(rollout.globals[player][:, envs], reference[f"{case}|global|{player}"],
                     f"global state of {player} (every {GLOBAL_EVERY} steps)")


def check_statistics(case: str, rollout: Rollout, reference: dict[str, np.ndarray]) -> None:
    for name, (mean, std, count) in rollout.statistics().items():
        ref_mean, ref_std, ref_count = reference[f"{case}|stat|{name}"]
        noise = NOISE_SIGMAS * np.sqrt(std ** 2 / count + ref_std ** 2 / ref_count) + 1e-9
        assert abs(mean - ref_mean) <= noise, f"{name}: {mean:.4f} against {ref_mean:.4f} recorded (±{noise:.4f})"


def test_the_reference_covers_launches_hits_and_resets(reference: dict[str, np.ndarray]) -> None:
    for case in {c for *_, c in CASES.values()}:
        kills = sum(reference[f"{case}|step|/infos/kills/{p}"].sum() for p in ("p1", "p2"))
        dones = reference[f"{case}|step|/dones"].sum()
        fired = reference[f"{case}|step|/infos/episode/missiles_fired/p1"].max()
        assert kills > 0 and dones > 0 and fired > 0, case


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/env/test_fingerprint.py --record")
    record()
    print(f"wrote {REFERENCE}")
