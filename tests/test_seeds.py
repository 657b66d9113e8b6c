"""A seed a user gives arena is read by one rule, in one wording, wherever it is given: ``--seed`` of
``arena play`` and ``arena train``, the trainer's ``run.seed``, a league file's ``seed``
(:data:`arena.seeds.MAX_SEED`, :data:`arena.seeds.SEED_RANGE`). The env itself takes any int64 seed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from arena.cli import main
from arena.env import TensorEnv
from arena.seeds import MAX_SEED, SEED_RANGE
from cli_checks import refused

TOO_LARGE = str(MAX_SEED + 1)


def league(tmp_path: Path, seed: int) -> Path:
    path = tmp_path / "league.yaml"
    path.write_text(yaml.safe_dump({"seed": seed, "participants": ["crank", "placeholder"]}))
    return path


@pytest.mark.parametrize("given", ["-1", TOO_LARGE])
def test_every_way_a_user_gives_a_seed_refuses_it_in_the_same_words(given: str, tmp_path: Path) -> None:
    words = f"expected {SEED_RANGE}"
    lines = [refused(CliRunner().invoke(main, args), words) for args in (
        ["play", "crank", "placeholder", "--seed", given],
        ["train", "ppo", "--seed", given, "--out", str(tmp_path / "a")],
        ["train", "ppo", "--set", f"run.seed={given}", "--out", str(tmp_path / "b")],
        ["tournament", str(league(tmp_path, int(given)))],
    )]
    assert all(given in line for line in lines), lines
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_largest_seed_a_user_gives_is_taken_and_the_env_takes_any_int64() -> None:
    result = CliRunner().invoke(main, ["play", "crank", "placeholder", "--games", "2", "--seed", str(MAX_SEED)])
    assert result.exit_code == 0, result.output
    TensorEnv(2, seed=2**63 - 1)  # derived seeds (a league's game seeds) use all 63 bits
