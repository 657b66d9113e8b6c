from __future__ import annotations

import math

import numpy as np
import pandas as pd

from arena.tournament import LEADERBOARD_COLUMNS, GameResult, RatingConfig, load_config, run_tournament
from arena.tournament.report import Entrant, build_report, display_frame, markdown_report, percent, render
from arena.tournament.results import P1_WINS, P2_WINS
from tourney_helpers import LEAGUE


def test_report_files_columns_and_forfeits(write_league, registry) -> None:
    shaky = {"name": "shaky", "agent": "faulty", "params": {"mode": "nan", "after": 2}}
    config = load_config(write_league(LEAGUE + [shaky]))
    report = run_tournament(config, registry=registry, progress=False)
    out = config.output
    for name in ("leaderboard.csv", "head_to_head.csv", "report.md", "head_to_head.png"):
        assert (out / name).stat().st_size > 0

    csv = pd.read_csv(out / "leaderboard.csv")
    assert tuple(csv.columns) == LEADERBOARD_COLUMNS
    assert list(csv["rank"]) == [1, 2, 3, 4]
    assert list(csv["mu_minus_3sigma"]) == sorted(csv["mu_minus_3sigma"], reverse=True)
    assert np.allclose(csv["mu_minus_3sigma"], csv["mu"] - 3 * csv["sigma"])
    assert (csv["wins"] + csv["draws"] + csv["losses"] == csv["games"]).all()
    assert np.allclose(csv["score"], (csv["wins"] + 0.5 * csv["draws"]) / csv["games"])
    row = csv.set_index("name").loc["shaky"]
    assert row["forfeits"] == row["games"] == 12 and row["losses"] == 12
    assert (csv["elo_low"] <= csv["elo"]).all() and (csv["elo"] <= csv["elo_high"]).all()

    h2h = pd.read_csv(out / "head_to_head.csv", index_col=0)
    assert list(h2h.index) == list(csv["name"]) == list(h2h.columns)
    m = h2h.to_numpy()
    off = ~np.eye(len(m), dtype=bool)
    assert np.allclose((m + m.T)[off], 1.0) and np.isnan(np.diag(m)).all()

    md = (out / "report.md").read_text()
    assert "## Forfeits" in md and "returned NaN" in md and "shaky" in md
    assert report.forfeits["games"].sum() == 12
    assert report.to_json()["leaderboard"][0]["rank"] == 1
    assert report.run["reports_s"] > 0 and report.to_json()["reports_s"] == report.run["reports_s"]
    assert list(csv["note"].fillna("")) == [r["note"] for r in report.to_json()["leaderboard"]]


def test_small_shares_are_not_rounded_away() -> None:
    shares = (0.0, 1 / 256, 1 / 2560, 0.5, 255 / 256, 1 - 1 / 2560, 1.0)
    assert [percent(x) for x in shares] == ["0%", "0.4%", "<0.1%", "50%", "99.6%", ">99.9%", "100%"]
    assert percent(math.nan) == "" and percent(1 / 5000, 1) == "0.02%" and percent(0.25, 1) == "25.0%"


def upset_league(tmp_path) -> "object":
    """a beats b in 255 of 256 games; c loses its 4 games to a (winless)."""
    games = [GameResult(0, 1, i, P2_WINS if i == 7 else P1_WINS, 10, 0.0, 0.0) for i in range(256)]
    games += [GameResult(2, 0, i, P2_WINS, 10, 0.0, 0.0) for i in range(4)]
    entrants = [Entrant(name, "pursuer") for name in ("a", "b", "c")]
    return build_report("upsets", tmp_path, entrants, games, RatingConfig(bootstrap_rounds=20))


def test_head_to_head_shows_one_upset_in_256(tmp_path) -> None:
    md = markdown_report(upset_league(tmp_path))
    table = md.split("## Head to head")[1].split("## Forfeits")[0]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines() if line.startswith("| ") and not line.startswith("| player")}
    assert rows["a"] == ["", "99.6%", "100%"], "100 % only when every game was won"
    assert rows["b"] == ["0.4%", "", ""] and rows["c"] == ["0%", "", ""]


