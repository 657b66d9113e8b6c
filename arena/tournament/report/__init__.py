"""A tournament's report in three parts: the numbers (:mod:`.compute`: ratings, tables, and warnings as
data, :mod:`.warnings`), the text and files (:mod:`.render`: console, report.md, CSV, JSON) and the
pictures (:mod:`.plot`).

Everything is computed from the stored games, so ``arena leaderboard`` can rebuild it at any time.
"""

from arena.tournament.report.compute import (
    LEADERBOARD_COLUMNS,
    Entrant,
    TournamentReport,
    build_report,
    percent,
    record_counts,
)
from arena.tournament.report.plot import NAMES_MAX, PICTURE_DPI, PICTURE_MAX_IN, plot_head_to_head, rank_ticks
from arena.tournament.report.render import (
    BEST_IS_THE_RUNS_OWN,
    CONSOLE_COLUMNS,
    console_frame,
    display_frame,
    markdown_report,
    render,
    to_json_text,
    write_report,
)
from arena.tournament.report.warnings import ReportWarning

__all__ = [
    "BEST_IS_THE_RUNS_OWN", "build_report", "CONSOLE_COLUMNS", "console_frame", "display_frame", "Entrant",
    "LEADERBOARD_COLUMNS", "markdown_report", "NAMES_MAX", "percent", "PICTURE_DPI", "PICTURE_MAX_IN",
    "plot_head_to_head", "rank_ticks", "record_counts", "render", "ReportWarning", "to_json_text", "TournamentReport",
    "write_report",
]
