"""Shared fixtures of the PPO plugin's tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny networks gain nothing from a thread pool, and on a busy CPU its threads spin against each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


SHORT_BATTLE_S = 150.0  # the default is 300 s: evaluations play every battle to its end


@pytest.fixture
def short_battles(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> float:
    """Runs in battles of ``SHORT_BATTLE_S`` (or the seconds a test passes with ``indirect=True``): for the
    end-to-end tests of evaluations (the kept weights, going back, the duel, the ladder), whose cost is
    the evaluations' battles, not the updates. The tests that compare evaluations need battles long
    enough for them to differ; the others take shorter ones."""
    from dataclasses import replace

    from arena_ppo.train_config import RunConfig

    seconds = float(getattr(request, "param", SHORT_BATTLE_S))
    env_config = RunConfig.env_config
    monkeypatch.setattr(RunConfig, "env_config", lambda self: replace(env_config(self), max_time=seconds))
    return seconds
