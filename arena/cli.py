"""The ``arena`` command line. Sub-commands stay thin: they parse, call a library function, print.

Nothing heavy is imported at module level, so ``arena --help`` answers without loading torch.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from typing import TYPE_CHECKING, Any

import click

from arena import __version__
from arena.agents import POLICIES
from arena.errors import ArenaError
from arena.match import MAX_GAMES, RESULT_KEYS
from arena.seeds import MAX_SEED, SEED_RANGE

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig
    from arena.env.config import ObsMode
    from arena.replay import ReplayFiles


def threads_option(fn: Any) -> Any:
    """``--threads``, the same on every command that steps the env (see :mod:`arena.threads`)."""
    from arena.threads import HELP, MAX_THREADS

    return click.option("--threads", type=click.IntRange(0, MAX_THREADS), default=None, help=HELP)(fn)


def set_threads(threads: int | None, batch: int | None = None) -> None:
    """Apply ``--threads`` (or the default for ``batch`` envs), turning a bad value into one line."""
    from arena.threads import ThreadsError, apply_threads

    try:
        apply_threads(threads, batch)
    except ThreadsError as exc:
        raise ArenaError(str(exc)) from None


class SeedType(click.ParamType):
    """``--seed``: an integer in [0, MAX_SEED], refused in the words a league file's or a trainer's seed is
    (:data:`arena.seeds.SEED_RANGE`)."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            seed: int | None = value
        else:
            try:
                seed = int(str(value), 10)
            except ValueError:
                seed = None
        if seed is None or not 0 <= seed <= MAX_SEED:
            self.fail(f"{value!r}: expected {SEED_RANGE}", param, ctx)
        return seed


SEED = SeedType()


_json_out: list[list[str]] = []  # what each running --json command prints on its real stdout when it ends


def echo_json(data: Any) -> None:
    emit(json.dumps(data, indent=2, default=str))


def emit(text: str) -> None:
    """Print a command's result on stdout: during a ``--json`` command, on its real stdout once its work is
    done (:func:`json_only_stdout`), whatever it printed meanwhile having gone to stderr."""
    if _json_out:
        _json_out[-1].append(text)
    else:
        click.echo(text)


def _flush(stream: Any) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):  # a closed or broken stream
        pass


@contextmanager
def json_only_stdout() -> Iterator[None]:
    """While a ``--json`` command works, whatever anything prints on stdout goes to stderr: an agent's
    ``print`` (``sys.stdout``), and where stdout is a file descriptor, what a library or a child process
    writes to it (the descriptor itself points at stderr's meanwhile). What :func:`emit` was given is
    printed on the real stdout at the end, so that stdout holds the JSON and nothing else."""
    out, err = sys.stdout, sys.stderr
    pending: list[str] = []
    saved: tuple[int, int] | None = None
    try:
        out_fd, err_fd = out.fileno(), err.fileno()
    except (AttributeError, OSError, ValueError):  # not a file descriptor (a test's capture): sys.stdout only
        out_fd = err_fd = -1
    _flush(out)
    if out_fd >= 0 and out_fd != err_fd:
        try:
            saved = (out_fd, os.dup(out_fd))
            os.dup2(err_fd, out_fd)
        except OSError:
            saved = None
    _json_out.append(pending)
    try:
        with redirect_stdout(err):
            yield
    finally:
        _json_out.pop()
        _flush(out)
        _flush(err)
        if saved is not None:
            os.dup2(saved[1], saved[0])
            os.close(saved[1])
        for text in pending:
            click.echo(text)


class ArenaCommand(click.Command):
    """A command of ``arena``: with ``--json`` (or ``--format json``) its JSON is the only thing on stdout
    (:func:`json_only_stdout`)."""

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.params.get("as_json") is True or ctx.params.get("fmt") == "json":
            with json_only_stdout():
                return super().invoke(ctx)
        return super().invoke(ctx)


