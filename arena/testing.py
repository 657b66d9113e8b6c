"""A contract check for agent authors: one call that flies an agent in a real env on both sides.

Plugin test suites call ``check_agent(MyAgent)`` (and ``check_family`` with variants of an agent that acts
as a family); it fails with a message that says which part of the
Agent contract was broken, which is quicker to act on than a shape error deep inside a match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent


def check_agent(agent: "type[Any] | Agent", *, num_envs: int = 8, steps: int = 20, device: "str | torch.device" = "cpu",
                seed: int = 0, **params: Any) -> None:
    """Fly ``agent`` (an instance, or a class built with ``create(device, **params)``) as p1 and p2.

    Checks: ``name`` is set; ``act`` returns exactly rudder/throttle/fire, each [num_envs] on the
    env's device, floats in range (fire bool or float), no NaN; ``reset`` takes None and a [N] bool
    mask; ``train``/``eval``/``to`` return the agent; an agent that can act with others of its kind
    (``family_key``) does so as it acts alone (:func:`check_family`, with a copy of itself). Raises
    ``AssertionError`` naming the problem.
    """
    import torch

    from arena.env import TensorEnv, check_action
    from arena.families import family_key
    from arena.loop import observation_config

    env = TensorEnv(num_envs, device=device, seed=seed, config=observation_config(None, [agent]))
    if isinstance(agent, type):
        agent = agent.create(device=env.device, env_config=env.config, **params)
    name = getattr(agent, "name", "")
    assert isinstance(name, str) and name, f"{type(agent).__name__} needs a non-empty class attribute 'name'"
    for method in ("train", "eval", "to"):
        args = (env.device,) if method == "to" else ()
        returned = getattr(agent, method)(*args)
        assert returned is agent, f"{name}: {method}() must return the agent itself, got {returned!r}"
    agent.reset(None)
    obs = env.reset()
    with torch.no_grad():
        for _ in range(steps):
            actions = []
            for side in ("p1", "p2"):
                action = agent.act(obs[side])
                try:
                    clean = check_action(action, num_envs, env.device, who=f"{name}.act()")
                except ValueError as exc:
                    raise AssertionError(str(exc)) from None
                assert int(clean.nan_count.sum()) == 0, f"{name}.act() returned NaN"
                assert bool((action["rudder"].abs() <= 1).all()), f"{name}.act(): rudder outside [-1, 1]"
                assert bool(((action["throttle"] >= 0) & (action["throttle"] <= 1)).all()), \
                    f"{name}.act(): throttle outside [0, 1]"
                actions.append(action)
            obs, _, dones, _ = env.step(*actions)
            agent.reset(dones)
    if family_key(agent) is not None:
        import copy

        built = cast("Agent", agent)
        check_family([built, copy.deepcopy(built)], num_envs=num_envs, steps=steps, device=env.device, seed=seed)


def check_family(members: "list[Agent]", *, num_envs: int = 24, steps: int = 40, device: "str | torch.device" = "cpu",
                 seed: int = 0, team_size: int = 1, atol: float = 1e-5) -> None:
    """Check that ``members`` (agents of one family: :mod:`arena.families`) act as one call exactly as
    they act alone: each on its own envs of both sides, the two ways side by side on the same
    observations (the solo agents' actions step the env), every member with its own random stream.
    Halfway, the batch keeps every other env (``keep_rows``) where all of them can. Rudder and
    throttle must agree within ``atol``, the trigger exactly. Raises ``AssertionError`` naming the
    first disagreement."""
    import copy

    import torch

    from arena.env import EnvConfig, TensorEnv
    from arena.families import Family, act_together, family_key
    from arena.loop import Controller, Seating, observation_config

    assert len(members) >= 2, "check_family: give at least two members"
    keys = []
    for i, member in enumerate(members):
        try:
            keys.append(family_key(member))
            hash(keys[-1])
        except TypeError as exc:
            raise AssertionError(f"check_family: member {i}'s family_key() returned a key that is not hashable "
                                 f"({exc})") from None
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the fault this check exists to name
            raise AssertionError(f"check_family: member {i}'s family_key() raised {type(exc).__name__}: "
                                 f"{exc}") from None
    assert len(set(keys)) == 1 and None not in keys, \
        f"check_family: the members' family keys differ or are None: {keys}"
    try:
        family = act_together(copy.deepcopy(list(members)), [num_envs] * len(members))
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"check_family: act_together() raised {type(exc).__name__}: {exc}") from None
    assert isinstance(family, Family), (f"check_family: act_together() returned {type(family).__name__}, not an "
                                        "object with act(), reset() and keep_rows()")
    config = observation_config(EnvConfig(team_size=team_size), members)
    env = TensorEnv(num_envs, device=device, seed=seed, config=config)
    owner = torch.arange(2 * num_envs).reshape(2, num_envs) % len(members)
    owner[1] = owner[1].roll(1)  # members meet one another, and each plays both sides

    def seating(families: bool) -> Seating:
        agents = copy.deepcopy(list(members))
        controllers = [Controller(a, f"member {i}", "member", rng_seed=seed + 1 + i) for i, a in enumerate(agents)]
        return Seating(controllers, owner, env.team_size, env.device, families=families)

    alone, together = seating(False), seating(True)
    assert len(together.families) == 1, "check_family: the members did not form a family (act_together missing?)"
    obs = env.reset()
    for s in (alone, together):
        assert not s.reset(None)
    keep = steps // 2 if alone.can_keep_envs() and together.can_keep_envs() else -1
    with torch.no_grad():
        for step in range(steps):
            if step == keep:
                envs = torch.arange(0, env.num_envs, 2)
                for s in (alone, together):
                    failures = s.keep_envs(envs)
                    assert not failures, f"check_family: keep_rows failed: {failures[0]}"
                obs = env.keep_envs(envs)
            acted = []
            for s, how in ((alone, "alone"), (together, "as a family")):
                actions, failures = s.act(obs)
                failures += s.nan_failures()  # before the NaNs, cleaned to 0, are compared as actions
                assert not failures, f"check_family: step {step}, {how}: {failures[0]}"
                acted.append(actions)
            for side in ("p1", "p2"):
                a, b = acted[0][side], acted[1][side]
                for key in ("rudder", "throttle"):
                    gap = float((a[key] - b[key]).abs().max())
                    assert gap <= atol, f"check_family: step {step}, {side} {key} differs by {gap:.3g} as a family"
                assert torch.equal(a["fire"], b["fire"]), f"check_family: step {step}, {side} fire differs as a family"
            obs, _, dones, _ = env.step(acted[0]["p1"], acted[0]["p2"])
            for s in (alone, together):
                assert not s.reset(dones)
