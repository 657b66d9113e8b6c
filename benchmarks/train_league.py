"""League training against the ladder, beside training against CrankAgent alone, for the same budget.

    python benchmarks/train_league.py                                  # the figures of the league recipe
    python benchmarks/train_league.py --minutes 3 --exploit-minutes 2  # a quick look
    python benchmarks/train_league.py --runs league --config my-league.yaml --set run.warm_up_steps=8000000

Three parts:

1. **Generalization.** Two PPO runs of ``--minutes`` each, with the trainer's own defaults for their
   opponents: ``--vs league`` (the recipe: a warm-up against the top rung, then prioritized fictitious
   self-play over the ladder, the run's own checkpoints and its main exploiter's) and ``--vs crank``.
   ``--config FILE`` and ``--set SECTION.NAME=VALUE`` change the main runs' settings exactly as they do
   ``arena train ppo``'s. The final checkpoint and the weights each run kept in ``best.pt`` (chosen by
   its evaluations, inside the budget) each play ``--games`` games (half from each side, other seeds than
   the evaluations') against every ladder agent, sampled and deterministically (``--policies``).
2. **Rating over training.** A round-robin tournament of the league run's checkpoints and the ladder,
   the ladder as references (``benchmarks/rating_over_training.py``): Spearman(step, reference Elo)
   among the checkpoints, how many are above every reference, and the Spearman of the Elo of all games.
3. **Exploitability.** For the weights each run kept (``best.pt``, the deliverable; the final checkpoint
   of a run that kept none), a fresh PPO trained ``--exploit-minutes`` against them alone (frozen), then
   scored over ``--games`` games against them (``benchmarks/exploitability.py``): the exploiter's win
   rate (lower means a more robust policy). ``--exploit-minutes 0`` skips it.

Wall-clock figures depend on what else the machine runs; ``--parallel`` runs trainings at once, each
with ``--threads`` torch threads.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
from exploitability import exploit, final_checkpoint, score, train  # isort: skip  - benchmarks/, beside this file
from rating_over_training import plain, rate_run  # isort: skip
import script_args as opt  # isort: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from arena.agents import POLICIES

    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=opt.number(0, above=True, unit="minutes"), default=20.0,
                        help="training budget of each main run")
    parser.add_argument("--exploit-minutes", type=opt.number(0, unit="minutes"), default=10.0,
                        help="budget of each exploiter (0: none)")
    parser.add_argument("--games", type=opt.games, default=1000, help="games per opponent, weights and policy")
    parser.add_argument("--policies", type=opt.names(POLICIES), default="sampled,deterministic",
                        help="how the scored weights play: sampled, deterministic or both")
    parser.add_argument("--games-per-pairing", type=opt.integer(0), default=200,
                        help="rating-over-training league (0: none)")
    parser.add_argument("--parallel", type=opt.integer(1), default=2,
                        help="trainings at once (each in its own process)")
    parser.add_argument("--threads", type=opt.threads, default=1, help="torch threads per training")
    parser.add_argument("--runs", type=opt.names(("league", "crank")), default="league,crank",
                        help="main runs: league, crank or both")
    parser.add_argument("--config", type=opt.existing_file, default=None, metavar="FILE",
                        help="settings of the main runs, as arena train ppo --config reads them")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.NAME=VALUE",
                        help="one setting of the main runs (over --config), as arena train ppo --set")
    parser.add_argument("--seed", type=opt.seed, default=0)
    parser.add_argument("--out", type=opt.output_dir, default=None,
                        help="folder for the runs (default runs/bench-league-<time>)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    from arena_ppo.prepare import given_settings

    try:  # read as arena train ppo reads them: unknown keys, ranges, duplicate keys
        args.settings = given_settings({"config_file": args.config, "assignments": tuple(args.set)}, "ppo")
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    policies, settings = tuple(args.policies), args.settings
    from arena.training import BEST_CHECKPOINT, checkpoint_step, default_run_dir, league_agents, read_best

    ladder = league_agents()
    root = Path(args.out or default_run_dir("bench-league"))
    print(f"ladder: {', '.join(ladder)}; {args.minutes:g} min per run, exploiters {args.exploit_minutes:g} min, "
          f"{args.parallel} at a time with {args.threads} thread(s) each; output {root}", flush=True)
    runs = args.runs
    with ProcessPoolExecutor(max_workers=args.parallel) as pool:
        jobs = {n: pool.submit(train, root / n, [n], args.minutes, args.seed, args.threads, settings) for n in runs}
        trained = {n: job.result() for n, job in jobs.items()}
        finals = {n: final_checkpoint(trained[n]["out"]) for n in runs}
        kept = {n: Path(trained[n]["out"]) / BEST_CHECKPOINT for n in runs}
        targets = {n: kept[n] if kept[n].is_file() else finals[n] for n in runs}
        exploited = {}
        if args.exploit_minutes > 0:
            jobs = {n: pool.submit(exploit, targets[n], root / f"exploit-{n}", args.exploit_minutes, args.games,
                                   args.seed + 1, args.threads) for n in runs}
            exploited = {n: job.result() for n, job in jobs.items()}
    result: dict[str, Any] = {"minutes": args.minutes, "exploit_minutes": args.exploit_minutes, "games": args.games,
                              "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
                              "runs": {}}
    for n in runs:
        obs_mode = trained[n]["obs_mode"]

        def scores(weights: Path, obs_mode: str = obs_mode) -> dict[str, dict[str, dict[str, Any]]]:
            return {p: score(weights, ladder, args.games, args.seed, obs_mode, policies=(p, "deterministic"))
                    for p in policies}

        row = {**trained[n], "final": str(finals[n]), "scores": scores(finals[n])}
        record = read_best(trained[n]["out"])
        if record is not None:  # chosen on the evaluation's games (seed + 10,000), scored on fresh ones
            same = record.step == checkpoint_step(finals[n])  # the final weights: their scores are in hand
            row["best"] = {**record.to_dict(), "scores": row["scores"] if same else scores(kept[n])}
        if n in exploited:
            row["exploiter"] = exploited[n]
        result["runs"][n] = row
    if "league" in runs and args.games_per_pairing > 0:
        result["rating"] = rate_run(root / "league", ladder, "sampled", args.games_per_pairing, args.seed,
                                    args.threads)

    def cells(scores: dict[str, dict[str, Any]]) -> str:
        return "  ".join(f"{scores[r]['wins']:>4}-{scores[r]['draws']}-{scores[r]['losses']} "
                         f"{scores[r]['win_rate']:>4.0%}".rjust(16) for r in ladder)

    for policy in policies:
        print(f"\nplaying {policy}\n{'run':<8} {'env steps':>12} {'steps/s':>8}  "
              + "  ".join(f"{r:>16}" for r in ladder))
        for n, row in result["runs"].items():
            print(f"{n:<8} {row['env_steps']:>12,} {row['steps_per_s']:>8,.0f}  " + cells(row["scores"][policy]))
            if "best" in row:
                print(f"{'  best':<8} {row['best']['step']:>12,} {'':>8}  " + cells(row["best"]["scores"][policy]))
    for n, row in result["runs"].items():
        ex = row.get("exploiter")
        if ex:
            print(f"{n}: an exploiter of {Path(ex['target']).name} won {ex['wins']} of "
                  f"{ex['wins'] + ex['draws'] + ex['losses']} games "
                  f"({ex['win_rate']:.1%})")
        if row["warm_up_steps"]:
            print(f"{'':<8} (the first {row['warm_up_steps']:,} steps against {ladder[-1]} alone)")
    rating = result.get("rating")
    if rating:
        print(f"\nrating over training: {rating['checkpoints']} checkpoints of the league run, {rating['above']} above "
              f"every reference; Spearman(step, reference Elo) = {rating['spearman']:.3f} over the {rating['rated']} "
              f"rated, {rating['later_below']} later below an earlier; Spearman(step, Elo of all games) = "
              f"{rating['all_games_spearman']:.3f}; report {rating['report']}")
    if args.json:
        print(json.dumps(plain(result), allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
