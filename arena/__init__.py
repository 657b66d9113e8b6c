"""Arena: a plugin-based arena for training and rating agents in vectorized air combat."""

__version__ = "0.1.0"
