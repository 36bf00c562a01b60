"""Two runs, or two sets of runs, compared per benchmark and size: the ratio
of medians with a verdict from a statistical test (Mann-Whitney U on the
raw samples when both sides kept them, else non-overlapping 95% confidence
intervals) and a minimum change factor, as asv gates its comparisons."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ..sizes import human

ALPHA = 0.05


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation
    with tie correction; fine from ~8 samples per side)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        r = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, pooled, strict=True) if side == 0)
    u = r1 - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    mu = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0
    z = (abs(u - mu) - 0.5) / math.sqrt(var)  # continuity correction
    return math.erfc(max(z, 0.0) / math.sqrt(2.0))


@dataclass(frozen=True)
class Comparison:
    bench: str
    np: int
    size: int
    a_median: float
    b_median: float
    ratio: float  # b / a of times: above 1 means B is slower
    verdict: str  # slower | faster | same
    test: str  # mann-whitney p=... | ci
    a_id: int
    b_id: int

    @property
    def regression(self) -> bool:
        return self.verdict == "slower"


def _raw(r: sqlite3.Row) -> list[float] | None:
    raw = r["raw_us"]
    return [float(x) for x in json.loads(raw)] if raw else None


def compare_rows(a_rows: Sequence[sqlite3.Row], b_rows: Sequence[sqlite3.Row],
                 factor: float = 1.05) -> list[Comparison]:
    """Pair the two sets by (benchmark, process count, size); a difference
    is a verdict only if it is significant and beyond `factor`."""
    def key(r: sqlite3.Row) -> tuple[str, int, int]:
        return (r["bench"], int(r["np"]), int(r["size_bytes"]))

    a_map = {key(r): r for r in a_rows if r["valid"] and r["median_us"]}
    b_map = {key(r): r for r in b_rows if r["valid"] and r["median_us"]}
    out: list[Comparison] = []
    for k in sorted(set(a_map) & set(b_map)):
        ra, rb = a_map[k], b_map[k]
        ratio = rb["median_us"] / ra["median_us"]
        xa, xb = _raw(ra), _raw(rb)
        if xa and xb:
            p = mann_whitney_p(xa, xb)
            significant, test = p < ALPHA, f"mann-whitney p={p:.2g}"
        else:
            significant = ra["ci_hi_us"] < rb["ci_lo_us"] or rb["ci_hi_us"] < ra["ci_lo_us"]
            test = "ci"
        verdict = "same"
        if significant and ratio >= factor:
            verdict = "slower"
        elif significant and ratio <= 1.0 / factor:
            verdict = "faster"
        out.append(Comparison(k[0], k[1], k[2], ra["median_us"], rb["median_us"], ratio,
                              verdict, test, int(ra["id"]), int(rb["id"])))
    return out


def table(rows: Sequence[Comparison], a_label: str, b_label: str) -> str:
    lines = [f"A = {a_label}   B = {b_label}   (times: ratio B/A above 1 means B is slower)",
             f"{'bench':<15} {'np':>3} {'size':>6} {'A_us':>11} {'B_us':>11} {'B/A':>7} "
             f"{'verdict':<8} test"]
    for c in rows:
        lines.append(f"{c.bench:<15} {c.np:>3} {human(c.size):>6} {c.a_median:>11.3f} "
                     f"{c.b_median:>11.3f} {c.ratio:>7.3f} {c.verdict:<8} {c.test}")
    n_slow = sum(c.regression for c in rows)
    n_fast = sum(c.verdict == "faster" for c in rows)
    lines.append(f"{len(rows)} pairs: {n_slow} slower, {n_fast} faster, "
                 f"{len(rows) - n_slow - n_fast} the same within the test and factor")
    return "\n".join(lines) + "\n"
