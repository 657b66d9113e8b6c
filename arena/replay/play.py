"""Play battles with recording on and write them out: what ``arena replay`` does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arena.replay.acmi import write_acmi
from arena.replay.events import short_name
from arena.replay.html import write_html
from arena.replay.recorder import Battle, BattleRecorder, battle_meta

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent
    from arena.env import EnvConfig
    from arena.match import MatchResult

MAX_REPLAY_GAMES = 256  # battles recorded in one command: each is a pair of files


@dataclass
class ReplayFiles:
    """The files written for one battle."""

    battle: Battle
    acmi: Path
    html: Path
    gif: Path | None = None


def record_match(agent_a: "Agent", agent_b: "Agent", games: int, *, env_config: "EnvConfig", name_a: str,
                 name_b: str, device: "str | torch.device" = "cpu", seed: int = 0, progress: bool = False,
                 policies: tuple[str, str] = ("deterministic", "deterministic"),
                 ) -> tuple["MatchResult", list[Battle]]:
    """Play ``games`` battles of A against B (A flies p1 in the first half, as in ``arena play``, each
    playing by its entry of ``policies``) and record each one whole; returns the match result and the
    battles in env order."""
    from arena.match import play_match

    if not isinstance(games, int) or isinstance(games, bool) or not 1 <= games <= MAX_REPLAY_GAMES:
        raise ValueError(f"games must be an int from 1 to {MAX_REPLAY_GAMES}, got {games!r}")
    recorder = BattleRecorder(range(games), first_only=True)
    result = play_match(agent_a, agent_b, games, env_config=env_config, device=device, seed=seed, name_a=name_a,
                        name_b=name_b, progress=progress, observers=[recorder], policies=policies)
    a_first = (games + 1) // 2
    battles = []
    for k in range(games):
        p1, p2 = (name_a, name_b) if k < a_first else (name_b, name_a)
        meta = battle_meta(env_config, p1, p2, title=f"{short_name(p1)} v {short_name(p2)} · battle {k + 1}",
                           seed=seed)
        battles.append(recorder.take(k, meta))
    return result, battles


def save_battle(battle: Battle, out_dir: str | Path, stem: str, gif: bool = False) -> ReplayFiles:
    """``stem``.acmi and ``stem``.html (and ``stem``.gif) in ``out_dir``, which is created."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = ReplayFiles(battle, write_acmi(battle, out / f"{stem}.acmi"), write_html(battle, out / f"{stem}.html"))
    if gif:
        from arena.replay.gif import write_gif

        files.gif = write_gif(battle, out / f"{stem}.gif")
    return files
