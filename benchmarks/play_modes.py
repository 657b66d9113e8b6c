"""How a PPO checkpoint plays: its rudder and its trigger each sampled (as in training) or deterministic
(the rudder's mean, the trigger's median rule), in all four combinations, against every rung.

    python benchmarks/play_modes.py runs/league/best.pt                      # the ladder, 1,000 games each
    python benchmarks/play_modes.py runs/demo/best.pt --rivals crank,placeholder --games 400

A checkpoint that wins deterministically and loses sampled has a gap to explain: the rudder's noise, or
a trigger pulled at random moments (a missile wasted is one the battle no longer has). The two mixed
modes say which. Each cell is wins-draws-losses of ``--games`` games (half from each side, one seed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip

MODES = {  # name -> (rudder, trigger)
    "sampled": ("sampled", "sampled"),
    "deterministic": ("deterministic", "deterministic"),
    "rudder sampled, trigger deterministic": ("sampled", "deterministic"),
    "rudder deterministic, trigger sampled": ("deterministic", "sampled"),
}
LADDER = ("placeholder", "crank", "sniper", "defender", "ace")


def mixed_agent(checkpoint: Path, rudder: str, trigger: str, env_config: Any) -> Any:
    """The checkpoint as a PPOAgent whose rudder and trigger each play by their own mode."""
    import torch

    from arena_ppo.agent import PPOAgent
    from arena_ppo.policy_family import draws, sampled_controls

    class Mixed(PPOAgent):
        def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            with torch.no_grad():
                mean, log_std, logit = self.model.actor(self.features(observation))
                drawn_rudder, drawn_fire = sampled_controls(mean, log_std, logit, *draws(mean.shape[0], mean))
                steer = drawn_rudder if rudder == "sampled" else torch.tanh(mean)
                fire = drawn_fire if trigger == "sampled" else self.fire_decision(logit)
            return {"rudder": steer, "throttle": torch.ones_like(steer), "fire": fire}

        def family_key(self) -> None:  # plays alone: its family would act by the class's own modes
            return None

    agent = Mixed.load(checkpoint, env_config=env_config)
    agent.eval()  # the mode is Mixed's own; eval keeps the normalizer and the trigger's memory as in play
    return agent


def score(checkpoint: Path, rival: str, mode: str, games: int, seed: int) -> dict[str, Any]:
    import torch

    from arena.agents import build_agent, trained_for
    from arena.env import EnvConfig
    from arena.match import play_match

    trained = trained_for(checkpoint)
    cfg = EnvConfig(obs_mode=trained.obs_mode if trained is not None else "default")  # type: ignore[arg-type]
    with torch.random.fork_rng(devices=[]):
        agent = mixed_agent(checkpoint, *MODES[mode], cfg)
        result = play_match(agent, build_agent(rival, "cpu", cfg), games, env_config=cfg, seed=seed,
                            policies=("deterministic", "deterministic"))
    return {"wins": result.wins, "draws": result.draws, "losses": result.losses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--rivals", default=",".join(LADDER), help="comma-separated agents to play")
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=101)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    rivals = [r for r in args.rivals.split(",") if r]
    figures: dict[str, Any] = {}
    for checkpoint in args.checkpoints:
        print(f"\n{checkpoint} ({args.games:,} games a cell, seed {args.seed}; W-D-L)")
        print("| mode | " + " | ".join(rivals) + " |")
        print("|---|" + "---|" * len(rivals))
        for mode in MODES:
            cells = {rival: score(checkpoint, rival, mode, args.games, args.seed) for rival in rivals}
            figures.setdefault(str(checkpoint), {})[mode] = cells
            print(f"| {mode} | " + " | ".join(f"{c['wins']}-{c['draws']}-{c['losses']}" for c in cells.values())
                  + " |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
