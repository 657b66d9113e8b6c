"""One decision step of every battle as a function of tensors alone: the code ``torch.compile`` captures.

:class:`~arena.env.tensor_env.TensorEnv` keeps what is not a tensor (its generator, the shape checks
of the actions, who is watched) and hands this function the world, the actions, the uniforms of the
next spawns and the episode totals. Everything a step computes — launch, missile guidance and flight,
hits, outcomes, rewards, observations and the auto-reset — happens here, and with ``plan.packed``
false nothing here has a data-dependent shape or waits for the host: one static graph, which the
compiler fuses on the CPU and a GPU can capture whole. ``plan.packed`` keeps the CPU's eager layout,
which lists the missiles in flight (a host synchronisation, and a shape that changes every step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from arena.env.actions import clean_action
from arena.env.config import EnvConfig
from arena.env.dynamics import advance, launch, swap_players
from arena.env.observations import PLAYERS, global_state, observe_sides
from arena.env.spawn import spawn_from_uniforms
from arena.env.state import WorldState

Tensors = tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class StepPlan:
    """What a step computes beyond the battle itself; fixed for an env, so a compiled step is one graph."""

    config: EnvConfig
    packed: bool  # integrate only the missiles in flight (eager CPU); False: every slot, static shapes
    final_global_state: tuple[str, ...] = ()  # also these players' global states before auto-reset (critics)
    keep_world: bool = False  # also the world before auto-reset (watched battles)
    observe_subsets: bool = False  # after auto-reset observe only the restarted battles (a host sync)


def step_battles(world: Tensors, actions: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]],
                 spawn: tuple[torch.Tensor, torch.Tensor | None], totals: Tensors, plan: StepPlan
                 ) -> dict[str, Any]:
    """Advance every battle by one decision step; see :meth:`TensorEnv.step` for the meaning.

    ``world`` is :meth:`WorldState.as_tuple`, ``actions`` both sides' checked action dicts, ``spawn``
    the uniforms the next battles start from (:func:`spawn_from_uniforms`), ``totals`` the episode
    return, missiles and kills so far. Returns the new world and totals and every output of the step.
    """
    cfg, t = plan.config, plan.config.team_size
    s = WorldState(*world)
    n = s.time.shape[0]
    a1, a2 = (clean_action(a) for a in actions)
    join = torch.stack if t == 1 else torch.cat
    rudder, throttle, fire = (join((getattr(a1, k), getattr(a2, k)), -1) for k in ("rudder", "throttle", "fire"))

    was_alive = s.alive
    fired = launch(s, fire, cfg, sparse=plan.packed)
    kills = advance(s, rudder, throttle, cfg, packed=plan.packed)
    s.time = s.time + 1.0

    dead = ~s.alive
    side_dead = dead if t == 1 else dead.view(n, 2, t).all(-1)  # [N, 2] a side has no aircraft left
    terminated = side_dead.any(-1)
    truncated = (s.time >= cfg.max_steps) & ~terminated
    dones = terminated | truncated
    won = swap_players(side_dead) & ~side_dead  # [N, 2] the other side is gone, mine is not
    lost = side_dead & ~swap_players(side_dead)
    if t > 1:  # at the time limit the side with more aircraft alive wins (in a duel both are alive then)
        count = s.alive.view(n, 2, t).sum(-1)
        won = won | (truncated.unsqueeze(-1) & (count > swap_players(count)))
        lost = lost | (truncated.unsqueeze(-1) & (count < swap_players(count)))
    winner = torch.full((n,), -1, dtype=torch.int8, device=dones.device)
    winner = torch.where(dones, torch.zeros_like(winner), winner)
    winner = torch.where(won[:, 0], torch.ones_like(winner), winner)
    winner = torch.where(won[:, 1], torch.full_like(winner, 2), winner)

    rc = cfg.reward
    outcome = won.float() - lost.float()
    if t > 1:
        outcome = outcome.repeat_interleave(t, -1)  # [N, A] each aircraft gets its side's outcome
    reward = rc.survival * s.alive.float() + rc.win * outcome - rc.missile_cost * fired.float()
    ep_return, ep_missiles, ep_kills = totals
    ep_return, ep_missiles, ep_kills = ep_return + reward, ep_missiles + fired.float(), ep_kills + kills

    final_obs = observe_sides(s, cfg)
    out: dict[str, Any] = {
        "reward": reward, "dones": dones, "terminated": terminated, "truncated": truncated, "winner": winner,
        "final_obs": final_obs, "kills": kills, "deaths": was_alive & dead,
        "nan_actions": (a1.nan_count, a2.nan_count),
        "episode": (ep_return, s.time, ep_missiles, ep_kills),
    }
    if plan.final_global_state:
        out["final_global_state"] = {p: global_state(s, cfg, PLAYERS.index(p)) for p in plan.final_global_state}
    if plan.keep_world:
        out["final_world"] = s.as_tuple()

    out["totals"] = restart_battles(s, dones, spawn, (ep_return, ep_missiles, ep_kills), cfg)
    out["obs"] = observe_restarted(s, cfg, final_obs, dones) if plan.observe_subsets else observe_sides(s, cfg)
    out["world"] = s.as_tuple()
    return out


def restart_battles(state: WorldState, dones: torch.Tensor, spawn: tuple[torch.Tensor, torch.Tensor | None],
                    totals: Tensors, cfg: EnvConfig) -> Tensors:
    """Battles where ``dones`` ([N] bool) is set start over from ``spawn``'s uniforms, in place; returns
    the episode ``totals`` with theirs back at zero."""
    u, wing = spawn
    state.restart(dones, spawn_from_uniforms(cfg, u, wing, dones.device, slots=False))
    keep = (~dones).float().unsqueeze(-1)
    return tuple(v * keep for v in totals)


def observe_restarted(state: WorldState, cfg: EnvConfig, final_obs: dict[str, dict[str, torch.Tensor]],
                      dones: torch.Tensor) -> dict[str, dict[str, torch.Tensor]]:
    """The observation after auto-reset: ``final_obs`` where the battle goes on, fresh where it restarted.

    Team observations (neighbour slots) are costly and few battles restart in a step; listing them
    syncs with the host, which the CPU's packed layout does anyway.
    """
    envs = torch.nonzero(dones).flatten()
    if envs.numel() == 0:
        return {p: dict(o) for p, o in final_obs.items()}
    restarted = state.select(envs)
    fresh = observe_sides(restarted, cfg)
    return {p: {k: v.index_copy(0, envs, fresh[p][k]) for k, v in obs.items()} for p, obs in final_obs.items()}
