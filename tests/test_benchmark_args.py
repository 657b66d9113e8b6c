"""The benchmark scripts' command lines, as issue 67 asks (items 7, 15 and 16).

- Every script in benchmarks/ refuses a mistaken argument before any work, in one line on stderr
  (``error: --sizes: expected ...; got 'abc'``, exit 2: benchmarks/script_args.py), as ``arena`` does.
- time_to_quality.py reports an arm whose training failed as a failed row, not a traceback.
- learning_guard.py --save keeps the stored figures unless every run of the guard finished.
- benchmarks/gpu.sh refuses an unknown argument and a python without torch, and exits non-zero when its
  check fails.

The scripts run in processes of their own (``sys.executable``; the argument checks of every script in one), with
arguments that stop them before they train or measure anything, so the whole file takes seconds and needs no GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
STORED = BENCH / "learning_guard.json"


def run(script: str, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env})


def refused(done: subprocess.CompletedProcess[str], status: int = 2) -> str:
    """The one line a refused command printed (and nothing else on stderr)."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status and len(lines) == 1 and lines[0].startswith("error: "), \
        (done.returncode, done.stderr[-3000:])
    return lines[0]


# -- issue 67 item 15: the examples of the issue, each in its own process ------------------------------------

EXAMPLES = [
    ("time_to_quality.py", ["--seeds", "abc"],
     "error: --seeds: expected comma-separated seeds from 0 to 2**62 - 1; got 'abc'"),
    ("time_to_quality.py", ["--minutes", "-1"], "error: --minutes: expected a positive number of minutes; got '-1'"),
    ("learning_guard.py", ["--parallel", "0"], "error: --parallel: expected a positive integer; got '0'"),
    ("learning_guard.py", ["--games", "0"], "error: --games: expected an integer from 1 to 16,777,216; got '0'"),
    ("env_throughput.py", ["--sizes", "abc"],
     "error: --sizes: expected comma-separated integers from 1 to 16,777,216; got 'abc'"),
    ("wrappers.py", ["--sizes", "-1"],
     "error: --sizes: expected comma-separated integers from 1 to 16,777,216; got '-1'"),
    ("tournament.py", ["--participants", "0"], "error: --participants: expected an integer of at least 2; got '0'"),
    ("update_paths.py", ["--envs", "0"],
     "error: --envs: expected comma-separated integers from 1 to 16,777,216; got '0'"),
]


@pytest.fixture(scope="module")
def examples_run() -> dict[str, subprocess.CompletedProcess[str]]:
    """Each example through its script's ``main``, all in one process of their own (one torch import)."""
    cases = [[script.removesuffix(".py"), args] for script, args, _ in EXAMPLES]
    results = drive("main", cases, ROOT)
    return {f"{script} {' '.join(args)}": subprocess.CompletedProcess(args, status, out, err)
            for (script, args, _), (_, _, status, out, err) in zip(EXAMPLES, results, strict=True)}


@pytest.mark.parametrize(("script", "args", "message"), EXAMPLES, ids=[f"{s} {' '.join(a)}" for s, a, _ in EXAMPLES])
def test_a_mistaken_argument_is_refused_in_one_line(script: str, args: list[str], message: str,
                                                    examples_run: dict[str, subprocess.CompletedProcess[str]]) -> None:
    done = examples_run[f"{script} {' '.join(args)}"]
    assert refused(done) == message
    assert done.stdout == ""  # refused before any work


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder no file can be made in: one without write permission, or for root (who ignores permission bits)
    a kernel's file system."""
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
    elif Path("/sys/kernel").is_dir():
        yield Path("/sys/kernel")
    else:
        pytest.skip("no folder here is read-only to root")


@pytest.mark.parametrize("script", ["time_to_quality.py", "learning_guard.py"])
def test_an_output_folder_that_is_a_file_is_refused_before_any_work(script: str, tmp_path: Path) -> None:
    taken = tmp_path / "taken.txt"
    taken.write_text("mine\n")
    message = refused(run(script, "--out", str(taken)))
    assert message == f"error: --out: expected a folder to write in, new or existing; got '{taken}' (a file)"
    assert taken.read_text() == "mine\n"


@pytest.mark.parametrize("script", ["time_to_quality.py", "learning_guard.py"])
def test_an_output_folder_that_cannot_be_written_is_refused_before_any_work(script: str,
                                                                            read_only_folder: Path) -> None:
    out = read_only_folder / "quality"
    message = refused(run(script, "--out", str(out)))
    assert message.startswith(f"error: --out: expected a folder to write in, new or existing; got '{out}' "
                              f"({read_only_folder}: ")
    assert not out.exists()


def test_an_arm_whose_training_fails_is_a_failed_row_not_a_traceback(tmp_path: Path) -> None:
    done = run("time_to_quality.py", "--arm", "broken=--num-envs 0", "--minutes", "0.05", "--games", "4",
               "--out", str(tmp_path))
    assert refused(done, status=1) == (f"error: 1 of 1 runs failed (broken seed 0): see their train.log under "
                                       f"{tmp_path}")
    assert "| broken | failed | - | 0 of 1 (1 failed) |" in done.stdout
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [(r["arm"], r["seed"]) for r in rows] == [("broken", 0)]
    assert rows[0]["failed"].startswith("arena train exit 2: ") and "--num-envs" in rows[0]["failed"]


