"""Recorded battles for the replay tests, with the env's own states beside them to check against."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from arena.agents import build_agent
from arena.env import EnvConfig, TensorEnv
from arena.loop import Controller, GameLoop, Seating, Turn
from arena.replay import Battle, BattleRecorder, battle_meta

FIELDS = ("x", "y", "heading", "speed", "alive", "missiles_left", "mx", "my", "m_heading", "m_speed", "m_active",
          "m_locked")


@dataclass
class Trace:
    """What the env showed after every step (post auto-reset), kept by a plain observer."""

    states: list[dict[str, torch.Tensor]] = field(default_factory=list)
    dones: list[torch.Tensor] = field(default_factory=list)
    kills: list[dict[str, torch.Tensor]] = field(default_factory=list)
    episodes: list[dict] = field(default_factory=list)

    def observer(self, env: TensorEnv):
        def see(turn: Turn) -> None:
            self.states.append({f: getattr(env.state, f).clone() for f in FIELDS})
            self.dones.append(turn.dones.clone())
            self.kills.append({p: k.clone() for p, k in turn.infos["kills"].items()})
            episode = turn.infos["episode"]
            self.episodes.append({"missiles": {p: v.clone() for p, v in episode["missiles_fired"].items()},
                                  "length": episode["length"].clone()})
        return see


def run_loop(agents: tuple[str, str], num_envs: int, steps: int, *, team_size: int = 1, seed: int = 0,
             recorder: BattleRecorder | None = None, trace: Trace | None = None,
             config: EnvConfig | None = None) -> TensorEnv:
    """``steps`` steps of agent 0 (p1 everywhere) against agent 1 (p2), auto-reset on."""
    cfg = config or EnvConfig(team_size=team_size)
    env = TensorEnv(num_envs, seed=seed, config=cfg)
    controllers = [Controller(build_agent(name, env_config=cfg), name, f"p{i + 1}") for i, name in enumerate(agents)]
    owner = torch.stack((torch.zeros(num_envs, dtype=torch.long), torch.ones(num_envs, dtype=torch.long)))
    loop = GameLoop(env, Seating(controllers, owner, cfg.team_size, env.device))
    if trace is not None:
        loop.observers.append(trace.observer(env))
    if recorder is not None:
        loop.observers.append(recorder)
    obs = env.reset()
    initial = {f: getattr(env.state, f).clone() for f in FIELDS}
    if trace is not None:
        trace.states.insert(0, initial)
    loop.reset_agents()
    with torch.no_grad():
        for _ in range(steps):
            obs = loop.step(obs).next_obs
    return env


def env_frame(trace: Trace, step: int, env: int) -> dict[str, torch.Tensor]:
    """Env ``env``'s state after ``step`` steps (0: the start), in the recorder's per-battle layout."""
    s = trace.states[step]
    return {f: (v[:, env] if v.dim() == 3 else v[env]) for f, v in s.items()}


def first_battle(agents=("crank", "crank"), team_size: int = 1, seed: int = 3, num_envs: int = 4,
                 config: EnvConfig | None = None) -> tuple[list[Battle], Trace]:
    """The first battle of every env, recorded, and the plain trace of the same run."""
    cfg = config or EnvConfig(team_size=team_size)
    recorder = BattleRecorder(range(num_envs), first_only=True)
    trace = Trace()
    run_loop(agents, num_envs, cfg.max_steps, seed=seed, recorder=recorder, trace=trace, config=cfg)
    battles = [recorder.take(k, battle_meta(cfg, agents[0], agents[1], seed=seed)) for k in range(num_envs)]
    return battles, trace
