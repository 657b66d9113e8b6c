"""Leagues on Ray (``--ray``): the same games as in one process, workers that die, resume, bad set-ups.

A local Ray with two CPUs stands in for a cluster; its workers import these tests' agents through
PYTHONPATH, as a cluster's workers import the installed plugins.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.env import EnvConfig
from arena.tournament import LeaguePlan, ListSink, load_config, ray_backend, run_tournament
from arena.tournament.participants import Participant, resolve_participants
from arena.tournament.ray_backend import (
    HTTP2_PREFACE,
    LeagueSpec,
    RayError,
    RaySettings,
    RemotePlay,
    Target,
    captured_stderr,
    check_reachable,
    connect_error,
    connect_target,
    local_checkpoint,
    play_on_ray,
    worker_device,
)
from arena.tournament.schedule import pairings, units
from tourney_helpers import LEAGUE

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")  # one local Ray at a time when the suite runs in several workers


@pytest.fixture(scope="module")
def local_ray() -> Any:
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
    yield
    ray.shutdown()


def games_of(output: Path) -> list[tuple[Any, ...]]:
    """Every stored game by participant name, with its outcome, start seed and slot."""
    with sqlite3.connect(output / "results.sqlite") as conn:
        return conn.execute(
            "SELECT a.name, b.name, g.game_index, g.winner, g.length, g.seed, g.slot, g.forfeit_by FROM games g "
            "JOIN participants a ON a.id = g.p1 JOIN participants b ON b.id = g.p2 "
            "ORDER BY a.name, b.name, g.game_index").fetchall()


@pytest.fixture()
def checkpoint(tmp_path: Path) -> Path:
    path = tmp_path / "far.ckpt"
    path.write_text("30.0")
    return path


def test_a_league_on_ray_plays_the_same_games_and_leaderboard_as_one_process(write_league, registry, checkpoint,
                                                                            local_ray) -> None:
    league = [*LEAGUE, {"name": "learned", "agent": "fromfile", "checkpoint": str(checkpoint)}]
    on_ray = load_config(write_league(league, name="ray.yaml", output="out-ray", max_envs=4, games_per_pairing=8))
    alone = load_config(write_league(league, name="one.yaml", output="out-one", max_envs=4, games_per_pairing=8))
    remote = run_tournament(on_ray, registry=registry, progress=False, ray=RaySettings())
    local = run_tournament(alone, registry=registry, progress=False)
    assert remote.run["batches"] == local.run["batches"] >= 3  # several tasks, two workers
    assert remote.run["ray"] == {"cpus": 2.0, "retries": 3, "lost_batches": 0}
    assert remote.run["played"] == len(games_of(on_ray.output)) == 6 * 8
    assert games_of(on_ray.output) == games_of(alone.output)
    columns = ["name", "elo", "elo_low", "elo_high", "wins", "draws", "losses", "mu", "sigma"]
    assert remote.leaderboard[columns].equals(local.leaderboard[columns])


def test_a_worker_that_dies_is_run_again_and_no_game_is_stored_twice(write_league, registry, tmp_path,
                                                                     local_ray) -> None:
    marker = tmp_path / "crashed-once"
    league = [*LEAGUE, {"name": "crashy", "agent": "crashy", "params": {"marker": str(marker)}}]
    config = load_config(write_league(league, name="ray.yaml", output="out-ray", max_envs=4))
    report = run_tournament(config, registry=registry, progress=False, ray=RaySettings(retries=2))
    assert marker.exists()  # a worker did die in the middle of a batch
    assert report.run["ray"]["lost_batches"] == 0 and report.complete
    stored = games_of(config.output)
    assert len(stored) == len({g[:3] for g in stored}) == 6 * 4
    again = load_config(write_league(league, name="one.yaml", output="out-one", max_envs=4))
    run_tournament(again, registry=registry, progress=False)  # marker present: nobody dies here
    assert stored == games_of(again.output)


def test_a_batch_lost_for_good_is_left_for_the_next_run(write_league, registry, local_ray) -> None:
    league = ["idle", {"name": "near", "agent": "pursuer", "params": {"fire_km": 8.0}},
              {"name": "crashy", "agent": "crashy", "params": {"spare_pid": os.getpid()}}]
    config = load_config(write_league(league, max_envs=2, games_per_pairing=2))
    report = run_tournament(config, registry=registry, progress=False, ray=RaySettings(retries=0))
    lost = report.run["ray"]["lost_batches"]
    assert lost >= 1 and not report.complete
    assert any("lost after 0 retries" in w and "run the league again" in w for w in map(str, report.warnings))
    stored = games_of(config.output)
    assert stored and all("crashy" not in g[:2] for g in stored)  # what the other batches played is kept
    resumed = run_tournament(config, registry=registry, progress=False)  # here crashy survives: it plays
    assert resumed.run["already_stored"] == len(stored)
    assert resumed.complete and len(games_of(config.output)) == 3 * 2


def test_a_resumed_league_on_ray_plays_only_what_is_missing(write_league, registry, local_ray) -> None:
    config = load_config(write_league(LEAGUE, max_envs=2, games_per_pairing=8))
    first = run_tournament(config, registry=registry, progress=False, ray=RaySettings(), max_batches=2)
    assert first.run["batches"] == 2 and 0 < first.run["played"] < 3 * 8
    before = games_of(config.output)
    second = run_tournament(config, registry=registry, progress=False, ray=RaySettings())
    assert second.run["already_stored"] == len(before) and second.run["played"] == 3 * 8 - len(before)
    after = games_of(config.output)
    assert len(after) == 3 * 8 and set(before) <= set(after)


def test_a_decided_gauntlet_on_ray_stops_early(write_league, registry, local_ray) -> None:
    config = load_config(write_league(LEAGUE, format="gauntlet", candidates=["far"], games_per_pairing=64,
                                      max_envs=4, sprt={"elo0": 0, "elo1": 100, "alpha": 0.1, "beta": 0.1}))
    report = run_tournament(config, registry=registry, progress=False, ray=RaySettings())
    assert report.run["stopped_by_sprt"] and report.games < report.expected_games
    assert report.run["sprt"][0]["verdict"] == "H1"


def test_a_checkpoint_whose_bytes_differ_from_its_hash_stops_the_league_naming_it(write_league, registry,
                                                                                  checkpoint, local_ray) -> None:
    config = load_config(write_league([{"name": "learned", "agent": "fromfile", "checkpoint": str(checkpoint)},
                                       "idle"]))
    participants = resolve_participants(config, registry)
    checkpoint.write_text("12.0")  # changed after the driver hashed it
    plan = LeaguePlan.of([], env_config=EnvConfig.from_dict(config.env), seed=config.seed, max_envs=4,
                         names=[p.name for p in participants], participants=tuple(participants))
    remote = RemotePlay(LeagueSpec.of(plan, registry, "cpu"), 1.0, RaySettings())
    sink = ListSink()
    with pytest.raises(RayError, match=r"participants\[0\]\.checkpoint: .*far\.ckpt reached the worker with sha256"):
        play_on_ray(remote, units(pairings(2, "round-robin", []), 2), sink)
    assert sink.results == []


def test_an_agent_a_worker_cannot_import_stops_the_league_naming_its_module(write_league, registry, tmp_path,
                                                                           monkeypatch, local_ray) -> None:
    (tmp_path / "only_on_the_driver.py").write_text(
        "from tourney_helpers import Pursuer\n\nclass Local(Pursuer):\n    name = 'local'\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver sees the module; the workers' path does not
    from only_on_the_driver import Local

    registry.add("local", Local, registry.entry("pursuer").source)
    config = load_config(write_league(["local", "idle"], games_per_pairing=2))
    with pytest.raises(RayError, match="batch 0 failed on a Ray worker: .*No module named 'only_on_the_driver'"):
        run_tournament(config, registry=registry, progress=False, ray=RaySettings())


def test_a_checkpoint_arrives_as_a_file_named_by_its_hash() -> None:
    data = b"25.0"
    digest = hashlib.sha256(data).hexdigest()
    p = Participant("learned", "fromfile", {}, "/elsewhere/far.ckpt", digest, "key", "participants[0]")
    path = Path(local_checkpoint(p, data))
    assert path.name == f"{digest}.ckpt" and path.read_bytes() == data
    assert local_checkpoint(p, data) == str(path)  # a second batch on the same worker reuses it
    with pytest.raises(RayError, match=r"participants\[0\]\.checkpoint: /elsewhere/far\.ckpt reached"):
        local_checkpoint(p, b"26.0")


def test_tasks_ask_for_a_gpu_only_where_one_is_wanted() -> None:
    assert worker_device("cuda:3", 0) == worker_device("cuda", 8) == "cuda"  # each task's own GPU is its cuda:0
    assert worker_device("auto", 4) == "cuda" and worker_device("auto", 0) == worker_device("cpu", 4) == "cpu"


def test_an_address_nobody_answers_at_fails_in_seconds() -> None:
    with pytest.raises(RayError, match="nothing answers at 127.0.0.1:1"):
        check_reachable("127.0.0.1:1", timeout_s=2)
    with pytest.raises(RayError, match="expected auto, HOST:PORT or ray://HOST:PORT, got 'nonsense'"):
        check_reachable("nonsense")
    check_reachable("auto")  # Ray finds it itself


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (just released by the system)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def listener() -> Iterator[Any]:
    """``start(reply)``: a server on 127.0.0.1 that answers each connection with ``reply`` once it has
    read the client's first bytes; returns its port. Closed at the end of the test."""
    servers: list[socket.socket] = []

    def start(reply: bytes) -> int:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(len(HTTP2_PREFACE))
                    conn.sendall(reply)

        threading.Thread(target=serve, daemon=True).start()
        return server.getsockname()[1]

    yield start
    for server in servers:
        server.close()


