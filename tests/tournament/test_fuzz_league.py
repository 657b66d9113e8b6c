"""A seeded fuzz of league files (issue 16): every mutant is either refused with one clean line or
loads; a sample of them (loaded or not) goes through the real `arena tournament` command, which must
exit 0 with a completed league or exit 2 with one line, never with a traceback, and never hang.

The counts it prints (``pytest -s``) are the ones in docs/hostile-input.md.
"""

from __future__ import annotations

import copy
import json
import math
import random
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.tournament import ConfigError, load_config

SEED = 20240516
CASES = 300
CLI_SAMPLE = 30  # mutants run through the whole command (about 0.3 s each)
LIMIT_S = 10  # a case that takes longer is a hang

# The example league (tournaments/league.yaml), made tiny: 3 participants, 2 games each pairing, 20 steps.
BASE: dict[str, Any] = {
    "name": "fuzz", "output": "out", "seed": 0, "device": "cpu", "max_envs": 8, "games_per_pairing": 2,
    "format": "round-robin",
    "env": {"arena_size": 40000.0, "spawn_edge_min": 5000.0, "spawn_edge_max": 8000.0, "spawn_band": 10000.0,
            "max_time": 20.0},
    "rating": {"mu": 25.0, "sigma": 8.333, "beta": 4.167, "tau": 0.083, "draw_probability": 0.1,
               "bootstrap_rounds": 20},
    "participants": ["crank", {"name": "crank-long-shot", "agent": "crank", "params": {"fire_range_frac": 1.0}},
                     "placeholder"],
}
ENV_KEYS = ["dt", "substeps", "max_time", "arena_size", "speed_min", "speed_max", "missiles", "spawn_band",
            "missile_hit_radius", "missile_lifetime", "reward", "obs_mode", "spawn_edge_max", "gravity"]
HOSTILE: list[Any] = [
    None, "", " ", "x" * 5000, "\0", "a\0b", "ünï\u202ecode", "line\nbreak", -1, 0, 1, 3, 7, 2**31, 2**40, 2**63,
    2**64, 10**30, -(10**30), 1e30, -1e30, 1e-9, 1e-300, math.nan, math.inf, -math.inf, True, False, [], {},
    [1, 2], {"a": 1}, [[[[[]]]]], "crank", "../../..", "/dev/null", 0.5, -0.5, "1e12", "0x10", 2.0, 300.0,
]


def hostile(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(HOSTILE))


# -- structural mutations: edit the data, then write it as YAML ----------------------------------------


def m_top_value(d: dict, rng: random.Random) -> None:
    d[rng.choice(list(BASE) + ["candidates", "time_per_move"])] = hostile(rng)


def m_env_value(d: dict, rng: random.Random) -> None:
    d["env"][rng.choice(ENV_KEYS)] = hostile(rng)


def m_rating_value(d: dict, rng: random.Random) -> None:
    d["rating"][rng.choice(list(BASE["rating"]) + ["mu_typo"])] = hostile(rng)


def m_participant(d: dict, rng: random.Random) -> None:
    i = rng.randrange(len(d["participants"]))
    choice = rng.randrange(4)
    if choice == 0:
        d["participants"][i] = hostile(rng)
    elif choice == 1:
        d["participants"][1]["params"][rng.choice(["fire_range_frac", "cooldown_s", "nope"])] = hostile(rng)
    elif choice == 2:
        d["participants"][1][rng.choice(["name", "agent", "params", "checkpoint", "checkpoints"])] = hostile(rng)
    else:
        d["participants"] = hostile(rng)


def m_delete(d: dict, rng: random.Random) -> None:
    d.pop(rng.choice(list(d)), None)


def m_type_swap(d: dict, rng: random.Random) -> None:
    """A value of the right meaning in the wrong type: "2" for 2, [0] for 0, {} for []."""
    key = rng.choice(list(d))
    value = d[key]
    swaps = [str(value), [value], {"value": value}, bool(value) if not isinstance(value, (list, dict)) else None]
    d[key] = rng.choice(swaps)


STRUCTURAL: list[Callable[[dict, random.Random], None]] = [m_top_value, m_env_value, m_rating_value, m_participant,
                                                           m_delete, m_type_swap]


