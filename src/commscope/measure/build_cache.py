"""Where commscope keeps what it builds and installs: COMMSCOPE_CACHE, or
~/.cache/commscope."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_dir() -> Path:
    env = os.environ.get("COMMSCOPE_CACHE")
    base = Path(env) if env else Path(os.path.expanduser("~/.cache/commscope"))
    return base
