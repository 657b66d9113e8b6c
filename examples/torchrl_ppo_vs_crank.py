"""TorchRL PPO against CrankAgent, through ArenaTorchRLEnv (TorchRL's own collector, GAE and loss).

    pip install -e '.[torchrl]'
    python examples/torchrl_ppo_vs_crank.py --minutes 5

A ``Collector`` steps thousands of battles in one ArenaTorchRLEnv, ``GAE`` bootstraps the value of a
battle cut off by the time limit from its last observation, and ``ClipPPOLoss`` updates a
``ProbabilisticActor`` (a ``TanhNormal`` over the action's bounds) and a critic. Both networks read
the observation through one running normaliser. The script trains for ``--minutes`` or ``--frames``
(whichever ends first), then scores the deterministic policy over ``--games`` deterministic games
against the opponent with ``arena.match.play_match``.
"""

from __future__ import annotations

import argparse
import time

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from arena.agents import build_agent
from arena.battles import ACTION_HIGH, ACTION_LOW, VectorPolicyAgent
from arena.match import play_match
from arena.wrappers.torchrl_env import ArenaTorchRLEnv

FIRE_BIAS = -2.0  # the fire value's starting mean before the squash: fires about 2% of steps, not half


class RunningNorm(nn.Module):
    """Scales the observation by running mean and variance, updated between PPO updates (never inside
    one, so the log-probabilities a batch was collected with stay those the loss recomputes)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.tensor(1e-4))

    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1])
        mean, var, n = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        total = self.count + n
        delta = mean - self.mean
        self.var.copy_((self.var * self.count + var * n + delta**2 * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-10.0, 10.0)


def mlp(norm: RunningNorm, size: int, out: int) -> nn.Sequential:
    return nn.Sequential(norm, nn.Linear(size, 128), nn.Tanh(), nn.Linear(128, 64), nn.Tanh(), nn.Linear(64, out))


class ActorNet(nn.Module):
    """Observation to the TanhNormal's location and scale; the log-std is one parameter per action value."""

    def __init__(self, norm: RunningNorm, size: int) -> None:
        super().__init__()
        self.body = mlp(norm, size, 3)
        last = self.body[-1]
        assert isinstance(last, nn.Linear)
        with torch.no_grad():
            last.weight.mul_(0.01)
            last.bias.copy_(torch.tensor([0.0, 0.0, FIRE_BIAS]))
        self.log_std = nn.Parameter(torch.zeros(3))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loc = self.body(obs)
        return loc, self.log_std.clamp(-5.0, 2.0).exp().expand_as(loc)


def build(env: ArenaTorchRLEnv) -> tuple[ProbabilisticActor, ValueOperator, RunningNorm]:
    size = env.observation_spec["observation"].shape[-1]
    norm = RunningNorm(size)
    low, high = torch.as_tensor(ACTION_LOW), torch.as_tensor(ACTION_HIGH)
    actor = ProbabilisticActor(TensorDictModule(ActorNet(norm, size), ["observation"], ["loc", "scale"]),
                               in_keys=["loc", "scale"], spec=env.action_spec, distribution_class=TanhNormal,
                               distribution_kwargs={"low": low, "high": high}, return_log_prob=True)
    critic = ValueOperator(mlp(norm, size, 1), in_keys=["observation"])
    return actor, critic, norm


def score(actor: ProbabilisticActor, opponent: str, games: int, seed: int) -> dict[str, int]:
    """Win/draw/loss of the deterministic policy over ``games`` deterministic games (half of them as p2)."""

    def policy(obs: torch.Tensor) -> torch.Tensor:
        with set_exploration_type(ExplorationType.DETERMINISTIC):
            return actor(TensorDict({"observation": obs}, batch_size=obs.shape[:1]))["action"]

    result = play_match(VectorPolicyAgent(policy), build_agent(opponent), games, seed=seed)
    return {"games": games, "wins": result.wins, "draws": result.draws, "losses": result.losses}


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="wall-clock budget of the training")
    parser.add_argument("--frames", type=int, default=0, help="env steps over all battles (0: the minutes decide)")
    parser.add_argument("--envs", type=int, default=2048, help="battles stepped at once")
    parser.add_argument("--steps", type=int, default=32, help="steps per battle per PPO update")
    parser.add_argument("--batch-size", type=int, default=8192, help="minibatch size in env steps")
    parser.add_argument("--epochs", type=int, default=4, help="passes over each rollout")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--opponent", default="crank")
    parser.add_argument("--reward", default="pursuit", help="shaping added to the env's reward (arena_rewards), "
                                                            "as arena train's --reward; pursuit beat zero (none) here")
    parser.add_argument("--games", type=int, default=100, help="deterministic games to score at the end")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", action="store_true", help="a line per update: the outcome of the battles that ended")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    env = ArenaTorchRLEnv(args.envs, args.opponent, seed=args.seed, reward=args.reward)
    actor, critic, norm = build(env)
    frames_per_batch = args.envs * args.steps
    budget = args.frames if args.frames > 0 else -1
    collector = Collector(env, actor, frames_per_batch=frames_per_batch, total_frames=budget,
                          auto_register_policy_transforms=False)
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    loss_fn = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.001, critic_coeff=0.5,
                          loss_critic_type="l2", normalize_advantage=True)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=args.lr, eps=1e-5)

    start, frames = time.perf_counter(), 0
    rewards: list[float] = []  # the mean reward per step of each rollout: the learning curve
    for batch in collector:
        with torch.no_grad():
            advantage(batch)
        data = batch.reshape(-1)
        for _ in range(args.epochs):
            for idx in torch.randperm(data.shape[0]).split(args.batch_size):
                losses = loss_fn(data[idx])
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_fn.parameters(), 0.5)
                optim.step()
        norm.update(batch["observation"])
        collector.update_policy_weights_()
        frames += batch.numel()
        rewards.append(float(batch["next", "reward"].mean()))
        ended = batch["next", "done"]
        if args.log and ended.any():
            outcome = batch["next", "reward"][ended]  # the last step's reward carries the result (±1)
            print(f"{frames:>11,} steps {time.perf_counter() - start:6.0f} s  won {(outcome > 0.5).float().mean():.2f}"
                  f"  lost {(outcome < -0.5).float().mean():.2f} of {ended.sum()} battles that ended")
        if time.perf_counter() - start > args.minutes * 60:
            break
    collector.shutdown()
    wall = time.perf_counter() - start

    result = score(actor, args.opponent, args.games, args.seed)
    print(f"TorchRL PPO: {frames:,} steps in {wall:.0f} s ({frames / wall:,.0f} env-steps/s) against "
          f"{args.opponent}: {result}")
    return {**result, "steps": frames, "seconds": wall, "rewards": rewards}


if __name__ == "__main__":
    main()