# -- issue 67 item 15: every script, one process for all -----------------------------------------------------

# script -> (arguments its defaults need, a mistake, what the refusal starts with). Every script in benchmarks/
# has a row: a new one without ScriptParser fails the test below.
SCRIPTS: dict[str, tuple[list[str], list[str], str]] = {
    "agents": ([], ["--repeats", "0"], "error: --repeats: expected a positive integer; got '0'"),
    "env_throughput": ([], ["--team-sizes", "1,9"], "error: --team-sizes: expected comma-separated integers from "
                                                    "1 to 8; got '1,9'"),
    "exploitability": (["{file}"], ["{file}", "--target-policy", "greedy"],
                       "error: --target-policy: expected comma-separated names, some of sampled, deterministic; "
                       "got 'greedy' (unknown 'greedy')"),
    "learning_guard": ([], ["--runs", "ppo-crank", "--save"],
                       "error: --save: stores the figures of every run; --runs leaves out league-taught, mappo-2v2"),
    "rating_over_training": (["{folder}"], ["{folder}/nothing"], "error: runs: expected an existing folder; got "),
    "ratings": ([], ["--leagues", "-3"], "error: --leagues: expected a positive integer; got '-3'"),
    "ray_tournament": ([], ["--rounds", "0"], "error: --rounds: expected a positive integer; got '0'"),
    "replays": ([], ["--watch", "0,x"], "error: --watch: expected comma-separated counts of battles (0 for none) "
                                        "or 'all'; got '0,x'"),
    "sprt_error_rates": ([], ["--bias", "0.5"], "error: --bias: expected a lean from 0 to 0.328; got '0.5'"),
    "step_paths_agree": ([], ["--team-size", "9"], "error: --team-size: expected an integer from 1 to 8; got '9'"),
    "threads": ([], ["--workloads", "env:0,play"], "error: --workloads: expected comma-separated env:N"),
    "time_to_quality": ([], ["--arm", "a/b=--num-envs 64"], "error: --arm: expected NAME=[ENV=VALUE ...] [ARGS]; "
                                                            "got 'a/b=--num-envs 64'"),
    "tournament": ([], ["--max-envs", "0"], "error: --max-envs: expected an integer from 1 to 16,777,216; got '0'"),
    "train_distributed": ([], ["--envs", "1023"], "error: --envs: expected an even count"),
    "train_league": ([], ["--runs", "league,self"], "error: --runs: expected comma-separated names, some of league, "
                                                    "crank; got 'league,self' (unknown 'self')"),
    "train_teams": ([], ["--rivals", "ace"], "error: --rivals: expected comma-separated names, some of crank, "
                                             "placeholder; got 'ace' (unknown 'ace')"),
    "train_vs_crank": ([], ["--opponents", "crank,nobody"], "error: --opponents: expected comma-separated agents; "
                                                            "got 'crank,nobody' (unknown agent 'nobody'"),
    "training_identity": ([], ["--against", "no-such-revision"], "error: --against: expected a git revision of "),
    "trigger_spread": (["{file}"], ["{file}", "--games", "0"],
                       "error: --games: expected an integer from 1 to 16,777,216; got '0'"),
    "update_paths": ([], ["--device", "tpu:9"], "error: --device: invalid device 'tpu:9'"),
    "wrappers": ([], ["--steps", "0"], "error: --steps: expected a positive integer; got '0'"),
}

DRIVER = textwrap.dedent("""
    import contextlib, importlib, io, json, sys
    sys.path.insert(0, sys.argv[1])
    results = []
    for name, argv in json.loads(sys.argv[3]):
        entry = getattr(importlib.import_module(name), sys.argv[2])
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                entry(argv)
            status = 0
        except SystemExit as exc:
            status = exc.code
        results.append([name, argv, status, out.getvalue(), err.getvalue()])
    print("RESULTS " + json.dumps(results))
""")


