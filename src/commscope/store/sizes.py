"""Message-size specs ("1:4M", "8"), parsed the way the core parses them
(options.c, cs_parse_size and cs_sizes_expand), so bad input is refused
before anything is launched.  tests/e2e/test_core.py holds the two grammars
together over a list of specs, asking the core (`cs-core --expand-sizes`)."""

from __future__ import annotations

import re

from ..errors import CommscopeError
from .core_facts import option

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# digits, then a unit K, M or G followed by an optional i and an optional B
# (8, 64K, 64KiB, 64kb, 4Mi); no spaces, no B without a unit
_SIZE = re.compile(r"^([0-9]+)(?:([KMG])I?B?)?$", re.IGNORECASE | re.ASCII)
# The largest message the core takes (its --sizes entry).  Its limit on how
# many sizes one spec gives (max_sizes) cannot bind here: factors are 2 or
# more and sizes at most MAX_SIZE, so a spec gives at most 32.
MAX_SIZE = int(option("sizes")["max_size"])  # type: ignore[call-overload]


def _parse(text: str) -> int:
    """One size as cs_parse_size reads it (at most 2^40 bytes)."""
    m = _SIZE.fullmatch(text)
    value = int(m.group(1)) * _UNITS[(m.group(2) or "").upper()] if m else -1
    if not 0 <= value <= 1 << 40:
        raise CommscopeError(f"bad size '{text}' (examples: 8, 64K, 4M)")
    return value


def parse_size(text: str) -> int:
    """One message size (8, 64K, 4MiB), at most the core's largest."""
    value = _parse(text)
    if value > MAX_SIZE:
        raise CommscopeError(f"size {text} is above the {human_bytes(MAX_SIZE)} limit")
    return value


def expand_sizes(spec: str, factor: int = 2) -> list[int]:
    """The sizes MIN:MAX (or N) gives, each FACTOR times the last, refused
    where the core refuses them: its largest is what counts against the
    limit (1:1536M gives sizes up to 1 GiB), not MAX."""
    if factor < 2:
        raise CommscopeError(f"size factor must be at least 2, got {factor}")
    parts = spec.split(":")
    if len(parts) > 2 or not spec:
        raise CommscopeError(f"bad size range '{spec}' (use MIN:MAX or N, e.g. 1:4M)")
    lo = _parse(parts[0])
    hi = _parse(parts[1]) if len(parts) == 2 else lo
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
    if out[-1] > MAX_SIZE:
        raise CommscopeError(f"size {spec} is above the {human_bytes(MAX_SIZE)} limit")
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
