"""Seeds: the one rule every entry point checks a seed by, and seeds derived from text.

A seed reaches a torch generator, and the env keeps per-game seeds in int64 tensors, so a seed is an
integer in [0, 2**63 - 1]. Every way into the env — :class:`arena.env.TensorEnv` (built or reset), the
Gymnasium env and vector env, the PettingZoo env — checks it with :func:`check_seed`, so a negative or
too large seed is refused in the same words wherever it is given, instead of being wrapped silently by
one and refused by torch's ``Overflow when unpacking long long`` in another.
"""

from __future__ import annotations

import hashlib
import numbers

MAX_SEED = (1 << 63) - 1  # an int64: what a generator and the env's seed tensors hold
SEED_RANGE = "an integer in [0, 2**63 - 1]"


def check_seed(seed: object, what: str = "seed") -> int:
    """``seed`` as an int when it is an integer (a numpy one too) in [0, 2**63 - 1]; otherwise a
    ``TypeError`` (not an integer) or ``ValueError`` (out of the range) naming ``what``."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{what}: expected {SEED_RANGE}, got {type(seed).__name__} {seed!r:.40}")
    value = int(seed)
    if not 0 <= value <= MAX_SEED:
        shown = str(value) if value.bit_length() <= 256 else f"a {value.bit_length()}-bit integer"
        raise ValueError(f"{what}: expected {SEED_RANGE}, got {shown}")
    return value


def text_seed(text: str) -> int:
    """A 63-bit seed from ``text`` (the first 8 bytes of its sha256)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & MAX_SEED
