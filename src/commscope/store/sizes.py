"""Message-size specs ("1:4M", "8"), parsed the way the core parses them,
so bad input is refused before anything is launched."""

from __future__ import annotations

import re

from ..errors import CommscopeError
from .benches import option

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^(\d+)([KMG]?)(I?B)?$", re.IGNORECASE)
# The largest message the core takes (its --sizes entry).  Its limit on how
# many sizes one spec gives (max_sizes) cannot bind here: factors are 2 or
# more and sizes at most MAX_SIZE, so a spec gives at most 32.
MAX_SIZE = int(option("sizes")["max_size"])  # type: ignore[call-overload]


def parse_size(text: str) -> int:
    m = _SIZE.match(text.strip())
    if not m:
        raise CommscopeError(f"bad size '{text}' (examples: 8, 64K, 4M)")
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value > MAX_SIZE:
        raise CommscopeError(f"size {text} is above the {human_bytes(MAX_SIZE)} limit")
    return value


def expand_sizes(spec: str, factor: int = 2) -> list[int]:
    if factor < 2:
        raise CommscopeError(f"size factor must be at least 2, got {factor}")
    parts = spec.split(":")
    if len(parts) > 2 or not spec.strip():
        raise CommscopeError(f"bad size range '{spec}' (use MIN:MAX or N, e.g. 1:4M)")
    lo = parse_size(parts[0])
    hi = parse_size(parts[1]) if len(parts) == 2 else lo
    if hi < lo:
        raise CommscopeError(f"size range {spec} is reversed")
    out: list[int] = []
    s = lo
    if s == 0:
        out.append(0)
        s = 1
    while s <= hi:
        out.append(s)
        s *= factor
    if not out:
        raise CommscopeError(f"size range {spec} is empty")
    return out


def human(size: int) -> str:
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= mult and size % mult == 0:
            return f"{size // mult}{unit}"
    return str(size)


def human_bytes(size: int) -> str:
    """8 B, 1 KiB, 4 MiB: for sentences."""
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= mult and size % mult == 0:
            return f"{size // mult} {unit}"
    return f"{size} B"
