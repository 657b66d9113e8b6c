"""What the interfaces cost: env-steps/s through each of them beside the native game loop driven the same
way (CrankAgent flying p2 through the game loop, random actions for p1).

- Gymnasium's ``ArenaVectorEnv``, numpy and torch (``as_torch=True``);
- TorchRL's ``ArenaTorchRLEnv``, stepped as its collectors step it (``step_and_maybe_reset``), as a duel
  is by default and with p1's global state (``+state``);
- rsl_rl's ``ArenaRslRlEnv``, stepped as its ``OnPolicyRunner`` steps it, with its default ``"critic"``
  group (p1's global state) and without (``-critic``).

An interface whose library is not installed is left out of the table.

Run: python benchmarks/wrappers.py [--sizes 4096,16384] [--steps 200] [--rounds 3] [--device cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import numpy as np
import torch

import script_args as opt
from arena.battles import LearnerBattles
from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads
from arena.wrappers import ArenaVectorEnv


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(n: int, steps: int, device: str, step: Callable[[torch.Tensor], object], actions: torch.Tensor) -> float:
    """env-steps/s of ``steps`` calls of ``step``, one row of ``actions`` each, after one untimed call."""
    step(actions[0])
    sync(device)
    start = time.perf_counter()
    for t in range(steps):
        step(actions[t])
    sync(device)
    return n * steps / (time.perf_counter() - start)


def native(n: int, steps: int, device: str, actions: torch.Tensor) -> float:
    """The game loop itself: dict actions in, dict observations out, nothing stacked or converted."""
    battles = LearnerBattles(n, "crank", device=device)
    battles.reset(0)

    def step(a: torch.Tensor) -> None:
        with torch.no_grad():
            battles.obs = battles.loop.step(battles.obs, given={"p1": {"rudder": a[:, 0], "throttle": a[:, 1],
                                                                       "fire": a[:, 2] > 0}}).next_obs

    return timed(n, steps, device, step, actions)


def gymnasium(n: int, steps: int, device: str, actions: torch.Tensor, as_torch: bool) -> float:
    env = ArenaVectorEnv(n, "crank", device=device, as_torch=as_torch)
    env.reset(seed=0)
    feed = actions if as_torch else actions.cpu().numpy().astype(np.float32)
    return timed(n, steps, device, env.step, feed)


def torchrl(n: int, steps: int, device: str, actions: torch.Tensor, global_state: bool = False) -> float:
    from arena.wrappers import ArenaTorchRLEnv

    env = ArenaTorchRLEnv(n, "crank", device=device, seed=0, global_state=global_state)
    td = env.reset()

    def step(a: torch.Tensor) -> None:
        nonlocal td
        td.set("action", a)
        _, td = env.step_and_maybe_reset(td)

    return timed(n, steps, device, step, actions)


def rsl_rl(n: int, steps: int, device: str, actions: torch.Tensor, privileged: bool = True) -> float:
    from arena.wrappers import ArenaRslRlEnv

    env = ArenaRslRlEnv(n, "crank", device=device, seed=0, privileged=privileged)
    env.get_observations()
    return timed(n, steps, device, env.step, actions)


def interfaces() -> dict[str, Callable[..., float]]:
    """The columns of the table: every interface whose library is installed."""
    out: dict[str, Callable[..., float]] = {
        "gym numpy": lambda n, s, d, a: gymnasium(n, s, d, a, False),
        "gym torch": lambda n, s, d, a: gymnasium(n, s, d, a, True),
    }
    if importlib.util.find_spec("torchrl") is not None:
        out["torchrl"] = torchrl
        out["torchrl +state"] = lambda n, s, d, a: torchrl(n, s, d, a, global_state=True)
    if importlib.util.find_spec("rsl_rl") is not None:
        out["rsl_rl"] = rsl_rl
        out["rsl_rl -critic"] = lambda n, s, d, a: rsl_rl(n, s, d, a, privileged=False)
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=opt.comma_ints(1, opt.MAX_GAMES), default="4096,16384",
                        help="comma-separated env counts")
    parser.add_argument("--steps", type=opt.integer(1), default=200)
    parser.add_argument("--rounds", type=opt.integer(1), default=3)
    parser.add_argument("--device", type=opt.device, default="cpu")
    parser.add_argument("--threads", type=opt.threads, default=None, help=THREADS_HELP)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from arena.env import resolve_device

    args.device = str(resolve_device(args.device))  # "auto" made concrete: the actions are made on it
    columns = interfaces()
    print(f"env-steps/s on {args.device}, crank flying p2, median of {args.rounds} rounds of {args.steps} steps "
          f"(the interfaces alternate); the ratio to the native game loop in brackets")
    print(f"{'envs':>7} {'native':>10} " + " ".join(f"{name:>17}" for name in columns))
    for n in args.sizes:
        if args.device == "cpu":
            apply_threads(args.threads, n)
        actions = (torch.rand(args.steps, n, 3, device=args.device) * 2 - 1).contiguous()
        runs: dict[str, list[float]] = {"native": [], **{name: [] for name in columns}}
        for _ in range(args.rounds):
            runs["native"].append(native(n, args.steps, args.device, actions))
            for name, measure in columns.items():
                runs[name].append(measure(n, args.steps, args.device, actions))
        med = {k: statistics.median(v) for k, v in runs.items()}
        cells = " ".join(f"{med[name]:>10,.0f} ({med[name] / med['native']:.2f})" for name in columns)
        print(f"{n:>7,} {med['native']:>10,.0f} {cells}")


if __name__ == "__main__":
    main()
