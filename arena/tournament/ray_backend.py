"""A league's batches as Ray tasks, on one machine's cores or a cluster (``arena tournament --ray``).

The driver cuts the missing games into the batches the one-process executor would play and submits
each as a task (a league spreads over at most as many workers as it has batches: lower ``max_envs``
for more). A worker builds the batch's participants from their specs — a checkpoint
travels as bytes through Ray's object store and is checked against the hash the driver took of the
file — plays the batch with :func:`~arena.tournament.executor.play_batch` and returns its game
records. The driver stores each batch in one go when it arrives, so a task that dies half way
stores nothing: Ray runs it again (``retries``), and a task lost for good leaves its games for the
next run, which plays only what is missing. A task plays its batch exactly as one process would
(same slots, same seeds), so the league gets the same games and the same leaderboard.

Ray talks a lot while it connects (notices, and retries that go on for minutes to an address that is
wrong): :func:`ray_cluster` checks the address first and keeps all of that off the console, so the
user sees the league's output, or one line saying what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.guard import first_line
from arena.output_files import write_bytes
from arena.tournament.batching import Batch, batch_seed, plan_batches
from arena.tournament.league_plan import LeaguePlan
from arena.tournament.participants import Participant, build_participant
from arena.tournament.results import GameResult
from arena.tournament.schedule import Unit
from arena.tournament.sinks import ExecutionStats, ResultSink

if TYPE_CHECKING:
    from arena.agents import Agent, Registry

DEFAULT_RETRIES = 3  # times Ray runs a task again after its worker or node died
INSTALL_HINT = "pip install 'agent-arena[ray]'"
CONNECT_TIMEOUT_S = 5.0
# An HTTP/2 client's first bytes, then an empty SETTINGS frame: a Ray head (gRPC) answers with its SETTINGS.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
HTTP2_SETTINGS = 4
HEAD_HINT = "is the Ray head running (`ray start --head`)?"
RAY_PORTS = ("a Ray head's port (6379 unless `ray start --head --port` set another) or ray://HOST:10001 for "
             "Ray Client")
AUTH_HINT = ("the cluster uses token authentication: set RAY_AUTH_MODE=token and give this process the cluster's "
             "token (RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH; `ray get-auth-token` on the head prints it)")
# The prefixes of what Ray prints: "[2025-01-01 10:00:00,000 W 12 12] file.cc:210: " (its C++ core),
# "2025-01-01 10:00:00,000\tWARNING file.py:85 -- " (its Python logs), "…/worker.py:335: UserWarning: ".
RAY_LOG_PREFIX = re.compile(r"^(\[[^\]]*\]\s*\S+:\d+:|\d{4}-\d\d-\d\d [\d:,.]+\s+[A-Z]+\s+\S+:\d+ --|"
                            r"\S+\.py:\d+: \w*Warning:)\s*")


class RayError(RuntimeError):
    """Ray is missing or unreachable, or a task failed in a way running it again cannot mend."""


@dataclass(frozen=True)
class LeagueSpec:
    """The league as a worker builds it: the plan without its agents (the driver's stay with it; a worker
    builds its own from the plan's participants), the registry to build them with, and the device the
    league file asks for; put in the object store once."""

    plan: LeaguePlan
    registry: "Registry[type]"
    device: str

    @classmethod
    def of(cls, plan: LeaguePlan, registry: "Registry[type]", device: str) -> "LeagueSpec":
        return cls(replace(plan, agents=()), registry, device)

    @property
    def participants(self) -> Sequence[Participant]:
        return self.plan.participants


@dataclass(frozen=True)
class RaySettings:
    """``--ray [ADDRESS]``: where Ray is (None: ``RAY_ADDRESS``, else a local instance) and how often a
    task whose worker died is run again."""

    address: str | None = None
    retries: int = DEFAULT_RETRIES


@dataclass(frozen=True)
class RemotePlay:
    """How a league plays on Ray: the league as workers see it, the cluster's CPUs, the settings."""

    spec: LeagueSpec
    cpus: float
    settings: RaySettings

    @property
    def in_flight(self) -> int:
        """Tasks submitted at a time: two per CPU, so a worker has its next batch ready."""
        return max(2, int(2 * self.cpus))


@dataclass
class BatchOutcome:
    """What a task hands back: the batch's games (batch id = its number) and how it went."""

    number: int
    seed: int
    num_envs: int
    planned: int
    results: list[GameResult]
    stats: ExecutionStats
    worker: str


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


@contextmanager
def ray_cluster(address: str | None) -> Iterator[float]:
    """Connect to Ray (``address``: ``auto``, ``HOST:PORT``, ``ray://HOST:PORT``; None: ``RAY_ADDRESS``,
    else the cluster ``ray start`` last started here, else a local instance on this machine's cores)
    and yield the CPUs it has. A Ray this process had already started is used as it is, and left running.

    The address is checked first (:func:`check_reachable`), and Ray connects with its console output
    off: its notices, its workers' output (in Ray's logs instead: a task that fails comes back as an
    error anyway) and what its core prints while it retries. Raises :class:`RayError`, one line.
    """
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        target = connect_target(address)
        if target is not None:
            check_reachable(target.address, target.origin, hint=target.hint)
        where = f"{target.address}{target.origin}" if target is not None else (
            "a local Ray" if address in (None, "local") else str(address))
        connect(ray, address, where)
        started = True
    try:
        yield float(ray.cluster_resources().get("CPU", 1.0))
    finally:
        if started:
            ray.shutdown()


@dataclass(frozen=True)
class Target:
    """An address Ray will connect to, where it came from (``, the address in RAY_ADDRESS``) and what to
    check when nothing answers there."""

    address: str
    origin: str = ""
    hint: str = HEAD_HINT


def connect_target(address: str | None) -> Target | None:
    """The address ``ray.init(address)`` will connect to; None when Ray starts a local instance or finds
    one itself. Ray's order: an explicit address, else ``RAY_ADDRESS``, else the address ``ray start``
    recorded on this machine."""
    if address not in (None, "auto"):
        return None if address == "local" else Target(address)
    if os.environ.get("RAY_ADDRESS"):
        return Target(os.environ["RAY_ADDRESS"], ", the address in RAY_ADDRESS")
    recorded = last_started_cluster()
    if recorded:
        return Target(recorded, ", the cluster `ray start` last started on this machine",
                      "start it again, or forget it with `ray stop`")
    return None


def last_started_cluster() -> str | None:
    """The address ``ray start`` recorded on this machine (Ray connects there when given none), if any."""
    try:
        from ray._private.utils import read_ray_address
    except ImportError:  # a Ray without it: it finds the cluster itself, unchecked
        return None
    try:
        return read_ray_address() or None
    except OSError:
        return None


def check_reachable(address: str, origin: str = "", timeout_s: float = CONNECT_TIMEOUT_S,
                    hint: str = HEAD_HINT) -> None:
    """Fail in seconds on a ``HOST:PORT`` or ``ray://HOST:PORT`` where no Ray answers: Ray itself keeps
    trying to reach it for minutes. Something that answers must speak gRPC (HTTP/2) as a Ray head
    does, unless Ray is told to use TLS. ``origin`` says where the address came from, ``hint`` what
    to check when nothing answers."""
    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not host or not port.isdigit():
        raise RayError(f"--ray: expected auto, HOST:PORT or ray://HOST:PORT, got {address!r}{origin}")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as conn:
            if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
                return
            conn.sendall(HTTP2_PREFACE)
            reply = read_some(conn, 9)
    except OSError as exc:
        raise RayError(f"--ray: nothing answers at {address}{origin} ({exc.strerror or exc}); {hint}") from None
    if len(reply) < 4 or reply[3] != HTTP2_SETTINGS:
        raise RayError(f"--ray: {address}{origin} answers, but not as Ray does; expected {RAY_PORTS}")


def read_some(conn: socket.socket, size: int) -> bytes:
    """Up to ``size`` bytes, fewer if the other side closes; a silent one times out (``OSError``)."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def connect(ray: Any, address: str | None, where: str) -> None:
    """``ray.init`` with Ray's console output off; a failure is one :class:`RayError` naming ``where``
    and, from what Ray printed meanwhile, the likely cause."""
    failure: Exception | None = None
    with captured_stderr() as said:
        try:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, include_dashboard=False)
        except Exception as exc:  # noqa: BLE001 - whatever ray.init raises, there is no Ray to play on
            failure = exc
    if failure is not None:
        raise RayError(connect_error(where, failure, said))


def connect_error(where: str, exc: Exception, said: Sequence[str]) -> str:
    """The one line for a failed ``ray.init``: ``exc``, with the last thing Ray printed (``said``) where
    it adds to it, and what to do about a token the cluster refused or a port that is not a head's."""
    lines = ray_messages(said)
    if type(exc).__name__ == "AuthenticationError" or any("Unauthenticated" in line or "InvalidAuthToken" in line
                                                          for line in lines):
        return f"--ray: Ray at {where} refused this process; {AUTH_HINT}"
    text = f"--ray: cannot connect to Ray at {where}: {first_line(exc)}"
    if lines and lines[-1] not in text:
        last = lines[-1]
        text += f" (Ray: {last if len(last) <= 200 else last[:199] + '…'})"
    if any("Method not found" in line for line in lines):  # a Ray port, but not the head's
        text += f"; expected {RAY_PORTS}"
    return text


def ray_messages(said: Sequence[str]) -> list[str]:
    """What Ray printed, a message a line: prefixes dropped, indented lines (the source line under a
    warning, a traceback's frames) left out."""
    return [RAY_LOG_PREFIX.sub("", line).strip() for line in said if line.strip() and not line[:1].isspace()]


@contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Send this process's standard error (the file descriptor: Ray's core writes there directly) to a
    temporary file while the block runs; the yielded list holds the lines once the block has ended."""
    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield said
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                sink.seek(0)
                said.extend(sink.read().decode(errors="replace").splitlines())
    finally:
        os.close(saved)


def play_on_ray(remote: RemotePlay, units: Sequence[Unit], sink: ResultSink, first_batch: int = 0) -> ExecutionStats:
    """Play ``units`` as Ray tasks, storing each batch through ``sink`` as it arrives.

    The batches are the ones :func:`play` would play, one task each: same layout (the plan's
    ``max_envs``), and batch ``first_batch + i`` has the same seed, so every game is played exactly as
    in one process. At most ``remote.in_flight`` tasks are out at a time. ``sink.stop()`` is asked
    after each arrival (a decided SPRT cancels what is out). A task still failing after its retries is
    noted in the returned ``lost`` and its games are left for the next run; a task whose code raised
    stops the league with :class:`RayError` once the batches already back are stored.
    """
    ray = import_ray()
    stats = ExecutionStats()
    start = time.perf_counter()
    spec, retries = remote.spec, remote.settings.retries
    spec = replace(spec, device=worker_device(spec.device, float(ray.cluster_resources().get("GPU", 0.0))))
    on_gpu = spec.device == "cuda"
    batches = plan_batches(units, spec.plan.max_envs)
    league = ray.put(spec)
    checkpoints = {p.key: ray.put(Path(p.checkpoint).read_bytes()) for p in spec.participants if p.checkpoint}
    task = ray.remote(_play_task).options(num_cpus=1, num_gpus=1 if on_gpu else 0, max_retries=retries,
                                          retry_exceptions=False)
    pending: dict[Any, tuple[int, Batch]] = {}
    queue = list(enumerate(batches, start=first_batch))[::-1]

    def submit() -> None:  # keep the workers busy, and no more: a decided SPRT cancels little
        while queue and len(pending) < remote.in_flight and not sink.stop():
            number, batch = queue.pop()
            members = {u.p1 for u in batch.units} | {u.p2 for u in batch.units}
            refs = {spec.participants[k].key: checkpoints[spec.participants[k].key]
                    for k in members if spec.participants[k].key in checkpoints}
            pending[task.remote(league, batch, number, refs)] = (number, batch)

    submit()
    done = 0
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                number, batch = pending.pop(ref)
                try:
                    outcome: BatchOutcome = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # the task's own code raised: not worth a retry
                    raise RayError(f"batch {number} failed on a Ray worker: {task_error(exc)}") from None
                except ray.exceptions.RayError as exc:  # worker or node lost, retries spent
                    stats.left += batch.games
                    stats.lost.append(f"batch {number} ({batch.games} games) was lost after {retries} retries "
                                      f"({first_line(exc)}); run the league again to play them")
                    continue
                done += 1
                sink.show(tasks=f"{done}/{len(batches)}")
                store_outcome(outcome, sink, stats)
            if (pending or queue) and sink.stop():
                stats.stopped_early = True
                break
            submit()
    finally:
        for ref in pending:  # interrupted, stopped or failed: nothing more will be stored
            ray.cancel(ref, force=True)
        stats.wall_s = time.perf_counter() - start
    return stats


def worker_device(device: str, gpus: float) -> str:
    """The device a task plays on: ``cuda`` (its own GPU, which Ray makes its device 0) for ``cuda`` or
    ``cuda:N``, and for ``auto`` when the cluster has GPUs; else ``cpu``."""
    if device.startswith("cuda") or (device == "auto" and gpus > 0):
        return "cuda"
    return "cpu"


def store_outcome(outcome: BatchOutcome, sink: ResultSink, stats: ExecutionStats) -> None:
    """One batch into the sink: its record, its games under the stored batch id, its end."""
    batch_id = sink.batch_started(outcome.number, outcome.seed, outcome.num_envs, outcome.planned)
    sink.games_finished([replace(r, batch=batch_id) for r in outcome.results])
    sink.batch_finished(batch_id)
    s = outcome.stats
    stats.batches += 1
    stats.steps += s.steps
    stats.env_steps += s.env_steps
    stats.left += s.left


# -- on the worker -------------------------------------------------------------------------------------

_AGENTS: dict[tuple[str, str, str], "Agent"] = {}  # (participant key, device, env settings) -> agent, per worker


def _play_task(spec: LeagueSpec, batch: Batch, number: int, checkpoints: dict[str, Any]) -> BatchOutcome:
    """A Ray task: build the batch's participants (once per worker process) and play the batch."""
    import torch

    from arena.env import resolve_device
    from arena.tournament.executor import play_batch

    torch.set_num_threads(1)
    device = resolve_device(spec.device)
    members = sorted({u.p1 for u in batch.units} | {u.p2 for u in batch.units})
    agents: list[Any] = [None] * len(spec.participants)
    for k in members:
        agents[k] = worker_agent(spec, spec.participants[k], device, checkpoints)
    plan = replace(spec.plan, agents=agents, device=device)
    seed = batch_seed(plan.seed, number)
    results, stats = play_batch(plan, batch, number)
    return BatchOutcome(number, seed, batch.num_envs, batch.games, results, stats,
                        f"{socket.gethostname()}:{os.getpid()}")


