"""Hockney's model T(m) = alpha + m / beta, piecewise: a protocol switch
(eager to rendezvous, say) shows as a breakpoint between two sizes, and
each side gets its own alpha and beta.  Fits weigh relative error, since
times span orders of magnitude.

The model is of a message of m bytes: it is fitted to point-to-point and
collective benchmarks only (the core's groups p2p, coll and coll-sends),
never to applications, whose size is a problem size (matmul's N).  A fit
whose parameters no message could have (alpha < 0, a time that does not
grow with size, a piece on too few sizes) is not a model: `implausible`
says why, and `commscope fit` stores none."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..store.core_facts import bench as bench_facts
from ..store.sizes import human_bytes

MIN_POINTS = 3  # per piece
GROUPS = ("p2p", "coll", "coll-sends")  # the core's groups of message-size benchmarks
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


def skipped(bench: str, group: str | None, app_like: bool = False) -> str | None:
    """Why a benchmark gets no Hockney fit, or None when it gets one.
    group: the core's group for it as a core built here says (None: the
    table this package carries says, core_benches.json); app_like: its
    records carry an application's fields (size_param, params, phases),
    what a benchmark neither table knows is judged by (else it is taken for
    a message-size one)."""
    facts = bench_facts(bench)
    if group is None:
        group = facts.group if facts.known else "apps" if app_like else "p2p"
    if group == "apps":
        return "an application: its size is a problem size, not a message"
    if group not in GROUPS:
        return f"not a message-size benchmark (group {group})"
    if facts.sizeless:
        return "no message"
    return None


def _cliff(pts: Sequence[tuple[int, float]]) -> str:
    """Where time per byte jumps most between neighbouring sizes, in words
    ("the time per added byte is 3.1x higher from 512 KiB to 1 MiB than just
    below"), or '' where no step reaches 1.5x."""
    steps = [((t2 - t1) / (s2 - s1), s1, s2)
             for (s1, t1), (s2, t2) in zip(pts, pts[1:], strict=False) if s2 > s1]
    jumps = [(b[0] / a[0], b[1], b[2]) for a, b in zip(steps, steps[1:], strict=False)
             if a[0] > 0 and b[0] > 0]
    if not jumps:
        return ""
    k, lo, hi = max(jumps)
    return (f"the time per added byte is {k:.1f}x higher from {human_bytes(lo)} to "
            f"{human_bytes(hi)} than just below" if k >= 1.5 else "")


def implausible(f: Fit, sizes: Sequence[int],
                times: Sequence[float] | None = None) -> str | None:
    """Why a fit's parameters are no model of a message, or None: each
    piece needs alpha >= 0, a time that grows with size (beta > 0 and
    finite) and MIN_POINTS sizes.  With the times, a negative alpha is
    said in words where it comes from a cliff (the cost per byte jumping
    between two sizes, which no straight piece follows)."""
    why = []
    pts = sorted(zip(sizes, times, strict=True)) if times is not None else []
    for i, p in enumerate(f.pieces):
        name = ("the fit" if len(f.pieces) == 1 else
                "the small-message piece" if i == 0 else "the large-message piece")
        n = sum(p.first_size <= s <= p.last_size for s in sizes)
        if n < MIN_POINTS:
            why.append(f"{name} rests on {n} size{'s' if n != 1 else ''} "
                       f"(fewer than {MIN_POINTS})")
        if p.alpha_us < 0:
            # the piece and the size before it: a cliff at its start bends it too
            at = [i for i, (x, _) in enumerate(pts) if p.first_size <= x <= p.last_size]
            cliff = _cliff(pts[max(at[0] - 2, 0):at[-1] + 1]) if at else ""
            why.append(f"{name} gives alpha {p.alpha_us:.3g} us < 0"
                       + (f": {cliff}, a cliff no straight piece follows" if cliff else ""))
        if not (math.isfinite(p.beta_mb_per_s) and p.beta_mb_per_s > 0):
            why.append(f"{name}'s time does not grow with size (beta <= 0)")
    if not why:
        return None
    return "; ".join(why) + (" (a bad piece)" if len(f.pieces) > 1 else "")
