"""Configuration dataclasses of the PPO plugin: the network, the algorithm and the run.

Defaults start from the baseline PPO design's values; where a measurement showed a better value for this
environment the default was changed and the measurement is recorded in docs/training.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from arena.env import EnvConfig

LRSchedule = Literal["constant", "linear", "adaptive"]
LR_SCHEDULES: tuple[str, ...] = ("constant", "linear", "adaptive")


@dataclass
class NetworkConfig:
    """Shape of the actor and critic (10→128→64, ReLU)."""

    obs_dim: int = 10
    critic_obs_dim: int = 10  # = obs_dim, or the global-state size with a privileged critic
    actor_hidden: tuple[int, ...] = (128, 64)
    critic_hidden: tuple[int, ...] = (128, 64)
    input_layer_norm: bool = False  # LayerNorm on the raw input of both networks
    init_log_std: float = 0.0  # bias of the rudder log-std output at start (std 1 before the squash)
    # Bias of the fire logit at start. -6 (p≈0.0025 per step) keeps the missiles on the rails until the
    # policy learns where to shoot; at -2 or -4 they were all gone before the first 40 km (docs/training.md).
    init_fire_logit: float = -6.0
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    recurrent: bool = False  # a GRU cell after each trunk (mappo --recurrent)
    # Each input also carries its change since the previous step (arena_ppo.modules.change): rates
    # (missile closure, turn rate) that one observation cannot show a feed-forward policy.
    obs_delta: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NetworkConfig":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("actor_hidden", "critic_hidden"):
            if key in values:
                values[key] = tuple(int(x) for x in values[key])
        return cls(**values)


@dataclass
class PPOConfig:
    """The update: the baseline hyper-parameters plus the optional pieces (rsl_rl, MAPPO)."""

    learning_rate: float = 3e-4
    n_steps: int = 32  # per env per update (seed: 2048 with few envs; 1024 envs x 32 = 32,768 samples per update)
    batch_size: int = 8192  # minibatch size (seed: 64; 4 minibatches per epoch keeps the update cheap on a CPU)
    n_epochs: int = 4  # seed: 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_epsilon: float = 0.2
    value_loss_coef: float = 0.5
    entropy_coef: float = 0.001  # seed: 0.01, which let noise do the evading and left the mean policy helpless
    # Weight of a penalty on the trigger's entropy (a Bernoulli's, at most ln 2 a step). Training samples the
    # trigger every step; play fires at the median of that launch time. A moderate p held over several steps
    # spreads the sampled launches widely, so training scores a policy that play never uses. The penalty
    # pushes p toward 0 or 1, where the two agree. 0: off.
    fire_entropy_penalty: float = 0.0
    max_grad_norm: float = 0.5
    clip_value_loss: bool = False
    normalize_advantages: bool = True
    # adaptive (rsl_rl's KL target; docs/training.md): with a constant rate the policy's steps grew as its
    # std shrank (approx-KL 0.05-0.08) and a policy winning 100 % fell back to 58 % and recovered.
    lr_schedule: str = "adaptive"  # constant | linear (to 0 at --max-steps) | adaptive (KL target)
    desired_kl: float = 0.01
    # Share of the budget (--max-steps, or --max-time when that ends first) at its end over which the
    # learning rate's ceiling falls linearly to 0, so the last updates settle instead of moving the
    # final checkpoint as far as any other. 0: off.
    lr_anneal: float = 0.0
    value_norm: bool = False  # MAPPO's ValueNorm: critic learns normalized returns
    adam_eps: float = 1e-5
    # Weight of the kickstart teacher's loss at the start of a run (RunConfig.kickstart); it moves linearly
    # to kickstart_final over RunConfig.kickstart_steps and stays there. In the league, dropping the teacher
    # (final 0) lost what it had taught; the more of it was kept (0.2, 0.5, 1), the better the final
    # policy did against the ace (docs/training.md), so by default it keeps its full weight.
    kickstart_coef: float = 1.0
    kickstart_final: float = 1.0
    # Weight of the teacher's trigger (when to fire) against its rudder, within its loss.
    kickstart_trigger: float = 1.0
    data_chunk_length: int = 8  # recurrent policies: steps per training sequence (MAPPO: 10; 8 divides n_steps 32)


@dataclass
class RunConfig:
    """Everything about a run that is not the update rule."""

    num_envs: int = 1024
    max_steps: int = 30_000_000  # environment steps over all envs (about 15 minutes on a 2-core CPU)
    # Env steps between checkpoints, rounded up to whole updates (seed: 1000, counted in single-env steps).
    save_interval: int = 2_000_000
    log_interval: int = 250_000  # env steps between console lines; metrics.csv gets every update (seed: 100)
    eval_interval: int = 0  # env steps between evaluations; 0 = at every checkpoint
    eval_games: int = 200
    # After each evaluation, keep the weights with the best worst-case score in best.pt (arena.training.best).
    keep_best: bool = True
    # When an evaluation's worst score falls more than this below the kept weights', training goes back to
    # them (population-based training's "exploit" step, against the run's own past). A league policy's score
    # against the ace swings between neighbouring checkpoints and drifts down late (docs/training.md); going
    # back keeps what the run reached. 0: off.
    rollback: float = 0.0
    # Evaluations also play the kept weights, and worst scores within this of theirs are a tie that the duel
    # breaks (arena.training.best.replaces; with --rollback, a duel lost by more than the margin goes back).
    # Once the ladder is beaten its scores no longer tell checkpoints apart; their duels still do. 0: off.
    gate: float = 0.0
    reward: str = "pursuit"
    vs: tuple[str, ...] = ("crank",)
    # Share of the envs that play the league's floor (the random placeholder) whatever --vs says: a
    # policy that only ever meets opponents that come at it never learns to find one that does not,
    # and flew out of the arena against the placeholder (docs/training.md). 0 turns it off.
    floor: float = 0.25
    # --vs league: share of the drawn opponents that come from the ladder (and training partners) once
    # the run has checkpoints; the rest are its checkpoints. Without it the checkpoints, piling up at
    # one every 2 M steps, crowd the rungs out (docs/training.md). None: one pool (runs saved before).
    ladder_share: float | None = 0.8
    # --vs self / league: games against an opponent over which its PFSP record fades; 0: all games count alike.
    pfsp_memory: float = 0.0
    pfsp_power: float = 2.0  # PFSP weight (1 - score)^power, floored at 0.05
    # Kickstarting: an agent (name or ckpt:PATH) whose actions on the learner's states are an extra loss,
    # weighted from PPOConfig.kickstart_coef to kickstart_final over kickstart_steps (arena_ppo.kickstart). "": none.
    kickstart: str = ""
    kickstart_steps: int = 20_000_000
    device: str = "auto"
    seed: int = 0
    out: str = ""
    obs_mode: str = "default"  # or "extended"
    # Aircraft a side (team battles): one policy flies every seat of p1, each on its own observation
    # (independent PPO with parameter sharing); opponents fly p2's seats.
    team_size: int = 1
    policy: str = "shared"  # mappo: one actor for every seat (with a seat id), or "separated" (one per seat)
    obs_norm: bool = True  # rsl_rl running observation normalization (saved in checkpoints)
    privileged_critic: bool = False  # critic fed env.global_state (rsl_rl privileged obs, MAPPO centralized critic)
    self_slots: int = 4  # past checkpoints playing at once for a `self` opponent
    # Env steps a drawn opponent (self, league) keeps its envs, rounded up to whole rollouts; 0: the
    # longest battle (max_time / dt). With handover the next draw takes over the battles in flight
    # (measured better in the league than whole battles: docs/training.md); without, they restart.
    tenure: int = 1
    handover: bool = True
    threads: int | None = None  # torch intra-op threads: None = arena's default for num_envs (arena.threads); 0 = torch's


    def env_config(self) -> "EnvConfig":
        """The env this run trains in."""
        from arena.env import EnvConfig

        return EnvConfig(obs_mode=self.obs_mode, team_size=self.team_size)  # type: ignore[arg-type]


@dataclass
class TrainConfig:
    run: RunConfig = field(default_factory=RunConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
