"""Metric CSV and config YAML."""

from __future__ import annotations

import csv
from dataclasses import dataclass

import yaml

from arena.training import MetricLogger, default_run_dir, write_config


def test_csv_rows_and_widening(tmp_path):
    lines = []
    log = MetricLogger(tmp_path / "m.csv", console=lines.append)
    log.log({"step": 1, "loss": 0.5})
    log.log({"step": 2, "loss": 0.25, "win_rate": 0.1})
    rows = list(csv.DictReader((tmp_path / "m.csv").open()))
    assert rows == [{"step": "1", "loss": "0.5", "win_rate": ""}, {"step": "2", "loss": "0.25", "win_rate": "0.1"}]
    assert lines[0] == "step 1  loss 0.5"
    again = MetricLogger(tmp_path / "m.csv")  # resume: the header is kept, rows append
    again.log({"step": 3, "loss": 0.1, "win_rate": 0.2})
    assert len(list(csv.DictReader((tmp_path / "m.csv").open()))) == 3


@dataclass
class Cfg:
    lr: float = 0.1
    hidden: tuple = (128, 64)


def test_config_yaml(tmp_path):
    path = write_config(tmp_path / "config.yaml", {"ppo": Cfg(), "out": tmp_path})
    assert yaml.safe_load(path.read_text()) == {"ppo": {"lr": 0.1, "hidden": [128, 64]}, "out": str(tmp_path)}


def test_default_run_dir_is_fresh(tmp_path):
    first = default_run_dir("ppo", tmp_path)
    first.mkdir(parents=True)
    assert default_run_dir("ppo", tmp_path) != first
