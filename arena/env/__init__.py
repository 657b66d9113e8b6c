"""The GPU-vectorized air-combat simulation, 1 v 1 up to 8 v 8."""

from arena.env.actions import ACTION_KEYS, check_action
from arena.env.config import EnvConfig, RewardConfig, env_config_of
from arena.env.devices import DeviceUnavailableError, resolve_device
from arena.env.observations import EXTENDED_OBS_KEYS, OBS_KEYS, PLAYERS, obs_vector
from arena.env.state import WorldState
from arena.env.tensor_env import TensorEnv

__all__ = [
    "ACTION_KEYS", "DeviceUnavailableError", "EXTENDED_OBS_KEYS", "EnvConfig", "OBS_KEYS", "PLAYERS", "RewardConfig",
    "TensorEnv", "WorldState", "check_action", "env_config_of", "obs_vector", "resolve_device",
]