class ArenaGroup(click.Group):
    """The ``arena`` group: built-in commands plus those plugins add through ``arena_commands``.

    Plugins are asked only for a name that is not built in, or when the commands are listed, so a
    built-in command never waits for them.
    """

    plugins_loaded = False
    command_class = ArenaCommand

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The program's entry point (not a test's ``CliRunner``, which calls ``main``): a process that
        gave up on a hung agent move, or ran torch.distributed, ends without the interpreter's shutdown
        (``arena.guard.end_process``)."""
        try:
            return self.main(*args, **kwargs)
        except SystemExit as exc:
            from arena.guard import end_process, skips_shutdown

            if skips_shutdown():
                end_process(exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
            raise

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Count the user's Ctrl-C from the very start (plugins load while parsing), so that an agent or
        plugin raising KeyboardInterrupt itself is blamed instead of being obeyed (see arena.guard)."""
        from arena.guard import install_sigint_counter

        restore = install_sigint_counter()
        try:
            return super().main(*args, **kwargs)
        finally:
            restore()

    def load_plugin_commands(self) -> None:
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        from arena.plugins import PluginError, get_host

        try:
            get_host().collect("arena_commands", cli=self)
        except PluginError as exc:  # ARENA_STRICT_PLUGINS=1
            raise ArenaError(str(exc)) from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self.load_plugin_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugin_commands()
        return super().list_commands(ctx)


@click.group(cls=ArenaGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="arena")
def main() -> None:
    """Arena: train and rate agents in vectorized air combat, 1 v 1 up to 8 v 8.

    \b
      arena train ppo --vs crank                 train PPO against CrankAgent
      arena play crank placeholder --games 1000  a batch of battles between two agents
      arena tournament tournaments/league.yaml   rate a league; leaderboard + CSV
      arena agents                               what the installed plugins provide
    """
    if os.environ.get("ARENA_COMPILE"):  # a bad value is one line here, not a traceback in the first env
        from arena.env.compiled import CompileSettingError, compile_setting

        try:
            compile_setting()
        except CompileSettingError as exc:
            raise ArenaError(str(exc)) from None


