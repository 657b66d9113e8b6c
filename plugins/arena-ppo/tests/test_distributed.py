"""Training on several processes (CPU, gloo): identical learners, only process 0 writes, exact resume,
stopping together, a lost process, one-line errors for bad set-ups, and the merging helpers."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.training import Group, Rank, SelfPlayPool, Tally, list_checkpoints
from arena.training.process_group import DistributedError, rank_from_env, rank_seed, split_count
from cli_checks import refused

WORKER = Path(__file__).with_name("distributed_worker.py")
# The CPU: with --nproc 2, auto would ask for one GPU per process.
TINY = ["--set", "ppo.n_steps=16", "--set", "ppo.batch_size=32", "--set", "ppo.n_epochs=2", "--eval-games", "0",
        "--no-progress", "--threads", "1", "--device", "cpu"]
RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "ARENA_LAUNCHER_PID")


@pytest.fixture(autouse=True)
def not_launched(monkeypatch):
    """Tests start from a plain process, whatever started pytest."""
    for key in RANK_VARS:
        monkeypatch.delenv(key, raising=False)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in RANK_VARS}


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


def load(path: Path) -> dict:
    return torch.load(path, weights_only=True)


def assert_same_learner(a: dict, b: dict) -> None:
    for key in ("model", "obs_normalizer", "critic_normalizer", "value_normalizer"):
        for name, value in (a.get(key) or {}).items():
            assert torch.equal(value, b[key][name]), f"{key}.{name}"
    assert a["algorithm"]["learning_rate"] == b["algorithm"]["learning_rate"]
    for pa, pb in zip(a["algorithm"]["optimizer"]["state"].values(), b["algorithm"]["optimizer"]["state"].values()):
        assert all(torch.equal(pa[k], pb[k]) for k in pa)


# -- processes -------------------------------------------------------------------------------------

def test_processes_hold_bitwise_identical_learners_and_only_process_0_writes(tmp_path):
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           str(WORKER), str(tmp_path)], env=clean_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("ppo", "mappo"):
        a, b = load(tmp_path / f"{name}-rank0.pt"), load(tmp_path / f"{name}-rank1.pt")
        for key, value in a["shared"].items():  # weights and every normalizer statistic
            assert torch.equal(value, b["shared"][key]), (name, key)
        assert a["learning_rate"] == b["learning_rate"]
        for pa, pb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values()):
            assert all(torch.equal(pa[k], pb[k]) for k in pa), name
        assert a["records"] == b["records"]
        assert a["counters"] == 8 * 16 * 3  # the steps of both processes
        assert not torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"]), "each process has its own battles"
        assert a["shared"]["obs_normalizer.count"].item() == 8 * 16 * 3 * (2 if name == "mappo" else 1)
    ppo = load(tmp_path / "ppo-rank0.pt")
    assert ppo["learning_rate"] < 3e-3, "the adaptive rate moved, the same way on both"
    out = tmp_path / "ppo"
    assert [p.name for p in list_checkpoints(out)] == ["ckpt_000000128.pt", "ckpt_000000256.pt", "ckpt_000000384.pt"]
    assert len(rows(out / "metrics.csv")) == 3 and len(rows(out / "eval.csv")) == 1
    last = load(out / "ckpt_000000384.pt")
    assert last["world_size"] == 2 and len(last["ranks"]) == 1
    mine = load(tmp_path / "ppo-rank1.pt")["env"]["world"]["x"]
    assert torch.equal(last["ranks"][0]["env"]["world"]["x"], mine), "process 1's battles are in the checkpoint"
    report = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert report[0]["ppo"] and report[0]["mappo"], "process 0 prints"
    assert report[1]["ppo"] == [] and report[1]["mappo"] == [], "process 1 stays quiet"
    for r in report:  # the divergence check fails on every process, naming the tensor
        assert "process 1 holds a different model." in r["divergence"]
    check_merged_evaluation(out, report)


def check_merged_evaluation(out: Path, report: list[dict]) -> None:
    """The ppo run's one evaluation: 3 games against crank, 2 on process 0 and 1 on process 1. What is
    printed, logged, rated and kept (best.json) counts the games of both processes."""
    from arena.training import EvalResult, rate, reference_scale

    shares = [r["evaluated"] for r in report]
    assert [len(s) for s in shares] == [1, 1], shares  # one reference: no games among references
    assert [s[0][0] for s in shares] == [2, 1]
    games, wins, draws, losses = (a + b for a, b in zip(*(s[0] for s in shares)))
    assert f"eval vs crank after 384 steps: {wins}W {draws}D {losses}L of 3 (deterministic)" in report[0]["ppo"]
    row = rows(out / "eval.csv")[0]
    for part, count in (("win", wins), ("draw", draws), ("loss", losses)):
        assert float(row[f"eval_crank_{part}"]) == pytest.approx(count / 3), part
    rating = rate({"crank": EvalResult(games, wins, draws, losses)}, reference_scale(["crank"], {}).elo)
    assert rating is not None
    logged = [float(row[f"eval_elo{part}"]) for part in ("", "_low", "_high")]
    assert logged == pytest.approx([rating.elo, rating.low, rating.high])  # from 3 games, not 2 or 1
    best = json.loads((out / "best.json").read_text())
    assert best["step"] == 384 and best["scores"]["crank"] == pytest.approx((wins + 0.5 * draws) / 3)


def arena(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "arena", *args], env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def children(pid: int) -> dict[int, int]:
    """rank -> pid of the processes ``pid`` started (Linux /proc)."""
    out = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        env = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        rank = next(int(v.split(b"=", 1)[1]) for v in env if v.startswith(b"RANK="))
        out[rank] = int(child)
    return out


def wait_for(predicate, timeout: float, proc: subprocess.Popen) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


linux = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the processes through /proc")

# A teacher beside self-play: each process's own envs, streams, opponents and teacher, which a resume must put
# back (the teacher's memory is still empty at these steps; test_each_process_resumes_its_own_per_env_state
# covers it).
COMMON = ["--vs", "crank", "--vs", "self=0.5", "--num-envs", "8", "--seed", "3", "--save-interval", "128",
          "--set", "run.privileged_critic=true", "--set", "ppo.value_norm=true", "--kickstart", "crank", *TINY,
          "--nproc", "2"]


@linux
def test_a_run_stops_together_resumes_exactly_and_ends_with_one_line_when_a_process_dies(tmp_path):
    # SIGTERM to process 1 only: every process stops after the update, as one run.
    straight = tmp_path / "run"
    proc = arena(["train", "ppo", *COMMON, "--max-steps", "1000000000", "--out", str(straight)])
    wait_for(lambda: (straight / "ckpt_000000384.pt").exists(), 120, proc)
    os.kill(children(proc.pid)[1], signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stderr  # the run ends as the signal asked
    assert stdout.count("done:") == 1 and stdout.count("training ppo on 2 processes") == 1, stdout
    assert "Traceback" not in stderr

    # Resumed on two processes from an earlier checkpoint (a branch): the same weights at the same step.
    branch = tmp_path / "run-branch-256"
    resumed = arena(["train", "ppo", "--resume", str(straight / "ckpt_000000256.pt"), "--max-steps", "1000000000",
                     "--no-progress", "--nproc", "2"])
    wait_for(lambda: (branch / "ckpt_000000384.pt").exists(), 120, resumed)
    a, b = load(straight / "ckpt_000000384.pt"), load(branch / "ckpt_000000384.pt")
    assert_same_learner(a, b)
    assert torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"])
    assert torch.equal(a["ranks"][0]["env"]["world"]["x"], b["ranks"][0]["env"]["world"]["x"])
    assert torch.equal(a["ranks"][0]["rng"]["action"], b["ranks"][0]["rng"]["action"])
    assert a["opponents"]["self_play"] == b["opponents"]["self_play"]
    ra, rb = rows(straight / "metrics.csv")[:3], rows(branch / "metrics.csv")[:3]
    assert [r["policy_loss"] for r in ra] == [r["policy_loss"] for r in rb]

    # Process 1 killed: process 0 does not wait for it, and the run ends with a line or two, no traceback.
    start = time.monotonic()
    os.kill(children(resumed.pid)[1], signal.SIGKILL)
    _, stderr = resumed.communicate(timeout=60)
    assert time.monotonic() - start < 30, "the other process waited for its peer"
    assert resumed.returncode != 0
    assert stderr.count("continuing in a new folder") == 1, stderr
    assert "process 1 of 2 was killed by SIGKILL" in stderr, stderr
    assert "Traceback" not in stderr and "terminate called" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert 1 <= len(errors) <= 2, stderr  # the launcher's line, and process 0's "lost contact"


def ended(pid: int) -> bool:
    """Whether process ``pid`` is gone, or a zombie its new parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def assert_whole_checkpoints(out: Path) -> None:
    """No temporary file of an unfinished write, and the last checkpoint loads: nothing half-written."""
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert load(list_checkpoints(out)[-1])["world_size"] == 2


