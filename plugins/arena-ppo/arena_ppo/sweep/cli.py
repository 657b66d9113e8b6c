"""``arena sweep ppo`` (and ``mappo``): the command line of a sweep and of ``--confirm``.

It takes the settings options of ``arena train`` (``--vs``, ``--num-envs``, ``--set``, ``--config``, …)
for what every trial shares, less the three a sweep sets itself: each run's seed, its budget
(``--budget``) and its one thread. Everything that can be wrong is checked before a run starts: the
space file (:mod:`arena_ppo.sweep.space`), the shared settings (as ``arena train`` checks them), and
a run at each end of the space (:func:`arena_ppo.plan.resolve`). Imports nothing heavy until run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from arena.seeds import MAX_SEED

MAX_STEPS = 1 << 60
EVALS = 4  # evaluations of each run, for the pruner, where the settings set no interval
CONFIRM_SEED_OFFSET = 1000  # --confirm's seeds, apart from a sweep's 0, 1, 2, …
SET_BY_SWEEP = ("seed", "threads", "max_steps")  # train options a sweep does not take: it sets these

HELP = """Tune the settings of `arena train {algorithm}` over seeds, with Optuna (extra agent-arena[sweep]).

\b
  arena sweep {algorithm} space.yaml --vs crank --budget 3000000 --trials 30 --seeds 3
  arena sweep {algorithm} space.yaml --vs crank --budget 3000000 --trials 30   # again: continues it
  arena sweep {algorithm} --confirm runs/sweep-space/best.yaml --seeds 5

