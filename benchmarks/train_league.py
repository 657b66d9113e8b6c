"""League training against the ladder, beside training against CrankAgent alone, for the same budget.

    python benchmarks/train_league.py                                    # the figures docs/training.md reports
    python benchmarks/train_league.py --minutes 3 --exploit-minutes 2    # a quick look
    python benchmarks/train_league.py --parallel 2 --threads 1           # two runs at once, a core each

Three parts:

1. **Generalization.** Two PPO runs of ``--minutes`` each: ``--vs league`` (prioritized fictitious
   self-play over the ladder — placeholder, crank, sniper, defender, ace — and the run's own past
   checkpoints) and ``--vs crank``. Each final checkpoint plays ``--games`` deterministic games (half
   from each side) against every ladder agent. So do the weights each run kept in ``best.pt`` (the best
   worst-case score in its evaluations, ``--eval-games`` a rung at each checkpoint, inside the budget),
   on the same fresh games. ``--league-vs ace`` adds an opponent beside the league;
   ``--warm-up-minutes M`` trains the league run M minutes against the top rung alone first, then the
   league from those weights, taught by that warm-up's final checkpoint (docs/training.md);
   ``--rollback MARGIN`` sends a run back to its kept weights when an evaluation slips below them, and
   the table says how often it did; ``--gate TIE`` breaks ladder ties with a duel against the kept
   weights.
2. **Rating over training.** A round-robin tournament of the league run's checkpoints (and the
   ladder), then the Spearman correlation of training step against Elo among the checkpoints.
3. **Exploitability.** For each final checkpoint, a fresh PPO trained ``--exploit-minutes`` against it
   alone (frozen), then scored over ``--games`` deterministic games against it: the exploiter's win
   rate (lower means a more robust policy). ``--exploit-minutes 0`` skips it.

Wall-clock figures depend on what else the machine runs; ``--parallel`` runs two trainings at once,
each with ``--threads`` torch threads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy


# Trainer options the main runs take from this script's flags of the same name; None: the trainer's default.
MAIN_RUN_OPTIONS = ("floor", "reward", "ladder_share", "kickstart", "kickstart_steps", "kickstart_coef",
                    "kickstart_final", "kickstart_trigger", "lr_anneal", "tenure", "handover", "obs_delta", "gamma",
                    "eval_games", "pfsp_memory", "pfsp_power", "fire_entropy_penalty", "rollback", "gate")
WARM_UP_SEED = 100  # the league stage after a warm-up draws its own streams: seed + this
WARM_UP_DIR = "warm-up"  # the warm-up's folder inside the league run's


def train(out: Path, vs: list[str], minutes: float, seed: int, threads: int | None, self_slots: int = 4,
          obs_mode: str = "extended", options: dict[str, Any] | None = None, init: Path | None = None
          ) -> dict[str, Any]:
    """One PPO run for ``minutes`` of wall clock; returns its size and speed. ``options``: more trainer
    options by their config name (those that are None keep the trainer's default). ``init``: a checkpoint
    whose weights the learner starts from (a fresh optimizer and step count)."""
    import torch

    from arena.training import load_checkpoint

    from arena_ppo.runners import OnPolicyRunner
    from arena_ppo.trainer import build_config, opponent_factory, resolve_reward

    cfg = build_config({
        "vs": vs, "seed": seed, "device": "cpu", "max_steps": 10**12,  # the budget is time
        "eval_games": 0,  # unless options ask: the finals are scored afterwards, outside the timed training
        "threads": threads, "self_slots": self_slots, "obs_mode": obs_mode, "out": str(out),
        **{k: v for k, v in (options or {}).items() if v is not None}})
    runner = OnPolicyRunner(cfg, out, opponent_factory(torch.device("cpu"), cfg.run.env_config()),
                            reward_fn=resolve_reward(cfg.run.reward), console=None, progress=False)
    if init is not None:
        runner.agent.load_weights(load_checkpoint(init))
    start = time.perf_counter()
    runner.learn(max_time=minutes * 60.0)
    runner.save_if_new()
    elapsed = time.perf_counter() - start
    return {"out": str(out), "vs": " ".join(vs), "env_steps": runner.counters.env_steps, "minutes": elapsed / 60,
            "steps_per_s": runner.counters.env_steps / elapsed, "rollbacks": count_rollbacks(out)}


def count_rollbacks(out: Path) -> int:
    """How many evaluations of a run sent it back to its kept weights (``--rollback``; eval.csv)."""
    import csv

    path = out / "eval.csv"
    if not path.is_file():
        return 0
    with path.open(newline="") as f:
        return sum(float(row.get("rollback") or 0) > 0 for row in csv.DictReader(f))


def train_warmed_up(out: Path, vs: list[str], minutes: float, seed: int, threads: int | None, warm_up: float,
                    rung: str, self_slots: int = 4, obs_mode: str = "extended",
                    options: dict[str, Any] | None = None, warm_up_teaches: bool = True) -> dict[str, Any]:
    """``warm_up`` minutes against ``rung`` alone (in ``out/warm-up``), then ``vs`` for the rest of
    ``minutes`` (in ``out``) from those weights: the doctrine that beats the top rung, held while the
    league teaches the rest. ``warm_up_teaches``: the warm-up's final checkpoint is the league stage's
    kickstart teacher; otherwise ``options``' teacher (if any) teaches both stages."""
    first = train(out / WARM_UP_DIR, [rung], warm_up, seed, threads, self_slots, obs_mode, options)
    teacher = final_checkpoint(first["out"])
    rest = max(minutes - first["minutes"], 0.0)
    taught = {**(options or {}), "kickstart": f"ckpt:{teacher}"} if warm_up_teaches else options
    second = train(out, vs, rest, seed + WARM_UP_SEED, threads, self_slots, obs_mode, taught, init=teacher)
    steps = first["env_steps"] + second["env_steps"]
    return {**second, "env_steps": steps, "minutes": first["minutes"] + second["minutes"],
            "steps_per_s": steps / ((first["minutes"] + second["minutes"]) * 60.0),
            "warm_up": {**first, "final": str(teacher)}}


def train_main(out: Path, vs: list[str], warm_up: float = 0.0, rung: str = "", warm_up_teaches: bool = True,
               **kwargs: Any) -> dict[str, Any]:
    """A main run: the league run after its warm-up when ``warm_up`` is set, any other run plainly."""
    if warm_up > 0 and "league" in vs:
        return train_warmed_up(out, vs, warm_up=warm_up, rung=rung, warm_up_teaches=warm_up_teaches, **kwargs)
    return train(out, vs, **kwargs)


def final_checkpoint(out: str | Path) -> Path:
    from arena.training import list_checkpoints

    return list_checkpoints(Path(out))[-1]


def score(checkpoint: Path, rivals: list[str], games: int, seed: int, obs_mode: str) -> dict[str, dict[str, Any]]:
    """Deterministic games of ``checkpoint`` against each rival (agent names or checkpoint files)."""
    import torch

    from arena.agents import build_agent
    from arena.env import EnvConfig
    from arena.match import play_match

    cfg = EnvConfig(obs_mode=obs_mode)  # type: ignore[arg-type]
    out = {}
    for rival in rivals:
        with torch.random.fork_rng(devices=[]):
            a = build_agent(str(checkpoint), "cpu", cfg)
            b = build_agent(rival if not rival.endswith(".pt") else rival, "cpu", cfg)
            r = play_match(a, b, games, env_config=cfg, seed=seed + 777)
        out[rival] = {"wins": r.wins, "draws": r.draws, "losses": r.losses, "win_rate": r.wins / r.games}
    return out


def first_of_each_weights(checkpoints: list[Path]) -> list[bool]:
    """For each checkpoint, whether no earlier one holds the same weights. A run that went back to its
    kept weights (``--rollback``) saves them again at a later step: one policy, rated at two steps."""
    from arena.training import load_checkpoint
    from arena.training.distributed import fingerprint

    seen, first = set(), []
    for path in checkpoints:
        data = load_checkpoint(path)
        key = tuple(sorted(fingerprint({**data["model"], **{f"obs_normalizer.{k}": v for k, v in
                                                           (data.get("obs_normalizer") or {}).items()}}).items()))
        first.append(key not in seen)
        seen.add(key)
    return first


def rating_over_training(run: Path, ladder: list[str], games_per_pairing: int, seed: int, obs_mode: str
                         ) -> dict[str, Any]:
    """A league of the run's checkpoints and the ladder; Spearman of step against Elo among checkpoints, and
    of step against each checkpoint's mean score (draws half) against the ladder alone.

    A run with a warm-up (``run/warm-up``) is rated whole: the warm-up's checkpoints first, then the league
    stage's, whose steps count on from the warm-up's last (``*_league`` figures: the league stage alone).
    The two can disagree: the Elo also counts the checkpoints' games against each other, where a later
    policy can lose to an earlier one it is stronger than on the ladder (their strategies cycle).
    """
    import yaml

    from arena.tournament import load_config, run_tournament
    from arena.tournament.report import rank_correlation
    from arena.training import checkpoint_step, list_checkpoints

    warm_up = list_checkpoints(run / WARM_UP_DIR)
    offset = (checkpoint_step(warm_up[-1]) or 0) if warm_up else 0
    league = run / "league.yaml"
    league.write_text(yaml.safe_dump({
        "name": "rating-over-training", "output": "rating", "seed": seed, "device": "cpu", "max_envs": 16384,
        "games_per_pairing": games_per_pairing, "rating": {"bootstrap_rounds": 200}, "env": {"obs_mode": obs_mode},
        # one glob: its labels are the paths below run/ (ckpt_…, warm-up/ckpt_…), unique across both stages
        "participants": [*ladder, {"agent": "ppo", "checkpoints": f"{'**/' if warm_up else ''}ckpt_*.pt"}]}))
    report = run_tournament(load_config(league), progress=False, notify=False)
    board, h2h = report.leaderboard, report.head_to_head
    steps, elos, ladder_scores, stage, distinct = [], [], [], [], []
    checkpoints = [*[(c, f"ppo:{WARM_UP_DIR}/{c.stem}", 0) for c in warm_up],
                   *[(c, f"ppo:{c.stem}", offset) for c in list_checkpoints(run)]]
    for (ckpt, name, base), first in zip(checkpoints, first_of_each_weights([c for c, _, _ in checkpoints])):
        row = board[board["name"] == name]
        if len(row):
            if first:
                distinct.append(len(steps))
            steps.append(base + (checkpoint_step(ckpt) or 0))
            elos.append(float(row["elo"].iloc[0]))
            ladder_scores.append(float(h2h.loc[name, ladder].mean()))
            stage.append(base > 0 or not warm_up)
    league_only = [i for i, s in enumerate(stage) if s]
    return {"checkpoints": len(steps), "spearman": rank_correlation(steps, elos), "steps": steps, "elo": elos,
            "distinct": len(distinct),
            "spearman_distinct": rank_correlation([steps[i] for i in distinct], [elos[i] for i in distinct]),
            "ladder_score": ladder_scores, "spearman_ladder": rank_correlation(steps, ladder_scores),
            "warm_up_checkpoints": len(steps) - len(league_only),
            "spearman_league": rank_correlation([steps[i] for i in league_only], [elos[i] for i in league_only]),
            "report": str(report.output_dir / "report.md")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="training budget of each main run")
    parser.add_argument("--exploit-minutes", type=float, default=10.0, help="budget of each exploiter")
    parser.add_argument("--games", type=int, default=1000, help="deterministic games per opponent")
    parser.add_argument("--games-per-pairing", type=int, default=200, help="rating-over-training league")
    parser.add_argument("--parallel", type=int, default=2, help="trainings at once (each in its own process)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per training")
    parser.add_argument("--self-slots", type=int, default=8, help="opponents drawn at once by --vs league")
    parser.add_argument("--obs-mode", choices=["default", "extended"], default="extended",
                        help="the learners' observation (extended: with the missile warning, as the ladder's best)")
    parser.add_argument("--floor", type=float, default=None, help="--floor of the main runs (default: the trainer's)")
    parser.add_argument("--runs", default="league,crank", help="main runs: league, crank or both")
    parser.add_argument("--reward", default=None, help="--reward of the main runs (default: the trainer's)")
    parser.add_argument("--ladder-share", type=float, default=None,
                        help="--ladder-share of the league run (default: the trainer's)")
    parser.add_argument("--kickstart", default=None, help="--kickstart teacher of the main runs (default: none)")
    parser.add_argument("--kickstart-steps", type=int, default=None,
                        help="--kickstart-steps of the main runs (default: the trainer's)")
    parser.add_argument("--kickstart-coef", type=float, default=None,
                        help="--kickstart-coef of the main runs: the teacher's first weight (default: the trainer's)")
    parser.add_argument("--kickstart-final", type=float, default=None,
                        help="--kickstart-final of the main runs (default: the trainer's)")
    parser.add_argument("--kickstart-trigger", type=float, default=None,
                        help="--kickstart-trigger of the main runs (default: the trainer's)")
    parser.add_argument("--lr-anneal", type=float, default=None,
                        help="--lr-anneal of the main runs, over their --minutes (default: the trainer's)")
    parser.add_argument("--tenure", type=int, default=None,
                        help="--tenure of the main runs: env steps a drawn opponent keeps its envs (default: the trainer's)")
    parser.add_argument("--obs-delta", action=argparse.BooleanOptionalAction, default=None,
                        help="--obs-delta of the main runs: each observation with its change (default: the trainer's)")
    parser.add_argument("--handover", action=argparse.BooleanOptionalAction, default=None,
                        help="--handover or --no-handover in the main runs (default: the trainer's)")
    parser.add_argument("--pfsp-memory", type=float, default=None,
                        help="--pfsp-memory of the main runs: games over which a PFSP record fades (default: the "
                             "trainer's)")
    parser.add_argument("--pfsp-power", type=float, default=None,
                        help="--pfsp-power of the main runs (default: the trainer's)")
    parser.add_argument("--gamma", type=float, default=None, help="--gamma of the main runs (default: the trainer's)")
    parser.add_argument("--rollback", type=float, default=None, metavar="MARGIN",
                        help="--rollback of the main runs (default: the trainer's)")
    parser.add_argument("--gate", type=float, default=None, metavar="TIE",
                        help="--gate of the main runs: ladder scores within TIE of the kept weights' are a tie, "
                             "broken by a duel against them (default: the trainer's)")
    parser.add_argument("--fire-entropy-penalty", type=float, default=None,
                        help="--fire-entropy-penalty of the main runs (default: the trainer's)")
    parser.add_argument("--league-vs", action="append", default=[], metavar="NAME[=WEIGHT]",
                        help="another opponent of the league run beside --vs league (repeatable), e.g. ace")
    parser.add_argument("--warm-up-minutes", type=float, default=0.0,
                        help="the league run first trains this long against the top rung alone, then plays the "
                             "league for the rest of --minutes from those weights, taught by that checkpoint")
    parser.add_argument("--warm-up-teaches", action=argparse.BooleanOptionalAction, default=True,
                        help="after --warm-up-minutes the warm-up's checkpoint teaches the league stage; with "
                             "--no-warm-up-teaches the --kickstart teacher does, as in the warm-up")
    parser.add_argument("--eval-games", type=int, default=100,
                        help="games per rung in the main runs' evaluations, inside their budget (one at each "
                             "checkpoint); the run keeps the best evaluated weights in best.pt, scored beside the "
                             "final checkpoint on fresh games (0: no evaluation, no best.pt)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="folder for the runs (default runs/bench-league-<time>)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    from arena.training import BEST_CHECKPOINT, checkpoint_step, default_run_dir, league_agents, read_best

    ladder = league_agents()
    root = Path(args.out or default_run_dir("bench-league"))
    print(f"ladder: {', '.join(ladder)}; {args.minutes:g} min per run, exploiters {args.exploit_minutes:g} min, "
          f"{args.parallel} at a time with {args.threads} thread(s) each; output {root}", flush=True)
    if args.warm_up_minutes > 0:
        teacher = "that checkpoint" if args.warm_up_teaches else (args.kickstart or "no teacher")
        print(f"the league run warms up {args.warm_up_minutes:g} min against {ladder[-1]} alone, then plays the "
              f"league taught by {teacher}", flush=True)
    runs = {n: [n, *(args.league_vs if n == "league" else [])] for n in args.runs.split(",") if n}
    options = {name: getattr(args, name) for name in MAIN_RUN_OPTIONS}
    main_run = partial(train_main, minutes=args.minutes, seed=args.seed, threads=args.threads,
                       self_slots=args.self_slots, obs_mode=args.obs_mode, options=options,
                       warm_up=args.warm_up_minutes, rung=ladder[-1], warm_up_teaches=args.warm_up_teaches)
    exploiter_run = partial(train, minutes=args.exploit_minutes, seed=args.seed + 1, threads=args.threads,
                            self_slots=4, obs_mode=args.obs_mode)
    with ProcessPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        trained = dict(zip(runs, pool.map(main_run, [root / n for n in runs], runs.values())))
        finals = {n: final_checkpoint(trained[n]["out"]) for n in runs}
        exploit = {}
        if args.exploit_minutes > 0:
            exploit = dict(zip(runs, pool.map(exploiter_run, [root / f"exploit-{n}" for n in runs],
                                              [[f"ckpt:{finals[n]}"] for n in runs])))
    result: dict[str, Any] = {"minutes": args.minutes, "exploit_minutes": args.exploit_minutes, "games": args.games,
                              **options, "runs": {}}
    for n in runs:
        row = {**trained[n], "final": str(finals[n]),
               "scores": score(finals[n], ladder, args.games, args.seed, args.obs_mode)}
        kept = read_best(trained[n]["out"])
        if kept is not None:  # chosen on the evaluation's games (seed + 10,000), scored on fresh ones
            same = kept.step == checkpoint_step(finals[n])  # the final weights: their scores are in hand
            row["best"] = {**kept.to_dict(), "scores": row["scores"] if same else score(
                Path(trained[n]["out"]) / BEST_CHECKPOINT, ladder, args.games, args.seed, args.obs_mode)}
        if "warm_up" in row:  # what the league stage started from
            row["warm_up"]["scores"] = score(Path(row["warm_up"]["final"]), ladder, args.games, args.seed,
                                             args.obs_mode)
        if n in exploit:
            exploiter = final_checkpoint(exploit[n]["out"])
            row["exploiter"] = {**exploit[n], **score(exploiter, [str(finals[n])], args.games, args.seed,
                                                      args.obs_mode)[str(finals[n])]}
        result["runs"][n] = row
    if "league" in runs:
        result["rating"] = rating_over_training(root / "league", ladder, args.games_per_pairing, args.seed,
                                                args.obs_mode)

    def cells(scores: dict[str, dict[str, Any]]) -> str:
        return "  ".join(f"{scores[r]['wins']:>4}-{scores[r]['draws']}-{scores[r]['losses']} "
                         f"{scores[r]['win_rate']:>4.0%}".rjust(16) for r in ladder)

    print(f"\n{'run':<8} {'env steps':>12} {'steps/s':>8}  " + "  ".join(f"{r:>16}" for r in ladder)
          + f"  {'exploiter wins':>15}")
    for n, row in result["runs"].items():
        ex = row.get("exploiter")
        print(f"{n:<8} {row['env_steps']:>12,} {row['steps_per_s']:>8,.0f}  " + cells(row["scores"])
              + (f"  {ex['wins']:>5} ({ex['win_rate']:.1%})" if ex else ""))
        if "best" in row:
            print(f"{'  best':<8} {row['best']['step']:>12,} {'':>8}  " + cells(row["best"]["scores"]))
    for n, row in result["runs"].items():
        warm_rollbacks = row.get("warm_up", {}).get("rollbacks", 0)
        if row["rollbacks"] or warm_rollbacks:
            print(f"{n} went back to its kept weights {row['rollbacks']} time(s)"
                  + (f", and {warm_rollbacks} in its warm-up" if "warm_up" in row else ""))
        if "warm_up" in row:
            warm, scores = row["warm_up"], row["warm_up"]["scores"]
            print(f"{n} after its warm-up ({warm['env_steps']:,} steps): " + ", ".join(
                f"{r} {scores[r]['wins']}-{scores[r]['draws']}-{scores[r]['losses']}" for r in ladder))
    rating = result.get("rating")
    if rating:
        print(f"\nrating over training: {rating['checkpoints']} checkpoints of the league run, Spearman(step, Elo) "
              f"= {rating['spearman']:.3f}, Spearman(step, mean score against the ladder) = "
              f"{rating['spearman_ladder']:.3f}; report {rating['report']}")
        if rating["distinct"] < rating["checkpoints"]:
            print(f"  ({rating['distinct']} distinct weights; each at its first step: Spearman(step, Elo) = "
                  f"{rating['spearman_distinct']:.3f})")
        if rating["warm_up_checkpoints"]:
            print(f"  ({rating['warm_up_checkpoints']} of them from the warm-up; the league stage's alone: "
                  f"Spearman(step, Elo) = {rating['spearman_league']:.3f})")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