@main.command("env-info")
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:N or auto.")
@click.option("--obs-mode", type=click.Choice(["default", "extended"]), default="default", show_default=True)
@click.option("--num-envs", type=click.IntRange(1), default=16384, show_default=True,
              help="The batch whose step path to report (compiled or eager; ARENA_COMPILE chooses).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def env_info(device: str, obs_mode: ObsMode, num_envs: int, as_json: bool) -> None:
    """Print the environment's constants, the device, how a step runs and the observation keys."""
    from dataclasses import asdict

    from arena.env import EnvConfig, TensorEnv
    from arena.env.compiled import resolve_compile

    try:
        env = TensorEnv(1, device=device_option(device), config=EnvConfig(obs_mode=obs_mode), compile=False)
        compiled, reason = resolve_compile(None, env.device, num_envs)
    except ValueError as exc:
        raise ArenaError(str(exc)) from exc
    cfg = asdict(env.config)
    path = "compiled" if compiled else f"eager ({reason})"
    info = {
        "device": str(env.device),
        "step": {"num_envs": num_envs, "compiled": compiled, "path": path},
        "config": cfg,
        "obs_keys": list(env.obs_keys),
        "global_state_size": env.global_state_size,
        "max_steps": env.config.max_steps,
    }
    if as_json:
        echo_json(info)
        return
    click.echo(f"device: {info['device']}")
    click.echo(f"step ({num_envs:,} envs): {path}")
    click.echo(f"observation ({len(env.obs_keys)}): {', '.join(env.obs_keys)}")
    click.echo(f"global state size: {info['global_state_size']}   decision steps per episode: {info['max_steps']}")
    click.echo("EnvConfig:")
    for key, value in cfg.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                click.echo(f"  {key}.{sub:<24} {v}")
        else:
            click.echo(f"  {key:<31} {value}")


# -- agents and matches ------------------------------------------------------------------------------


@main.command("agents")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def agents(as_json: bool) -> None:
    """List every agent, trainer and reward function the installed plugins provide, with the
    distribution that provides it, and every plugin that failed to load."""
    from arena.agents import catalog
    from arena.plugins import PluginError, strict_mode

    try:
        cat = catalog()
    except PluginError as exc:  # ARENA_STRICT_PLUGINS=1
        raise ArenaError(str(exc)) from None
    if as_json:
        kinds = {"agent": "agents", "trainer": "trainers", "reward": "rewards"}
        data: dict[str, Any] = {key: [] for key in kinds.values()}
        for row in cat.rows:
            data[kinds[row.kind]].append({"name": row.name, "aliases": list(row.aliases),
                                          "distribution": row.distribution, "version": row.version,
                                          "description": row.description})
        data["broken"] = [{"plugin": b.name, "module": b.module, "distribution": b.distribution, "version": b.version,
                           "error": b.error} for b in cat.broken]
        data["problems"] = cat.problems
        echo_json(data)
        if cat.problems and strict_mode():
            raise click.exceptions.Exit(2)
        return
    for kind, title in (("agent", "Agents"), ("trainer", "Trainers"), ("reward", "Reward functions")):
        rows = [r for r in cat.rows if r.kind == kind]
        click.echo(f"{title}:")
        if not rows:
            click.echo("  (none installed)")
        width = max((len(r.name + (f" ({', '.join(r.aliases)})" if r.aliases else "")) for r in rows), default=0)
        src_width = max((len(f"{r.distribution} {r.version}") for r in rows), default=0)
        for r in rows:
            label = r.name + (f" ({', '.join(r.aliases)})" if r.aliases else "")
            click.echo(f"  {label:<{width}}  {r.distribution + ' ' + r.version:<{src_width}}  {r.description}".rstrip())
    if cat.broken:
        click.echo("Broken plugins (skipped):")
        for b in cat.broken:
            click.echo(f"  {b.distribution} {b.version} ({b.name} = {b.module}): {b.error}")
    for problem in cat.problems:
        click.echo(f"error: {problem}", err=True)
    if cat.problems and strict_mode():
        raise ArenaError(f"ARENA_STRICT_PLUGINS: {len(cat.problems)} plugin problem(s), first: {cat.problems[0]}")


def parse_env_overrides(items: tuple[str, ...], team_size: int | None = None) -> tuple["EnvConfig", set[str]]:
    """``KEY=VALUE`` pairs (``reward.win=2`` for nested fields) into a validated EnvConfig, and the fields
    the user set (a checkpoint fills only the rest); ``team_size`` (``--team-size``) wins over an
    ``--env team_size=`` given as well."""
    from arena.env import EnvConfig
    from arena.yaml_file import load_yaml_value

    data: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ArenaError(f"--env {item!r}: expected KEY=VALUE, e.g. --env max_time=120")
        try:
            value = load_yaml_value(raw)
        except ValueError as exc:  # YAML, but not a usable value: a key twice, nested too deep
            raise ArenaError(f"--env {item!r}: {exc}") from None
        head, _, sub = key.strip().partition(".")
        if sub:
            if not isinstance(data.setdefault(head, {}), dict):
                raise ArenaError(f"--env {item!r}: {head} was already set to {data[head]!r}, not a mapping")
            data[head][sub] = value
        else:
            data[head] = value
    if team_size is not None:
        data["team_size"] = team_size
    try:
        return EnvConfig.from_dict(data), set(data)
    except (ValueError, TypeError) as exc:
        raise ArenaError(f"--env: {exc}") from None


PLAY_KEYS: tuple[str, ...] = (*RESULT_KEYS, "team_size", "seed", "device", "policy")  # `arena play --json`


def battle_settings(env_config: "EnvConfig", seed: int, dev: "torch.device", policy: str) -> dict[str, Any]:
    """How the battles were set up, beside their results in ``--json``: enough to play them again."""
    return {"team_size": env_config.team_size, "seed": seed, "device": str(dev), "policy": policy}


def battle_options(fn: Any) -> Any:
    """``--device``, ``--seed``, ``--team-size``, ``--env`` and ``--policy``: the battles of `arena play` and
    `arena replay`."""
    for option in reversed((
        click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:N or auto."),
        click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the battles' spawn positions."),
        click.option("--team-size", type=click.IntRange(1, 8), default=None,
                     help="Aircraft a side (team battles): each agent flies every seat of its side  "
                          "[default: a team checkpoint's own, else 1]"),
        click.option("--env", "env_overrides", multiple=True, metavar="KEY=VALUE",
                     help="Override an EnvConfig field, e.g. --env max_time=120 (repeatable; see `arena env-info`)."),
        click.option("--policy", type=click.Choice(POLICIES), default="deterministic", show_default=True,
                     help="How trained policies play: their most likely action, or sampled as in training (how "
                          "tournaments and training's evaluations rate checkpoints by default)."),
    )):
        fn = option(fn)
    return fn


@main.command("play")
@click.argument("agent_a", metavar="A")
@click.argument("agent_b", metavar="B")
@click.option("--games", "-n", type=click.IntRange(1, MAX_GAMES), default=1000, show_default=True,
              help="Battles to play, all in one batch; A flies p1 in half of them and p2 in the rest.")
@battle_options
@click.option("--json", "as_json", is_flag=True, help=f"Print one JSON object: {', '.join(PLAY_KEYS)}.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@threads_option
def play(agent_a: str, agent_b: str, games: int, device: str, seed: int, team_size: int | None,
         env_overrides: tuple[str, ...], policy: str, as_json: bool, quiet: bool, threads: int | None) -> None:
    """Play A against B and count A's wins, draws and losses.

    A and B are agent names (`arena agents`), NAME:CHECKPOINT, or a checkpoint file (the file
    names its agent). With --team-size T each side is a team of T aircraft; an agent that flies
    single aircraft (CrankAgent, the placeholder, a 1-v-1 checkpoint) flies every seat of its team.
    A team checkpoint plays in its own team size and every checkpoint reads the observation it was
    trained on, unless --team-size or --env obs_mode=... say otherwise:

    \b
      arena play crank placeholder --games 1000
      arena play ppo:runs/a/ckpt_000500000.pt crank --json
      arena play crank placeholder --team-size 4
    """
    from arena.errors import is_out_of_memory
    from arena.match import AgentFailure, play_match

    env_config, given = parse_env_overrides(env_overrides, team_size)
    set_threads(threads, batch=games)
    dev = device_option(device)
    a, b, env_config = build_pair(agent_a, agent_b, dev, env_config, given)
    try:
        result = play_match(a, b, games, env_config=env_config, device=dev, seed=seed, name_a=agent_a,
                            name_b=agent_b, progress=not quiet, policies=(policy, policy))
    except AgentFailure as exc:
        raise ArenaError(str(exc)) from None
    except (MemoryError, RuntimeError) as exc:  # the batch does not fit (torch raises RuntimeError subclasses)
        if not is_out_of_memory(exc):
            raise
        raise ArenaError(f"--games {games:,}: not enough memory on {dev} for one batch of that size; "
                         f"play fewer games") from None
    if as_json:
        echo_json({**result.to_dict(), **battle_settings(env_config, seed, dev, policy)})
        return
    n = result.games
    size = env_config.team_size
    kind = f"{size}-v-{size} " if size > 1 else ""
    sampled = ", policies sampled" if policy == "sampled" else ""
    click.echo(f"{result.a} vs {result.b}: {n:,} {kind}games on {dev}, seed {seed}{sampled}")
    click.echo(f"  {result.a}: {result.wins:,} wins ({result.wins / n:.1%}), {result.draws:,} draws "
               f"({result.draws / n:.1%}), {result.losses:,} losses ({result.losses / n:.1%}); "
               f"score {result.score:.3f}")
    click.echo(f"  mean length {result.mean_length:.1f} steps; {result.games_per_second:,.0f} games/s")


def build_pair(agent_a: str, agent_b: str, dev: "torch.device", env_config: "EnvConfig",
               given: set[str]) -> tuple[Any, Any, "EnvConfig"]:
    """The two agents of ``arena play``/``arena replay`` and the battles' EnvConfig.

    What the user did not set comes from the checkpoints: the team size of a team checkpoint (a MAPPO
    team plays only its own), and each checkpoint's observation mode for that agent alone. A learner
    given no checkpoint gets a note: it would play untrained weights.
    """
    from arena.agents import (
        AgentSpecError,
        DuplicateNameError,
        TeamSizeConflict,
        build_agent,
        parse_spec,
        team_size_for,
        trained_for,
        with_obs_mode,
    )
    from arena.plugins import PluginError

    specs = (agent_a, agent_b)
    trained = [trained_for(path) if (path := spec_checkpoint(spec)) else None for spec in specs]
    if "team_size" not in given:
        try:
            size = team_size_for(trained)
        except TeamSizeConflict as exc:
            raise ArenaError(f"{exc}; choose one with --team-size") from None
        if size is not None:
            env_config = with_team_size(env_config, size)
    configs = [env_config if "obs_mode" in given else with_obs_mode(env_config, t) for t in trained]
    try:
        a, b = (build_agent(spec, dev, cfg) for spec, cfg in zip(specs, configs))
    except (AgentSpecError, DuplicateNameError, PluginError) as exc:
        raise ArenaError(str(exc)) from None
    for spec, agent in ((agent_a, a), (agent_b, b)):
        if callable(getattr(agent, "load", None)) and parse_spec(spec)[1] is None:
            click.echo(f"note: {spec!r} names a learning agent without a checkpoint: it plays freshly "
                       f"initialised weights (use {spec}:PATH)", err=True)
    return a, b, env_config


def spec_checkpoint(spec: str) -> str | None:
    """The checkpoint file an agent spec names, if any (a malformed spec is reported when it is built)."""
    from arena.agents import AgentSpecError, parse_spec

    try:
        return parse_spec(spec)[1]
    except AgentSpecError:
        return None


def with_team_size(env_config: "EnvConfig", size: int) -> "EnvConfig":
    """``env_config`` in teams of ``size``, checked again: the team size also bounds the formation."""
    from arena.env import EnvConfig

    try:
        return EnvConfig.from_dict({**env_config.to_dict(), "team_size": size})
    except (ValueError, TypeError) as exc:
        raise ArenaError(f"--env: {exc} (in the checkpoint's teams of {size}; --team-size sets another)") from None


@main.command("replay")
@click.argument("agent_a", metavar="A")
@click.argument("agent_b", metavar="B")
@click.option("--games", "-n", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Battles to play and record; A flies p1 in the first half and p2 in the rest.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="replays", show_default=True,
              help="Folder for battle-N.acmi and battle-N.html (created).")
@click.option("--gif", is_flag=True, help="Also write battle-N.gif, an animation drawn with matplotlib (and Pillow).")
@battle_options
@click.option("--json", "as_json", is_flag=True, help=f"Print one JSON object: {', '.join(PLAY_KEYS)}, out and "
              f"battles (each: battle, blue, red, steps, winner, winner_side, outcome, files).")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@threads_option
def replay(agent_a: str, agent_b: str, games: int, out_dir: str, gif: bool, device: str, seed: int,
           team_size: int | None, env_overrides: tuple[str, ...], policy: str, as_json: bool, quiet: bool,
           threads: int | None) -> None:
    """Play A against B, record every battle and write it for watching.

    Each battle becomes battle-N.acmi (Tacview) and battle-N.html, a self-contained page that plays
    the battle in any browser, offline. The battles are the ones `arena play` with the same seed plays:
    recording only watches.

    \b
      arena replay crank placeholder --out runs/replays
      arena replay runs/demo/best.pt crank --games 4 --gif --out runs/replays
    """
    from pathlib import Path

    from arena.match import AgentFailure
    from arena.replay import record_match, save_battle
    from arena.replay.gif import missing_gif_packages

    if gif and (missing := missing_gif_packages()):  # before anything is played or written
        raise ArenaError(f"--gif needs {' and '.join(missing)}, which cannot be imported here: "
                         f"pip install {' '.join(missing)} (or leave out --gif)")
    env_config, given = parse_env_overrides(env_overrides, team_size)
    set_threads(threads, batch=games)
    dev = device_option(device)
    try:  # before playing: a folder that cannot be written is found before the work is done
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArenaError(f"--out {out_dir}: cannot write there ({exc.strerror or exc})") from None
    a, b, env_config = build_pair(agent_a, agent_b, dev, env_config, given)
    try:
        result, battles = record_match(a, b, games, env_config=env_config, name_a=agent_a, name_b=agent_b,
                                       device=dev, seed=seed, progress=not quiet, policies=(policy, policy))
    except AgentFailure as exc:
        raise ArenaError(str(exc)) from None
    rows = []
    try:
        for n, battle in enumerate(battles, 1):
            rows.append(battle_row(n, save_battle(battle, out_dir, f"battle-{n}", gif=gif)))
            if not as_json:
                click.echo(battle_line(rows[-1]))
    except OSError as exc:
        raise ArenaError(f"{exc.filename or out_dir}: cannot write ({exc.strerror or exc})") from None
    if as_json:
        echo_json({**result.to_dict(), **battle_settings(env_config, seed, dev, policy), "out": out_dir,
                   "battles": rows})
        return
    click.echo(f"{result.a}: {result.wins} wins, {result.draws} draws, {result.losses} losses; open the .html "
               f"files in a browser, or the .acmi files in Tacview")


def battle_row(n: int, files: "ReplayFiles") -> dict[str, Any]:
    """One recorded battle as ``arena replay --json`` lists it; ``winner`` is None for a draw."""
    from arena.replay.events import outcome_text

    battle = files.battle
    side = {1: "blue", 2: "red"}.get(battle.winner)  # None: a draw
    return {"battle": n, "blue": battle.meta.p1, "red": battle.meta.p2, "steps": battle.length,
            "winner": {"blue": battle.meta.p1, "red": battle.meta.p2}.get(side or ""), "winner_side": side,
            "outcome": outcome_text(battle),
            "files": {kind: str(path) if path is not None else None
                      for kind, path in (("acmi", files.acmi), ("html", files.html), ("gif", files.gif))}}


def battle_line(row: dict[str, Any]) -> str:
    """The line ``arena replay`` prints for one battle."""
    return (f"battle {row['battle']}: {row['blue']} (Blue) v {row['red']} (Red), {row['steps']} steps, "
            f"{row['outcome']} -> {', '.join(path for path in row['files'].values() if path)}")


@main.command("export")
@click.argument("checkpoint", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["onnx", "torchscript"]), default="onnx", show_default=True)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), required=True,
              help="The file to write; never a checkpoint (a file torch.save wrote, or one named ckpt_<step>.pt).")
