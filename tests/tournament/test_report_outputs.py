"""The report files of two stored leagues, against copies kept in tests/tournament/data/report_outputs.

The leagues are written straight into a results database (no game is played), so the test covers the
whole after-play path that ``arena leaderboard`` runs: reading the games back, keeping only the run's
schedule, rating, tabulating and writing leaderboard.csv, head_to_head.csv, report.md and the JSON.
Any change to how those are computed must leave every number as it was. The CSV and JSON numbers are
compared to 1e-9 relative, because the last bits of a linear solve differ between BLAS builds (measured:
1e-11 between OpenBLAS's SkylakeX, Haswell, Zen and Prescott kernels). The Markdown is compared exactly:
it shows rounded Elo, and rank bounds that rounding cannot move (the sandwich draws use the covariance's
unique symmetric root, and values of one resample within ``RANK_TIE_ELO`` share a rank).
``make test-portable`` runs this under another kernel.

``python tests/tournament/test_report_outputs.py`` rewrites the kept copies (only after a change that
is meant to change the reports).
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arena.tournament.report import to_json_text
from arena.tournament.results import DRAW, P1_WINS, P2_WINS, GameResult
from arena.tournament.runner import rebuild_report
from arena.tournament.store import ResultStore, db_path

KEPT = Path(__file__).parent / "data" / "report_outputs"
FILES = ("leaderboard.csv", "head_to_head.csv", "report.md", "report.json")
OUTSIDER = "outsider"  # stored, but not a participant of the run: its games must be left out


def outcomes(rng: np.random.Generator, strength: np.ndarray, a: int, b: int, n: int) -> list[int]:
    """``n`` results of ``a`` (side 1) against ``b``: Bradley-Terry odds, a tenth of them draws unless one
    side is far stronger."""
    p_a = 1.0 / (1.0 + math.exp(strength[b] - strength[a]))
    out = []
    for _ in range(n):
        if rng.random() < 0.1 and abs(strength[a] - strength[b]) < 5.0:
            out.append(DRAW)
        else:
            out.append(P1_WINS if rng.random() < p_a else P2_WINS)
    return out


def league_spec(kind: str) -> dict[str, Any]:
    """``mixed``: a round robin of 9 with references, two checkpoints of one run (one kept in best.json),
    forfeits, an unbeaten player and a participant with no games; refitted bootstrap.
    ``gauntlet``: 30 participants, two candidates, references, ranked by reference Elo; 10,000
    rounds make the intervals come from the sandwich covariance."""
    if kind == "mixed":
        names = ["ref-a", "ref-b", "ref-c", "mid", "ckpt-early", "ckpt-late", "shaky", "champ", "idle"]
        strength = np.array([0.0, 0.6, 1.2, 0.8, -0.5, 1.0, 0.3, 9.0, 0.0])
        return {"names": names, "strength": strength, "format": "round-robin", "candidates": [],
                "references": ["ref-a", "ref-b", "ref-c"], "games_per_pairing": 6, "idle": ["idle"],
                "checkpoints": {"ckpt-early": "ckpt_1000.pt", "ckpt-late": "ckpt_2000.pt"}, "best_step": 2000,
                "forfeiter": "shaky", "rating": {"bootstrap_rounds": 200}}
    names = [f"p{i:02d}" for i in range(30)]
    strength = np.linspace(-2.0, 2.0, 30)
    return {"names": names, "strength": strength, "format": "gauntlet", "candidates": ["p00", "p29"],
            "references": ["p10", "p15", "p20"], "games_per_pairing": 4, "idle": [], "checkpoints": {},
            "best_step": None, "forfeiter": "p05",
            "rating": {"bootstrap_rounds": 10_000, "rank_by": "reference_elo"}}


def scheduled(spec: dict[str, Any]) -> list[tuple[int, int]]:
    """The ordered pairs (positions) the league's schedule plays."""
    from arena.tournament.schedule import pairings, units

    names = spec["names"]
    cand = [names.index(c) for c in spec["candidates"]]
    refs = [names.index(r) for r in spec["references"]]
    return [(u.p1, u.p2) for u in units(pairings(len(names), spec["format"], cand, refs), spec["games_per_pairing"])]