@linux
def test_the_processes_end_with_the_launcher_and_leave_whole_checkpoints(tmp_path):
    """The processes run in sessions of their own, so a ``kill -9`` of the launcher does not reach them:
    they follow it, stop after the update as on Ctrl-C and save. (A closed terminal, with stand-in
    processes: tests/training/test_launcher.py.)"""
    args = ["train", "ppo", "--vs", "crank", "--num-envs", "4", "--seed", "1", "--save-interval", "64", *TINY,
            "--nproc", "2", "--max-steps", "1000000000", "--out"]
    launchers: list[subprocess.Popen] = []
    pids: list[int] = []  # the processes they started: none outlives the test
    try:
        # kill -9: the processes share the launcher's pipes, so its output ends when they have ended.
        killed = tmp_path / "killed"
        proc = arena([*args, str(killed)])
        launchers.append(proc)
        wait_for(lambda: (killed / "ckpt_000000128.pt").exists(), 120, proc)
        workers = list(children(proc.pid).values())
        pids += workers
        proc.kill()
        end = time.monotonic() + 15
        stdout, stderr = proc.communicate(timeout=60)
        while not all(ended(pid) for pid in workers):
            assert time.monotonic() < end, "the processes outlived it"
            time.sleep(0.05)
        # Most often a clean stop after the update; under load a process now and then sees a second stop
        # and gives up the update in progress. Either way nothing saved is lost.
        assert stdout.count("done:") == 1 or "interrupted: the update in progress is lost" in stdout, stdout + stderr
        assert "Traceback" not in stderr, stdout + stderr
        assert_whole_checkpoints(killed)
    finally:
        for pid in pids:
            if not ended(pid):
                os.kill(pid, signal.SIGKILL)
        for launcher in launchers:
            if launcher.poll() is None:
                launcher.kill()
                launcher.communicate(timeout=60)