def test_an_unreachable_address_is_one_line_naming_it_in_seconds(write_league) -> None:
    """Ray itself would retry for minutes, printing a warning each time: the run says what is wrong."""
    league = write_league(["crank", "placeholder"], games_per_pairing=2)
    address = f"127.0.0.1:{closed_port()}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", str(league), "--ray", address, "-q"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"nothing answers at {address}" in lines[0] and "ray start --head" in lines[0]


def test_something_else_at_the_address_is_not_taken_for_ray(listener) -> None:
    port = listener(b"HTTP/1.0 400 Bad Request\r\n\r\n")
    with pytest.raises(RayError, match=f"127.0.0.1:{port} answers, but not as Ray does; expected a Ray head's port"):
        check_reachable(f"127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(RayError, match="answers, but not as Ray does"):
        check_reachable(f"ray://127.0.0.1:{port}", timeout_s=2)
    check_reachable(f"127.0.0.1:{listener(bytes([0, 0, 0x18, 4, 0, 0, 0, 0, 0]))}", timeout_s=2)  # gRPC's SETTINGS


def test_where_ray_would_connect_is_named_in_the_error(monkeypatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray_backend, "last_started_cluster", lambda: None)
    assert connect_target(None) is None and connect_target("local") is None and connect_target("auto") is None
    assert connect_target("10.0.0.5:6379") == Target("10.0.0.5:6379")
    monkeypatch.setattr(ray_backend, "last_started_cluster", lambda: f"127.0.0.1:{closed_port()}")
    recorded = connect_target(None)
    assert recorded is not None and "`ray start` last started on this machine" in recorded.origin
    with pytest.raises(RayError, match="last started on this machine .*; start it again, or forget it with `ray stop`"):
        check_reachable(recorded.address, recorded.origin, timeout_s=2, hint=recorded.hint)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    assert connect_target("auto") == Target("127.0.0.1:1", ", the address in RAY_ADDRESS")
    assert connect_target("10.0.0.5:6379") == Target("10.0.0.5:6379"), "an explicit address wins"


def test_what_ray_prints_while_connecting_stays_off_the_console(capfd) -> None:
    """Ray's core writes to file descriptor 2 directly; while Ray connects that goes to a file, and the
    error made of it is one line with what to do."""
    with captured_stderr() as said:
        os.write(2, b"[2025-01-01 10:00:00,000 W 12 12] gcs_client.cc:210: Failed to get cluster ID from GCS "
                    b"server: Unauthenticated: RPC error: InvalidAuthToken: Authentication token is missing\n")
        os.write(2, b"2025-01-01 10:00:00,000\tWARNING authentication_token_setup.py:85 -- Token authentication "
                    b"is enabled\n")  # and its Python logs
    assert capfd.readouterr().err == ""
    assert len(said) == 2
    refused = connect_error("10.0.0.5:6379", ConnectionError("Failed to connect to Ray cluster"), said)
    assert refused.startswith("--ray: Ray at 10.0.0.5:6379 refused this process; the cluster uses token "
                              "authentication: set RAY_AUTH_MODE=token")
    other = connect_error("10.0.0.5:6379", ConnectionError("Failed to connect"),
                          ["[2025-01-01 10:00:00,000 W 12 12] rpc_client.h:153: Failed to connect to GCS within 5 s"])
    assert other == ("--ray: cannot connect to Ray at 10.0.0.5:6379: ConnectionError: Failed to connect (Ray: "
                     "Failed to connect to GCS within 5 s)")
    client = connect_error("ray://10.0.0.5:6379", ConnectionError("ray client connection timeout"),
                           ["/x/ray/util/client/worker.py:335: UserWarning: Ray Client connection timed out.",
                            "  warnings.warn("])
    assert client.endswith("timeout (Ray: Ray Client connection timed out.)")
    not_head = connect_error("10.0.0.5:10001", ConnectionError("Failed to connect to Ray cluster"),
                             ["[2025-01-01 10:00:00,000 W 1 1] gcs_client.cc:210: Failed to get cluster ID from GCS "
                              "server: RpcError: RPC error: Method not found! rpc_code: 12"])
    assert not_head.endswith("; expected a Ray head's port (6379 unless `ray start --head --port` set another) or "
                             "ray://HOST:10001 for Ray Client")


def test_a_local_ray_starts_without_printing_anything(tmp_path) -> None:
    """Ray's notices (token authentication enabled, ...) are not the league's output."""
    code = ("from arena.tournament.ray_backend import ray_cluster\n"
            "with ray_cluster(None) as cpus:\n    print('cpus', cpus > 0)")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cpus True\n" and done.stderr == ""
