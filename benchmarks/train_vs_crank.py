"""Train PPO with the trainer's defaults for a wall-clock budget, then play CrankAgent.

    python benchmarks/train_vs_crank.py --minutes 15            # the figure docs/training.md reports
    python benchmarks/train_vs_crank.py --minutes 2 --games 400 # a quick look

Prints the untrained policy's record against CrankAgent (expected below 10 % wins), the
training throughput (environment steps per second, collection and update together) and the
record of the trained policy over ``--games`` deterministic games (half from each side; each
game is one env's first episode). Wall-clock figures depend on what else the machine is running.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=15.0, help="training budget in wall-clock minutes")
    parser.add_argument("--games", type=int, default=1000, help="deterministic games against CrankAgent afterwards")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the trainer's default)")
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/bench-ppo-<time>)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override a default, e.g. --set run.reward=zero --set ppo.n_epochs=2 (for tuning)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)

    import torch

    from arena.env import resolve_device
    from arena.match import play_match
    from arena.training import OpponentSpec, default_run_dir
    from arena_ppo.config import TrainConfig
    from arena_ppo.runners import OnPolicyRunner
    from arena_ppo.trainer import opponent_factory, resolve_reward

    cfg = TrainConfig()
    cfg.run.vs = ("crank",)
    cfg.run.device = args.device
    cfg.run.seed = args.seed
    cfg.run.max_steps = 10**12  # the budget is time
    cfg.run.eval_games = 0  # evaluation below, outside the timed training
    if args.threads is not None:
        cfg.run.threads = args.threads
    for item in args.set:
        key, _, text = item.partition("=")
        section, _, name = key.partition(".")
        obj = getattr(cfg, section)
        current = getattr(obj, name)
        value = text.lower() in ("1", "true", "yes") if isinstance(current, bool) else type(current)(text)
        setattr(obj, name, value)
    out = args.out or default_run_dir("bench-ppo")
    cfg.run.out = str(out)
    device = resolve_device(cfg.run.device)
    make_opponent = opponent_factory(device, cfg.run.obs_mode)
    runner = OnPolicyRunner(cfg, out, make_opponent, reward_fn=resolve_reward(cfg.run.reward), console=None,
                            progress=sys.stderr.isatty())
    crank = make_opponent(OpponentSpec("agent", "crank"))

    def record(label: str) -> dict[str, float]:
        with torch.random.fork_rng(devices=[]):
            r = play_match(runner.agent, crank, args.games, env_config=runner.env_config, device=device,
                           seed=args.seed + 777, name_a="ppo", name_b="crank")
        runner.agent.train(True)
        row = {"wins": r.wins, "draws": r.draws, "losses": r.losses, "win_rate": r.wins / r.games}
        print(f"{label}: {r.wins}W {r.draws}D {r.losses}L of {r.games} deterministic games "
              f"(win rate {row['win_rate']:.1%})", flush=True)
        return row

    untrained = record("untrained policy vs crank")
    print(f"training for {args.minutes:g} min on {device} ({torch.get_num_threads()} torch threads), "
          f"{cfg.run.num_envs} envs x {cfg.ppo.n_steps} steps per update, reward {cfg.run.reward}; output {out}",
          flush=True)
    start = time.perf_counter()
    runner.learn(max_time=args.minutes * 60.0)
    elapsed = time.perf_counter() - start
    sps = runner.counters.env_steps / elapsed
    print(f"trained {runner.counters.env_steps:,} env steps in {runner.counters.updates} updates, "
          f"{elapsed / 60:.2f} min "
          f"of the {args.minutes:g} min budget: {sps:,.0f} env steps/s", flush=True)
    trained = record("trained policy vs crank")
    if args.json:
        print(json.dumps({"minutes": args.minutes, "elapsed_s": round(elapsed, 1),
                          "env_steps": runner.counters.env_steps,
                          "updates": runner.counters.updates, "sps": round(sps), "untrained": untrained,
                          "trained": trained, "overrides": args.set, "out": str(out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