def test_one_process_repeats_a_plain_run_exactly(tmp_path, monkeypatch):
    args = ["train", "ppo", "--vs", "crank", "--vs", "self=0.5", "--num-envs", "6", "--seed", "5", "--max-steps",
            "192", "--save-interval", "96", "--set", "run.privileged_critic=true", "--set", "ppo.value_norm=true",
            "--learning-rate", "0.003", "--set", "ppo.desired_kl=0.001", *TINY]
    plain = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "plain")])
    assert plain.exit_code == 0, plain.output
    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}.items():
        monkeypatch.setenv(key, value)  # what torchrun --nproc-per-node 1 gives its process
    one = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    assert "on 1 process (cpu)" in one.output
    a, b = load(tmp_path / "plain" / "ckpt_000000192.pt"), load(tmp_path / "one" / "ckpt_000000192.pt")
    assert_same_learner(a, b)
    assert torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"]) and "world_size" not in b
    assert [r["policy_loss"] for r in rows(tmp_path / "plain" / "metrics.csv")] == \
        [r["policy_loss"] for r in rows(tmp_path / "one" / "metrics.csv")]


# -- bad set-ups: one line, before anything starts -------------------------------------------------

def train(args, out):
    return CliRunner().invoke(main, ["train", "ppo", *args, "--out", str(out)])


