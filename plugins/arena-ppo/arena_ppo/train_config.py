"""The PPO plugin's settings: the network, the update and the run, each declared once.

Every field is made with :func:`arena.training.settings.setting`: its help, range, whether the command
line shows it and whether a resumed run may change it live here, and the options of ``arena train
ppo``/``mappo``, the checks of ``--config``/``--set``/checkpoints and the table in docs/training.md are
derived from it. Defaults start from the baseline PPO design's values; where a measurement showed a
better value for this environment the default was changed, and the measurement is in docs/experiments/.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from arena.agents import DEFAULT_POLICY
from arena.agents import POLICIES as PLAY_POLICIES
from arena.seeds import MAX_SEED, SEED_RANGE
from arena.training.settings import setting

if TYPE_CHECKING:
    from arena.env import EnvConfig

LR_SCHEDULES: tuple[str, ...] = ("constant", "linear", "adaptive")
POLICIES: tuple[str, ...] = ("shared", "separated")
MAX_ENVS = 1 << 24  # battles stepped at once: ~16.7 M, already tens of GB of env state and rollout
MAX_STEPS = 1 << 60  # environment steps (and intervals): far beyond any run, still exact in int64 counters
MAX_LAYER_WIDTH = 4096  # units per hidden layer: 32x the default, far beyond what this task needs
NO_TEACHER = "none"


@dataclass
class NetworkConfig:
    """Shape of the actor and critic (10→128→64, ReLU). A resumed run keeps all of it: the weights have its shape."""

    obs_dim: int = setting(10, "Actor input size, from the observation mode and team size.", derived=True, low=1,
                           high=1 << 16)
    critic_obs_dim: int = setting(10, "Critic input size: the actor's, or the global state's with a privileged "
                                      "critic.", derived=True, low=1, high=1 << 16)
    actor_hidden: tuple[int, ...] = setting(factory=lambda: (128, 64), help="Widths of the actor's hidden layers.",
                                            fixed=True, low=1, high=MAX_LAYER_WIDTH, min_items=1, max_items=8)
    critic_hidden: tuple[int, ...] = setting(factory=lambda: (128, 64), help="Widths of the critic's hidden layers.",
                                             fixed=True, low=1, high=MAX_LAYER_WIDTH, min_items=1, max_items=8)
    input_layer_norm: bool = setting(False, "LayerNorm on the raw input of both networks.", fixed=True)
    init_log_std: float = setting(0.0, "Starting bias of the rudder's log-std (std 1 before the squash).",
                                  low=-20, high=20)
    init_fire_logit: float = setting(-6.0, "Starting bias of the fire logit: -6 (p≈0.0025 a step) keeps the "
                                           "missiles on the rails until the policy learns where to shoot.",
                                     low=-50, high=50)
    log_std_min: float = setting(-5.0, "Lower clamp of the rudder's log-std.", low=-20, high=20)
    log_std_max: float = setting(2.0, "Upper clamp of the rudder's log-std.", low=-20, high=20)
    recurrent: bool = setting(False, "A GRU cell in the actor and the critic, its state reset when a battle "
                                     "restarts.", cli=("mappo",), fixed=True)
    fire_mask: bool = setting(True, "Mask the trigger with the env's launch_ready, the actor's first input: no "
                                    "launch, and no entropy, where a missile would leave without a lock.", fixed=True)
    hold_fire_while_guiding: bool = setting(True, "With fire_mask: mask the trigger also while a missile of the "
                                                  "aircraft is still in flight (the first input is then the env's "
                                                  "launch_clear).", fixed=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NetworkConfig":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("actor_hidden", "critic_hidden"):
            if key in values:
                values[key] = tuple(int(x) for x in values[key])
        return cls(**values)


# What a checkpoint saved before a network setting existed trained with, when it lacks the setting:
# no trigger mask before the mask, the mask of launch_ready alone before holding fire while guiding.
SAVED_BEFORE: dict[str, Any] = {"fire_mask": False, "hold_fire_while_guiding": False}


@dataclass
class PPOConfig:
    """The update: clipped PPO with an adaptive learning rate (rsl_rl), and the teacher's weight."""

    learning_rate: float = setting(3e-4, "Adam's step size; with the adaptive schedule, its ceiling.", cli=True,
                                   low=0, low_open=True, high=1)
    n_steps: int = setting(32, "Steps per env per update.", low=1, high=1 << 20)
    batch_size: int = setting(8192, "Minibatch size in env steps over all processes (each of N takes batch_size/N); "
                                    "a team's step is one row per aircraft.", low=1, high=1 << 40)
    n_epochs: int = setting(4, "Passes over each rollout.", low=1, high=10_000)
    gamma: float = setting(0.99, "Discount.", low=0, high=1)
    gae_lambda: float = setting(0.95, "GAE's lambda.", low=0, high=1)
    clip_epsilon: float = setting(0.2, "PPO's clip range.", low=0, low_open=True, high=10)
    value_loss_coef: float = setting(0.5, "Weight of the value loss.", low=0, high=1e6)
    entropy_coef: float = setting(0.001, "Weight of the entropy bonus (0.01 let noise do the evading).", low=0,
                                  high=1e6)
    max_grad_norm: float = setting(0.5, "Gradient norm clip.", low=0, low_open=True, high=1e6)
    clip_value_loss: bool = setting(False, "Clip the value update like the policy.")
    normalize_advantages: bool = setting(True, "Normalize advantages per rollout.")
    lr_schedule: str = setting("adaptive", "constant; linear to 0 at max_steps; adaptive: keep the KL near "
                                           "desired_kl (a constant rate let a winning policy fall back).",
                               choices=LR_SCHEDULES)
    desired_kl: float = setting(0.01, "KL target of the adaptive schedule.", low=0, low_open=True, high=10)
    value_norm: bool = setting(False, "The critic learns normalized returns (MAPPO's ValueNorm for mappo).",
                               fixed=True)
    adam_eps: float = setting(1e-5, "Adam's epsilon.", low=0, low_open=True, high=1)
    kickstart_coef: float = setting(1.0, "Weight of the teacher's loss (run.kickstart) against PPO's, for the "
                                         "whole run: dropping it lost what it taught.", low=0, high=1e6)
    data_chunk_length: int = setting(8, "Recurrent policies: steps per training sequence; divides n_steps.",
                                     low=1, high=1 << 20)