@click.option("--no-check", is_flag=True, help="Skip running the file against the agent on 10,000 observations.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: input, output, format, obs_keys, "
              "checked, and the check's measurements.")
def export(checkpoint: str, fmt: str, out_file: str, no_check: bool, as_json: bool) -> None:
    """Export a checkpoint's deterministic policy (normalizer included) as ONNX or TorchScript.

    The file takes ``obs`` [n, K] (the observation keys in the order printed) and returns ``action``
    [n, 3] (rudder, throttle, fire as 0/1: fire when p > 0.5) and ``fire_logit`` [n]. It is then run
    on 10,000 random observations (onnxruntime for ONNX) and compared with the agent itself; the file
    takes its name only once written and checked, so a failed export leaves none.

    \b
      arena export runs/demo/best.pt --out runs/demo/policy.onnx
      arena export runs/demo/best.pt --format torchscript --out runs/demo/policy.pt
    """
    from arena.agents import AgentSpecError, build_agent, parse_spec
    from arena.export import ExportError, export_policy, refuse_output
    from arena.plugins import PluginError

    try:
        _, source = parse_spec(checkpoint)
    except AgentSpecError as exc:
        raise ArenaError(str(exc)) from None
    try:
        refuse_output(out_file, source)  # before any loading: the answer does not depend on the agent
        agent = build_agent(checkpoint, "cpu")
    except (AgentSpecError, PluginError, ExportError) as exc:
        raise ArenaError(str(exc)) from None
    try:
        done = export_policy(agent, fmt, out_file, source=source, verify=not no_check)
    except ExportError as exc:
        raise ArenaError(f"{checkpoint}: {exc}") from None
    except OSError as exc:
        raise ArenaError(f"{exc.filename or out_file}: cannot write ({exc.strerror or exc})") from None
    if as_json:
        echo_json(done.to_dict(checkpoint))
        return
    keys = done.obs_keys
    click.echo(f"wrote {done.path} ({fmt}): input obs [n, {len(keys)}] = {', '.join(keys)}; outputs action [n, 3] "
               f"(rudder, throttle, fire) and fire_logit [n]")
    if done.check is not None:
        click.echo(f"checked on {done.check.samples:,} random observations with {done.check.runtime}: max |rudder "
                   f"difference| {done.check.max_rudder_diff:.2e}, fire decisions that differ "
                   f"{done.check.fire_mismatches}")