def test_the_flag_column_is_a_note_everywhere(tmp_path) -> None:
    report = upset_league(tmp_path)
    assert "note" in LEADERBOARD_COLUMNS and "record" not in LEADERBOARD_COLUMNS
    notes = dict(zip(report.leaderboard["name"], report.leaderboard["note"]))
    assert notes == {"a": "", "b": "", "c": "winless"}
    assert "note" in display_frame(report.leaderboard).columns
    assert {r["name"]: r["note"] for r in report.to_json()["leaderboard"]} == notes
    assert render(report, "csv").splitlines()[0].split(",")[9] == "note"


def test_checkpoints_of_one_run_get_a_rating_over_training_plot(write_league, registry, tmp_path):
    from arena.tournament import load_config, run_tournament
    from arena.tournament.over_training import training_runs

    run_dir = tmp_path / "runs" / "a"
    run_dir.mkdir(parents=True)
    for step, fire_km in ((100, 2.0), (200, 8.0), (300, 20.0)):  # later checkpoints shoot from farther: stronger
        (run_dir / f"ckpt_{step:09d}.pt").write_text(str(fire_km))
    config = load_config(write_league([{"agent": "fromfile", "checkpoints": "runs/a/ckpt_*.pt"}, "idle"],
                                      games_per_pairing=16))
    report = run_tournament(config, registry=registry, progress=False, notify=False)
    runs = report.over_training
    assert list(runs) == list(training_runs(report.leaderboard)), "computed once, from the leaderboard"
    assert list(runs) == [str(run_dir)] and list(runs[str(run_dir)].frame["step"]) == [100, 200, 300]
    assert not runs[str(run_dir)].by_reference, "no references: the Elo of all games"
    assert report.files["rating_over_training"].stat().st_size > 1000
    md = (config.output / "report.md").read_text()
    assert "## Rating over training" in md and "rating_over_training.png" in md
    assert "Declare `references:`" in md, "a report without references says what its line is not"
    single = write_league(["idle", {"name": "p", "agent": "pursuer"}], name="plain.yaml")
    plain = run_tournament(load_config(single), registry=registry, progress=False, notify=False, fresh=True)
    assert "rating_over_training" not in plain.files, "no run, no plot"
    assert not (config.output / "rating_over_training.png").exists(), "nor a stale one"


