"""A run built from its plan, in the one order its random draws need.

The weights initialize from ``run.seed`` on every process, then each process draws from its own
seed; the opponents come before the env (the env serves the observation keys they read) and the
storage after it. :func:`build_learner` is that order for one learner, :func:`build_run` for the
run (the learner, a league's main exploiter, the evaluation and the outputs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import torch

from arena.env import TensorEnv
from arena.loop import observation_config
from arena.threads import apply_threads
from arena.training import OpponentSpec
from arena.training.league_env import LeagueEnv
from arena_ppo.agent import PPOAgent
from arena_ppo.algorithms import PPO
from arena_ppo.kickstart import Teacher
from arena_ppo.mappo_agent import MAPPOAgent
from arena_ppo.plan import RunPlan, opponent_factory
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners.evaluator import Evaluator
from arena_ppo.runners.exploiter import MainExploiter
from arena_ppo.runners.learner import Learner, frozen_copy
from arena_ppo.runners.on_policy_runner import CheckpointObserver, OnPolicyRunner
from arena_ppo.runners.outputs import RunOutputs
from arena_ppo.runners.training_opponents import TrainingOpponents
from arena_ppo.storage import RolloutStorage

if TYPE_CHECKING:
    from arena_ppo.modules import RecurrentActorCritic


def build_agent(plan: RunPlan) -> PPOAgent:
    """The learner's agent: MAPPO's team (central critic, per-seat or shared actor) or PPO's."""
    cfg, run = plan.cfg, plan.cfg.run
    if plan.algorithm == "mappo":
        return MAPPOAgent(plan.device, plan.env_config, network=cfg.network, obs_norm=run.obs_norm,
                          value_norm=cfg.ppo.value_norm, policy=run.policy)
    return PPOAgent(plan.device, plan.env_config, network=cfg.network, obs_norm=run.obs_norm,
                    privileged_critic=run.privileged_critic, value_norm=cfg.ppo.value_norm)


def build_algorithm(plan: RunPlan, agent: PPOAgent, sync: ProcessSync, env: LeagueEnv, generator: torch.Generator,
                    taught: bool) -> PPO:
    """The update of ``agent`` on ``env``'s rows, ready to collect (sampling from ``generator``) and learn:
    a fresh optimizer, the rollout storage, the teacher's weight where one labels (``taught``).

    ppo.batch_size counts env steps of all processes: each process takes its share, and a step
    brings one row per aircraft of the team. So a rollout makes as many minibatches at 4 v 4 as in
    the duel; counted in rows, a team took team-size times the duel's optimizer steps per update
    (docs/experiments/2026-11-26-mappo-late-slide.md). MAPPO keeps whether each aircraft was alive, so
    that dead ones add no loss.
    """
    ppo, rows, run, net = plan.cfg.ppo, plan.minibatch_rows, plan.cfg.run, agent.network
    algorithm = PPO(agent.model, replace(ppo, batch_size=rows) if rows != ppo.batch_size else ppo,
                    agent.value_normalizer, sync=sync.update, compiled=plan.compile_update[0])
    sync.attach(agent)
    algorithm.kickstart_coef = ppo.kickstart_coef if taught else 0.0
    active_masks = plan.algorithm == "mappo"
    model = cast("RecurrentActorCritic", agent.model)
    hidden = (model.actor_hidden_size, model.critic_hidden_size) if agent.recurrent else None
    algorithm.init_storage(RolloutStorage(ppo.n_steps, env.rows, net.obs_dim,
                                          net.critic_obs_dim if run.privileged_critic else None, env.device,
                                          active_masks=active_masks, hidden_sizes=hidden, teacher=taught))
    algorithm.init_acting(agent, generator, active_masks)
    return algorithm


MakeOpponent = Callable[[OpponentSpec], Any]


