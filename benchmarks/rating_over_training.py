"""Rating over training of finished runs: each run's checkpoints rated against fixed references.

    python benchmarks/rating_over_training.py runs/league               # the ladder as references
    python benchmarks/rating_over_training.py runs/a runs/b --policy deterministic --games-per-pairing 400
    python benchmarks/rating_over_training.py runs/a --policy both       # sampled and deterministic play, side by side
    python benchmarks/rating_over_training.py runs/a --gauntlet          # each checkpoint against the references alone
    python benchmarks/rating_over_training.py runs/a --from-evaluations  # from the run's own eval.csv: no games

For each run folder a round-robin league of its checkpoints (``ckpt_*.pt``) and the references (by
default every rung of the ladder) is played into ``RUN/rating-<policy>/``, and the table says what
the report says: Spearman(step, reference Elo) over the checkpoints with a finite rating, how many
are above every reference, how many pairs have a later checkpoint significantly below an earlier one
(95 % intervals apart), the Spearman of the Elo of all games beside it (the checkpoints' games among
themselves included), and where the weights the run kept in best.json rank. ``--kept`` replays the
trainer's evaluations on the checkpoints, playing by each policy, and names the step best.pt would
hold and its rank here. A league already played is resumed, not replayed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import script_args as opt


def rate_run(run: Path, references: list[str], policy: str, games_per_pairing: int, seed: int,
             threads: int | None, gauntlet: bool = False) -> dict[str, Any]:
    """Play (or resume) the run's league and return what its rating over training says; ``gauntlet``: the
    checkpoints play the references alone, not each other (one pairing a reference a checkpoint)."""
    import torch
    import yaml

    from arena.tournament import load_config, run_tournament

    if threads:
        torch.set_num_threads(threads)
    folder = run / f"rating-{policy}{'-gauntlet' if gauntlet else ''}"
    folder.mkdir(parents=True, exist_ok=True)
    league = folder / "league.yaml"
    league.write_text(yaml.safe_dump({
        "name": f"{run.name}-{policy}", "output": ".", "seed": seed, "device": "cpu", "max_envs": 16384,
        "games_per_pairing": games_per_pairing, "rating": {"bootstrap_rounds": 200}, "references": references,
        "participants": [*references, {"agent": "ppo", "checkpoints": "../ckpt_*.pt", "policy": policy}],
        **({"format": "gauntlet", "candidates": ["*ckpt_*"]} if gauntlet else {})}))
    start = time.perf_counter()
    report = run_tournament(load_config(league), progress=False, notify=False)
    progress = next((p for folder, p in report.over_training.items() if Path(folder).resolve() == run.resolve()),
                    None)  # keyed by the folder as the leaderboard shows it
    if progress is None:
        opt.fail(f"{run}: fewer than two checkpoints (ckpt_*.pt) to rate")
    return {"run": str(run), "policy": policy, "checkpoints": len(progress.frame), "rated": progress.rated,
            "above": progress.above, "below": progress.below, "spearman": progress.spearman,
            "later_below": progress.inversions, "all_games_spearman": progress.all_games_spearman,
            "best_step": progress.best_step, "best_rank": progress.best_rank, "games": report.games,
            "minutes": (time.perf_counter() - start) / 60, "report": str(folder / "report.md"),
            "ratings": [{"step": int(r.step), "reference_elo": r.reference_elo, "reference_low": r.reference_low,
                         "reference_high": r.reference_high, "elo": r.elo} for r in progress.frame.itertuples()]}


def rate_evaluations(run: Path) -> dict[str, Any]:
    """What the run's own evaluations say over training, no game played: each evaluation (eval.csv) rates
    the weights of its step against the run's references (for a league, every rung) from its games, as
    a gauntlet of those references would; the same Spearman and later-below pairs as :func:`rate_run`."""
    import csv

    from arena.tournament.over_training import inversions, rank_correlation

    path = run / "eval.csv"
    try:
        rows = [r for r in csv.DictReader(path.open()) if r.get("eval_elo") not in (None, "")]
    except OSError as exc:
        opt.fail(f"{path}: cannot be read ({exc.strerror or exc})")
    if len(rows) < 2:
        opt.fail(f"{path}: fewer than two rated evaluations")
    steps = [int(float(r["step"])) for r in rows]
    elo, low, high = ([float(r[f"eval_elo{part}"]) for r in rows] for part in ("", "_low", "_high"))
    finite = [i for i, v in enumerate(elo) if math.isfinite(v)]
    return {"run": str(run), "policy": "evaluations", "checkpoints": len(rows), "rated": len(finite),
            "above": sum(v == math.inf for v in elo), "below": sum(v == -math.inf for v in elo),
            "spearman": rank_correlation([steps[i] for i in finite], [elo[i] for i in finite]),
            "later_below": inversions(low, high), "all_games_spearman": math.nan, "best_step": None,
            "best_rank": None, "games": 0, "minutes": 0.0, "report": str(path),
            "ratings": [{"step": st, "reference_elo": e, "reference_low": lo, "reference_high": hi, "elo": e}
                        for st, e, lo, hi in zip(steps, elo, low, high)]}


def plain(value: Any) -> Any:
    """``value`` for strict JSON: a non-finite number is null (the ratings' notes say which side)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def kept_by_evaluations(run: Path, references: list[str], policy: str, games: int) -> int | None:
    """The step of the weights best.pt would hold had the run evaluated playing ``policy``: the trainer's
    Evaluator, with the run's seed and env settings, replayed on its checkpoints in step order
    (evaluation does not touch the training streams, so they are the checkpoints such a run saves)."""
    import torch

    from arena.agents import build_agent
    from arena.env import EnvConfig
    from arena.training import OpponentSpec, checkpoint_step, list_checkpoints, load_checkpoint, rank_seed
    from arena.training.process_group import Rank
    from arena.yaml_file import read_yaml_file
    from arena_ppo.runners.evaluator import Evaluator

    checkpoints = list_checkpoints(run)
    env = EnvConfig.from_dict(load_checkpoint(checkpoints[0])["env_config"])
    seed = rank_seed(int(read_yaml_file(run / "config.yaml", "run config.yaml")["run"]["seed"]), 0)

    def make(spec: OpponentSpec) -> Any:
        agent = build_agent(spec.target, "cpu", env)
        agent.eval()
        return agent

    evaluator = Evaluator([OpponentSpec("agent", r) for r in references], make, env, torch.device("cpu"), seed, games,
                          run, Rank(), keep=False, policy=policy)
    evaluator.mix = None  # these references need not be what the run trained against: the rating decides
    best = None
    for checkpoint in checkpoints:
        _, record = evaluator.play(build_agent(str(checkpoint), "cpu", env), checkpoint_step(checkpoint) or 0)
        if record is not None and record.beats(best):
            best = record
    return best.step if best is not None else None


def rank_of(step: int | None, ratings: list[dict[str, Any]]) -> int | None:
    """The rank of the checkpoint of ``step`` among the run's checkpoints by reference Elo, as the report
    ranks them (:func:`arena.tournament.ordering.ordered`)."""
    import pandas as pd

    from arena.tournament.ordering import ordered

    frame = pd.DataFrame(ratings)
    steps = ordered(frame.assign(name=frame["step"].map("{:012d}".format)), "reference_elo")["step"].tolist()
    return steps.index(step) + 1 if step in steps else None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=opt.existing_dir, help="training run folders (with ckpt_*.pt)")
    parser.add_argument("--references", default="", help="comma-separated agent names (default: the ladder)")
    parser.add_argument("--policy", choices=("sampled", "deterministic", "both"), default="sampled",
                        help="how the checkpoints play")
    parser.add_argument("--games-per-pairing", type=opt.integer(1), default=200)
    parser.add_argument("--seed", type=opt.seed, default=0)
    parser.add_argument("--threads", type=opt.threads, default=None, help="torch threads")
    parser.add_argument("--gauntlet", action="store_true",
                        help="the checkpoints play the references alone, not each other: far fewer games for a "
                             "long run (the Spearman of all games is then of those games alone)")
    parser.add_argument("--from-evaluations", action="store_true",
                        help="read the run's own evaluations (eval.csv: its references, the games it played "
                             "sampled or as run.eval_policy says) instead of playing a league")
    parser.add_argument("--kept", action="store_true",
                        help="also replay the trainer's evaluations (200 games a reference, playing by each policy) "
                             "on the checkpoints: the step best.pt would hold")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    if args.from_evaluations and (args.kept or args.gauntlet):
        parser.error("--from-evaluations plays no games: --kept and --gauntlet do not apply")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from arena.training import league_agents

    references = [r for r in args.references.split(",") if r] or league_agents()
    policies = ["sampled", "deterministic"] if args.policy == "both" else [args.policy]
    if args.from_evaluations:
        print("each run's own evaluations (eval.csv), against its references", flush=True)
        rows = [rate_evaluations(run) for run in args.runs]
    else:
        print(f"references: {', '.join(references)}; {args.games_per_pairing} games a pairing, "
              f"{'the checkpoints against the references' if args.gauntlet else 'round robin'}", flush=True)
        rows = [rate_run(run, references, policy, args.games_per_pairing, args.seed, args.threads, args.gauntlet)
                for run in args.runs for policy in policies]
    for row in rows if args.kept else ():
        row["kept_step"] = kept_by_evaluations(Path(row["run"]), references, row["policy"], 200)
        row["kept_rank"] = rank_of(row["kept_step"], row["ratings"])
    print(f"\n{'run':<28} {'policy':<13} {'ckpts':>5} {'rated':>5} {'above':>5} {'Spearman':>8} {'later below':>11} "
          f"{'Spearman (all games)':>20} {'best.json':>13} {'min':>5}")
    for r in rows:
        best = f"rank {r['best_rank']}/{r['checkpoints']}" if r["best_rank"] else "-"
        kept = f"; evaluations playing {r['policy']} keep step {r['kept_step']:,}, rank {r['kept_rank']}" \
            if "kept_step" in r else ""
        print(f"{r['run'][-28:]:<28} {r['policy']:<13} {r['checkpoints']:>5} {r['rated']:>5} {r['above']:>5} "
              f"{r['spearman']:>8.3f} {r['later_below']:>11} {r['all_games_spearman']:>20.3f} {best:>13} "
              f"{r['minutes']:>5.1f}{kept}")
    if args.json:
        print(json.dumps(plain(rows), allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