def device_option(device: str) -> "torch.device":
    """``--device`` through the one resolver (arena.env.resolve_device), its error blamed on the option."""
    from arena.env import resolve_device

    try:
        return resolve_device(device)
    except ValueError as exc:
        raise ArenaError(f"--device: {exc}") from None


class TrainerGroup(click.Group):
    """``arena train NAME``: one sub-command per trainer plugin, looked up only when asked for.

    Trainers come from the ``arena_trainers`` hook; each class builds its own ``click.Command`` with
    its own options, so a new trainer plugin needs no change here.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        from arena.agents import trainer_registry

        return trainer_registry().names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from arena.agents import UnknownNameError, describe, trainer_registry

        try:
            entry = trainer_registry().entry(cmd_name)
        except UnknownNameError as exc:
            raise ArenaError(str(exc)) from None
        make = getattr(entry.obj, "command", None)
        command = make() if callable(make) else None
        if not isinstance(command, click.Command):
            raise ArenaError(f"trainer {entry.name!r} from {describe(entry)} cannot be run: expected a command() "
                             f"classmethod that returns a click.Command, got {command!r}")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List trainers by their one-line ``help`` without building their commands."""
        from arena.agents import trainer_registry

        registry = trainer_registry()
        rows = [(name, str(getattr(registry.get(name), "help", ""))) for name in registry.names()]
        with formatter.section("Trainers"):
            none = ("(none)", "no trainer plugin is installed (pip install -e plugins/arena-ppo)")
            formatter.write_dl(rows or [none])


