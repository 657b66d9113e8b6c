"""Replays: record battles as they are played, export Tacview ACMI, watch them in an offline HTML viewer.

Recording is a game-loop observer (:class:`BattleRecorder`): off by default and then free, on it copies
only the watched battles each step and never changes them.
"""

from arena.replay.acmi import acmi_text, write_acmi
from arena.replay.events import Event, battle_events
from arena.replay.html import html_text, viewer_data, write_html
from arena.replay.play import ReplayFiles, record_match, save_battle
from arena.replay.recorder import Battle, BattleMeta, BattleRecorder, battle_meta

__all__ = [
    "Battle", "BattleMeta", "BattleRecorder", "Event", "ReplayFiles", "acmi_text", "battle_events", "battle_meta",
    "html_text", "record_match", "save_battle", "viewer_data", "write_acmi", "write_html",
]
