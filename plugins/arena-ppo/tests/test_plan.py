"""The run plan, resolved once, and the rollout's contract with the opponent pool."""

from __future__ import annotations

import copy

import torch

from arena.training.process_group import Rank
from arena_ppo.plan import resolve
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners import build_run
from arena_ppo.train_config import TrainConfig, default_config


def small(cfg: TrainConfig) -> TrainConfig:
    cfg.run.num_envs, cfg.run.eval_games, cfg.run.device, cfg.run.threads = 8, 0, "cpu", 1
    cfg.ppo.n_steps, cfg.ppo.batch_size = 8, 32
    return cfg


def test_building_a_run_never_writes_into_the_config_it_was_given(tmp_path):
    """The agent resolves its input sizes in its own copy: config.yaml gets them, the caller's config not."""
    for algorithm in ("ppo", "mappo"):
        cfg = small(default_config(algorithm))
        given = copy.deepcopy(cfg)
        runner = build_run(resolve(cfg, algorithm, tmp_path / algorithm), console=None, progress=False)
        assert cfg == given and runner.plan.cfg == given and runner.plan.cfg is not cfg
        assert runner.learner.agent.network is not cfg.network
    network = runner.learner.state()["config"]["network"]
    assert network["obs_dim"] != given.network.obs_dim, "a team's actor reads its seat besides"


class CountingPool:
    """Wraps a run's opponent pool and counts the calls the rollout makes to it."""

    def __init__(self, pool):
        self.pool, self.calls = pool, []

    def __getattr__(self, name):
        value = getattr(self.pool, name)
        if callable(value):
            def counted(*args, **kwargs):
                self.calls.append(name)
                return value(*args, **kwargs)
            return counted
        return value


def test_a_rollout_speaks_to_the_pool_twice(tmp_path):
    """It starts (the draw, the seating that flies p2) and ends (NaN check, the games credited); the env
    steps in between go through the seating alone."""
    cfg = small(TrainConfig())
    cfg.run.vs = ("crank", "self")
    learner = build_run(resolve(cfg, out=tmp_path), console=None, progress=False).learner
    for _ in range(2):
        pool = CountingPool(learner.opponents.pool)
        learner.env.pool = pool  # type: ignore[assignment]
        learner.collect()
        assert pool.calls == ["start_rollout", "end_rollout"]


def test_one_process_agrees_with_itself_at_no_cost():
    """The one-process sync hands everything back unchanged: no branch on the process count is needed,
    and its update computes alone (no update sync)."""
    sync = ProcessSync()
    values = torch.tensor([1.0, 2.0])
    assert sync.sum_(values) is values and sync.update is None
    assert sync.any(True) and not sync.any(False) and sync.gather_objects is None and sync.saves_midway
    state = {"env": 1}
    assert sync.checkpoint_state(None, None, state, 0) is state  # type: ignore[arg-type]


def test_a_run_built_through_the_library_checks_settings_that_depend_on_each_other(tmp_path):
    """The plan, not only the command line, refuses crossed bounds: no caller trains on a silent clamp."""
    import pytest

    cfg = small(default_config("ppo"))
    cfg.network.log_std_min, cfg.network.log_std_max = 2.0, -2.0
    with pytest.raises(ValueError, match=r"^network.log_std_min 2 is above network.log_std_max -2"):
        resolve(cfg, out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_plan_derives_each_value_once_for_its_process():
    """Envs, seeds, minibatch rows and the exploiter are this process's: derived here, checked nowhere else."""
    import pytest

    cfg = small(default_config("mappo"))
    cfg.run.num_envs, cfg.ppo.batch_size, cfg.run.seed = 8, 32, 5
    one, second = resolve(cfg, "mappo"), resolve(cfg, "mappo", world=Rank(1, 2, 1, 2))
    assert (one.local_envs, second.local_envs) == (8, 4) and one.seed == 5 and second.seed != 5
    assert (one.minibatch_rows, second.minibatch_rows) == (64, 32), "env steps over processes, a row per aircraft"
    assert one.threads == 1 and [s.label for s in one.specs] == ["crank", "placeholder"], "vs and the floor"
    cfg.run.num_envs = 9
    with pytest.raises(ValueError, match="--num-envs 9 does not split evenly over 2 processes"):
        resolve(cfg, "mappo", world=Rank(0, 2, 0, 2))


def test_a_plan_is_plain_data_and_loads_no_opponent(tmp_path, monkeypatch):
    """Every process can be handed the plan as it is: it pickles, holds no function or agent, and resolving
    it checks the opponents' names and files without building one (the build makes each, once)."""
    import dataclasses
    import pickle

    import pytest

    import arena.agents

    built: list[str] = []
    real = arena.agents.build_agent
    monkeypatch.setattr(arena.agents, "build_agent", lambda spec, *a, **k: built.append(spec) or real(spec, *a, **k))
    cfg = small(default_config("ppo"))
    cfg.run.vs = ("crank", "placeholder")
    plan = resolve(cfg, out=tmp_path / "run")
    assert built == []
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert not [f.name for f in dataclasses.fields(plan) if callable(getattr(plan, f.name))]
    assert not [f.name for f in dataclasses.fields(plan.exploiter()) if callable(getattr(plan, f.name))]
    build_run(plan, console=None, progress=False)
    assert sorted(built) == ["crank", "placeholder"]  # once each
    cfg.run.vs = ("cranky",)
    with pytest.raises(Exception, match="--vs cranky: unknown agent 'cranky'; did you mean crank"):
        resolve(cfg, out=tmp_path / "bad")
    cfg.run.vs = (f"ckpt:{tmp_path / 'nowhere.pt'}",)
    with pytest.raises(Exception, match="nowhere.pt: no such file"):
        resolve(cfg, out=tmp_path / "bad")
