"""Team training for a wall-clock budget each: MAPPO and its ablations against independent PPO.

    python benchmarks/train_teams.py                                   # the runs of docs/experiments (MAPPO teams)
    python benchmarks/train_teams.py --minutes 3 --runs mappo,ippo     # a quick look
    python benchmarks/train_teams.py --parallel 2 --threads 1          # two runs at once, a core each
    python benchmarks/train_teams.py --runs mappo-4v4 --minutes 30 --seed 5

Each run trains against a CrankAgent team (plus the trainers' default floor share against the random
placeholder) for ``--minutes``, evaluating at every checkpoint as ``arena train`` does and keeping
``best.pt``. Then its final checkpoint and ``best.pt`` are scored over ``--games`` games each, played
sampled and deterministically (``--policies``; half from each side, each game one env's first
episode), against the CrankAgent team and the placeholder team at the run's team size. Training speed
is given in aircraft-steps per second (env steps × aircraft a side), the unit in which a team
policy's samples compare with a duel's. ``--set`` changes a setting of every run.

Runs (``--runs``): mappo (2 v 2, the defaults), mappo-no-valuenorm, mappo-recurrent, ippo (``arena
train ppo --team-size 2``: independent PPO with parameter sharing), mappo-4v4, and ppo-1v1 for the
duel's speed. Wall-clock figures depend on what else the machine runs; ``--parallel`` runs several at
once, each with ``--threads`` torch threads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import script_args as opt

RUNS: dict[str, dict[str, Any]] = {
    "mappo": {"algorithm": "mappo", "team_size": 2},
    "mappo-no-valuenorm": {"algorithm": "mappo", "team_size": 2, "value_norm": False},
    "mappo-recurrent": {"algorithm": "mappo", "team_size": 2, "recurrent": True},
    "ippo": {"algorithm": "ppo", "team_size": 2},
    "mappo-4v4": {"algorithm": "mappo", "team_size": 4},
    "ppo-1v1": {"algorithm": "ppo", "team_size": 1},
}
DEFAULT_RUNS = "mappo,mappo-no-valuenorm,mappo-recurrent,ippo,mappo-4v4"


def train_and_score(name: str, minutes: float, games: int, seed: int, threads: int | None, out: Path,
                    eval_games: int = 200, policies: tuple[str, ...] = ("deterministic",),
                    assignments: tuple[str, ...] = (), rivals: tuple[str, ...] = ("crank", "placeholder")
                    ) -> dict[str, Any]:
    """One run: train for ``minutes``, then score the final checkpoint and best.pt; returns the table row."""
    import torch

    from arena.agents import build_agent
    from arena.match import play_match
    from arena.training import BEST_CHECKPOINT, list_checkpoints
    from arena.training.settings import apply, parse_assignments
    from arena_ppo.plan import resolve
    from arena_ppo.runners import build_run
    from arena_ppo.train_config import default_config

    spec = RUNS[name]
    mappo = spec["algorithm"] == "mappo"
    cfg = default_config(spec["algorithm"])
    cfg.run.team_size = spec["team_size"]
    cfg.run.seed = seed
    cfg.run.device = "cpu"
    cfg.run.max_steps = 10**12  # the budget is time
    cfg.run.eval_games = eval_games  # as `arena train` evaluates: at every checkpoint, keeping best.pt
    cfg.run.threads = threads
    if mappo:
        cfg.ppo.value_norm = spec.get("value_norm", True)
        cfg.network.recurrent = spec.get("recurrent", False)
    apply(cfg, parse_assignments(cfg, assignments))
    env_config = cfg.run.env_config()
    device = torch.device("cpu")
    runner = build_run(resolve(cfg, spec["algorithm"], out), console=None, progress=False)
    start = time.perf_counter()
    runner.learn(max_time=minutes * 60.0)
    elapsed = time.perf_counter() - start
    steps = runner.learner.counters.env_steps
    row: dict[str, Any] = {"run": name, "team_size": cfg.run.team_size, "env_steps": steps, "minutes": elapsed / 60,
                           "aircraft_steps_per_s": steps * cfg.run.team_size / elapsed}
    kept = {"final": (list_checkpoints(out)[-1], steps)}  # a run always ends with a checkpoint of its last step
    if runner.evaluator.best is not None:
        kept["best"] = (out / BEST_CHECKPOINT, runner.evaluator.best.step)
    row["scores"] = []
    for weights, (path, step) in kept.items():
        agent = type(runner.learner.agent).load(path, device=device, env_config=env_config)
        for policy in policies:
            for rival in rivals:
                with torch.random.fork_rng(devices=[]):
                    r = play_match(agent, build_agent(rival, device, env_config), games, env_config=env_config,
                                   device=device, seed=seed + 777, name_a=name, name_b=rival,
                                   policies=(policy, "deterministic"))
                row["scores"].append({"weights": weights, "step": step, "policy": policy, "rival": rival,
                                      "wins": r.wins, "draws": r.draws, "losses": r.losses,
                                      "win_rate": r.wins / r.games})
    return row


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from arena.agents import POLICIES

    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=opt.number(0, above=True, unit="minutes"), default=15.0,
                        help="training budget per run, wall-clock minutes")
    parser.add_argument("--games", type=opt.games, default=1000, help="games per opponent, weights and policy")
    parser.add_argument("--eval-games", type=opt.integer(0, opt.MAX_GAMES), default=200,
                        help="games against each reference at every checkpoint during training, as `arena train` "
                             "plays them (sampled), to keep best.pt; 0: none")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="SECTION.NAME=VALUE",
                        help="a setting of every run, as `arena train --set` takes it (repeatable)")
    parser.add_argument("--rivals", type=opt.names(("crank", "placeholder")), default="crank,placeholder",
                        help="teams the kept weights are scored against")
    parser.add_argument("--policies", type=opt.names(POLICIES), default="sampled,deterministic",
                        help="how the scored weights play: sampled, deterministic or both")
    parser.add_argument("--runs", type=opt.names(RUNS), default=DEFAULT_RUNS,
                        help=f"comma-separated, from {', '.join(RUNS)}")
    parser.add_argument("--parallel", type=opt.integer(1), default=1, help="runs at once (each in its own process)")
    parser.add_argument("--threads", type=opt.threads, default=None, help="torch threads per run (default: arena's)")
    parser.add_argument("--seed", type=opt.seed, default=0)
    parser.add_argument("--out", type=opt.output_dir, default=None,
                        help="folder for the runs (default runs/bench-teams-<time>)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    from arena.training.settings import parse_assignments
    from arena_ppo.train_config import default_config

    try:
        parse_assignments(default_config(), tuple(args.assignments))
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from arena.training import default_run_dir

    names, policies, rivals = args.runs, tuple(args.policies), tuple(args.rivals)
    root = args.out or default_run_dir("bench-teams")
    print(f"{len(names)} run(s) of {args.minutes:g} min, {args.parallel} at a time, "
          f"{args.threads or 'default'} thread(s) each; {args.games} games per opponent, weights and policy; "
          f"output {root}", flush=True)
    jobs = [(n, args.minutes, args.games, args.seed, args.threads, Path(root) / n, args.eval_games, policies,
             tuple(args.assignments), rivals)
            for n in names]
    with ProcessPoolExecutor(max_workers=args.parallel) as pool:
        rows = list(pool.map(train_and_score, *zip(*jobs)))
    print(f"\n{'run':<20} {'T':>2} {'env steps':>12} {'aircraft-steps/s':>17}  {'weights':<16} {'policy':<13} "
          f"{'vs crank team':>22}  {'vs placeholder team':>22}")
    for row in rows:
        first = f"{row['run']:<20} {row['team_size']:>2} {row['env_steps']:>12,} {row['aircraft_steps_per_s']:>17,.0f}"
        pairs: dict[tuple[str, int, str], dict[str, Any]] = {}
        for score in row["scores"]:
            pairs.setdefault((score["weights"], score["step"], score["policy"]), {})[score["rival"]] = score
        for (weights, step, policy), by_rival in pairs.items():
            cells = [f"{s['wins']:>4}W {s['draws']:>4}D {s['losses']:>4}L ({s['win_rate']:.1%})" if s else "-"
                     for s in (by_rival.get("crank"), by_rival.get("placeholder"))]
            print(f"{first}  {weights + f' ({step / 1e6:.1f} M)':<16} {policy:<13} {cells[0]:>22}  {cells[1]:>22}")
            first = " " * len(first)
    if args.json:
        print(json.dumps({"minutes": args.minutes, "games": args.games, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