@main.group("train", cls=TrainerGroup)
def train() -> None:
    """Train an agent with a trainer plugin; `arena train NAME --help` lists its options."""


# -- tournaments -------------------------------------------------------------------------------------


_stop_signal = [2]  # the signal that ended the tournament (SIGINT until another): the exit status is 128 + it


def _raise_interrupt(signum: int, frame: Any) -> None:
    """SIGTERM or SIGHUP, taken as Ctrl-C is: the games played so far are stored, then the process ends."""
    import signal

    from arena.guard import note_interrupt

    if signum == getattr(signal, "SIGHUP", None):
        from arena.training.interrupt import silence_terminal

        silence_terminal()
    _stop_signal[0] = signum
    note_interrupt()
    raise KeyboardInterrupt


@main.command("tournament")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--fresh", is_flag=True, help="Delete the stored results first and play everything again.")
@click.option("--retry-forfeits", is_flag=True,
              help="Delete the stored forfeits of this league's participants first and play those games again "
                   "(after fixing a participant, or a failure that was transient).")
@click.option("--device", default=None, help="Override the file's device: cpu, cuda, cuda:N or auto.")
@click.option("--replays", type=click.IntRange(0, 16), default=None,
              help="Override the file's `replays`: notable games to record per pairing (upsets, the longest, the "
                   "shortest), linked from report.md.")
