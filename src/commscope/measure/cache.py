"""Where commscope keeps what it builds and installs: COMMSCOPE_CACHE, or
~/.cache/commscope."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("COMMSCOPE_CACHE")
    base = Path(env) if env else Path(os.path.expanduser("~/.cache/commscope"))
    return base
