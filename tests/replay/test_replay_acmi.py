"""ACMI export, read back by an independent parser (pyacmi): tracks, objects, removals and events."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.env import EnvConfig
from arena.replay import acmi_text, battle_events, write_acmi
from arena.replay.acmi import aircraft_id, missile_id, yaw_degrees
from replay_helpers import env_frame, first_battle

pyacmi = pytest.importorskip("pyacmi", reason="pyacmi (a test dependency: pip install -e '.[dev]') is needed")


def parse(battle, tmp_path):
    path = write_acmi(battle, tmp_path / "battle.acmi")
    acmi = pyacmi.Acmi()
    acmi.load_acmi(str(path))
    return acmi


@pytest.mark.parametrize("team_size", [1, 2])
def test_tracks_match_the_envs_states(tmp_path, team_size):
    battles, trace = first_battle(team_size=team_size, num_envs=2, seed=4)
    for k, battle in enumerate(battles):
        acmi = parse(battle, tmp_path)
        assert acmi.file_version == 2.2 and acmi.file_type == "text/acmi/tacview"
        assert len(acmi.timeframes) == battle.frames
        for a in range(battle.aircraft):
            obj = acmi.objects[aircraft_id(a)]
            assert obj.is_plane
            assert obj.coalition() == ("Allies" if a < team_size else "Enemies")
            last = battle.length if battle.alive[-1, a] else int(np.argmin(battle.alive[:, a]))
            for f in range(last + 1):
                if f < battle.length:  # the env's own state, recorded by nobody but the test
                    state = env_frame(trace, f, k)
                    x, y, h = (float(state[n][a]) for n in ("x", "y", "heading"))
                else:
                    x, y, h = float(battle.x[f, a]), float(battle.y[f, a]), float(battle.heading[f, a])
                assert obj.u(f * 1.0) == pytest.approx(x, abs=0.06)
                assert obj.v(f * 1.0) == pytest.approx(y, abs=0.06)
                assert math.isclose(obj.heading(f * 1.0), yaw_degrees(h), abs_tol=0.006)
            if not battle.alive[-1, a]:
                assert obj.removed_at == pytest.approx(last), "a lost aircraft is removed when it dies"
            else:
                assert obj.removed_at is None


def test_every_missile_is_an_object_from_launch_to_its_end(tmp_path):
    battles, trace = first_battle(num_envs=4, seed=2)
    for k, battle in enumerate(battles):
        acmi = parse(battle, tmp_path)
        events = battle_events(battle)
        launches = [e for e in events if e.kind == "launch"]
        ends = {(e.slot, e.target): e.frame for e in events if e.kind in ("hit", "miss")}
        fired = trace.episodes[battle.length - 1]["missiles"]
        assert len(launches) == int(fired["p1"][k] + fired["p2"][k]), "one launch event per missile fired"
        missiles = [o for o in acmi.objects.values() if o.is_missile]
        assert len(missiles) == len(launches)
        for e in launches:
            obj = acmi.objects[missile_id(battle, e.slot, e.target)]
            assert obj.parent() == aircraft_id(e.aircraft)
            assert obj.get_value("LockedTarget") == aircraft_id(e.target)
            assert min(obj.data["U"].keys()) == pytest.approx(e.frame)
            assert obj.u(float(e.frame)) == pytest.approx(float(battle.mx[e.frame, e.slot, e.target]), abs=0.06)
            if (e.slot, e.target) in ends:
                assert obj.removed_at == pytest.approx(ends[e.slot, e.target])


def test_deaths_hits_and_kills_agree_with_the_env():
    battles, trace = first_battle(num_envs=6, seed=7)
    for k, battle in enumerate(battles):
        events = battle_events(battle)
        hits = [e for e in events if e.kind == "hit"]
        downed = [e for e in events if e.kind == "shot-down"]
        kills = sum(float(trace.kills[f][p][k]) for f in range(battle.length) for p in ("p1", "p2"))
        assert len(downed) == kills, "every kill the env credited is a shot-down event"
        assert {e.target for e in hits} == {e.aircraft for e in downed}
        assert events[-1].kind == "end"
    assert any(e.kind == "shot-down" for b in battles for e in battle_events(b)), "the seeds give some kills"


def test_header_and_escaping():
    battles, _ = first_battle(num_envs=1, config=EnvConfig(max_time=20.0))
    battle = battles[0]
    battle.meta.p1 = "ppo:runs/a,b/ckpt.pt"
    text = acmi_text(battle)
    lines = text.splitlines()
    assert lines[:2] == ["FileType=text/acmi/tacview", "FileVersion=2.2"]
    assert "0,ReferenceTime=2026-01-01T12:00:00Z" in lines
    assert "Pilot=ppo:runs/a\\,b/ckpt.pt" in text
    assert text == acmi_text(battle), "the same battle always exports to the same file"