def test_the_console_shows_the_few_columns_a_reader_needs_and_the_files_keep_every_one(write_league, registry):
    from arena.tournament.report import CONSOLE_COLUMNS

    config = load_config(write_league(LEAGUE, references=["idle", "near"]))
    report = run_tournament(config, registry=registry, progress=False, notify=False)
    table = render(report).splitlines()
    assert table[1].split() == ["rank", "name", "elo", "95%", "CI", "score", "W-D-L", "note"]
    assert len(table[1].split()) < 10 and CONSOLE_COLUMNS == ("rank", "name", "elo", "95% CI", "score", "W-D-L",
                                                               "note")
    top = report.leaderboard.iloc[0]
    assert table[2].split()[:3] == ["1", top["name"], f"{top['elo']:.0f}"], "the Elo of all games ranks it"
    assert f"{top['wins']}-{top['draws']}-{top['losses']}" in table[2]
    csv = pd.read_csv(config.output / "leaderboard.csv")
    assert tuple(csv.columns) == LEADERBOARD_COLUMNS and render(report, "csv").splitlines()[0].split(",") == list(
        LEADERBOARD_COLUMNS)
    md = (config.output / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| rank | name |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[:5] == ["rank", "name", "elo", "elo 95% CI", "elo rank 95%"], "the ranking Elo leads"
    assert {"ref elo", "ref 95% CI", "games", "W", "D", "L", "forfeits", "score", "mu", "sigma", "mu-3σ"} <= set(cells)
    assert "reference Elo beside it" in md


def test_ranked_by_reference_elo_the_console_shows_that_rating(tmp_path) -> None:
    from arena.tournament.report import console_frame, display_frame

    games = [GameResult(0, 1, i, P1_WINS if i % 3 else P2_WINS, 10, 0.0, 0.0) for i in range(30)]
    games += [GameResult(2, j, i, P1_WINS, 10, 0.0, 0.0) for j in (0, 1) for i in range(200)]
    entrants = [Entrant(name, "pursuer") for name in ("r0", "r1", "ace")]
    report = build_report("t", tmp_path, entrants, games, RatingConfig(bootstrap_rounds=0, rank_by="reference_elo"),
                          references=[0, 1])
    shown = console_frame(report.leaderboard, report.rank_by)
    assert list(shown.columns) == ["rank", "name", "ref elo", "95% CI", "score", "W-D-L", "note"]
    ace = shown.iloc[0]
    assert ace["name"] == "ace" and ace["ref elo"].startswith("> ") and ace["note"].startswith("above every reference")
    assert list(display_frame(report.leaderboard, report.rank_by).columns[2:4]) == ["ref elo", "ref 95% CI"]


def test_record_counts_are_a_loop_over_the_games() -> None:
    from arena.tournament.report import record_counts
    from arena.tournament.results import DRAW

    rng = np.random.default_rng(3)
    games = []
    for k in range(300):
        a, b = (int(x) for x in rng.choice(6, 2, replace=False))
        forfeit = [None, None, a, b][int(rng.integers(4))]
        winner = int(rng.integers(3)) if forfeit is None else (P2_WINS if forfeit == a else P1_WINS)
        games.append(GameResult(a, b, k, winner, 10, 0.0, 0.0, forfeit_by=forfeit, forfeit_reason="x"))
    expected = {c: [0] * 7 for c in ("games", "wins", "draws", "losses", "forfeits")}  # participant 6 never plays
    for g in games:
        for me, mine in ((g.p1, P1_WINS), (g.p2, P2_WINS)):
            expected["games"][me] += 1
            column = "draws" if g.winner == DRAW else "wins" if g.winner == mine else "losses"
            expected[column][me] += 1
        if g.forfeit_by is not None:
            expected["forfeits"][g.forfeit_by] += 1
    assert {c: v.tolist() for c, v in record_counts(games, 7).items()} == expected


def big_head_to_head(n: int) -> pd.DataFrame:
    values = np.random.default_rng(0).random((n, n))
    np.fill_diagonal(values, np.nan)
    names = [f"participant-{i}" for i in range(n)]
    return pd.DataFrame(values, index=pd.Index(names, name="player"), columns=names)


def test_a_large_leagues_picture_stops_growing_and_marks_ranks(tmp_path) -> None:
    """At 0.45 inch a cell, 250 participants would be a picture of 12,700 pixels a side."""
    from PIL import Image

    from arena.tournament.report import NAMES_MAX, PICTURE_DPI, PICTURE_MAX_IN, plot_head_to_head, rank_ticks

    n = NAMES_MAX + 50
    plot_head_to_head(big_head_to_head(n), tmp_path / "h2h.png", title="big")
    width, height = Image.open(tmp_path / "h2h.png").size
    assert width <= (PICTURE_MAX_IN + 1.0) * PICTURE_DPI and height <= PICTURE_MAX_IN * PICTURE_DPI
    assert rank_ticks(n) == [1, 25, 50, 75, 100, 125, 150, 175, 200, 225, 250]


def test_report_md_says_when_the_picture_gives_ranks_instead_of_names(tmp_path) -> None:
    from arena.tournament.report import NAMES_MAX

    small = markdown_report(upset_league(tmp_path))
    assert "head_to_head.png" not in small
    report = upset_league(tmp_path)
    report.head_to_head = big_head_to_head(NAMES_MAX + 1)
    assert "axes marked with leaderboard ranks" in markdown_report(report)
