"""Hockney's model T(m) = alpha + m / beta, piecewise: a protocol switch
(eager to rendezvous, say) shows as a breakpoint between two sizes, and
each side gets its own alpha and beta.  Fits weigh relative error, since
times span orders of magnitude."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

MIN_POINTS = 3  # per piece
REL_FLOOR = 1e-3  # timings are not better than 0.1%: a perfect fit gains nothing


@dataclass(frozen=True)
class Piece:
    alpha_us: float
    beta_mb_per_s: float  # bytes per us; inf when time does not grow with size
    first_size: int
    last_size: int

    @property
    def beta_gb_per_s(self) -> float:
        return self.beta_mb_per_s / 1000.0

    def predict(self, m: float) -> float:
        return self.alpha_us + (m / self.beta_mb_per_s if math.isfinite(self.beta_mb_per_s)
                                and self.beta_mb_per_s > 0 else 0.0)


@dataclass(frozen=True)
class Fit:
    pieces: tuple[Piece, ...]
    rms_rel_error: float

    @property
    def breakpoint(self) -> int | None:
        return self.pieces[1].first_size if len(self.pieces) > 1 else None

    def predict(self, m: float) -> float:
        for p in self.pieces[:-1]:
            if m <= p.last_size:
                return p.predict(m)
        return self.pieces[-1].predict(m)

    def to_json(self) -> dict[str, object]:
        return {"pieces": [asdict(p) for p in self.pieces], "breakpoint": self.breakpoint,
                "rms_rel_error": self.rms_rel_error}


def _wls(m: Sequence[float], t: Sequence[float]) -> tuple[float, float, float]:
    """Least squares of t = a + b m with weights 1/t^2.  Returns a, b and
    the weighted residual sum of squares (relative errors squared)."""
    w = [1.0 / (y * y) for y in t]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, m, strict=True))
    sy = sum(wi * y for wi, y in zip(w, t, strict=True))
    sxx = sum(wi * x * x for wi, x in zip(w, m, strict=True))
    sxy = sum(wi * x * y for wi, x, y in zip(w, m, t, strict=True))
    den = sw * sxx - sx * sx
    b = (sw * sxy - sx * sy) / den if den > 0 else 0.0
    a = (sy - b * sx) / sw
    rss = sum(((a + b * x) - y) ** 2 / (y * y) for x, y in zip(m, t, strict=True))
    return a, b, rss


def _piece(m: Sequence[float], t: Sequence[float]) -> tuple[Piece, float]:
    a, b, rss = _wls(m, t)
    beta = 1.0 / b if b > 0 else math.inf
    return Piece(a, beta, int(m[0]), int(m[-1])), rss


def fit(sizes: Sequence[int], times_us: Sequence[float], *, allow_break: bool = True) -> Fit:
    """One piece, or two when a breakpoint pays for its parameters
    (BIC: n ln(RSS/n) + k ln n, with 2 and 5 parameters)."""
    pts = sorted((s, t) for s, t in zip(sizes, times_us, strict=True) if t > 0)
    if len(pts) < 2:
        raise ValueError("Hockney fit needs at least two sizes")
    m = [float(s) for s, _ in pts]
    t = [v for _, v in pts]
    n = len(m)
    one, rss1 = _piece(m, t)
    best = Fit((one,), math.sqrt(rss1 / n))
    if not allow_break or n < 2 * MIN_POINTS:
        return best

    def bic(rss: float, k: int) -> float:
        return n * math.log(max(rss / n, REL_FLOOR**2)) + k * math.log(n)

    best_bic = bic(rss1, 2)
    for k in range(MIN_POINTS, n - MIN_POINTS + 1):
        left, rl = _piece(m[:k], t[:k])
        right, rr = _piece(m[k:], t[k:])
        b = bic(rl + rr, 5)
        if b < best_bic:
            best_bic = b
            best = Fit((left, right), math.sqrt((rl + rr) / n))
    return best