@pytest.mark.parametrize("args, message", [
    (["--num-envs", "1", "--nproc", "2"], "--num-envs 1: fewer battles than the 2 processes"),
    (["--num-envs", "9", "--nproc", "2"], "--num-envs 9 does not split evenly over 2 processes (it counts the envs "
                                          "of all of them); give a multiple of 2, e.g. 8 or 10"),
    (["--num-envs", "4", "--set", "ppo.batch_size=2", "--nproc", "4"], "2: smaller than the 4 processes"),
    (["--num-envs", "4", "--vs", "crank", "--vs", "placeholder", "--vs", "self", "--nproc", "2"],
     "3 opponents need 3 envs in each of the 2 processes; give at least 6"),
    (["--device", "cuda:0", "--nproc", "2"], "--device"),
    (["--device", "cuda", "--nproc", "2"], "--device"),
])
def test_bad_setups_are_one_line_before_any_process_starts(tmp_path, args, message):
    result = train([*args, "--max-steps", "1"], tmp_path / "bad")
    refused(result, message)
    assert not (tmp_path / "bad").exists()


def test_nproc_under_torchrun_and_a_broken_environment_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    result = train(["--nproc", "2"], tmp_path)
    assert result.exit_code == 2
    assert "--nproc 2: this process already runs as process 1 of 2 under torchrun" in result.output
    monkeypatch.setenv("RANK", "x")
    result = train([], tmp_path)
    assert result.exit_code == 2 and "RANK='x': expected an integer" in result.output
    monkeypatch.delenv("RANK")
    result = train([], tmp_path)
    assert result.exit_code == 2 and "RANK is not set, but WORLD_SIZE is" in result.output