@dataclass
class RunConfig:
    """Everything about a run that is not the update rule."""

    vs: tuple[str, ...] = setting(factory=lambda: ("crank",), cli=True, fixed=True, metavar="NAME[=WEIGHT]",
                                  help="Opponent, repeatable: an agent name, ckpt:PATH, self (the run's past "
                                       "checkpoints) or league (the ladder, the run's past and its exploiter, "
                                       "after a warm-up). Envs are split by weight.")
    team_size: int = setting(1, "Aircraft a side: the policy flies every seat of its team.", cli=True, fixed=True,
                             low=1, high=8)
    obs_mode: str = setting("extended", "extended adds aspect, enemy missiles and the nearest threat (the missile "
                                        "warning) to default's 10 features; without it a random shot kills the "
                                        "learner it cannot see.", cli=True, fixed=True,
                            choices=("default", "extended"))
    policy: str = setting("shared", "shared: one actor and critic for every seat, told its seat; separated: one "
                                    "per seat.", cli=("mappo",), fixed=True, choices=POLICIES)
    reward: str = setting("pursuit", "Reward shaping added to the env reward (a name from arena_rewards).", cli=True)
    num_envs: int = setting(1024, "Battles stepped at once, over all processes.", cli=True, fixed=True, low=1,
                            high=MAX_ENVS)
    max_steps: int = setting(30_000_000, "Environment steps over all envs (about 15 minutes on a 2-core CPU).",
                             cli=True, low=1, high=MAX_STEPS)
    save_interval: int = setting(2_000_000, "Environment steps between checkpoints (whole updates).", cli=True,
                                 low=1, high=MAX_STEPS)
    log_interval: int = setting(250_000, "Environment steps between console lines; metrics.csv gets every update.",
                                low=1, high=MAX_STEPS)
    eval_interval: int = setting(0, "Environment steps between evaluations; 0: at every checkpoint.", low=0,
                                 high=MAX_STEPS)
    eval_games: int = setting(200, "Games against each reference (the fixed opponents; for league, the ladder) in "
                                   "each evaluation; 0: none.", cli=True, low=0, high=MAX_ENVS)
    eval_policy: str = setting(DEFAULT_POLICY, "How the policy plays in evaluations: deterministic, as arena play "
                                               "and tournaments play checkpoints by default, or sampled (as it "
                                               "trains).",
                               fixed=True, choices=PLAY_POLICIES)
    keep_best: bool = setting(True, "Keep the evaluated weights that score best against the opponents trained "
                                    "against in best.pt (a league's: the best rating against the rungs).")
    floor: float = setting(0.25, "Share of the envs that play the random placeholder besides vs, so the policy "
                                 "also learns to find an opponent that does not come at it.", fixed=True, low=0,
                           high=0.9)
    kickstart: str = setting(NO_TEACHER, "Teacher whose actions on the learner's states are an extra loss: an "
                                         "agent name or ckpt:PATH, or none.",
                             cli=True, metavar="NAME|ckpt:PATH|none")
    warm_up_steps: int = setting(12_000_000, "league: env steps against the ladder's top rung alone before the "
                                             "league opens; 0: none.", fixed=True, low=0, high=MAX_STEPS)
    exploiter_share: float = setting(0.2, "league: share of the league stage's env steps that train a main "
                                          "exploiter against the learner, whose winning weights join the league; 0: "
                                          "none.", fixed=True, low=0, high=0.9)
    ladder_share: float = setting(0.8, "league: share of the drawn opponents taken from the ladder once the run "
                                       "has checkpoints; the rest are its own.", low=0, low_open=True, high=1)
    pfsp_power: float = setting(2.0, "self/league: an opponent's weight is (1 - score)^power, floored at 0.05.",
                                low=0, high=16)
    self_slots: int = setting(4, "self/league: opponents drawn at once.", fixed=True, low=1, high=1024)
    tenure: int = setting(1, "self/league: env steps a drawn opponent keeps its envs, in whole rollouts; 0: the "
                             "longest battle.", low=0, high=MAX_STEPS)
    handover: bool = setting(True, "self/league: the next draw takes over the battles in flight (else they "
                                   "restart).")
    obs_norm: bool = setting(True, "Running observation normalization, saved in checkpoints.", fixed=True)
    privileged_critic: bool = setting(False, "The critic reads the env's global state (always on for mappo).",
                                      fixed=True)
    device: str = setting("auto", "cpu, cuda, cuda:N or auto; several processes take a GPU each.", cli=True)
    threads: int | None = setting(None, "torch threads a process; null: arena's choice for the batch, 0: torch's.",
                                  cli=True, low=0, high=1024)
    seed: int = setting(0, "Seed of the weights, the envs and every random stream.", cli=True, low=0, high=MAX_SEED,
                         expect=SEED_RANGE)

    def env_config(self) -> "EnvConfig":
        """The env this run trains in."""
        from arena.env import EnvConfig

        return EnvConfig(obs_mode=self.obs_mode, team_size=self.team_size)  # type: ignore[arg-type]

    def teacher(self) -> str:
        """The kickstart teacher this run uses ("" for none)."""
        return teacher_named(self.kickstart)