def build_learner(plan: RunPlan, sync: ProcessSync, make_opponent: MakeOpponent | None = None) -> Learner:
    """One learner: its weights, update, opponents, teacher, envs and rollout storage. Its fixed
    opponents and teacher are built here, once each, by ``make_opponent`` (by default, as `arena play`
    builds an agent or checkpoint, a failure named by the option that gave it: --vs or --kickstart)."""
    run = plan.cfg.run
    make_teacher = make_opponent or opponent_factory(plan.device, plan.env_config, option="--kickstart")
    make_opponent = make_opponent or opponent_factory(plan.device, plan.env_config)
    torch.manual_seed(run.seed)  # network initialization: the same on every process
    generators = {"action": torch.Generator(device=plan.device), "shuffle": torch.Generator()}
    generators["action"].manual_seed(plan.seed + 1)
    generators["shuffle"].manual_seed(plan.seed + 2)
    agent = build_agent(plan)
    if plan.rank.rank:  # the weights are initialized: from here on every other process draws from its own seed
        torch.manual_seed(plan.seed)
    opponents = TrainingOpponents(plan, make_opponent, lambda path: type(agent).load(path, device=plan.device,
                                                                                      env_config=plan.env_config),
                                  lambda: frozen_copy(agent, plan))
    teacher = Teacher(plan.teacher, make_teacher, plan.device) if plan.teacher else None
    # An opponent (or teacher) that reads the extended observation gets it; the learner keeps its own keys.
    players = opponents.agents() + ([teacher.agent] if teacher is not None else [])
    config = observation_config(plan.env_config, players)
    battles = TensorEnv(plan.local_envs, plan.device, seed=plan.seed, config=config,
                        final_global_state="p1" if run.privileged_critic else False)
    env = LeagueEnv(battles, opponents.pool, agent.obs_keys, reward_fn=run.reward, teacher=teacher,
                    global_state=run.privileged_critic)
    algorithm = build_algorithm(plan, agent, sync, env, generators["action"], taught=teacher is not None)
    return Learner(plan, sync, agent, algorithm, opponents, env, teacher, generators)


def build_exploiter(plan: RunPlan, learner: Learner, echo: Callable[[str], None]) -> MainExploiter:
    """A league's main exploiter: a second learner, against a frozen copy of the first that samples its
    actions as the learner does in training; its initialization leaves the learner's global streams alone."""
    opponent = frozen_copy(learner.agent, plan).train(True)
    with torch.random.fork_rng(devices=[plan.device] if plan.device.type == "cuda" else []):
        trainee = build_learner(plan.exploiter(), ProcessSync(), lambda spec: opponent)
    return MainExploiter(plan, learner, trainee, opponent, echo)


def build_run(plan: RunPlan, sync: ProcessSync | None = None, console: Callable[[str], None] | None = print,
              progress: bool = True, on_checkpoint: CheckpointObserver | None = None,
              make_opponent: MakeOpponent | None = None) -> OnPolicyRunner:
    """The run of ``plan`` on this process (one of several with ``sync``): threads set, the learner built,
    a league's main exploiter beside it, the evaluation and the outputs. ``console`` None: silent;
    ``on_checkpoint(path, step, metrics)`` observes every checkpoint on the main process;
    ``make_opponent`` builds the learner's fixed opponents and teacher (a benchmark's own way)."""
    sync = sync or ProcessSync()
    sync.use_device(plan.device)
    apply_threads(plan.threads)
    learner = build_learner(plan, sync, make_opponent)
    outputs = RunOutputs(plan.out, console, sync.main)
    exploiter = build_exploiter(plan, learner, outputs.echo) if plan.exploiter_share else None
    if exploiter is not None and learner.opponents.league_open:  # a league without a warm-up
        exploiter.start(learner.counters.env_steps)
    evaluator = Evaluator(plan, sync, outputs.echo)
    return OnPolicyRunner(plan, learner, evaluator, outputs, sync, exploiter, progress=progress and sync.main,
                          on_checkpoint=on_checkpoint if sync.main else None)
