"""Seeds derived from text: the same text gives the same seed on every machine, process and run."""

from __future__ import annotations

import hashlib


def text_seed(text: str) -> int:
    """A 63-bit seed from ``text`` (the first 8 bytes of its sha256)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & (2**63 - 1)
