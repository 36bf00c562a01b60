"""Order statistics, mirroring core/harness/stats.c exactly: the core uses
them to stop sampling, the analyses to judge stored raw samples."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


def quantile_sorted(x: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (Hyndman-Fan type 7)."""
    n = len(x)
    if n == 0:
        return math.nan
    h = (n - 1) * q
    i = math.floor(h)
    if i >= n - 1:
        return x[n - 1]
    return x[i] + (h - i) * (x[i + 1] - x[i])


def median_ci_ranks(n: int) -> tuple[int, int]:
    """0-based ranks of the order statistics bounding the median's 95% CI."""
    half = Z95 * math.sqrt(n) / 2.0
    j = max(1, math.floor(n / 2.0 - half))
    k = min(n, math.ceil(n / 2.0 + 1.0 + half))
    return j - 1, k - 1


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    p5: float
    p95: float
    ci_lo: float
    ci_hi: float

    @property
    def ci_half(self) -> float:
        return (self.ci_hi - self.ci_lo) / 2.0

    def converged(self, target: float) -> bool:
        return self.n >= 3 and self.median > 0 and self.ci_half / self.median <= target


def summarize(samples: Sequence[float]) -> Summary:
    x = sorted(samples)
    n = len(x)
    if n == 0:
        raise ValueError("no samples")
    lo, hi = median_ci_ranks(n)
    return Summary(n=n, median=quantile_sorted(x, 0.5), mean=sum(x) / n, min=x[0], max=x[-1],
                   p5=quantile_sorted(x, 0.05), p95=quantile_sorted(x, 0.95), ci_lo=x[lo],
                   ci_hi=x[hi])