def write_store(folder: Path, kind: str) -> Path:
    """A results database holding the league ``kind`` as `arena tournament` would have stored it, plus
    games it must not rate: a game index beyond the run's games per pairing, and games against a
    participant of another league."""
    spec = league_spec(kind)
    names, strength = spec["names"], spec["strength"]
    rng = np.random.default_rng(7)
    runs = folder / "runs" / "train"
    runs.mkdir(parents=True)
    if spec["best_step"] is not None:
        (runs / "best.json").write_text(json.dumps({"step": spec["best_step"]}))
    store = ResultStore(db_path(folder), fresh=True)
    ids = []
    for name in [*names, OUTSIDER]:
        ckpt = spec["checkpoints"].get(name)
        ids.append(store.participant_id(f"key-{name}", name, "ppo" if ckpt else "crank", {"seed": len(ids)},
                                        str(runs / ckpt) if ckpt else None, None))
    config = {"name": kind, "output": str(folder), "seed": 5, "format": spec["format"],
              "games_per_pairing": spec["games_per_pairing"], "candidates": spec["candidates"],
              "references": spec["references"], "rating": spec["rating"], "file": f"{kind}.yaml"}
    run = store.start_run(config, ids[:-1], "cpu", {})
    batch = store.start_batch(run, 0, 64, 0, "cpu")
    half = spec["games_per_pairing"] // 2
    idle = {names.index(n) for n in spec["idle"]}
    forfeiter = names.index(spec["forfeiter"])
    games = []
    for a, b in scheduled(spec):
        if a in idle or b in idle:
            continue
        extra = 1 if (a + b) % 5 == 0 else 0  # stored from a longer league of the same pairs
        for k, won in enumerate(outcomes(rng, strength, a, b, half + extra)):
            forfeit = forfeiter if forfeiter in (a, b) and k == 0 and (a + b) % 2 else None
            if forfeit is not None:
                won = P2_WINS if forfeit == a else P1_WINS
            games.append(GameResult(ids[a], ids[b], k, won, 20 + k, 1.0, -1.0, batch=batch, slot=len(games),
                                    forfeit_by=None if forfeit is None else ids[forfeit],
                                    forfeit_reason=None if forfeit is None else f"returned NaN in game {k}"))
    games += [GameResult(ids[-1], ids[i], 0, P1_WINS, 10, 0.0, 0.0, batch=batch, slot=len(games) + i)
              for i in range(3)]
    store.add_games(games)
    store.finish_batch(batch)
    store.finish_run(run, "finished", len(games))
    store.close()
    return folder


def outputs(folder: Path) -> dict[str, str]:
    """The report files of the league stored in ``folder``, rebuilt as `arena leaderboard` does, with the
    folder's path taken out."""
    report = rebuild_report(folder)
    texts = {name: (folder / name).read_text(encoding="utf-8") for name in FILES if name != "report.json"}
    texts["report.json"] = to_json_text(report) + "\n"
    return {name: text.replace(str(folder.resolve()), "<folder>").replace(str(folder), "<folder>")
            for name, text in texts.items()}


def same_numbers(a: Any, b: Any) -> bool:
    """JSON values equal, floats to 1e-9 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_numbers(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


@pytest.mark.parametrize("kind", ["mixed", "gauntlet"])
def test_the_report_files_are_the_kept_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.chdir(tmp_path)  # checkpoint paths are shown relative to the working directory
    got = outputs(write_store(tmp_path / kind, kind))
    kept = {name: (KEPT / kind / name).read_text(encoding="utf-8") for name in FILES}
    assert got["report.md"] == kept["report.md"]
    for name in ("leaderboard.csv", "head_to_head.csv"):
        index = 0 if name == "head_to_head.csv" else None
        new, old = (pd.read_csv(io.StringIO(text), index_col=index) for text in (got[name], kept[name]))
        pd.testing.assert_frame_equal(new, old, check_exact=False, rtol=1e-9, atol=1e-9)
    assert same_numbers(json.loads(got["report.json"]), json.loads(kept["report.json"]))


def test_the_leagues_cover_what_the_reports_can_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept leagues exercise the parts whose numbers could drift: both interval methods, forfeits,
    draws, references, candidates, rating over training, and games that must not be rated."""
    monkeypatch.chdir(tmp_path)
    mixed = rebuild_report(write_store(tmp_path / "mixed", "mixed"), write=False)
    gauntlet = rebuild_report(write_store(tmp_path / "gauntlet", "gauntlet"), write=False)
    assert "bootstrap resamples" in mixed.scale and "sandwich" in gauntlet.scale
    assert not mixed.forfeits.empty and not gauntlet.forfeits.empty
    board = mixed.leaderboard.set_index("name")
    assert board.loc["champ", "note"] == "unbeaten" and board.loc["idle", "note"] == "no games"
    assert board["draws"].sum() > 0 and OUTSIDER not in board.index
    assert mixed.games == mixed.expected_games - 8 * 6, "the idle participant's 8 pairings are missing"
    assert list(mixed.over_training) and next(iter(mixed.over_training.values())).best_rank == 1
    assert gauntlet.by_reference and gauntlet.matchups is not None and not gauntlet.matchups.empty
    assert gauntlet.games == gauntlet.expected_games, "the games beyond games_per_pairing are not rated"


def keep(folder: Path) -> None:
    """Rewrite the kept copies from the current code."""
    import os

    for kind in ("mixed", "gauntlet"):
        work = folder / kind
        os.chdir(folder)
        got = outputs(write_store(work, kind))
        (KEPT / kind).mkdir(parents=True, exist_ok=True)
        for name, text in got.items():
            (KEPT / kind / name).write_text(text, encoding="utf-8")
        print(f"kept {KEPT / kind}")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        keep(Path(tmp))
    sys.exit(0)
