"""What the applications' records say beyond their times: the bytes each
rank moved per phase, the compute phase's memory rate against the copy
bandwidth measured in the same job, and how much of the halo time Jacobi's
overlapped exchange hides."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..store.config import config_of


def phases(r: Mapping[str, object]) -> dict[str, dict[str, object]]:
    text = r["phases"]
    if not text:
        return {}
    return json.loads(text) if isinstance(text, str) else dict(text)  # type: ignore[arg-type]


def phase_bytes(r: Mapping[str, object]) -> dict[str, tuple[float, ...]]:
    """Each phase's useful bytes per rank (payload sent + received, or
    memory read + written), per sample; phases the core did not count are
    left out."""
    return {k: tuple(float(x) for x in v["bytes_ranks"])  # type: ignore[union-attr]
            for k, v in phases(r).items() if v.get("bytes_ranks")}


CACHE_RATIO = 1.5


@dataclass(frozen=True)
class MemoryRate:
    """A memory-bound phase's bytes per second on its ranks, against one
    rank's copy with every rank copying at once (plain stores, as the
    stencil's), both read + written bytes per ns (GB/s)."""

    phase: str
    gbs: float  # the median over ranks of each rank's bytes / its own median time
    copy_gbs: float | None
    on_device: bool = False  # a GPU path: the job's copy is of host memory, no reference

    @property
    def ratio(self) -> float | None:
        return self.gbs / self.copy_gbs if self.copy_gbs else None

    def text(self) -> str:
        if self.on_device:
            return (f"{self.phase} {self.gbs:.3g} GB/s per rank, in device memory (the copy "
                    "the job measured is of host memory: not set against it)")
        if self.ratio is None:
            return f"{self.phase} {self.gbs:.2f} GB/s per rank"
        # one copy measurement per job, and copies differ by up to 2x between runs
        # on a VM: only a rate well above it says the data came from cache
        where = (" (well above the copy from memory: part of the data came from cache, so "
                 "this is not a memory bandwidth)" if self.ratio > CACHE_RATIO else "")
        return (f"{self.phase} {self.gbs:.3g} GB/s per rank = {self.ratio:.2g} x the copy "
                f"measured in the same job ({self.copy_gbs:.3g} GB/s per rank, every rank "
                f"copying){where}")


def memory_rate(r: Mapping[str, object], phase: str = "compute") -> MemoryRate | None:
    ph = phases(r).get(phase)
    if not ph or not ph.get("bytes_ranks") or not ph.get("ranks_us"):
        return None
    rates = [b / (t * 1e3) for b, t in zip(ph["bytes_ranks"], ph["ranks_us"],  # type: ignore[arg-type]
                                                  strict=True)
             if b and t]
    if not rates:
        return None
    copy = r["copy_gbs"]
    cfg = config_of(r)
    # an H200's stencil read 1.3 TB/s "= 160 x the copy" (the host's)
    if cfg is not None and cfg.buffer != "host":
        return MemoryRate(phase, statistics.median(rates), None, on_device=True)
    return MemoryRate(phase, statistics.median(rates), float(copy) if copy else None)


def parse_params(text: str | None) -> dict[str, str]:
    """K=V;K=V, as the core writes an application's parameters."""
    return dict(x.split("=", 1) for x in (text or "").split(";") if "=" in x)


def params_of(r: Mapping[str, object]) -> dict[str, str]:
    return parse_params(str(r["params"] or ""))


def bytes_text(per_rank: Sequence[float]) -> str:
    """MB of the busiest rank, and of the least busy where they differ."""
    if not per_rank:
        return "-"
    hi, lo = max(per_rank) / 1e6, min(per_rank) / 1e6
    return f"{hi:.3g}" if hi - lo <= 1e-3 * max(hi, 1e-9) else f"{hi:.3g}/{lo:.3g}"


def _interval(r: Mapping[str, object]) -> tuple[float, float]:
    """A record's time interval (between runs where it was repeated)."""
    med = float(r["median_us"])  # type: ignore[arg-type]
    lo, hi = r["ci_lo_us"], r["ci_hi_us"]
    return (float(lo) if lo else med, float(hi) if hi else med)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Overlap:
    """Jacobi with mode=overlap against mode=blocking, everything else the
    same: the fraction of the blocking run's halo time (pack, exchange,
    unpack) that computing the interior meanwhile took off the total."""

    label: str
    np: int
    n: int
    blocking_us: float
    overlap_us: float
    halo_us: float
    oversubscribed: bool = False
    blocking_ci: tuple[float, float] = (0.0, 0.0)  # the totals' intervals
    overlap_ci: tuple[float, float] = (0.0, 0.0)

    @property
    def hidden(self) -> float:
        return (self.blocking_us - self.overlap_us) / self.halo_us if self.halo_us else 0.0

    @property
    def hidden_range(self) -> tuple[float, float]:
        """hidden from the ends of the two totals' intervals."""
        if not self.halo_us:
            return (0.0, 0.0)
        return ((self.blocking_ci[0] - self.overlap_ci[1]) / self.halo_us,
                (self.blocking_ci[1] - self.overlap_ci[0]) / self.halo_us)