def test_a_run_resumes_only_on_as_many_processes_as_saved_it(tmp_path):
    assert train(["--vs", "crank", "--num-envs", "4", "--max-steps", "64", *TINY], tmp_path / "r").exit_code == 0
    result = CliRunner().invoke(main, ["train", "ppo", "--resume", str(tmp_path / "r" / "ckpt_000000064.pt"),
                                       "--nproc", "2"])
    assert result.exit_code == 2
    assert "the run was saved by one process and continues exactly only in one process" in result.output
    data = load(tmp_path / "r" / "ckpt_000000064.pt")
    data.update(world_size=2, ranks=[{}])
    torch.save(data, tmp_path / "two.pt")
    result = CliRunner().invoke(main, ["train", "ppo", "--resume", str(tmp_path / "two.pt")])
    assert result.exit_code == 2
    assert "saved by 2 processes and continues exactly only on 2: arena train ppo --resume" in result.output


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpu_processes_hold_identical_learners(tmp_path):
    env = clean_env()
    done = subprocess.run([sys.executable, "-m", "arena", "train", "ppo", "--vs", "crank", "--num-envs", "64",
                           *TINY, "--max-steps", "2048", "--save-interval", "1024", "--device", "cuda", "--nproc", "2",
                           "--out", str(tmp_path / "gpu")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert load(list_checkpoints(tmp_path / "gpu")[-1])["world_size"] == 2  # saved only after the weights matched


# -- the pieces ------------------------------------------------------------------------------------

def test_rank_from_env_and_seeds():
    assert rank_from_env({}) is None
    assert rank_from_env({"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}) == \
        Rank(2, 4, 0, 2)
    with pytest.raises(DistributedError, match="RANK=4: expected 0 to WORLD_SIZE-1 = 3"):
        rank_from_env({"RANK": "4", "WORLD_SIZE": "4"})
    assert rank_seed(11, 0) == 11 and len({rank_seed(11, r) for r in range(64)}) == 64
    assert [split_count(5, Rank(r, 3)) for r in range(3)] == [2, 2, 1]


def test_each_process_resumes_its_own_per_env_state():
    """The main process's checkpoint keys hold process 0's state; every other process takes its own from
    ``ranks``: env, streams, opponents, hidden state, the kickstart teacher's memory and the last
    ``ranks``: env, streams, opponents, hidden state and the kickstart teacher's memory (a teacher with
    process 0's memory labels the wrong battles)."""
    from arena_ppo.process_sync import RANK_KEYS, rank_part

    assert {"env", "rng", "opponents", "hidden", "teacher"} <= set(RANK_KEYS)
    data = {"world_size": 2, "model": "shared", **{k: f"{k} of 0" for k in RANK_KEYS},
            "ranks": [{k: f"{k} of 1" for k in RANK_KEYS}]}
    assert rank_part(data, 0, 2) is data
    mine = rank_part(data, 1, 2)
    assert mine["model"] == "shared" and all(mine[k] == f"{k} of 1" for k in RANK_KEYS)
    with pytest.raises(ValueError, match="resumes on 2, not 3"):
        rank_part(data, 1, 3)


class FakeGroup:
    """Two processes in one: ``theirs`` is what the other process contributes to each gather."""

    def __init__(self, theirs: list) -> None:
        self.rank = Rank(0, 2)
        self.theirs = theirs

    def all_gather(self, tensor):
        return torch.stack([tensor, self.theirs.pop(0)])

    def all_gather_object(self, obj):
        return [obj, self.theirs.pop(0)]

    def all_reduce_(self, tensor, op="sum"):
        return tensor.add_(self.theirs.pop(0))


def encoded(x: torch.Tensor) -> torch.Tensor:
    """A batch as another process sends it: count, mean, sum of squared deviations (float64)."""
    x = x.double()
    return torch.cat([torch.tensor([float(len(x))], dtype=torch.float64), x.mean(0), (x - x.mean(0)).square().sum(0)])


def test_normalizers_merge_every_process_batches_as_one():
    from arena_ppo.modules import RunningNormalizer, ValueNorm

    def close(x: RunningNormalizer, y: RunningNormalizer) -> bool:
        return x.count.item() == y.count.item() and torch.allclose(x.mean, y.mean, atol=1e-5) and \
            torch.allclose(x.var, y.var, atol=1e-4)

    torch.manual_seed(0)
    a, b, c, d = torch.randn(50, 3) * 2 + 1, torch.randn(30, 3), torch.randn(40, 3) - 2, torch.randn(20, 3) * 5
    # Per batch (value targets): each update merges the other process's batch, this process's first.
    whole, merged = RunningNormalizer(3), RunningNormalizer(3)
    whole.update(torch.cat([a, b]))
    merged.gather = FakeGroup([encoded(b)]).all_gather
    merged.update(a)
    assert close(merged, whole)
    # Per rollout (observations): this process's batches as they come, everyone's at merge().
    whole, rolled = RunningNormalizer(3), RunningNormalizer(3)
    for x in (a, torch.cat([b, c]), d):
        whole.update(x)
    rolled.update(a)
    rolled.track()
    rolled.update(b)
    rolled.update(c[:10])
    assert rolled.count.item() == 90, "during the rollout: this process's batches only"
    rolled.merge(FakeGroup([encoded(c[10:])]).all_gather)
    rolled.update(d)
    assert close(rolled, whole)
    # A single process gets its own batch back, bit for bit.
    alone, plain = RunningNormalizer(3), RunningNormalizer(3)
    alone.gather = lambda t: t.unsqueeze(0)
    for x in (a, b):
        alone.update(x)
        plain.update(x)
    assert all(torch.equal(x, y) for x, y in zip(alone.state_dict().values(), plain.state_dict().values()))

    norm, ref = ValueNorm(), ValueNorm()
    x, y = torch.randn(20, dtype=torch.float64), torch.randn(60, dtype=torch.float64) + 3
    norm.gather = FakeGroup([torch.stack([torch.tensor(60.0, dtype=torch.float64), y.mean(), y.square().mean()])]
                            ).all_gather
    norm.update(x)
    ref.update(torch.cat([x, y]))
    assert torch.allclose(norm.running_mean, ref.running_mean) and torch.allclose(norm.running_mean_sq,
                                                                                   ref.running_mean_sq)


def test_advantage_statistics_and_gradients_are_those_of_all_processes():
    from arena_ppo.algorithms.update_sync import GroupUpdate

    x, y = torch.randn(100), torch.randn(37) * 3 + 1
    theirs = torch.stack([torch.tensor(37.0), y.double().mean(), (y.double() - y.double().mean()).square().sum()])
    sync = GroupUpdate(FakeGroup([theirs.double()]))  # type: ignore[arg-type]
    mean, std = sync.mean_std(x)
    both = torch.cat([x, y])
    assert torch.allclose(mean, both.mean(), atol=1e-6) and torch.allclose(std, both.std(), atol=1e-5)
    layer = torch.nn.Linear(3, 2)
    layer(torch.ones(1, 3)).sum().backward()
    mine = [p.grad.clone() for p in layer.parameters()]
    other = torch.cat([torch.full((8,), 3.0), torch.tensor([0.5])])  # their gradients, then their KL
    sync = GroupUpdate(FakeGroup([other]))  # type: ignore[arg-type]
    kl = sync.average_gradients(layer.parameters(), torch.tensor(0.25))
    assert kl.item() == pytest.approx(0.375)
    for before, param in zip(mine, layer.parameters()):
        assert torch.allclose(param.grad, (before + 3.0) / 2)


def test_pfsp_records_are_pooled_in_rank_order(tmp_path):
    pool = SelfPlayPool(tmp_path, loader=lambda path: None)
    pool.records = {"ckpt_1.pt": Tally(1, 0, 0), "ckpt_2.pt": Tally()}
    before = pool.snapshot_records()
    pool.record("ckpt_1.pt", 2, 1, 0)
    pool.merge_records(before, FakeGroup([{"ckpt_2.pt": (0.0, 0.0, 3.0), "ckpt_3.pt": (1.0, 0.0, 0.0)}]
                                         ).all_gather_object)
    assert pool.records == {"ckpt_1.pt": Tally(3, 1, 0), "ckpt_2.pt": Tally(0, 0, 3), "ckpt_3.pt": Tally(1, 0, 0)}


def test_options_are_replayed_exactly():
    from arena_ppo.launch import replay_options
    from arena_ppo.trainer import PPOTrainer

    command = PPOTrainer.command()
    args = ["--vs", "crank=3", "--vs", "self", "--learning-rate", "0.0001234567891", "--no-progress",
            "--set", "run.obs_norm=false", "--set", "ppo.desired_kl=0.000987654321", "--num-envs", "8", "--nproc",
            "2", "--out", "x"]
    ctx = command.make_context("ppo", list(args))
    replayed = replay_options(ctx, {"nproc"}, {"out": Path("y")})
    again = command.make_context("ppo", list(replayed))
    assert "--nproc" not in replayed and again.params["out"] == Path("y")
    for name in ("vs", "learning_rate", "progress", "assignments", "num_envs"):
        assert again.params[name] == ctx.params[name], name
    assert again.params["progress"] is False and again.params["assignments"] == ("run.obs_norm=false",
                                                                                 "ppo.desired_kl=0.000987654321")
    # Options left at their defaults stay out, so each process resolves them as the launcher did.
    assert "--seed" not in replayed and "--config" not in replayed


def test_group_needs_a_launcher():
    with pytest.raises(DistributedError, match="not started by torchrun"):
        Group.join()
