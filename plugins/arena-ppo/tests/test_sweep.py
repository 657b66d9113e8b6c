"""``arena sweep ppo``: the space file's refusals, a sweep to its end, a killed sweep run again, two sweep
processes on one study, the best.yaml it writes reproducing its best trial bit for bit, and ``--confirm``.

The runs are as small as a run gets (8 envs, one or two updates of 32 steps, no evaluation, one
scoring game against crank alone, which the untrained policy loses early: the placeholder's battles
run to the time limit): what is tested is the search around them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner

from arena.cli import main
from cli_checks import refused, succeeded

optuna = pytest.importorskip("optuna", reason="arena sweep needs the extra agent-arena[sweep]")

TINY = ["--vs", "crank", "--set", "run.floor=0", "--num-envs", "8", "--set", "ppo.n_steps=32", "--set",
        "ppo.batch_size=64", "--eval-games", "0", "--score-games", "1"]
SPACE = ("ppo.learning_rate: {type: loguniform, low: 1.0e-4, high: 1.0e-2}\n"
         "ppo:\n  n_epochs: {type: int, low: 1, high: 4}\n")


def space_file(tmp_path: Path, text: str = SPACE) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def sweep_args(space: Path, out: Path, *extra: str) -> list[str]:
    return ["sweep", "ppo", str(space), *TINY, "--out", str(out), *extra]


def trials(out: Path) -> list[optuna.trial.FrozenTrial]:
    study = optuna.load_study(study_name="sweep", storage=f"sqlite:///{out / 'study.db'}")
    return study.get_trials(deepcopy=False)


def ended_once(out: Path, count: int) -> list[optuna.trial.FrozenTrial]:
    """Every trial asked for ended once: the trials a retry took over aside, ``count`` of them, all complete."""
    found = trials(out)
    replaced = {n for t in found for n in t.system_attrs.get("retry_history", [])}
    kept = [t for t in found if t.number not in replaced]
    assert [t.state.name for t in kept] == ["COMPLETE"] * count, [(t.number, t.state.name) for t in found]
    assert all(t.state.name == "FAIL" for t in found if t.number in replaced)
    return kept


# -- the space file ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "words"), [
    ("ppo.learnin_rate: {type: loguniform, low: 1.0e-4, high: 1.0e-3}\n", ["ppo.learnin_rate", "did you mean"]),
    ("ppo.gamma: {type: uniform, low: 0.9, high: 1.5}\n", ["ppo.gamma", "high 1.5", "in [0, 1]"]),
    ("ppo:\n  clip_epsilon: {type: uniform, low: 0, high: 0.3}\n", ["ppo.clip_epsilon", "low 0", "in (0, 10]"]),
    ("ppo.n_epochs: {type: int, low: 0, high: 4}\n", ["ppo.n_epochs", "low 0"]),
    ("ppo.lr_schedule: {type: categorical, choices: [constant, cosine]}\n", ["ppo.lr_schedule", "'cosine'"]),
    ("ppo.n_steps: {type: loguniform, low: 16, high: 64}\n", ["ppo.n_steps", "use int"]),
    ("ppo.gamma: {type: uniform, low: 0.9}\n", ["ppo.gamma", "needs high"]),
    ("ppo.gamma: {type: normal, low: 0.9, high: 0.99}\n", ["ppo.gamma", "type"]),
    ("run.seed: {type: int, low: 0, high: 9}\n", ["run.seed", "--seeds"]),
    ("network.obs_dim: {type: int, low: 4, high: 9}\n", ["network.obs_dim", "computed by the trainer"]),
    ("ppo.gamma: {type: uniform, low: 0.9, high: 0.99\n", ["not valid YAML"]),
    ("- ppo.gamma\n", ["expected a mapping"]),
])
def test_a_space_file_is_refused_naming_the_file_and_the_entry(tmp_path: Path, text: str, words: list[str]) -> None:
    space = space_file(tmp_path, text)
    result = CliRunner().invoke(main, sweep_args(space, tmp_path / "sweep"))
    refused(result, f"space {space}", *words)
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "sweep").exists()


def test_a_setting_both_searched_and_set_and_a_space_that_cannot_run_are_refused(tmp_path: Path) -> None:
    space = space_file(tmp_path)
    refused(CliRunner().invoke(main, sweep_args(space, tmp_path / "a", "--budget", "256", "--set",
                                                "ppo.learning_rate=0.001")), "ppo.learning_rate", "both searched")
    space = space_file(tmp_path, "network.log_std_min: {type: uniform, low: -5, high: 3}\n")
    refused(CliRunner().invoke(main, sweep_args(space, tmp_path / "b", "--budget", "256")), "high end",
            "network.log_std_min")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_sweep_without_a_budget_is_refused_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, sweep_args(space_file(tmp_path), tmp_path / "sweep"))
    refused(result, "--budget STEPS", "run.max_steps")
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_without_optuna_a_sweep_is_refused_in_one_line_after_its_space_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna: ImportError
    bad = space_file(tmp_path, "ppo.gamma: {type: uniform, low: 0.9, high: 1.5}\n")
    refused(CliRunner().invoke(main, sweep_args(bad, tmp_path / "sweep", "--budget", "256")), f"space {bad}",
            "high 1.5")
    result = CliRunner().invoke(main, sweep_args(space_file(tmp_path), tmp_path / "sweep", "--budget", "256"))
    refused(result, "arena sweep needs Optuna 5 or later", "agent-arena[sweep]")
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "sweep" / "study.db").exists()


# -- sweeps --------------------------------------------------------------------------------------------


def weights(path: Path) -> dict[str, torch.Tensor]:
    data = torch.load(path, map_location="cpu", weights_only=False)
    return {f"{part}.{k}": v for part in ("model", "obs_normalizer") for k, v in data[part].items()}


@pytest.fixture(scope="session")  # set up once on its worker, however xdist interleaves other modules
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str, float]:
    """A sweep of 3 trials x 2 seeds, killed (SIGKILL) while its second trial trains and run again to its end:
    its folder, the JSON the second run printed, its progress lines and when the first one was killed."""
    tmp_path = tmp_path_factory.mktemp("swept")
    out = tmp_path / "sweep"
    args = sweep_args(space_file(tmp_path), out, "--budget", "512", "--trials", "3", "--seeds", "2", "--workers", "2")
    log = tmp_path / "first.log"
    with open(log, "wb") as handle:
        first = subprocess.Popen([sys.executable, "-m", "arena", *args], stdout=handle, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while (not all(line in log.read_text() for line in ("trial 0 done", "trial 1:")) and first.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.2)
        assert "trial 0 done" in log.read_text() and "trial 1 done" not in log.read_text(), log.read_text()
        time.sleep(1.0)  # trial 1's seeds are training
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    killed_at = time.time()
    assert [t.state.name for t in trials(out)] == ["COMPLETE", "RUNNING"]
    result = CliRunner().invoke(main, [*args, "--json"])
    succeeded(result)
    return out, json.loads(result.stdout), result.stderr, killed_at  # the progress lines go to stderr with --json


@pytest.mark.xdist_group("swept")  # one worker builds the module's sweep once
def test_a_sweep_of_3_trials_of_2_seeds_runs_to_its_end(swept: tuple[Path, dict, str, float]) -> None:
    out, data, _, _ = swept
    assert data["counts"] == {"complete": 3, "retried": 1}
    complete = [t for t in data["trials"] if t["state"] == "complete"]
    for trial in complete:
        scores = [trial["scores"][str(seed)] for seed in (0, 1)]
        assert trial["objective"] == min(scores) and 0.0 <= min(scores) <= 1.0
    best = max(complete, key=lambda t: t["objective"])
    assert data["best"]["objective"] == best["objective"] and data["best"]["config"] == str(out / "best.yaml")
    assert data["importances"] is not None and set(data["importances"]) == {"ppo.learning_rate", "ppo.n_epochs"}
    assert (out / "objective.png").is_file()
    table = succeeded(CliRunner().invoke(main, sweep_args(out.parent / "space.yaml", out, "--budget", "512",
                                                          "--trials", "3", "--seeds", "2")))
    assert re.search(r"^trial +state +learning_rate +n_epochs +seed 0 +seed 1 +worst +note$", table, re.M), table
    assert "3 complete, 1 retried" in table and "importance: ppo." in table
    assert len(trials(out)) == 4  # run again when finished: nothing more to do


@pytest.mark.xdist_group("swept")  # one worker builds the module's sweep once
def test_a_killed_sweep_run_again_ends_every_trial_once(swept: tuple[Path, dict, str, float]) -> None:
    out, data, progress, killed_at = swept
    assert "trial 1: its sweep process ended before it did: trying it again" in progress
    assert "trial 2 (trial 1 again)" in progress
    kept = ended_once(out, 3)
    assert [t.number for t in kept] == [0, 2, 3] and kept[1].params == trials(out)[1].params
    assert [t["retry_of"] for t in data["trials"]] == [None, None, 1, None]
    redone = []
    for seed in (0, 1):  # the killed sweep's runs ended with it: nothing holds their folders
        line = re.search(rf"^trial 2 seed {seed}: score .*$", progress, re.M)
        assert line is not None, progress
        scored = (out / "trials" / "1" / f"seed-{seed}.json").stat().st_mtime
        if "(scored before)" in line.group():  # scored before the kill: reused
            assert scored < killed_at
        else:  # trained again from the start in the same folder, by the retry, after the kill
            assert scored > killed_at
            assert (out / "trials" / "1" / f"seed-{seed}" / "ckpt_000000512.pt").stat().st_mtime > killed_at
            redone.append(seed)
    assert redone, "the kill came while trial 1 trained: a seed of it was trained again"


@pytest.mark.xdist_group("swept")  # one worker builds the module's sweep once
def test_the_best_yaml_of_a_sweep_trains_its_best_trial_again_bit_for_bit(swept: tuple[Path, dict, str, float],
                                                                           tmp_path: Path) -> None:
    out, data, _, _ = swept
    trial_dir = out / next(t["dir"] for t in data["trials"] if t["number"] == data["best"]["number"])
    # the file --config takes, as it is: the very settings the best trial's seeds trained with
    assert yaml.safe_load((out / "best.yaml").read_text()) == yaml.safe_load((trial_dir / "settings.yaml").read_text())
    again = tmp_path / "again"
    succeeded(CliRunner().invoke(main, ["train", "ppo", "--config", str(out / "best.yaml"), "--seed", "0",
                                        "--threads", "1", "--out", str(again), "--no-progress"]))
    mine, theirs = weights(again / "ckpt_000000512.pt"), weights(trial_dir / "seed-0" / "ckpt_000000512.pt")
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)


@pytest.mark.xdist_group("swept")  # one worker builds the module's sweep once
def test_confirm_trains_the_best_settings_and_the_defaults_on_seeds_the_sweep_did_not_use(
        swept: tuple[Path, dict, str, float]) -> None:
    out, _, _, _ = swept
    best = out / "best.yaml"
    refused(CliRunner().invoke(main, ["sweep", "ppo", "--confirm", str(best), "--seed-offset", "1", "--seeds", "2"]),
            "seeds 1, 2 overlap the sweep's seeds 0, 1", "--seed-offset 2")
    # --score-games 0 reads best.json, which runs without evaluations lack: each seed fails, and counts 0
    result = CliRunner().invoke(main, ["sweep", "ppo", "--confirm", str(best), "--seeds", "1", "--budget", "256",
                                       "--score-games", "0", "--workers", "2"])
    text = succeeded(result)
    assert "best seed 1000 failed (counted as 0 in the median, worst and mean): " in text and "no best.json" in text
    assert re.search(r"^defaults +failed \(0\) +0\.000 +0\.000 +0\.000$", text, re.M), text
    assert "confirm" in text and "on seeds 1000, 256 steps each" in text  # seeds apart from the sweep's
    chosen, defaults = (yaml.safe_load((out / "confirm" / group / "settings.yaml").read_text())
                        for group in ("best", "defaults"))
    swept_best = yaml.safe_load(best.read_text())
    assert chosen == {**swept_best, "run": {**swept_best["run"], "max_steps": 256}}  # the file's, at --budget
    searched = ("learning_rate", "n_epochs")  # the defaults: the same settings less the searched ones
    assert defaults == {**chosen, "ppo": {k: v for k, v in chosen["ppo"].items() if k not in searched}}
    assert "best differs from the defaults in: ppo.learning_rate " in text


def test_confirm_counts_a_failed_seed_as_0() -> None:
    from arena_ppo.sweep.confirm import group_summary, render
    from arena_ppo.sweep.runs import SeedJob, SeedResult

    job = SeedJob(("best", 7), "ppo", Path("settings.yaml"), 7, Path("seed-7"), 1)
    results = {7: SeedResult(job, 0.8), 8: SeedResult(job, error="it broke")}
    best = group_summary(Path("best.yaml"), results, (7, 8))
    assert (best["median"], best["worst"], best["mean"]) == (pytest.approx(0.4), 0.0, pytest.approx(0.4))
    text = render({"best": best, "defaults": group_summary(Path("d.yaml"), {7: results[7], 8: results[7]}, (7, 8))},
                  (7, 8), {})
    assert "failed (0)" in text and "best seed 8 failed (counted as 0 in the median, worst and mean): it broke" in text
    assert "median -0.400, worst -0.800" in text


def test_two_sweep_processes_on_one_folder_share_the_study(tmp_path: Path) -> None:
    space, out = space_file(tmp_path), tmp_path / "sweep"
    args = sweep_args(space, out, "--budget", "256", "--trials", "2", "--seeds", "1", "--workers", "1")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    processes = [subprocess.Popen([sys.executable, "-m", "arena", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=env) for _ in range(2)]
    outputs = [p.communicate(timeout=300)[0].decode() for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    ended_once(out, 2)
    assert len(trials(out)) == 2
    done = sorted(n for output in outputs for n in re.findall(r"^trial (\d+) done", output, re.M))
    assert done == ["0", "1"], outputs  # every trial ran once in all, whichever process ran it
    assert all(re.search(r"^trial +state ", output, re.M) for output in outputs), outputs  # each printed the table


# -- pieces --------------------------------------------------------------------------------------------


def test_the_pruner_hears_the_objective_of_each_evaluation_by_its_number_and_stops_a_trial_below_the_median(
        tmp_path: Path) -> None:
    from arena_ppo.sweep.space import read_space
    from arena_ppo.sweep.study import Options, Sweep, SweepSpec

    dims = read_space(space_file(tmp_path))
    spec = SweepSpec("ppo", tuple(dims), {"run.vs": ("placeholder",), "run.max_steps": 512}, (0, 1), "worst", 1)
    lines: list[str] = []
    sweep = Sweep(spec, Options(trials=7, workers=2), tmp_path / "sweep", lines.append)
    sweep.open()
    try:
        for _ in range(5):  # the trials before it: their seeds scored 0.9 at both evaluations
            trial = sweep.study.ask()
            for d in dims:
                d.suggest(trial)
            trial.report(0.9, 1)
            trial.report(0.9, 2)
            sweep.study.tell(trial, 0.9)
        run = sweep.ask()
        assert run is not None
        for seed, (win, draw) in ((0, (0.25, 0.5)), (1, (0.0, 0.0))):  # scores 0.5 and 0.0 at step 256
            folder = run.folder / f"seed-{seed}"
            folder.mkdir(parents=True)
            (folder / "eval.csv").write_text("step,update,eval_placeholder_win,eval_placeholder_draw,"
                                             f"eval_placeholder_loss\n256,1,{win},{draw},{1 - win - draw}\n"
                                             f"512,2,{win},{draw},{1 - win - draw}\n768,3,0.")
        run.pending.clear()  # as if both seeds were training
        sweep.look_for_pruning()
    finally:
        sweep.close()
    trial = trials(tmp_path / "sweep")[-1]
    # the worst seed, as --objective; not pruned at its first evaluation, only from its second
    assert trial.state.name == "PRUNED" and trial.intermediate_values == {1: 0.0, 2: 0.0}
    assert "pruned at evaluation 2 (step 512): worst evaluation score 0.000" in lines[-1]


def test_the_objectives_punish_a_failing_seed() -> None:
    from arena_ppo.sweep.study import objective

    assert objective("worst", [0.9, 0.2, 0.7]) == 0.2
    assert objective("mean", [0.9, 0.2, 0.7]) == pytest.approx(0.6)
    assert objective("mean-std", [0.5, 0.5]) == 0.5 > objective("mean-std", [0.9, 0.1])


def test_keep_best_leaves_a_scored_run_its_best_weights_or_its_last_checkpoint(tmp_path: Path) -> None:
    from arena_ppo.sweep.study import keep_best_only

    for name, files, kept in (("with-best", ["ckpt_000000256.pt", "ckpt_000000512.pt", "best.pt"], {"best.pt"}),
                              ("without", ["ckpt_000000256.pt", "ckpt_000000512.pt"], {"ckpt_000000512.pt"})):
        run = tmp_path / name
        run.mkdir()
        for file in [*files, "metrics.csv", "config.yaml"]:
            (run / file).write_bytes(b"x")
        keep_best_only(run)
        assert {p.name for p in run.iterdir()} == kept | {"metrics.csv", "config.yaml"}


def test_a_trial_ended_meanwhile_by_another_process_is_left_to_its_retry(tmp_path: Path) -> None:
    from arena_ppo.sweep.space import read_space
    from arena_ppo.sweep.study import Options, Sweep, SweepSpec

    spec = SweepSpec("ppo", tuple(read_space(space_file(tmp_path))), {"run.max_steps": 256}, (0,), "worst", 1)
    lines: list[str] = []
    sweep = Sweep(spec, Options(trials=1, workers=1), tmp_path / "sweep", lines.append)
    sweep.open()
    try:
        run = sweep.ask()
        assert run is not None
        other = optuna.load_study(study_name="sweep", storage=f"sqlite:///{tmp_path / 'sweep' / 'study.db'}")
        other.tell(run.number, state=optuna.trial.TrialState.FAIL)  # as a process that found it stale would
        run.scores[0] = 0.5
        sweep.end_complete(run)
    finally:
        sweep.close()
    assert not sweep.active and "ended by another sweep process meanwhile" in lines[-1]


def test_best_yaml_leaves_out_the_evaluation_interval_the_sweep_set(tmp_path: Path) -> None:
    from arena_ppo.sweep.space import read_space
    from arena_ppo.sweep.study import SweepSpec, write_best

    dims = read_space(space_file(tmp_path))
    spec = SweepSpec("ppo", tuple(dims), {"run.max_steps": 512, "run.eval_interval": 128}, (0,), "worst", 1,
                     own=("run.eval_interval",))
    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    for d in dims:
        d.suggest(trial)
    study.tell(trial, 0.5)
    path = write_best(tmp_path, spec, study)
    assert path is not None
    run = yaml.safe_load(path.read_text())["run"]
    assert run == {"max_steps": 512}  # arena train --config best.yaml evaluates at its own default


def test_a_stopped_trial_is_retried_without_using_up_the_budget_and_so_is_an_unclaimed_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arena_ppo.sweep import study as study_module
    from arena_ppo.sweep.space import read_space
    from arena_ppo.sweep.study import MAX_RETRY, Options, Sweep, SweepSpec

    spec = SweepSpec("ppo", tuple(read_space(space_file(tmp_path))), {"run.max_steps": 256}, (0,), "worst", 1)
    sweep = Sweep(spec, Options(trials=1, workers=1), tmp_path / "sweep", lambda line: None)
    sweep.open()
    try:
        for _ in range(MAX_RETRY + 2):  # Ctrl-C more often than a dead process may cost
            run = sweep.ask()
            assert run is not None
            sweep.interrupted()
        numbers = [t.number for t in trials(tmp_path / "sweep")]
        assert [t.state.name for t in trials(tmp_path / "sweep")] == ["FAIL"] * (MAX_RETRY + 2) + ["WAITING"]
        run = sweep.ask()  # the retry, then a process that dies with it: still retried
        assert run is not None
        sweep.fail_and_retry(sweep.storage().get_trial(run.trial._trial_id), "its sweep process ended")
        assert trials(tmp_path / "sweep")[-1].state.name == "WAITING"
        assert sweep.ask() is not None  # that retry, now this process's
        unclaimed = sweep.study.ask()  # a trial asked for, then stopped before it named its process
        monkeypatch.setattr(study_module, "GRACE", 0)
        sweep.recover()
    finally:
        sweep.close()
    found = {t.number: t for t in trials(tmp_path / "sweep")}
    assert len(numbers) == MAX_RETRY + 3
    assert found[unclaimed.number].state.name == "FAIL" and found[max(found)].state.name == "WAITING"
    assert found[max(found)].system_attrs["failed_trial"] == unclaimed.number


def test_a_seed_whose_folder_an_earlier_run_still_holds_waits_for_it(tmp_path: Path) -> None:
    from arena.training.run_dir import lock_run
    from arena_ppo.sweep.runs import Pool, SeedJob

    settings = tmp_path / "settings.yaml"
    settings.write_text("run:\n  max_steps: 256\n")
    job = SeedJob((0, 0), "ppo", settings, 0, tmp_path / "seed-0", 1)
    job.run_dir.mkdir()
    held = lock_run(job.run_dir)  # as a process that is still stopping would
    try:
        result = Pool(1).start(job)
    finally:
        held.release()
    assert result is not None and result.busy and "another training run" in (result.error or "")
