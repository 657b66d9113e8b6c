"""``arena replay`` as a user runs it: the files it writes, the battles `arena play` plays, one-line errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import main
from cli_checks import refused


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_replay_writes_acmi_and_html_per_battle(tmp_path):
    out = tmp_path / "replays"
    result = run("replay", "crank", "placeholder", "-n", "2", "--team-size", "2", "--out", str(out), "--seed", "4",
                 "--env", "max_time=120", "-q")
    assert result.exit_code == 0, result.output
    for n in (1, 2):
        assert (out / f"battle-{n}.acmi").read_text().startswith("FileType=text/acmi/tacview\nFileVersion=2.2\n")
        assert "battle-data" in (out / f"battle-{n}.html").read_text()
    assert not list(out.glob("*.gif"))
    assert "battle 1: crank (Blue) v placeholder (Red)" in result.stdout
    assert "battle 2: placeholder (Blue) v crank (Red)" in result.stdout


def test_replayed_battles_are_the_ones_play_plays(tmp_path):
    played = run("play", "crank", "placeholder", "-n", "4", "--seed", "9", "--json", "-q")
    replayed = run("replay", "crank", "placeholder", "-n", "4", "--seed", "9", "--out", str(tmp_path), "-q")
    assert played.exit_code == 0 and replayed.exit_code == 0, replayed.output
    data = json.loads(played.stdout)
    assert f"crank: {data['wins']} wins, {data['draws']} draws, {data['losses']} losses" in replayed.stdout


def test_gif(tmp_path):
    result = run("replay", "crank", "crank", "--gif", "--out", str(tmp_path), "--env", "max_time=20", "-q")
    assert result.exit_code == 0, result.output
    from PIL import Image

    gif = Image.open(tmp_path / "battle-1.gif")
    assert gif.n_frames == 21


def test_bad_input_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("replay", "crank", "placeholder", "--out", str(blocker / "sub"), "--env", "max_time=10", "-q")
    refused(result, "cannot write")
    result = run("replay", "crank", "no_such_agent", "--out", str(tmp_path))
    refused(result, "no_such_agent")
    result = run("replay", "crank", "crank", "-n", "0")
    assert result.exit_code == 2


@pytest.mark.parametrize("hidden, named", [(("PIL",), "pillow"), (("matplotlib", "PIL"), "matplotlib and pillow")])
def test_gif_without_its_packages_is_one_line_before_any_work(tmp_path, monkeypatch, hidden, named):
    import matplotlib  # noqa: F401 - loaded whole first: a failed import would leave half of it behind

    for name in [n for n in sys.modules if n.split(".")[0] in hidden]:  # what a missing package looks like
        monkeypatch.delitem(sys.modules, name)
    for module in hidden:
        monkeypatch.setitem(sys.modules, module, None)
    out = tmp_path / "replays"
    result = run("replay", "crank", "placeholder", "--gif", "--out", str(out), "--env", "max_time=10", "-q")
    refused(result)
    assert f"--gif needs {named}, which cannot be imported here: pip install" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()  # nothing played, nothing written


def test_replay_json_lists_every_battle_and_its_files(tmp_path):
    out = tmp_path / "replays"
    result = run("replay", "crank", "placeholder", "-n", "2", "--seed", "4", "--out", str(out), "--json",
                 "--env", "max_time=60", "-q")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # the whole of stdout: one JSON object, no lines beside it
    played = json.loads(run("play", "crank", "placeholder", "-n", "2", "--seed", "4", "--json", "--env",
                            "max_time=60", "-q").stdout)
    assert {k: data[k] for k in ("wins", "draws", "losses", "team_size", "seed")} == \
        {k: played[k] for k in ("wins", "draws", "losses", "team_size", "seed")}
    assert data["out"] == str(out) and [b["battle"] for b in data["battles"]] == [1, 2]
    first, second = data["battles"]
    assert (first["blue"], first["red"]) == ("crank", "placeholder")  # A flies Blue in the first half
    assert (second["blue"], second["red"]) == ("placeholder", "crank")
    a_wins = 0
    for battle in data["battles"]:
        assert battle["files"] == {"acmi": str(out / f"battle-{battle['battle']}.acmi"),
                                   "html": str(out / f"battle-{battle['battle']}.html"), "gif": None}
        assert all(Path(f).is_file() for f in (battle["files"]["acmi"], battle["files"]["html"]))
        assert 0 < battle["steps"] <= 60
        side = battle["winner_side"]
        assert side in ("blue", "red", None) and battle["winner"] == (battle[side] if side else None)
        a_wins += battle["winner"] == "crank"
    assert a_wins == data["wins"]


def test_replay_plays_a_team_checkpoint_in_its_own_team_size(tmp_path):
    pytest.importorskip("arena_ppo")
    from arena.env import EnvConfig
    from arena.training.checkpoint import save_checkpoint
    from arena_ppo.mappo_agent import MAPPOAgent

    team = save_checkpoint(MAPPOAgent(env_config=EnvConfig(team_size=2)).checkpoint(), tmp_path / "team.pt")
    result = run("replay", str(team), "crank", "--out", str(tmp_path / "r"), "--json", "--env", "max_time=10", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["team_size"] == 2
    assert "CallSign=Blue 2" in (tmp_path / "r" / "battle-1.acmi").read_text()
