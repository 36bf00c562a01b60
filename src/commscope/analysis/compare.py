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

from ..config import Configuration
from ..errors import CommscopeError
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
    raw = r["raw_us"] if "raw_us" in r.keys() else None
    return [float(x) for x in json.loads(raw)] if raw else None


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return h


def _ibeta(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(
        1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1 - x) / b


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test on the logarithms of two sets of
    per-run figures (times spread by factors, so logs)."""
    if len(a) < 2 or len(b) < 2:
        return 1.0
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    ma, mb = sum(la) / len(la), sum(lb) / len(lb)
    va = sum((x - ma) ** 2 for x in la) / (len(la) - 1) / len(la)
    vb = sum((x - mb) ** 2 for x in lb) / (len(lb) - 1) / len(lb)
    if va + vb <= 0:
        return 0.0 if ma != mb else 1.0
    t = abs(ma - mb) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va**2 / (len(la) - 1)) + (vb**2 / (len(lb) - 1)) or 1e-300)
    return _ibeta(df / 2.0, 0.5, df / (df + t * t))


COMPARED_FIELDS = ("mpi", "transport", "buffer", "params", "settings", "cluster", "nodes",
                   "identity")


def _parts(r: sqlite3.Row) -> dict[str, str]:
    text = r["config"] if "config" in r.keys() else None
    if not text:
        return {"mpi": str(r["mpi_name"]), "cluster": str(r["cluster"])}
    return Configuration.from_json(json.loads(text)).parts()


def compare_rows(a_rows: Sequence[sqlite3.Row], b_rows: Sequence[sqlite3.Row],
                 factor: float = 1.05) -> list[Comparison]:
    """Pair the two sets record by record: same benchmark, process count and
    size, and the same configuration in every field except those in which
    the two sets differ as wholes (A all openmpi, B all mpich: pair by
    everything else).  A set that holds two candidates for one pair is an
    error, never a silent pick.  A difference is a verdict only if it is
    significant and beyond `factor`: between runs (Welch's t on the runs'
    medians) where both sides have repetitions, else within one run
    (Mann-Whitney U on raw samples, or non-overlapping CIs)."""
    a_ok = [r for r in a_rows if r["valid"] and r["median_us"]]
    b_ok = [r for r in b_rows if r["valid"] and r["median_us"]]
    pa, pb = [_parts(r) for r in a_ok], [_parts(r) for r in b_ok]
    fields = sorted({f for p in pa + pb for f in p})
    differ = {f for f in fields if {p.get(f) for p in pa} != {p.get(f) for p in pb}}

    def key(r: sqlite3.Row, p: dict[str, str]) -> tuple[object, ...]:
        rest = tuple(p.get(f) for f in fields if f not in differ)
        return (r["bench"], int(r["np"]), int(r["size_bytes"]), *rest)

    def index(rows: Sequence[sqlite3.Row], parts: list[dict[str, str]], side: str) -> dict:
        out: dict[tuple[object, ...], sqlite3.Row] = {}
        for r, p in zip(rows, parts, strict=True):
            k = key(r, p)
            if k in out:
                raise CommscopeError(
                    f"set {side} holds two configurations for {k[0]} at {k[2]} B with "
                    f"{k[1]} processes that differ only in what the two sets share "
                    f"({', '.join(sorted(differ)) or 'nothing'} differs between the sets): "
                    "narrow the selection")
            out[k] = r
        return out

    a_map, b_map = index(a_ok, pa, "A"), index(b_ok, pb, "B")
    out: list[Comparison] = []
    for k in sorted(set(a_map) & set(b_map), key=str):
        ra, rb = a_map[k], b_map[k]
        ratio = rb["median_us"] / ra["median_us"]
        reps_a, reps_b = _reps(ra), _reps(rb)
        xa, xb = _raw(ra), _raw(rb)
        if len(reps_a) >= 2 and len(reps_b) >= 2:
            p = welch_p(reps_a, reps_b)
            significant = p < ALPHA
            test = f"between runs ({len(reps_a)}+{len(reps_b)}) welch p={p:.2g}"
        elif xa and xb:
            p = mann_whitney_p(xa, xb)
            significant, test = p < ALPHA, f"one run: mann-whitney p={p:.2g}"
        else:
            significant = ra["ci_hi_us"] < rb["ci_lo_us"] or rb["ci_hi_us"] < ra["ci_lo_us"]
            test = "one run: ci"
        verdict = "same"
        if significant and ratio >= factor:
            verdict = "slower"
        elif significant and ratio <= 1.0 / factor:
            verdict = "faster"
        out.append(Comparison(str(k[0]), int(k[1]), int(k[2]), ra["median_us"], rb["median_us"],  # type: ignore[call-overload]
                              ratio, verdict, test, int(ra["id"]), int(rb["id"])))
    return out


def _reps(r: sqlite3.Row) -> list[float]:
    try:
        return [float(x) for x in r["rep_medians_us"]]
    except (KeyError, IndexError, TypeError):
        return []


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