def drive(entry: str, cases: list[list], cwd: Path) -> list[list]:
    """``[script, argv, status, stdout, stderr]`` of each case's ``script.entry(argv)``, run one after another
    in one process (each script imports torch and arena: one process pays for that once)."""
    done = subprocess.run([sys.executable, "-c", DRIVER, str(BENCH), entry, json.dumps(cases)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.split("RESULTS ", 1)[1])
    assert len(results) == len(cases)
    return results


def test_every_script_in_benchmarks_parses_its_arguments_with_the_shared_parser(tmp_path: Path) -> None:
    scripts = {p.stem for p in BENCH.glob("*.py")} - {"script_args"}
    assert scripts == set(SCRIPTS), "a script without a row here: give it parse_args and a row"
    (tmp_path / "policy.pt").write_bytes(b"")
    fill = {"{file}": str(tmp_path / "policy.pt"), "{folder}": str(tmp_path)}

    def filled(argv: list[str]) -> list[str]:
        return [fill.get(a, a.replace("{folder}", str(tmp_path))) for a in argv]

    cases, kinds = [], []
    for name, (needed, mistake, _) in sorted(SCRIPTS.items()):
        cases += [[name, filled(needed)], [name, filled(mistake)], [name, [*filled(needed), "--no-such-option"]]]
        kinds += ["defaults", "mistake", "unknown option"]
    for (name, argv, status, _, err), kind in zip(drive("parse_args", cases, tmp_path), kinds, strict=True):
        if kind == "defaults":  # what a plain run parses is valid
            assert (status, err) == (0, ""), (name, argv, status, err)
            continue
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1, (name, argv, status, err)
        expected = SCRIPTS[name][2] if kind == "mistake" else "error: unrecognized arguments: --no-such-option"
        assert lines[0].startswith(expected), (name, lines[0])


# -- issue 67 item 7: the learning guard's stored figures ----------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A copy of the stored figures: --save is pointed at it, never at benchmarks/learning_guard.json."""
    copy = tmp_path / "stored.json"
    shutil.copyfile(STORED, copy)
    return copy


@pytest.mark.parametrize(("args", "message"), [
    (["--seeds", ""], "error: --seeds: expected comma-separated seeds from 0 to 2**62 - 1; got ''"),
    (["--seeds", "0"], "error: --save: needs at least two seeds (a stored figure is their median and spread); got "
                       "--seeds 0"),
    (["--runs", "mappo-2v2"], "error: --save: stores the figures of every run; --runs leaves out ppo-crank, "
                              "league-taught"),
], ids=["no seeds", "one seed", "one run"])
def test_the_guard_refuses_a_save_of_fewer_figures_before_any_run(args: list[str], message: str,
                                                                  stored: Path) -> None:
    before = stored.read_bytes()
    done = run("learning_guard.py", *args, "--save", "--stored", str(stored))
    assert refused(done) == message
    assert stored.read_bytes() == before


def test_the_guard_keeps_its_stored_figures_when_a_run_fails(stored: Path, tmp_path: Path) -> None:
    before = stored.read_bytes()
    runs = tmp_path / "runs"
    runs.mkdir()
    names = ("ppo-crank", "league-taught", "mappo-2v2")
    for name in names:  # a file where each run's folder goes: every `arena train` fails at once
        for seed in (0, 1):
            (runs / f"{name}-{seed}").write_text("")
    done = run("learning_guard.py", "--seeds", "0,1", "--save", "--stored", str(stored), "--out", str(runs),
               timeout=240)
    jobs = ", ".join(f"{n} seed {s}" for n in names for s in (0, 1))
    commit = json.loads(before)["commit"]
    assert refused(done, status=1) == (f"error: --save refused: 6 of 6 runs did not finish ({jobs}); {stored} keeps "
                                       f"the figures of {commit}")
    assert "ppo-crank seed 0: failed: " in done.stdout  # the table still shows what happened
    assert stored.read_bytes() == before


# -- issue 67 item 16: benchmarks/gpu.sh ---------------------------------------------------------------------

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def gpu_sh(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "benchmarks/gpu.sh", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHON": sys.executable, **env})


@needs_bash
@pytest.mark.parametrize("arg", ["--dry-rnu", "dry-run", "-n"])
def test_gpu_sh_refuses_an_unknown_argument_with_its_usage(arg: str) -> None:
    done = gpu_sh("--dry-run", arg)
    assert refused(done) == f"error: unknown argument '{arg}'; usage: bash benchmarks/gpu.sh [--dry-run] [--help]"
    assert done.stdout == ""  # nothing started


@needs_bash
def test_gpu_sh_help_prints_its_usage() -> None:
    done = gpu_sh("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: bash benchmarks/gpu.sh [--dry-run] [--help]\n")
    assert done.stderr == ""


@needs_bash
def test_gpu_sh_refuses_a_python_without_torch_before_installing_anything(tmp_path: Path) -> None:
    bare = tmp_path / "python"  # this interpreter without its site-packages: no torch
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    done = gpu_sh("--dry-run", PYTHON=str(bare))
    assert refused(done) == (f"error: PYTHON={bare} cannot import torch (ModuleNotFoundError: No module named "
                             f"'torch'); set PYTHON to a python with torch")
    assert done.stdout == ""  # no install, no step
    missing = gpu_sh("--dry-run", PYTHON=str(tmp_path / "no-such-python"))
    assert refused(missing) == (f"error: PYTHON={tmp_path / 'no-such-python'}: no such program; set PYTHON to a "
                                f"python with torch")


@needs_bash
def test_gpu_sh_exits_non_zero_when_its_check_fails() -> None:
    # A deadline of 0 s skips every step: the check cannot pass, and must not end with status 0.
    done = gpu_sh("--dry-run", GPU_DEADLINE="0", timeout=180)
    assert done.returncode == 1, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    assert "FAIL  every GPU test passes" in done.stdout
    assert "a 100-participant league in one go (skipped)" in done.stdout  # a step written through tee counts too
    assert done.stdout.rstrip().splitlines()[-1].startswith("the check failed: ")