SPACE is a YAML file of settings arena train takes, each with its distribution, e.g.
`ppo.learning_rate: {{type: loguniform, low: 1.0e-4, high: 1.0e-3}}` (types: loguniform, uniform,
int, categorical with choices). A trial trains the same settings on each seed (one process of one
thread each, --workers at a time) for --budget env steps, scores each seed's best.pt in fresh games
and takes the worst seed's score (--objective). TPE proposes the settings; the median pruner stops a
trial whose seeds' evaluations fall behind. The study is OUT/study.db: the same command continues a
stopped sweep, and a second one on the same OUT adds workers. At the end: a table of the trials,
OUT/best.yaml (arena train {algorithm} --config OUT/best.yaml) and the parameters' importances.
--confirm trains a best.yaml and the defaults on new seeds, side by side. See docs/training.md.
"""


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def sweep_options(func: Any) -> Any:
    options = [
        click.argument("space", type=click.Path(dir_okay=False, path_type=Path), required=False),
        click.option("--trials", type=click.IntRange(1, 100_000), default=20, show_default=True,
                     help="Trials the study ends with (a stopped sweep counts those it has)."),
        click.option("--seeds", type=click.IntRange(1, 1000), default=3, show_default=True,
                     help="Seeds each trial (or --confirm) trains on."),
        click.option("--seed-offset", type=click.IntRange(0, MAX_SEED - 1000), default=None,
                     help=f"The first seed [default: 0; with --confirm, {CONFIRM_SEED_OFFSET}]."),
        click.option("--workers", type=click.IntRange(1, 1024), default=None,
                     help="Runs at once in this process, one thread each [default: the cores available]."),
        click.option("--budget", type=click.IntRange(1, MAX_STEPS), default=None, metavar="STEPS",
                     help="Env steps of each run (run.max_steps) [required, unless --config or --set gives "
                          "run.max_steps]."),
        click.option("--objective", type=click.Choice(["worst", "mean", "mean-std"]), default="worst",
                     show_default=True, help="A trial's value from its seeds' scores."),
        click.option("--score-games", type=click.IntRange(0, 1 << 20), default=200, show_default=True,
                     help="Fresh games of each seed's best.pt against each opponent it trained against; 0: "
                          "the score of the evaluation that chose best.pt (free, and flattering)."),
        click.option("--prune/--no-prune", default=True, show_default=True,
                     help="Stop trials whose seeds' evaluations fall below the median (Optuna's MedianPruner)."),
        click.option("--sampler-seed", type=click.IntRange(0, 1 << 31), default=0, show_default=True,
                     help="Seed of the TPE sampler."),
        click.option("--keep", type=click.Choice(["runs", "best"]), default="runs", show_default=True,
                     help="What each scored seed keeps: its whole run, or best.pt (or its last checkpoint) and "
                          "its logs, to save disk."),
        click.option("--confirm", "confirm_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     metavar="BEST.yaml", help="Instead of a sweep: train these settings and the defaults on "
                                               "--seeds new seeds and print both."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="The sweep's folder [default: runs/sweep-<SPACE's name>; with --confirm, BEST.yaml's "
                          "folder/confirm]."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     metavar="FILE", help="Settings every trial shares, from a YAML file as `arena train --config` "
                                          "reads it."),
        click.option("--set", "assignments", multiple=True, metavar="SECTION.NAME=VALUE",
                     help="One setting every trial shares, repeatable (over --config)."),
    ]
    for opt in reversed(options):
        func = opt(func)
    return func


def train_options(algorithm: str) -> list[Any]:
    """The settings options of ``arena train ALGORITHM``, less those a sweep sets."""
    from arena.training.settings import click_options
    from arena_ppo.train_config import default_config

    kept = []
    for opt in click_options(default_config(algorithm), algorithm):
        probe: Any = opt(lambda: None)
        if probe.__click_params__[-1].name not in SET_BY_SWEEP:
            kept.append(opt)
    return kept


def sweep_command(algorithm: str) -> click.Command:
    from arena.cli import ArenaCommand

    def command(**params: Any) -> None:
        run(params, algorithm)

    func: Any = command
    for opt in reversed(train_options(algorithm)):
        func = opt(func)
    func = sweep_options(func)
    return click.command(algorithm, cls=ArenaCommand, help=HELP.format(algorithm=algorithm),
                         short_help=f"Tune the settings of `arena train {algorithm}` over seeds.",
                         context_settings={"max_content_width": 110})(func)


class SweepGroup(click.Group):
    """``arena sweep NAME``: one command per trainer of this plugin."""

    names = ("ppo", "mappo")

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return sweep_command(cmd_name) if cmd_name in self.names else None


def sweep_group() -> click.Group:
    return SweepGroup("sweep", help="Tune a trainer's settings over seeds with Optuna: arena sweep ppo SPACE.yaml "
                                    "(see arena sweep ppo --help).",
                      short_help="Tune a trainer's settings over seeds (Optuna; resumable, parallel).")


# -- running -------------------------------------------------------------------------------------------


def require_optuna() -> None:
    """Refuse to run without Optuna 5 or later (its ``RetryHeartbeatStaleTrialCallback``), in one line."""
    from arena_ppo.launch import fail

    try:
        import optuna

        found = hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback")
    except ImportError:
        found = False
    if not found:
        raise fail("arena sweep needs Optuna 5 or later: pip install 'agent-arena[sweep]' (or pip install 'optuna>=5')")


def base_settings(params: dict[str, Any], algorithm: str) -> tuple[dict[str, Any], set[str], list[str]]:
    """The settings every run shares, by key (``--config``, ``--set``, the options, then the budget), the
    keys the user gave, and notes. Refuses a sweep without a budget."""
    from arena_ppo.launch import fail
    from arena_ppo.prepare import given_settings
    from arena_ppo.sweep.space import RESERVED
    from arena_ppo.train_config import default_config

    try:
        given = given_settings(params, algorithm)
    except ValueError as exc:
        raise fail(str(exc)) from None
    notes = []
    explicit = set(given)
    for key in ("run.seed", "run.threads"):
        if key in given:
            notes.append(f"note: {key} {given.pop(key)} is not used: {RESERVED[key]}")
    defaults = default_config(algorithm, given)
    budget = params.get("budget") or given.get("run.max_steps")
    if budget is None:
        raise fail("give each run's budget in env steps: --budget STEPS (it sets run.max_steps; or give "
                   "run.max_steps in --config or --set), e.g. --budget 3000000")
    given["run.max_steps"] = budget
    evaluates = given.get("run.eval_games", defaults.run.eval_games) > 0
    if evaluates and "run.eval_interval" not in given and "run.save_interval" not in given:
        given["run.eval_interval"] = max(1, -(-budget // EVALS))
    return given, explicit, notes


def check_ends(algorithm: str, base: dict[str, Any], dims: list[Any], out: Path) -> None:
    """Check a run with every searched setting at its low end, and one at its high end, as ``arena train``
    would (:func:`arena_ppo.plan.resolve`: settings together, opponents, device), before any runs."""
    from arena_ppo.launch import fail
    from arena_ppo.plan import resolve
    from arena_ppo.prepare import build_config

    for end in ("low", "high") if dims else ("low",):
        values = {d.key: (d.choices[0 if end == "low" else -1] if d.kind == "categorical" else getattr(d, end))
                  for d in dims}
        settings = {**base, **values}
        try:
            resolve(build_config(algorithm, dict(settings)), algorithm, out / "check", given=settings)
        except ValueError as exc:
            raise fail(f"the sweep's settings with every searched setting at its {end} end: {exc}") from None


def run(params: dict[str, Any], algorithm: str) -> None:
    from arena_ppo.launch import fail
    from arena_ppo.sweep.space import SpaceError, read_space

    if params["confirm_file"] is not None:
        return run_confirm(params, algorithm)
    space_path = params["space"]
    if space_path is None:
        raise fail(f"give the space to search (arena sweep {algorithm} SPACE.yaml …), or --confirm BEST.yaml")
    try:
        dims = read_space(space_path, algorithm)
    except SpaceError as exc:
        raise fail(str(exc)) from None
    base, explicit, notes = base_settings(params, algorithm)
    both = [d.key for d in dims if d.key in explicit]
    if both:
        raise fail(f"{both[0]}: both searched (space {space_path}) and set (--config, --set or an option); "
                   f"remove one")
    out = params["out"] or Path("runs") / f"sweep-{space_path.stem}"
    check_ends(algorithm, base, dims, out)
    require_optuna()  # after the checks: a space can be checked without Optuna
    for note in notes:
        click.echo(note, err=True)
    run_study(params, algorithm, dims, base, out, explicit)


def run_study(params: dict[str, Any], algorithm: str, dims: list[Any], base: dict[str, Any], out: Path,
              explicit: set[str]) -> None:
    from arena.cli import echo_json, emit
    from arena.training.interrupt import StopRequest
    from arena_ppo.sweep.report import render, summary
    from arena_ppo.sweep.study import Options, Sweep, SweepSpec

    offset = params["seed_offset"] or 0
    seeds = tuple(range(offset, offset + params["seeds"]))
    own = tuple(k for k in ("run.eval_interval",) if k in base and k not in explicit)
    spec = SweepSpec(algorithm, tuple(dims), base, seeds, params["objective"], params["score_games"], own)
    workers = params["workers"] or cores()
    sweep = Sweep(spec, Options(params["trials"], workers, params["prune"], params["sampler_seed"], params["keep"]),
                  out, click.echo)
    sweep.open()
    searched = "; ".join(d.describe() for d in dims)
    click.echo(f"sweep {out}: {params['trials']} trials of {searched}; each on seeds "
               f"{', '.join(map(str, seeds))} for {base['run.max_steps']:,} steps, scored by the {spec.objective} "
               f"seed; {workers} worker{'s' * (workers > 1)} here")
    with StopRequest("stopping the runs; the running trials will be tried again (again to stop at once)") as stop:
        try:
            sweep.run(stop)
        except KeyboardInterrupt:  # a second signal: the trials were handed back all the same
            stop.request()
        finally:
            sweep.close()
    if stop.requested:
        click.echo(f"stopped: the trials that were running will be tried again; run the same command to go on "
                   f"(the study is {out / 'study.db'})", err=True)
        raise SystemExit(stop.exit_status or 130)
    data = summary(sweep.study, spec, out)
    if params["as_json"]:
        echo_json(data)
    else:
        emit(render(data, spec))


def run_confirm(params: dict[str, Any], algorithm: str) -> None:
    from arena.cli import echo_json, emit
    from arena.training.interrupt import StopRequest
    from arena_ppo.launch import fail
    from arena_ppo.prepare import build_config, given_settings
    from arena_ppo.sweep.confirm import confirm, render
    from arena_ppo.sweep.space import SpaceError, read_space
    from arena_ppo.sweep.study import SPEC_FILE

    best_file: Path = params["confirm_file"]
    if params["config_file"] is not None:
        raise fail("--confirm BEST.yaml: the settings come from that file; leave out --config")
    if not best_file.is_file():
        raise fail(f"--confirm {best_file}: no such file")
    spec_path = best_file.parent / SPEC_FILE
    try:
        swept = json.loads(spec_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        swept = None
    swept = swept if isinstance(swept, dict) else {}
    if params["space"] is not None:
        try:
            searched = [d.key for d in read_space(params["space"], algorithm)]
        except SpaceError as exc:
            raise fail(str(exc)) from None
    elif isinstance(swept.get("space"), dict):
        searched = list(swept["space"])
    else:
        raise fail(f"--confirm {best_file}: no sweep's {SPEC_FILE} beside it to name the searched settings; give "
                   f"the space file too (arena sweep {algorithm} SPACE.yaml --confirm {best_file})")
    offset = CONFIRM_SEED_OFFSET if params["seed_offset"] is None else params["seed_offset"]
    seeds = tuple(range(offset, offset + params["seeds"]))
    used = [s for s in swept.get("seeds") or () if isinstance(s, int)]
    if set(seeds) & set(used):
        raise fail(f"--confirm {best_file}: seeds {seed_list(seeds)} overlap the sweep's seeds {seed_list(used)} "
                   f"({spec_path}); give --seed-offset {max(used) + 1} or more")
    best, _, notes = base_settings({**params, "config_file": best_file}, algorithm)
    try:
        given_now = given_settings({**params, "config_file": None}, algorithm)
    except ValueError as exc:
        raise fail(str(exc)) from None
    defaults = {k: v for k, v in best.items() if k not in searched or k in given_now}
    for note in notes:
        click.echo(note, err=True)
    out = params["out"] or best_file.parent / "confirm"
    check_ends(algorithm, best, [], out)
    check_ends(algorithm, defaults, [], out)
    best_cfg, default_cfg = build_config(algorithm, dict(best)), build_config(algorithm, dict(defaults))
    changed = {}
    for key in searched:
        section, name = key.split(".", 1)
        pair = (getattr(getattr(best_cfg, section), name), getattr(getattr(default_cfg, section), name))
        if pair[0] != pair[1]:
            changed[key] = pair
    workers = params["workers"] or cores()
    click.echo(f"confirm {best_file}: its settings and the defaults on seeds {seed_list(seeds)}, "
               f"{best['run.max_steps']:,} steps each, {workers} worker{'s' * (workers > 1)}; runs in {out}")
    data = None
    with StopRequest("stopping the runs; the seeds scored so far are kept (again to stop at once)") as stop:
        try:
            data = confirm(algorithm, {"best": best, "defaults": defaults}, seeds, params["score_games"], workers,
                           out, click.echo, stop)
        except KeyboardInterrupt:  # a second signal
            stop.request()
    if data is None:
        click.echo("stopped: the seeds scored so far are kept; run the same command to go on", err=True)
        raise SystemExit(stop.exit_status or 130)
    if params["as_json"]:
        echo_json({**data, "seeds": list(seeds), "out": str(out),
                   "changed": {k: {"best": b, "default": d} for k, (b, d) in changed.items()}})
    else:
        emit(render(data, seeds, changed))


def seed_list(seeds: Any) -> str:
    return ", ".join(map(str, seeds))
