"""LogGP parameters from parametrised round trips, as netgauge measures them.

PRTT(n, d, s): rank 0 sends n messages of s bytes, d us apart, and gets one
reply.  With G_all(s) = g + (s - 1) G:
  PRTT(1,0,s)            = 2 (o_s + L + o_r) + 2 (s - 1) G      (one message each way)
  PRTT(n,0,s) - PRTT(1,0,s) = (n - 1) max(o_s, o_r, G_all(s))
  PRTT(n,d,s) - PRTT(1,0,s) = (n - 1) (o_s + d)   when d > G_all(s)  (sender-bound)
  PRTT_r(n,d,s) - PRTT(1,0,s) = (n - 1) (o_r + d) when the receiver waits d
So o_s and o_r come from the delayed trains at the smallest size, g and G
from a straight line through G_all(s), and L from PRTT(1,0,s)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class LogGP:
    L_us: float
    o_s_us: float
    o_r_us: float
    g_us: float
    G_us_per_byte: float
    n: int
    d_us: float
    size_for_o: int

    @property
    def G_gb_per_s(self) -> float:
        return 1e-3 / self.G_us_per_byte if self.G_us_per_byte > 0 else float("inf")

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def extract(prtt1: Mapping[int, float], prttn: Mapping[int, float], prttnd: Mapping[int, float],
            prttndr: Mapping[int, float], n: int, d_us: float) -> LogGP:
    sizes = sorted(set(prtt1) & set(prttn) & set(prttnd) & set(prttndr))
    if len(sizes) < 2:
        raise ValueError("LogGP needs all four trains at two sizes or more")
    s0 = sizes[0]
    o_s = (prttnd[s0] - prtt1[s0]) / (n - 1) - d_us
    o_r = (prttndr[s0] - prtt1[s0]) / (n - 1) - d_us
    gall = {s: (prttn[s] - prtt1[s]) / (n - 1) for s in sizes}
    # Fit g + (s - 1) G over the sizes where the gap, not an overhead, binds.
    # (at least the two largest sizes, so there is always a slope).
    bound = [s for s in sizes if gall[s] > max(o_s, o_r)]
    if len(bound) < 2:
        bound = sizes[-2:]
    pts = [(s - 1, gall[s]) for s in bound]
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    G = sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx > 0 else 0.0
    g = my - G * mx
    L = prtt1[s0] / 2 - o_s - o_r - (s0 - 1) * G
    return LogGP(L, o_s, o_r, g, G, n, d_us, s0)