@click.option("--ray", "ray_address", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
              help="Play the batches as Ray tasks (extra agent-arena[ray]): on the cluster at ADDRESS (auto, "
                   "HOST:PORT, ray://HOST:PORT), else at $RAY_ADDRESS, else on a local Ray using this machine's "
                   "cores. Same games, same leaderboard. See docs/scaling.md.")
@click.option("--ray-retries", type=click.IntRange(0, 100), default=3, show_default=True,
              help="With --ray: times a batch whose worker or node died is run again.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@threads_option
def tournament(file: str, fresh: bool, retry_forfeits: bool, device: str | None, replays: int | None,
               ray_address: str | None, ray_retries: int, as_json: bool, quiet: bool, threads: int | None) -> None:
    """Play the league in FILE (YAML), rate it and write reports.

    Results go to results.sqlite in the file's output directory; running the same command again plays
    only the games that are missing (after Ctrl-C, a crash or a kill). See docs/tournaments.md.
    """
    import signal

    from arena.tournament import ConfigError, StoreError, load_config, run_tournament
    from arena.tournament.ray_backend import RayError, RaySettings
    from arena.tournament.report import render

    try:
        config = load_config(file).with_device(device).with_replays(replays)
    except ConfigError as exc:
        raise ArenaError(str(exc)) from None
    if device is not None:  # checked here so that the message blames the option, not the file's key
        from arena.env import DeviceUnavailableError, resolve_device

        try:
            resolve_device(device)
        except ValueError as exc:
            if ray_address is None or not isinstance(exc, DeviceUnavailableError):  # Ray workers may have GPUs
                raise ArenaError(f"--device: {exc}") from None
    for warning in config.warnings:
        click.echo(f"warning: {warning}", err=True)
    set_threads(threads, batch=config.max_envs)
    from arena.training.interrupt import stop_signals

    # a kill or a closed terminal flushes stored games as Ctrl-C does
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in stop_signals() if sig != signal.SIGINT}
    _stop_signal[0] = signal.SIGINT
    try:
        ray = RaySettings(ray_address or None, ray_retries) if ray_address is not None else None
        report = run_tournament(config, fresh=fresh, retry_forfeits=retry_forfeits, progress=not quiet, ray=ray)
    except (ConfigError, StoreError, RayError) as exc:
        raise ArenaError(str(exc)) from None
    except OSError as exc:  # a checkpoint that cannot be read, a report that cannot be written
        raise ArenaError(f"{exc.filename or config.output}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished games are stored in {config.output}; run the same command again "
                   f"to play the rest", err=True)
        raise SystemExit(128 + _stop_signal[0]) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    emit(render(report, "json" if as_json else "table"))


