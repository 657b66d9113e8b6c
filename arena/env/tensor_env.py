"""TensorEnv: thousands of air battles, 1-v-1 or team against team, stepped at once as batched tensors."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import torch

from arena.env.actions import validate_action
from arena.env.compiled import StepRunner, resolve_compile
from arena.env.config import EnvConfig, env_config_of
from arena.env.devices import resolve_device
from arena.env.observations import PLAYERS, Observation, global_state, global_state_size, obs_keys, observe_sides
from arena.env.selection import check_num_envs, env_indices
from arena.env.spawn import sample_spawn, seeded_spawn, seeded_spawn_uniforms, spawn_uniforms
from arena.env.state import WorldState
from arena.env.step import StepPlan, restart_battles
from arena.env.teams import side_view
from arena.seeds import check_seed
from arena.threads import note_torch_default, settle_threads

note_torch_default()  # torch's own count, before anyone in arena sets one

Obs = dict[str, Observation]


class TensorEnv:
    """A batch of ``num_envs`` independent battles between the sides p1 and p2.

    Each side flies ``config.team_size`` aircraft (T). In a duel (T = 1) every per-side tensor is
    [N]; in a team battle it is [N, T], one column per seat. Finished battles are reset in place
    (auto-reset), and everything a trainer needs about them — who won, the last observation, episode
    statistics — comes back as tensors in ``infos``, so on a GPU ``step`` never waits for the host.

    ``compile`` runs the step as one compiled graph (:mod:`arena.env.compiled`): True, False, or None
    for ``ARENA_COMPILE`` and else the default, which compiles large batches on a GPU; the words
    ``ARENA_COMPILE`` takes (``"auto"``, ``"0"``, ``"off"``, ...) mean the same here, anything else is
    refused. ``seed`` is an integer in [0, 2**63 - 1] (:func:`arena.seeds.check_seed`), here and in
    :meth:`reset`.
    """

    def __init__(self, num_envs: int, device: str | torch.device | None = "cpu", seed: int = 0,
                 config: EnvConfig | None = None, packed_missiles: bool | None = None,
                 final_global_state: bool | str = False, compile: bool | str | None = None) -> None:
        num_envs = check_num_envs(num_envs)
        seed = check_seed(seed)
        config = env_config_of(config, "config")
        self.num_envs = num_envs
        self.device = resolve_device(device)
        if self.device.type == "cpu":
            settle_threads(num_envs)  # whoever imported torch first, unless a count was chosen
        self.config = config
        self.obs_keys = obs_keys(self.config)
        # Also hand back the global state before auto-reset: privileged critics bootstrap time-outs from it.
        # A player's name asks for that side's alone (a learner's critic): each is a fifth of a CPU step or more.
        self.final_global_state: tuple[str, ...]
        if final_global_state is True or final_global_state is False:
            self.final_global_state = tuple(PLAYERS) if final_global_state else ()
        elif final_global_state in PLAYERS:
            self.final_global_state = (final_global_state,)
        else:
            raise ValueError(f"final_global_state: expected True, False or one of {', '.join(PLAYERS)}, "
                             f"got {final_global_state!r}")
        self.compiled, self.eager_reason = resolve_compile(compile, self.device, num_envs)
        if self.compiled and packed_missiles:
            raise ValueError("packed_missiles lists the missiles in flight, a shape that changes every step; "
                             "a compiled step needs the dense layout (packed_missiles=False or None)")
        # Integrate only the missiles in flight: a win on the CPU; on a GPU it would cost a host sync.
        if packed_missiles is None:
            packed_missiles = self.device.type == "cpu" and not self.compiled
        self.packed_missiles = packed_missiles  # may change between steps (a test watching the GPU's layout)
        self.generator = torch.Generator(device=self.device)
        self.seed = seed
        self.generator.manual_seed(seed)
        self.team_size = self.config.team_size
        self.state = WorldState.empty(num_envs, self.config.missiles, self.device, self.team_size)
        zeros = torch.zeros(num_envs, self.config.aircraft, device=self.device)
        self._ep_return = zeros.clone()
        self._ep_missiles = zeros.clone()
        self._ep_kills = zeros.clone()
        self._has_reset = False
        # The CPU's spawn draws from game seeds, kept while the seeds stay the same (a tournament batch
        # changes a few of them when games end; hashing every env's seed each step cost 7 % of a league).
        self._seeded: tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor | None]] | None = None
        self.game_seeds: torch.Tensor | None = None  # [N] per-env start seeds (reset(game_seeds=...)), else None
        # Envs whose last state before auto-reset ``step`` hands back (replay recorders); None: none, no cost.
        self.watched: torch.Tensor | None = None
        # by (whether battles are watched, the missile layout): the two things that change after construction
        self._runners: dict[tuple[bool, bool], StepRunner] = {}

    # -- public API -------------------------------------------------------------------------------

    @property
    def step_path(self) -> str:
        """How ``step`` runs: "compiled" (one graph) or "eager (<why>)"."""
        if self.compiled and self._runner().compiled:
            return "compiled"
        return f"eager ({self.eager_reason or self._runner().failure or 'the compiler failed'})"

    @property
    def obs_size(self) -> int:
        return len(self.obs_keys)

    @property
    def global_state_size(self) -> int:
        return global_state_size(self.config)

    def reset(self, seed: int | None = None, game_seeds: torch.Tensor | None = None) -> Obs:
        """Start a new episode in every env; ``seed`` reseeds the env's generator first.

        With ``game_seeds`` ([N] int64) every env starts from its own seed instead of the generator,
        and keeps doing so at auto-reset with whatever :attr:`game_seeds` holds then: a caller that
        knows which game each env plays next sets its seed there, and every game's start depends on
        its seed alone (tournaments replay a game, and mirror a pairing's starts, this way).
        """
        if seed is not None:
            self.seed = check_seed(seed)
            self.generator.manual_seed(self.seed)
        if game_seeds is not None:
            if tuple(game_seeds.shape) != (self.num_envs,):
                raise ValueError(f"game_seeds: expected shape [{self.num_envs}], got {list(game_seeds.shape)}")
            self.game_seeds = game_seeds.to(self.device, torch.int64).clone()
            self.state = seeded_spawn(self.config, self.game_seeds, self.device)
        else:
            self.game_seeds = None
            self.state = sample_spawn(self.config, self.num_envs, self.generator, self.device)
        self._ep_return.zero_()
        self._ep_missiles.zero_()
        self._ep_kills.zero_()
        self._has_reset = True
        return self.observe()

    def observe(self) -> Obs:
        return observe_sides(self.state, self.config)

    def global_state(self, player: str) -> torch.Tensor:
        """[N, S] privileged state from ``player``'s side ("p1" or "p2"), for centralised critics."""
        if player not in PLAYERS:
            raise ValueError(f"player must be 'p1' or 'p2', got {player!r}")
        return global_state(self.state, self.config, PLAYERS.index(player))

    def step(self, action_p1: dict[str, torch.Tensor], action_p2: dict[str, torch.Tensor]
             ) -> tuple[Obs, dict[str, torch.Tensor], torch.Tensor, dict[str, Any]]:
        """Advance every battle by one decision step of ``config.dt`` seconds.

        Each action maps ``rudder``, ``throttle`` and ``fire`` to [N] (duel) or [N, T] (a column per
        seat); a dead aircraft's action is ignored. Returns ``(obs, rewards, dones, infos)``. For envs
        where ``dones`` is set, ``obs`` is already the first observation of the next episode and
        ``infos["final_obs"]`` holds the last one (and ``infos["final_global_state"]`` the last global
        state, when the env was built to return it).

        A battle ends when a side has no aircraft left, or at the time limit, where the side with more
        aircraft alive wins (else a draw). Each aircraft's reward has the three standard parts, with
        win and loss from its side's outcome. ``infos["kills"]`` (enemies its missiles destroyed this
        step) and ``infos["deaths"]`` (it died this step) are per aircraft.
        """
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        t = self.team_size
        actions = (validate_action(action_p1, self.num_envs, self.device, "action_p1", t),
                   validate_action(action_p2, self.num_envs, self.device, "action_p2", t))
        totals = (self._ep_return, self._ep_missiles, self._ep_kills)
        out = self._runner()(self.state.as_tuple(), actions, self._spawn_uniforms(), totals)

        watched = None
        if self.watched is not None:
            watched = WorldState(*out["final_world"]).select(self.watched)
        self.state = WorldState(*out["world"])
        self._ep_return, self._ep_missiles, self._ep_kills = out["totals"]
        ep_return, length, missiles, kills = out["episode"]
        infos = {
            "terminated": out["terminated"],
            "truncated": out["truncated"],
            "winner": out["winner"],
            "final_obs": out["final_obs"],
            "episode": {"return": self._by_side(ep_return), "length": length,
                        "missiles_fired": self._by_side(missiles), "kills": self._by_side(kills)},
            "nan_actions": dict(zip(PLAYERS, out["nan_actions"])),
            "kills": self._by_side(out["kills"]),
            "deaths": self._by_side(out["deaths"]),
        }
        if "final_global_state" in out:
            infos["final_global_state"] = out["final_global_state"]
        if watched is not None:
            infos["watched_state"] = watched
        return out["obs"], self._by_side(out["reward"]), out["dones"], infos

    def watch(self, envs: torch.Tensor | None) -> None:
        """From now on ``step`` also returns ``infos["watched_state"]``: a copy of the battles ``envs``
        ([K] env indices) as they stood after the step and before auto-reset, the moment a finished
        battle is still visible. ``None`` stops it. Only those envs are copied, with no host sync."""
        if envs is None:
            self.watched = None
            return
        self.watched = env_indices(envs, self.num_envs, "watch").to(self.device)

    def restart_envs(self, envs: torch.Tensor, seeds: torch.Tensor | None = None) -> Obs:
        """Start battles ``envs`` ([K] env indices) over; returns the observation of every env.

        With ``seeds`` (an env reset with game_seeds) they start from those: a caller that learned
        after the auto-reset which game each plays next. Without, they start as an auto-reset would
        (from their game seeds, or from the env's generator): a trainer that gives those envs a new
        opponent abandons the battles in flight.
        """
        envs = env_indices(envs, self.num_envs, "restart_envs").to(self.device)
        if seeds is not None:
            if self.game_seeds is None:
                raise RuntimeError("restart_envs with seeds needs an env reset with game_seeds")
            self.game_seeds[envs] = seeds.to(self.device)
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[envs] = True
        self.restart_mask(mask)
        return self.observe()

    def restart_mask(self, mask: torch.Tensor) -> None:
        """Start the battles where ``mask`` ([N] bool) is set over, as an auto-reset would: with no host
        sync, so a caller on a GPU may pass a mask that no battle is set in."""
        wanted = f"restart_mask: expected a bool tensor of shape [{self.num_envs}]"
        if not isinstance(mask, torch.Tensor):
            raise ValueError(f"{wanted}, got {type(mask).__name__} {mask!r:.40}")
        if mask.is_meta:
            raise ValueError(f"{wanted}, got a tensor on the meta device (it holds no values)")
        if tuple(mask.shape) != (self.num_envs,) or mask.dtype != torch.bool:
            raise ValueError(f"{wanted}, got {mask.dtype} of shape {list(mask.shape)}")
        self._auto_reset(mask.to(self.device))

    def keep_envs(self, envs: torch.Tensor) -> Obs:
        """Keep only the battles ``envs`` ([K] increasing env indices), renumbered 0..K-1 in that order, and
        return their observation: a caller whose other battles are over stops paying for them. The
        battles kept go on exactly as they would have; watched envs must be among them. Not for a
        compiled step, whose graph has the batch size in it."""
        if self.compiled:
            raise RuntimeError("keep_envs: a compiled step has a fixed batch size")
        envs = env_indices(envs, self.num_envs, "keep_envs", increasing=True).to(self.device)
        position = torch.full((self.num_envs,), -1, dtype=torch.long, device=self.device)
        position[envs] = torch.arange(envs.numel(), device=self.device)
        if self.watched is not None:
            moved = position[self.watched]
            if bool((moved < 0).any()):
                raise ValueError("keep_envs: every watched env must be kept")
            self.watched = moved
        self.num_envs = int(envs.numel())
        self.state = self.state.select(envs)
        self._ep_return, self._ep_missiles, self._ep_kills = (
            self._ep_return[envs], self._ep_missiles[envs], self._ep_kills[envs])
        if self.game_seeds is not None:
            self.game_seeds = self.game_seeds[envs]
        return self.observe()

    def state_dict(self) -> dict[str, Any]:
        """Everything that decides the env's future: world state, generator and episode accumulators.

        Plain tensors only, so a checkpoint holding it loads with ``torch.load(..., weights_only=True)``;
        :meth:`load_state_dict` on an env of the same size and config continues bit for bit.
        """
        return {
            "num_envs": self.num_envs,
            "world": {f.name: getattr(self.state, f.name).clone() for f in fields(self.state)},
            "generator": self.generator.get_state(),
            "episode_return": self._ep_return.clone(),
            "episode_missiles": self._ep_missiles.clone(),
            "episode_kills": self._ep_kills.clone(),
        }

    def load_state_dict(self, data: dict[str, Any]) -> Obs:
        """Restore what :meth:`state_dict` saved; returns the current observation."""
        if int(data["num_envs"]) != self.num_envs:
            raise ValueError(f"env state is for {int(data['num_envs'])} envs; this env has {self.num_envs}")
        names = {f.name for f in fields(WorldState)}
        if set(data["world"]) != names:
            raise ValueError(f"env state has fields {sorted(data['world'])}; expected {sorted(names)}")
        like = WorldState.empty(self.num_envs, self.config.missiles, torch.device("meta"), self.team_size)
        for name in sorted(names):
            want, got = tuple(getattr(like, name).shape), tuple(data["world"][name].shape)
            if got != want:
                raise ValueError(f"env state field {name} has shape {list(got)}; this env (team_size "
                                 f"{self.team_size}, {self.config.missiles} missiles) needs {list(want)}")
        self.state = WorldState(**{k: v.to(self.device) for k, v in data["world"].items()})
        self.generator.set_state(data["generator"])
        self._ep_return = data["episode_return"].to(self.device)
        self._ep_missiles = data["episode_missiles"].to(self.device)
        kills = data.get("episode_kills")  # absent from states saved before kills were counted
        self._ep_kills = torch.zeros_like(self._ep_return) if kills is None else kills.to(self.device)
        self._has_reset = True
        return self.observe()

    # -- internals --------------------------------------------------------------------------------

    def _by_side(self, t: torch.Tensor) -> dict[str, torch.Tensor]:
        """{"p1": ..., "p2": ...} of an [N, A] tensor: [N] each in a duel, [N, T] in a team battle."""
        return {p: side_view(t, self.team_size, i) for i, p in enumerate(PLAYERS)}

    def _runner(self) -> StepRunner:
        """The step for the current plan: whether battles are watched, and the missile layout."""
        keep_world, packed = self.watched is not None, self.packed_missiles
        runner = self._runners.get((keep_world, packed))
        if runner is None:
            # Team observations (neighbour slots) are costly: after an auto-reset only the restarted battles
            # are observed again. Finding them syncs with the host, which the CPU layout does anyway.
            plan = StepPlan(self.config, packed, self.final_global_state, keep_world, packed and self.team_size > 1)
            runner = self._runners[(keep_world, packed)] = StepRunner(plan, self.compiled)
        return runner

    def _spawn_uniforms(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The draws the next battles start from: each env's game seed, or the env's generator."""
        if self.game_seeds is not None:
            if self.device.type != "cpu":  # comparing the seeds would wait for the GPU
                return seeded_spawn_uniforms(self.config, self.game_seeds)
            if self._seeded is None or not torch.equal(self._seeded[0], self.game_seeds):
                self._seeded = (self.game_seeds.clone(), seeded_spawn_uniforms(self.config, self.game_seeds))
            return self._seeded[1]
        return spawn_uniforms(self.config, self.num_envs, self.generator, self.device)

    def _auto_reset(self, dones: torch.Tensor) -> None:
        totals = (self._ep_return, self._ep_missiles, self._ep_kills)
        self._ep_return, self._ep_missiles, self._ep_kills = restart_battles(
            self.state, dones, self._spawn_uniforms(), totals, self.config)

    def __repr__(self) -> str:
        return (f"TensorEnv(num_envs={self.num_envs}, device={self.device}, seed={self.seed}, "
                f"team_size={self.team_size}, obs_mode={self.config.obs_mode!r})")
