"""``arena replay`` as a user runs it: the files it writes, the battles `arena play` plays, one-line errors."""

from __future__ import annotations

import json

from click.testing import CliRunner

from arena.cli import main


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
    assert result.exit_code == 2 and "cannot write" in result.output and "Traceback" not in result.output
    result = run("replay", "crank", "no_such_agent", "--out", str(tmp_path))
    assert result.exit_code == 2 and "no_such_agent" in result.output and "Traceback" not in result.output
    result = run("replay", "crank", "crank", "-n", "0")
    assert result.exit_code == 2