@main.command("leaderboard")
@click.argument("directory", type=click.Path(exists=True))
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="Also write the leaderboard CSV to this file.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "markdown", "json"]), default="table",
              show_default=True, help="How to print the leaderboard.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
def leaderboard(directory: str, csv_path: str | None, fmt: str, as_json: bool) -> None:
    """Rebuild the reports in DIRECTORY (a tournament's output, or its YAML file) from the stored games,
    without playing, and print the leaderboard. Given the YAML file, its rating section applies as the
    file has it now (rank_by, bootstrap_rounds, ...). The database is only read, never written."""
    import sqlite3
    from pathlib import Path

    from arena.tournament import ConfigError, StoreError, load_config, rebuild_report
    from arena.tournament.report import render

    target = Path(directory)
    rating = None  # a league file's rating settings apply as the file now has them: they change no game
    try:
        if target.is_file() and target.suffix in (".yaml", ".yml"):
            config = load_config(target)
            target, rating = config.output, config.rating
        elif target.is_file() and target.suffix != ".sqlite":
            raise ArenaError(f"{target}: expected a tournament's output directory, its results.sqlite or its "
                             f"YAML file")
        report = rebuild_report(target, rating=rating)
        if csv_path:
            from arena.output_files import staged

            with staged(csv_path) as temp:  # written whole, replacing a link there, never through it
                report.leaderboard.to_csv(temp, index=False)
    except (ConfigError, StoreError) as exc:
        raise ArenaError(str(exc)) from None
    except sqlite3.Error as exc:  # checked when opened; a tournament checkpointing into it meanwhile
        raise ArenaError(f"{target}: cannot read the results database ({exc}); it is unchanged: run the command "
                         f"again") from None
    except OSError as exc:
        raise ArenaError(f"{exc.filename or csv_path or target}: cannot write ({exc.strerror or exc})") from None
    emit(render(report, "json" if as_json else fmt))
