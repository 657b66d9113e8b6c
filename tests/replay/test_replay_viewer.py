"""The HTML viewer: one offline file, opened in headless Chromium with no console errors and aircraft
drawn on the map (Debian's ``chromium``: `make test` installs it where it can)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from arena.env import EnvConfig
from arena.replay import html_text, viewer_data, write_html
from replay_helpers import first_battle

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed and could not be (see .ci/install-chromium.sh); "
                             "the viewer was not opened in a browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                           *args], capture_output=True, text=True, timeout=120)


def page_state(tmp_path: Path, page: Path) -> dict[str, str]:
    """The attributes the viewer sets on <html> once it has drawn (errors counted by the page itself)."""
    run = chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", page.as_uri())
    match = re.search(r"<html([^>]*)>", run.stdout)
    assert match, f"chromium printed no page: {run.stderr[-2000:]}"
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', match.group(1)))
    attrs["console_errors"] = "\n".join(line for line in run.stderr.splitlines()
                                        if "CONSOLE" in line and ("Uncaught" in line or "ERROR" in line.upper()))
    return attrs


@pytest.fixture(scope="module")
def team_battle():
    battles, _ = first_battle(agents=("crank", "placeholder"), team_size=2, num_envs=1, seed=11)
    return battles[0]


def test_the_page_is_one_offline_file(team_battle):
    page = html_text(team_battle)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "nothing is fetched from the network"
    assert "/*__BATTLE_DATA__*/" not in page and "__TITLE__" not in page
    inline = re.search(r'<script type="application/json" id="battle-data">(.*?)</script>', page, re.S)
    data = json.loads(inline.group(1))
    assert data == json.loads(json.dumps(viewer_data(team_battle)))
    assert len(data["aircraft"]) == 4 and data["meta"]["frames"] == team_battle.frames


def test_the_data_cannot_close_its_script_element():
    battles, _ = first_battle(num_envs=1, config=EnvConfig(max_time=10.0))
    battle = battles[0]
    plain = html_text(battle).count("</script>")
    battle.meta.p1 = "</script><script>alert(1)</script>"
    assert html_text(battle).count("</script>") == plain


@needs_chromium
def test_viewer_opens_without_errors_and_draws_the_aircraft(tmp_path, team_battle):
    page = write_html(team_battle, tmp_path / "battle.html")
    state = page_state(tmp_path, page)
    assert state.get("data-ready") == "1"
    assert state.get("data-errors") == "0", state
    assert state["console_errors"] == ""
    assert int(state["data-drawn-aircraft"]) == 4, "every aircraft is alive and drawn at the start"

    shot = tmp_path / "shot.png"
    run = chromium(tmp_path, "--window-size=1200,800", "--virtual-time-budget=2000", f"--screenshot={shot}",
                   page.as_uri())
    assert shot.exists(), run.stderr[-2000:]
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    map_area = pixels[60:740, :880]  # left of the event log, between the header and the controls
    for colour in ((0x2f, 0x6f, 0xdf), (0xd8, 0x3a, 0x3a)):  # Blue and Red aircraft icons
        near = (np.abs(map_area - np.array(colour)).sum(-1) < 30).sum()
        assert near > 40, f"no aircraft of colour {colour} on the map ({near} pixels)"


@needs_chromium
def test_a_broken_page_is_caught(tmp_path, team_battle):
    """The check above can fail: a script error in the page is counted."""
    page = tmp_path / "broken.html"
    page.write_text(html_text(team_battle).replace("var meta = data.meta;", "var meta = data.meta; undefinedCall();"))
    state = page_state(tmp_path, page)
    assert state.get("data-errors") not in (None, "0")
    assert state.get("data-ready") != "1"
