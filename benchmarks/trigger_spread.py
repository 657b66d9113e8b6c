"""How far a PPO checkpoint's sampled play is from its deterministic play, and which half makes the gap.

    python benchmarks/trigger_spread.py runs/x/league/ckpt_025657344.pt --vs ace
    python benchmarks/trigger_spread.py runs/x/league/ckpt_*.pt --vs ace --vs sniper --games 500

Training samples both halves of the action every step: the rudder from its Gaussian, the trigger from
a Bernoulli of probability p. Play (``arena play``, tournaments, evaluations) is deterministic: the
rudder's mean, and the trigger pulled where the accumulated hazard reaches its median
(``PPOAgent.fire_decision``). Each checkpoint plays ``--games`` games against each opponent four ways,
each half sampled (S) or deterministic (D), on the same seeds, and prints the score (wins plus half the
draws). A fifth column reads the sampled trigger: the median p at the steps where it fired, and the
share of its launches at p < 0.05, launches a policy meaning to fire would not leave to chance.

A large gap between ``rD fD`` and ``rS fS`` means training scores a policy that play never uses.
"""

from __future__ import annotations

import argparse
import sys

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import script_args as opt


def mixed_act(agent, rudder_sampled: bool, fire_sampled: bool, launch_p: list) -> None:
    """Replace ``agent.act`` by one that samples the chosen halves of the action (eval mode otherwise)."""
    import torch

    def act(observation):
        with torch.no_grad():
            mean, log_std, logit = agent.model.actor(agent.features(observation))
            u = mean + log_std.exp() * torch.randn_like(mean) if rudder_sampled else mean
            if fire_sampled:
                p = torch.sigmoid(logit)
                fire = torch.rand_like(p) < p
                armed = (observation["missiles"] > 0) & (observation["alive"] > 0)
                launch_p.append(p[fire & armed])
            else:
                fire = agent.fire_decision(logit)
        rudder = torch.tanh(u)
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}

    agent.act = act


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", type=opt.existing_file, help="PPO checkpoints (.pt)")
    parser.add_argument("--vs", action="append", default=None, help="opponent, repeatable (default: ace)")
    parser.add_argument("--games", type=opt.games, default=300, help="games per opponent and way of playing")
    parser.add_argument("--seed", type=opt.seed, default=777, help="env seed of every match (the same games each way)")
    parser.add_argument("--obs-mode", choices=["default", "extended"], default="extended")
    parser.add_argument("--threads", type=opt.integer(1, 1024), default=1, help="torch threads")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    import torch

    from arena.agents import AgentSpecError, build_agent
    from arena.env import EnvConfig
    from arena.match import play_match
    from arena.training.checkpoint import CheckpointError

    torch.set_num_threads(args.threads)
    cfg = EnvConfig(obs_mode=args.obs_mode)
    ways = ((False, False), (True, False), (False, True), (True, True))
    header = ["checkpoint", "vs"] + [f"r{'S' if r else 'D'} f{'S' if f else 'D'}" for r, f in ways]
    header += ["p at launch", "launches p<0.05"]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for path in args.checkpoints:
        for rival in args.vs or ["ace"]:
            scores, launch_p = [], []
            for rudder_sampled, fire_sampled in ways:
                torch.manual_seed(args.seed)
                try:
                    agent = build_agent(f"ppo:{path}", "cpu", cfg)
                    opponent = build_agent(rival, "cpu", cfg)
                except (AgentSpecError, CheckpointError, ValueError, OSError) as exc:
                    opt.fail(str(exc))
                if agent.recurrent:
                    opt.fail(f"{path}: a recurrent policy; this benchmark plays feed-forward ones")
                mixed_act(agent, rudder_sampled, fire_sampled, launch_p)
                result = play_match(agent, opponent, args.games, env_config=cfg, seed=args.seed)
                scores.append(f"{(result.wins + 0.5 * result.draws) / result.games:.3f}")
            p = torch.cat(launch_p) if launch_p else torch.zeros(0)
            spread = ((f"{float(p.median()):.3f}", f"{float((p < 0.05).float().mean()):.0%}") if p.numel()
                      else ("-", "-"))
            print(" | ".join([path.name, rival, *scores, *spread]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