def teacher_named(kickstart: str) -> str:
    """The teacher a ``run.kickstart`` value names ("" for none: empty or ``none``)."""
    return "" if kickstart in ("", NO_TEACHER) else kickstart


@dataclass
class TrainConfig:
    run: RunConfig = field(default_factory=RunConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)


def default_config(algorithm: str = "ppo", given: Mapping[str, Any] | None = None) -> TrainConfig:
    """A trainer's defaults for a run given ``given`` (settings by key).

    mappo's are 2-v-2 teams, ValueNorm and the central critic. A run has no teacher: a user with a new
    scenario has none to copy; ``run.kickstart`` adds one (docs/experiments/ holds the league's recipe
    taught by the ladder's top rung), and a taught run's trigger is not masked: the teacher's labels
    say where to fire, and the taught league did better so.
    """
    given = given or {}
    cfg = TrainConfig()
    if algorithm == "mappo":
        cfg.run.team_size = 2
        cfg.run.privileged_critic = True
        cfg.ppo.value_norm = True
        # Near JaxMARL's SMAX rate, no entropy bonus, its gradient clip: arena sweep's choice at 2 v 2
        # (docs/experiments/2026-12-05-a-mappo-sweep-at-2v2.md).
        cfg.ppo.learning_rate, cfg.ppo.entropy_coef, cfg.ppo.max_grad_norm = 1.84e-3, 0.0, 0.25
    if teacher_named(given.get("run.kickstart", cfg.run.kickstart)):
        # Masked, the taught league fell behind against the defender and the ace over nine seeds
        # (docs/experiments/2026-12-05-a-taught-trigger-without-the-mask.md).
        cfg.network.fire_mask = False
    return cfg


def settings_table() -> str:
    """The settings table of docs/training.md (``python -m arena_ppo.train_config`` prints it)."""
    from arena.training.settings import markdown_table

    return markdown_table(default_config("ppo"), {"mappo": default_config("mappo"),
                                                  "taught": default_config("ppo", {"run.kickstart": "ace"})})


if __name__ == "__main__":
    print(settings_table(), end="")