HALO = ("pack", "exchange", "unpack")


def overlaps(rows: Sequence[Mapping[str, object]],
             label: Callable[[Mapping[str, object]], str]) -> list[Overlap]:
    """Every blocking/overlap pair of Jacobi records; label(r) names the
    configuration short of the mode (implementation, placement, the other
    parameters)."""
    pairs: dict[tuple[object, ...], dict[str, Mapping[str, object]]] = defaultdict(dict)
    for r in rows:
        if r["bench"] != "jacobi" or not r["valid"] or not r["median_us"]:
            continue
        par = params_of(r)
        rest = ";".join(f"{k}={v}" for k, v in sorted(par.items()) if k not in ("mode", "N"))
        pairs[(label(r), rest, r["np"], r["size_bytes"])][par.get("mode", "blocking")] = r
    out = []
    for (lab, rest, np_, n), by in sorted(pairs.items(), key=lambda kv: str(kv[0])):
        if "blocking" not in by or "overlap" not in by or np_ == 1:
            continue  # one rank has no halo to hide
        b, o = by["blocking"], by["overlap"]
        halo = sum(float(phases(b)[k]["max_us"]) for k in HALO if k in phases(b))  # type: ignore[arg-type]
        out.append(Overlap(f"{lab} {rest}".strip(), int(np_), int(n),  # type: ignore[call-overload]
                           float(b["median_us"]), float(o["median_us"]), halo,  # type: ignore[arg-type]
                           bool(b["oversubscribed"]), _interval(b), _interval(o)))
    return out


@dataclass(frozen=True)
class ScalePoint:
    np: int
    mlups: float  # million lattice updates per second, all ranks
    efficiency: float | None  # against the one-rank run; None without one
    oversubscribed: bool
    record_id: int
    eff_range: tuple[float, float] | None = None  # from the two times' intervals


@dataclass(frozen=True)
class Scaling:
    """Jacobi at one N (per rank when weak) over process counts: lattice
    updates per second and the parallel efficiency against the one-rank
    run of the same configuration in the same data (strong: T1 / (p Tp);
    weak: T1 / Tp)."""

    label: str  # implementation, placement
    n: int
    weak: bool
    iters: int
    rest: str  # the other parameters
    points: tuple[ScalePoint, ...]


def scaling(rows: Sequence[Mapping[str, object]],
            label: Callable[[Mapping[str, object]], str]) -> list[Scaling]:
    groups: dict[tuple[str, str, int], dict[int, Mapping[str, object]]] = defaultdict(dict)
    for r in rows:
        if r["bench"] != "jacobi" or not r["valid"] or not r["median_us"]:
            continue
        par = params_of(r)
        rest = ";".join(f"{k}={v}" for k, v in par.items() if k not in ("N", "px", "py"))
        groups[(label(r), rest, int(r["size_bytes"]))][int(r["np"])] = r  # type: ignore[call-overload]
    out = []
    for (lab, rest, n), by_np in sorted(groups.items()):
        par = parse_params(rest)
        weak, iters = par.get("scale") == "weak", int(par.get("iters", 20))
        base = by_np.get(1)
        pts = []
        for np_, r in sorted(by_np.items()):
            t = float(r["median_us"])  # type: ignore[arg-type]
            lups = float(n * n * (np_ if weak else 1)) * iters / (t * 1e-6)
            eff, rng = None, None
            if base is not None:  # the reference itself is 1 exactly, without an interval
                k = 1 if weak else np_  # strong: T1 / (p Tp); weak: T1 / Tp
                eff = float(base["median_us"]) / (k * t)  # type: ignore[arg-type]
                (b_lo, b_hi), (lo, hi) = _interval(base), _interval(r)
                rng = None if r is base else (b_lo / (k * hi), b_hi / (k * lo))
            pts.append(ScalePoint(np_, lups / 1e6, eff, bool(r["oversubscribed"]),
                                  int(r["id"]), rng))  # type: ignore[call-overload]
        shown = ";".join(f"{k}={v}" for k, v in par.items() if k not in ("scale", "iters"))
        out.append(Scaling(lab, n, weak, iters, shown, tuple(pts)))
    return out