# -- text mutations: bytes a YAML writer would never produce -------------------------------------------


def t_laughs(text: str, rng: random.Random) -> bytes:
    """A billion laughs (or a small one) defined inside a participant's params, its top alias also used
    under the env, the participants or another participant's params."""
    fan, levels = rng.randint(2, 10), rng.randint(2, 10)
    defs = ["l0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    defs += [f"l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]" for i in range(1, levels)]
    top = f"*a{levels - 1}"
    params = "{" + ", ".join(defs) + "}"
    use = rng.choice([f"  - {{name: y, agent: placeholder, params: {{junk: {top}}}}}\n",
                      f"env: {{max_time: {top}}}\n", f"candidates: {top}\n", ""])
    head = "name: laughs\noutput: out\ndevice: cpu\ngames_per_pairing: 2\n"
    body = f"participants:\n  - crank\n  - {{name: x, agent: crank, params: {params}}}\n" + use
    return (head + body).encode()


def t_recursive_alias(text: str, rng: random.Random) -> bytes:
    return (text + rng.choice(["extra: &r [*r]\n", "candidates: &c {a: *c}\n"])).encode()


def t_encoding(text: str, rng: random.Random) -> bytes:
    text = text.replace("name: fuzz", "name: Jürgen-Ωmega")
    return text.encode(rng.choice(["latin-1", "utf-16", "utf-16-le", "utf-32", "cp1252", "utf-8-sig"]),
                       errors="replace")


def t_random_bytes(text: str, rng: random.Random) -> bytes:
    return rng.randbytes(rng.randint(1, 3000))


def t_flip(text: str, rng: random.Random) -> bytes:
    raw = bytearray(text.encode())
    for _ in range(rng.randint(1, 12)):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    return bytes(raw)


def t_truncate(text: str, rng: random.Random) -> bytes:
    raw = text.encode()
    return raw[:rng.randrange(len(raw))]


