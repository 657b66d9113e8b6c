"""Seeds: the largest seed arena takes, the env's check of a seed, and seeds derived from text.

A seed a user gives arena (``--seed`` of every command, a league file's ``seed``, the trainer's
``run.seed``, the benchmark scripts' ``--seed``/``--seeds``) is an integer in [0, 2**62 - 1],
:data:`MAX_SEED`, refused in the words of :data:`SEED_RANGE` wherever it is read. A run adds small
offsets to its seed (its evaluations', its exploiter's streams), and the sum must stay an int64.

The env takes more: a seed reaches a torch generator, and the env keeps per-game seeds in int64 tensors,
so the env's seed is an integer in [0, 2**63 - 1] (seeds derived from text, as a league's game seeds
are, use all 63 bits). Every way into the env — :class:`arena.env.TensorEnv` (built or reset), the
Gymnasium env and vector env, the PettingZoo env — checks it with :func:`check_seed`, so a negative or
too large seed is refused in the same words wherever it is given, instead of being wrapped silently by
one and refused by torch's ``Overflow when unpacking long long`` in another.
"""

from __future__ import annotations

import hashlib
import numbers

MAX_SEED = (1 << 62) - 1  # the largest seed arena takes from its user: offsets added to it stay an int64
SEED_RANGE = "an integer in [0, 2**62 - 1]"
INT64_MAX = (1 << 63) - 1  # what a generator and the env's seed tensors hold: the env's seed
ENV_SEED_RANGE = "an integer in [0, 2**63 - 1]"


def check_seed(seed: object, what: str = "seed") -> int:
    """``seed`` as an int when it is an integer (a numpy one too) in [0, 2**63 - 1]; otherwise a
    ``TypeError`` (not an integer) or ``ValueError`` (out of the range) naming ``what``."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{what}: expected {ENV_SEED_RANGE}, got {type(seed).__name__} {seed!r:.40}")
    value = int(seed)
    if not 0 <= value <= INT64_MAX:
        shown = str(value) if value.bit_length() <= 256 else f"a {value.bit_length()}-bit integer"
        raise ValueError(f"{what}: expected {ENV_SEED_RANGE}, got {shown}")
    return value


def text_seed(text: str) -> int:
    """A 63-bit seed from ``text`` (the first 8 bytes of its sha256)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & INT64_MAX
