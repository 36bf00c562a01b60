"""Tests of significance between sets of figures: Welch's t on per-run
figures, Mann-Whitney on raw samples, and Benjamini-Hochberg over a family
of comparisons made at once."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

FDR = 0.05  # Benjamini-Hochberg false discovery rate over one family of comparisons
# The least change worth a claim, separated or not (asv's change factor): a
# difference under 5% is no finding, no verdict and no sentence, however
# surely the statistics separate it.  (Not the FDR above, nor a 95% interval.)
MIN_CHANGE = 0.05
MIN_FACTOR = 1 + MIN_CHANGE  # == 1.05


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


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Welch on logarithms: the difference of mean logs (b - a), its
    squared standard error and the degrees of freedom."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    ma, mb = sum(la) / len(la), sum(lb) / len(lb)
    va = sum((x - ma) ** 2 for x in la) / (len(la) - 1) / len(la)
    vb = sum((x - mb) ** 2 for x in lb) / (len(lb) - 1) / len(lb)
    df = (va + vb) ** 2 / ((va**2 / (len(la) - 1)) + (vb**2 / (len(lb) - 1)) or 1e-300)
    return mb - ma, va + vb, df


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test on the logarithms of two sets of
    per-run figures (times spread by factors, so logs)."""
    if len(a) < 2 or len(b) < 2:
        return 1.0
    d, var, df = welch(a, b)
    if var <= 0:
        return 0.0 if d != 0 else 1.0
    t = abs(d) / math.sqrt(var)
    return _ibeta(df / 2.0, 0.5, df / (df + t * t))



def ratio_p(ratios: Sequence[float]) -> float:
    """Two-sided p-value of Student's t-test that paired ratios (one per
    round) centre on 1, on their logarithms."""
    if len(ratios) < 2:
        return 1.0
    logs = [math.log(x) for x in ratios]
    n = len(logs)
    m = sum(logs) / n
    var = sum((x - m) ** 2 for x in logs) / (n - 1) / n
    if var <= 0:
        return 0.0 if m != 0 else 1.0
    t = abs(m) / math.sqrt(var)
    df = n - 1
    return _ibeta(df / 2.0, 0.5, df / (df + t * t))


def bh_keep(pvalues: Mapping[object, float], q: float = FDR) -> set[object]:
    """Benjamini-Hochberg: the comparisons that stay significant when
    len(pvalues) of them were made at once."""
    ranked = sorted(pvalues.items(), key=lambda kv: kv[1])
    m = len(ranked)
    cut = 0
    for i, (_, p) in enumerate(ranked, start=1):
        if p <= q * i / m:
            cut = i
    return {k for k, _ in ranked[:cut]}
