"""A league on a CUDA device: the same games as on the CPU (per-game seeds make that checkable), and the
whole command, store and reports included. Skipped without CUDA."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from arena.agents import build_agent
from arena.cli import main
from arena.loop import observation_config
from arena.tournament import LeaguePlan, ListSink
from arena.tournament.executor import play
from arena.tournament.runner import GameSeeds
from arena.tournament.schedule import pairings, units

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

SCRIPTED = ["crank", "sniper", "defender", "ace"]


def outcomes(device: str) -> dict[tuple[int, int, int], tuple[int, int]]:
    cfg = observation_config(None, [build_agent(n) for n in SCRIPTED])
    agents = [build_agent(n, device=device, env_config=cfg) for n in SCRIPTED]
    sink = ListSink()
    plan = LeaguePlan.of(agents, device, env_config=cfg, max_envs=256, seed=5, game_seeds=GameSeeds(5, SCRIPTED))
    play(plan, units(pairings(len(agents)), 100), sink)
    return {(r.p1, r.p2, r.game_index): (r.winner, r.length) for r in sink.results}


def test_the_gpu_plays_the_cpu_games():
    cpu, gpu = outcomes("cpu"), outcomes("cuda")
    assert cpu.keys() == gpu.keys() and len(cpu) == 600
    same_winner = sum(cpu[k][0] == gpu[k][0] for k in cpu)
    # Deterministic agents from the same starts; float32 rounding differs between devices, and a close
    # missile pass can go either way, so a few games may end differently.
    assert same_winner >= 0.95 * len(cpu), f"{same_winner} of {len(cpu)} games had the same winner"


def test_a_league_on_the_gpu_end_to_end(tmp_path, write_league):
    path = write_league(["crank", "sniper", "ace", "placeholder"], device="cuda", games_per_pairing=64,
                        max_envs=512)
    result = CliRunner().invoke(main, ["tournament", str(path), "--json", "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["games"] == data["expected_games"] == data["played"] == 6 * 64
    assert (tmp_path / "out" / "leaderboard.csv").exists()