def worker_agent(spec: LeagueSpec, p: Participant, device: Any, checkpoints: dict[str, Any]) -> "Agent":
    """Participant ``p`` on this worker, built on first use: its checkpoint is fetched from the object
    store, checked against the driver's hash and written to a local file named by that hash."""
    env_config = spec.plan.env_config
    settings = env_config.to_dict() if env_config is not None else None
    cache_key = (p.key, str(device), json.dumps(settings, sort_keys=True))
    if cache_key in _AGENTS:
        return _AGENTS[cache_key]
    local = None
    if p.checkpoint is not None:
        import ray

        local = local_checkpoint(p, ray.get(checkpoints[p.key]))
    try:
        agent = build_participant(p, device, env_config, spec.registry, checkpoint=local)
    except (ValueError, TypeError, LookupError) as exc:
        text = str(exc).replace(local, p.checkpoint) if local and p.checkpoint else str(exc)
        raise RayError(f"{p.error_key}: {text}") from None
    _AGENTS[cache_key] = agent
    return agent


def local_checkpoint(p: Participant, data: bytes) -> str:
    """``data`` (the bytes of ``p``'s checkpoint) as a file on this machine, once its hash is checked."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != p.checkpoint_sha256:
        raise RayError(f"{p.error_key}: {p.checkpoint} reached the worker with sha256 {digest[:16]}…, expected "
                       f"{(p.checkpoint_sha256 or '')[:16]}… (was the file changed while the league ran?)")
    folder = Path(tempfile.gettempdir()) / f"arena-ray-checkpoints-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}{Path(p.checkpoint or '').suffix}"
    if not path.exists():  # whole or absent, even with two workers writing it at once; never through a link
        write_bytes(path, data)
    return str(path)


def task_error(exc: Exception) -> str:
    """The message of what a task raised, without Ray's wrapping and the worker's traceback."""
    from arena.guard import head

    cause = getattr(exc, "cause", None)
    if isinstance(cause, RayError):  # ours: already one line that names the participant
        return str(cause)
    return first_line(cause) if isinstance(cause, BaseException) else head(str(exc))
