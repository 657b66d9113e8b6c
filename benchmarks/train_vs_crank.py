"""Train PPO with the trainer's defaults for a wall-clock budget, then score every checkpoint.

    python benchmarks/train_vs_crank.py --minutes 15            # the curve of the 15-minute figure (docs/experiments)
    python benchmarks/train_vs_crank.py --minutes 2 --games 400 # a quick look
    python benchmarks/train_vs_crank.py --curve-only runs/demo  # score an existing run's checkpoints

Prints the untrained policy's record against CrankAgent, the training throughput (environment steps
per second, collection and update together), then one row per checkpoint: its record over
``--games`` deterministic games (half from each side; each game is one env's first episode) against
each of ``--opponents`` (default crank and the random placeholder). A policy that "stays good" wins
at every checkpoint, not only at the last one. Wall-clock figures depend on what else the machine is
running.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import script_args as opt


def score_checkpoints(out: Path, opponents: list[str], games: int, seed: int, device: Any) -> list[dict[str, Any]]:
    """Deterministic record of every checkpoint in ``out`` against each opponent."""
    import torch

    from arena.agents import build_agent
    from arena.match import play_match
    from arena.training import checkpoint_step, list_checkpoints
    from arena_ppo.agent import PPOAgent

    rows = []
    rivals = {name: build_agent(name, device=device) for name in opponents}
    for path in list_checkpoints(out):
        agent = PPOAgent.load(path, device=device)
        row: dict[str, Any] = {"checkpoint": path.name, "step": checkpoint_step(path)}
        for name, rival in rivals.items():
            with torch.random.fork_rng(devices=[]):
                r = play_match(agent, rival, games, env_config=agent.env_config, device=device, seed=seed + 777,
                               name_a="ppo", name_b=name)
            row[name] = {"wins": r.wins, "draws": r.draws, "losses": r.losses, "score": round(r.score, 4)}
        rows.append(row)
        cells = "  ".join(f"{n}: {row[n]['wins']:>4}W {row[n]['draws']:>4}D {row[n]['losses']:>4}L "
                          f"({row[n]['score']:.1%})" for n in opponents)
        print(f"{row['step']:>12,}  {cells}", flush=True)
    return rows


def agent_names(text: str) -> list[str]:
    """``--opponents``: comma-separated agents, each one ``arena play`` would build (built here, once, to know)."""
    from arena.agents import build_agent

    words = [w.strip() for w in text.split(",")]
    for word in words:
        try:
            build_agent(word, "cpu")
        except (ValueError, LookupError, OSError) as exc:
            raise argparse.ArgumentTypeError(f"expected comma-separated agents; got {text!r} ({exc})") from None
    return words


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=opt.number(0, above=True, unit="minutes"), default=15.0,
                        help="training budget in wall-clock minutes")
    parser.add_argument("--games", type=opt.games, default=1000, help="deterministic games per checkpoint and opponent")
    parser.add_argument("--opponents", type=agent_names, default="crank,placeholder",
                        help="comma-separated agents to score against")
    parser.add_argument("--vs", action="append", default=None, help="training opponents (default: crank)")
    parser.add_argument("--device", type=opt.device, default="auto")
    parser.add_argument("--seed", type=opt.seed, default=0)
    parser.add_argument("--threads", type=opt.threads, default=None,
                        help="torch threads (default: the trainer's default)")
    parser.add_argument("--out", type=opt.output_dir, default=None,
                        help="run directory (default runs/bench-ppo-<time>)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override a default, e.g. --set run.reward=zero --set ppo.n_epochs=2 (for tuning)")
    parser.add_argument("--curve-only", type=opt.existing_dir, default=None, metavar="RUN_DIR",
                        help="skip training; score the checkpoints already in RUN_DIR")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    from arena.training.settings import parse_assignments
    from arena_ppo.train_config import default_config

    try:
        args.assignments = parse_assignments(default_config(), args.set)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    import torch

    from arena.env import resolve_device
    from arena.threads import apply_threads

    device = resolve_device(args.device)
    opponents = args.opponents
    if args.curve_only is not None:
        apply_threads(args.threads, batch=args.games)
        print(f"{'step':>12}  deterministic games against each opponent ({args.games} each)")
        rows = score_checkpoints(args.curve_only, opponents, args.games, args.seed, device)
        if args.json:
            print(json.dumps({"out": str(args.curve_only), "curve": rows}))
        return 0

    from arena.training import default_run_dir
    from arena_ppo.plan import opponent_factory, resolve
    from arena_ppo.prepare import build_config
    from arena_ppo.runners import build_run

    given = {"run.vs": tuple(args.vs or ("crank",)), "run.device": args.device, "run.seed": args.seed,
             "run.max_steps": 10**12,  # the budget is time
             "run.eval_games": 0,  # the curve below, outside the timed training
             **({"run.threads": args.threads} if args.threads is not None else {})}
    from arena.errors import ArenaError

    out = args.out or default_run_dir("bench-ppo")
    try:  # --vs, or a setting that does not fit the others: said as arena train says it, before any training
        cfg = build_config("ppo", {**given, **args.assignments})
        plan = resolve(cfg, out=out)
    except ArenaError as exc:
        opt.fail(exc.message)
    except ValueError as exc:
        opt.fail(str(exc))
    make_opponent = opponent_factory(plan.device, plan.env_config)
    runner = build_run(plan, console=None, progress=sys.stderr.isatty())
    learner = runner.learner
    from arena.match import play_match
    from arena.training import OpponentSpec

    crank = make_opponent(OpponentSpec("agent", "crank"))
    with torch.random.fork_rng(devices=[]):
        r = play_match(learner.agent, crank, args.games, env_config=plan.env_config, device=device,
                       seed=args.seed + 777, name_a="ppo", name_b="crank")
    learner.agent.train(True)
    print(f"untrained policy vs crank: {r.wins}W {r.draws}D {r.losses}L of {r.games} deterministic games", flush=True)
    from arena.training import describe_split

    print(f"training for {args.minutes:g} min on {device} ({torch.get_num_threads()} torch threads) vs "
          f"{describe_split(learner.opponents.pool)}, {cfg.run.num_envs} envs x {cfg.ppo.n_steps} steps per update, "
          f"reward "
          f"{cfg.run.reward}, lr schedule {cfg.ppo.lr_schedule}, update "
          f"{'compiled' if plan.compile_update[0] else 'eager (' + plan.compile_update[1] + ')'}; "
          f"output {out}", flush=True)
    start = time.perf_counter()
    runner.learn(max_time=args.minutes * 60.0)
    elapsed = time.perf_counter() - start
    counters = learner.counters
    sps = counters.env_steps / elapsed
    print(f"trained {counters.env_steps:,} env steps in {counters.updates} updates, "
          f"{elapsed / 60:.2f} min of the {args.minutes:g} min budget: {sps:,.0f} env steps/s", flush=True)
    print(f"{'step':>12}  deterministic games against each opponent ({args.games} each)")
    rows = score_checkpoints(out, opponents, args.games, args.seed, device)
    late = [r for r in rows if r["step"] >= 5_000_000]
    if late:
        worst = {n: min(r[n]["score"] for r in late) for n in opponents}
        print("worst checkpoint after 5M steps: " + ", ".join(f"{n} {s:.1%}" for n, s in worst.items()))
    if args.json:
        print(json.dumps({"minutes": args.minutes, "elapsed_s": round(elapsed, 1),
                          "env_steps": counters.env_steps, "updates": counters.updates,
                          "sps": round(sps), "overrides": args.set, "vs": list(cfg.run.vs), "out": str(out),
                          "curve": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
