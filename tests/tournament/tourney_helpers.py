"""Small agents and helpers for tournament tests: no plugin needed, a short and small battlefield."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import torch
import yaml

from arena.agents import BaseAgent, Registry
from arena.plugins import PluginInfo

# A small arena and a short clock: games end in at most 60 steps, many of them decisively.
FAST_ENV: dict[str, Any] = {"arena_size": 40000.0, "spawn_edge_min": 5000.0, "spawn_edge_max": 8000.0,
                            "spawn_band": 10000.0, "max_time": 60.0}


class Pursuer(BaseAgent):
    """Turns toward the enemy and fires inside ``fire_km``: deterministic, stateless."""

    name: ClassVar[str] = "pursuer"

    def __init__(self, device: Any = "cpu", env_config: Any = None, fire_km: float = 20.0) -> None:
        super().__init__(device, env_config)
        self.fire_m = fire_km * 1000.0
        self.calls: list[int] = []  # batch size of every act() call

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        bearing = observation["enemy_relative_angle"]
        dist = observation["enemy_distance"] * self.env_config.diagonal
        self.calls.append(int(bearing.shape[0]))
        return {"rudder": (3.0 * math.pi * bearing).clamp(-1, 1), "throttle": torch.ones_like(bearing),
                "fire": (dist < self.fire_m) & (bearing.abs() < 0.2)}


class Idle(BaseAgent):
    """Flies straight at half throttle and never fires."""

    name: ClassVar[str] = "idle"

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        n = observation["x"].shape[0]
        return {"rudder": torch.zeros(n), "throttle": torch.full((n,), 0.5), "fire": torch.zeros(n, dtype=torch.bool)}


class Faulty(Pursuer):
    """A pursuer that misbehaves on its ``after``-th act() call: ``mode`` raise | nan | shape | keys | interrupt.

    ``armed`` is a class switch so a test can run the same participant again, healed."""

    name: ClassVar[str] = "faulty"
    armed: ClassVar[bool] = True

    def __init__(self, device: Any = "cpu", env_config: Any = None, mode: str = "raise", after: int = 5,
                 once: bool = False) -> None:
        super().__init__(device, env_config)
        self.mode, self.after, self.once, self.count = mode, after, once, 0

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = super().act(observation)
        self.count += 1
        if not type(self).armed or self.count < self.after or (self.once and self.count > self.after):
            return out
        if self.mode == "raise":
            raise RuntimeError("boom\nsecond line")
        if self.mode == "interrupt":
            raise KeyboardInterrupt
        if self.mode == "nan":
            out["rudder"] = out["rudder"].clone()
            out["rudder"][0] = float("nan")
        elif self.mode == "shape":
            out["rudder"] = torch.zeros(out["rudder"].shape[0] + 1)
        elif self.mode == "keys":
            out.pop("fire")
        return out


class Slow(Pursuer):
    """A pursuer that sleeps ``delay_s`` in every act() call: a participant that thinks too long."""

    name: ClassVar[str] = "slow"

    def __init__(self, device: Any = "cpu", env_config: Any = None, delay_s: float = 0.05) -> None:
        super().__init__(device, env_config)
        self.delay_s = delay_s

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        time.sleep(self.delay_s)
        return super().act(observation)


class FromFile(Pursuer):
    """A 'learned' agent: its checkpoint is a text file holding ``fire_km``."""

    name: ClassVar[str] = "fromfile"

    @classmethod
    def load(cls, checkpoint: str, device: Any = "cpu", env_config: Any = None, **params: Any) -> "FromFile":
        text = Path(checkpoint).read_text()
        try:
            fire_km = float(text)
        except ValueError as exc:
            raise ValueError(f"not a fromfile checkpoint: {text[:20]!r}") from exc
        return cls(device, env_config, fire_km=fire_km)


class Crashy(Pursuer):
    """A pursuer whose process dies (``os._exit``) on its first act() while ``marker`` does not exist,
    or on every act() in any process but ``spare_pid``: a Ray worker lost for a while, or for good."""

    name: ClassVar[str] = "crashy"

    def __init__(self, device: Any = "cpu", env_config: Any = None, marker: str = "", spare_pid: int = -1) -> None:
        super().__init__(device, env_config)
        self.marker, self.spare_pid = marker, spare_pid

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.marker and not Path(self.marker).exists():
            Path(self.marker).touch()
            os._exit(1)
        if self.spare_pid >= 0 and os.getpid() != self.spare_pid:
            os._exit(1)
        return super().act(observation)


TEST_AGENTS = (Pursuer, Idle, Faulty, FromFile, Slow, Crashy)


def make_registry() -> Registry[type]:
    reg: Registry[type] = Registry("agent")
    info = PluginInfo("tests", "arena-tests", "0", "tests.tournament")
    for cls in TEST_AGENTS:
        reg.add(cls.name, cls, info)
    return reg


LEAGUE = [{"name": "near", "agent": "pursuer", "params": {"fire_km": 8.0}},
          {"name": "far", "agent": "pursuer", "params": {"fire_km": 25.0}},
          "idle"]


def league_file(folder: Path, participants: list[Any], name: str = "league.yaml", **settings: Any) -> Path:
    """Write a league YAML with fast defaults into ``folder``; its output is ``folder/out``."""
    data: dict[str, Any] = {"name": "test", "output": "out", "seed": 3, "device": "cpu", "max_envs": 64,
                            "games_per_pairing": 4, "env": dict(FAST_ENV), "rating": {"bootstrap_rounds": 50},
                            "participants": participants}
    data.update(settings)
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
