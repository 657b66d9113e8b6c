"""A contract check for agent authors: one call that flies an agent in a real env on both sides.

Plugin test suites call ``check_agent(MyAgent)``; it fails with a message that says which part of the
Agent contract was broken, which is quicker to act on than a shape error deep inside a match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent


def check_agent(agent: "type[Any] | Agent", *, num_envs: int = 8, steps: int = 20, device: "str | torch.device" = "cpu",
                seed: int = 0, **params: Any) -> None:
    """Fly ``agent`` (an instance, or a class built with ``create(device, **params)``) as p1 and p2.

    Checks: ``name`` is set; ``act`` returns exactly rudder/throttle/fire, each [num_envs] on the
    env's device, floats in range (fire bool or float), no NaN; ``reset`` takes None and a [N] bool
    mask; ``train``/``eval``/``to`` return the agent. Raises ``AssertionError`` naming the problem.
    """
    import torch

    from arena.env import TensorEnv, check_action
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