def t_nul(text: str, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return text.replace("output: out", 'output: "out\\0/x"').encode()  # an escaped NUL in a value
    raw = text.encode()
    i = rng.randrange(len(raw))
    return raw[:i] + b"\x00" + raw[i:]


def t_deep(text: str, rng: random.Random) -> bytes:
    depth = rng.choice([20, 33, 100, 1000, 20000])
    value = "[" * depth + "]" * depth if rng.random() < 0.5 else "{a: " * depth + "1" + "}" * depth
    key = rng.choice(["env", "participants", "rating", "seed"])
    return f"{text}\n{key}: {value}\n".encode()


def t_tags(text: str, rng: random.Random) -> bytes:
    value = rng.choice(["!!python/object/apply:os.system [echo hi]", "!!binary 'not base64 !!'",
                        "!!timestamp 2001-13-45", "!!int " + "9" * 5000, "!!float abc", "!!set {a, b}",
                        "!!omap [a: 1]", "2001-12-14", "0o777", "0b1010", "1_000", ".NaN", "-.inf", "~", "yes"])
    return f"{text}\n{rng.choice(['seed', 'games_per_pairing', 'name', 'env'])}: {value}\n".encode()


def t_huge(text: str, rng: random.Random) -> bytes:
    n = rng.choice([100_000, 1_100_000])
    return f"{text}\nname: {'x' * n}\n".encode()


def t_merge_and_duplicates(text: str, rng: random.Random) -> bytes:
    """Merge keys, an anchor reused where it does not belong, and a key given twice (refused)."""
    extra = rng.choice(["rating: {<<: {mu: 30.0}, sigma: 9.0}\n", "seed: 1\nseed: 2\n",
                        "participants: [crank, placeholder, {name: z, agent: crank, params: {<<: {cooldown_s: 5}}}]\n"])
    return (text.replace("env:", "env: &e", 1) + extra).encode()


def t_multi_doc(text: str, rng: random.Random) -> bytes:
    return (text + "\n---\n" + text).encode()


TEXTUAL: list[Callable[[str, random.Random], bytes]] = [
    t_laughs, t_recursive_alias, t_encoding, t_random_bytes, t_flip, t_truncate, t_nul, t_deep, t_tags, t_huge,
    t_merge_and_duplicates, t_multi_doc]


def mutants(seed: int = SEED, count: int = CASES) -> Iterator[tuple[str, bytes]]:
    """``count`` (name, file bytes) pairs: about half structural, half textual, some of both."""
    rng = random.Random(seed)
    for i in range(count):
        data = copy.deepcopy(BASE)
        names = []
        if rng.random() < 0.6:
            for op in rng.sample(STRUCTURAL, rng.randint(1, 2)):
                try:
                    op(data, rng)
                except (KeyError, TypeError, IndexError, AttributeError):  # an earlier edit removed the target
                    pass
                names.append(op.__name__)
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        if not names or rng.random() < 0.4:
            op_t = rng.choice(TEXTUAL)
            names.append(op_t.__name__)
            raw = op_t(text, rng)
        else:
            raw = text.encode()
        yield f"{i:03d}:{'+'.join(names)}", raw


# -- the test -----------------------------------------------------------------------------------------


class Hang(Exception):
    pass


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def small(config: Any) -> bool:
    """Cheap enough to play inside a unit test."""
    from arena.env import EnvConfig

    env = EnvConfig.from_dict(config.env)
    n = len(config.participants)
    return n <= 6 and config.games_per_pairing * n * n <= 200 and env.max_steps * env.substeps <= 2000


def test_fuzzed_league_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from click.testing import CliRunner

    from arena.cli import main

    counts: Counter[str] = Counter()
    failures: list[str] = []
    cli_cases: list[tuple[str, Path, bool]] = []
    for name, raw in mutants():
        folder = tmp_path / name.split(":")[0]
        folder.mkdir()
        path = folder / "league.yaml"
        path.write_bytes(raw)
        counts["tried"] += 1
        try:
            with deadline(LIMIT_S):
                config = load_config(path)
        except ConfigError as exc:
            message = str(exc)
            if "\n" in message or not message.startswith(f"{path}: "):
                failures.append(f"{name}: not one line naming the file: {message!r}")
            counts["clean error"] += 1
            loaded = False
        except Hang:
            counts["hang"] += 1
            failures.append(f"{name}: hang")
            continue
        except Exception as exc:  # noqa: BLE001 - exactly what this test looks for
            counts["traceback"] += 1
            failures.append(f"{name}: {type(exc).__name__}: {exc!s:.200}")
            continue
        else:
            counts["loaded"] += 1
            loaded = True
            if not small(config):
                counts["loaded, too large to play here"] += 1
                continue
        cli_cases.append((name, path, loaded))

    # The command line on a fixed sample: half loaded files (played to the end), half refused ones.
    rng = random.Random(SEED)
    played = [c for c in cli_cases if c[2]]
    refused = [c for c in cli_cases if not c[2]]
    sample = rng.sample(played, min(len(played), CLI_SAMPLE // 2))
    sample += rng.sample(refused, min(len(refused), CLI_SAMPLE - len(sample)))
    runner = CliRunner()
    for name, path, _loaded in sample:
        counts["cli runs"] += 1
        try:
            with deadline(LIMIT_S * 3):
                res = runner.invoke(main, ["tournament", str(path), "-q", "--json"])
        except Hang:
            counts["cli hang"] += 1
            failures.append(f"{name}: cli hang")
            continue
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            counts["cli traceback"] += 1
            failures.append(f"{name}: cli {type(res.exception).__name__}: {res.exception!s:.200}")
        elif res.exit_code == 0:
            data = json.loads(res.stdout)
            if data["games"] != data["expected_games"]:
                failures.append(f"{name}: league not complete: {data['games']} of {data['expected_games']}")
            counts["cli completed league"] += 1
        elif res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("Error: "):
            counts["cli clean error"] += 1
        else:
            counts["cli other"] += 1
            failures.append(f"{name}: exit {res.exit_code}: {res.output[-300:]!r}")
    with capsys.disabled():
        print("\nfuzzed league files:", dict(counts))
    assert not failures, "\n".join(failures[:20])
    assert counts["tried"] == CASES and counts["clean error"] > 100 and counts["loaded"] > 20
    assert counts["cli completed league"] >= 5 and counts["cli clean error"] >= 5


def test_mutants_are_reproducible() -> None:
    first = [raw for _, raw in mutants(count=40)]
    assert first == [raw for _, raw in mutants(count=40)]
