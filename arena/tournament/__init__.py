"""Tournaments: YAML leagues played in large batches, stored in SQLite, rated with TrueSkill and a
Bradley-Terry fit, reported as pandas DataFrames and files.

    config  -> plan -> schedule -> executor -> store -> ratings -> report
    (runner ties them together; the CLI's `tournament` and `leaderboard` commands call the runner)
"""

from arena.tournament.batching import Batch, plan_batches
from arena.tournament.executor import play
from arena.tournament.league_config import ConfigError, ParticipantSpec, RatingConfig, TournamentConfig
from arena.tournament.league_file import load_config, parse_config
from arena.tournament.league_plan import LeaguePlan
from arena.tournament.ratings import EloFit, Skill, bradley_terry, rating_order, trueskill_ratings
from arena.tournament.report import LEADERBOARD_COLUMNS, Entrant, TournamentReport, build_report, write_report
from arena.tournament.results import GameResult
from arena.tournament.runner import rebuild_report, run_tournament
from arena.tournament.schedule import Pairing, Unit, missing, pairings, units
from arena.tournament.sinks import ExecutionStats, ListSink
from arena.tournament.store import ResultStore, StoreError

__all__ = [
    "LEADERBOARD_COLUMNS", "Batch", "ConfigError", "EloFit", "Entrant", "ExecutionStats", "GameResult", "LeaguePlan",
    "ListSink", "Pairing", "ParticipantSpec", "RatingConfig", "ResultStore", "Skill", "StoreError", "TournamentConfig",
    "TournamentReport", "Unit", "bradley_terry", "build_report", "load_config", "missing", "pairings",
    "parse_config", "plan_batches", "play", "rating_order", "rebuild_report", "run_tournament", "trueskill_ratings",
    "units", "write_report",
]
