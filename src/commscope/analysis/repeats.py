"""Between-run statistics: a configuration is measured in several
independent repetitions (separate launches, interleaved with the other
configurations); its headline figure per size is the median over
repetitions, and its uncertainty comes from the spread between them, not
from the samples inside one run, which on a VM say nothing about the next.

Also the machine's modes: every record carries the cache-line floor
measured just before it; floors that cluster apart are the host's modes
(SMT siblings, other cores, other sockets), and a comparison between
configurations is drawn only from records of one mode."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store.records import combined
from .point import AGGREGATED_NAMES, NAMES, point

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)

# Floors further apart than this factor belong to different modes: the
# modes seen here are ~24, ~50 and ~200 ns, each within +-15% of itself.
MODE_GAP = 1.3
# A cluster of floors wider than this (its 95th percentile over its 5th:
# _inner) is no mode but the floor's continuous drift, chained reading by
# reading: another host's floor wanders over 120-500 ns, and single linkage
# at MODE_GAP made one "mode" of 121 ... 904 ns.  A mode is a tight cluster.
MODE_SPAN = 1.6
# Floors further apart than this are another state of the host, not its
# drift: a run (or a round of the diagnosis) taken that far from the others
# measures the host.  The jumps seen are 4-5x (60 against 275 ns).
JUMP = 2.0


def same_mode(a: float | None, b: float | None) -> bool:
    """Two records' core-to-core floors in one machine mode: the host moves
    the vCPUs (60 ns, then 275 ns for seconds), and a pair measured across
    modes measures the host, not the setting.  An unknown floor is no
    evidence of another mode."""
    return a is None or b is None or max(a, b) <= MODE_GAP * min(a, b)


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df


@dataclass(frozen=True)
class Between:
    """One configuration's figure at one size over its repetitions."""

    n: int
    median: float
    lo: float  # 95% interval of a run's typical figure (t on log values)
    hi: float
    spread: float  # max / min over repetitions
    # 95% prediction interval of one more repetition (t on log values): where
    # a user who runs again should expect its figures (drift between runs
    # aside), where the interval above is what comparisons between
    # configurations measured together use
    next_lo: float = math.nan
    next_hi: float = math.nan

    @property
    def half_rel(self) -> float:
        return (self.hi - self.lo) / 2.0 / self.median if self.median > 0 else math.nan


def between(values: Sequence[float], floor_lo: float | None = None,
            floor_hi: float | None = None) -> Between:
    """The median over repetitions, and a 95% interval from their spread:
    Student's t on the logarithms (times are positive and spread by
    factors), never narrower than [floor_lo, floor_hi] (what one run's own
    CI and the clock already allow) and always holding the median."""
    xs = sorted(v for v in values if v is not None and v > 0)
    if not xs:
        raise ValueError("no positive values")
    med = statistics.median(xs)
    n = len(xs)
    if n == 1:
        lo = hi = nlo = nhi = med
    else:
        logs = [math.log(v) for v in xs]
        m = statistics.fmean(logs)
        s = t975(n - 1) * statistics.stdev(logs)
        # the typical figure: s / sqrt(n); one more run: s * sqrt(1 + 1/n)
        lo, hi = math.exp(m - s / math.sqrt(n)), math.exp(m + s / math.sqrt(n))
        nlo, nhi = math.exp(m - s * math.sqrt(1 + 1 / n)), math.exp(m + s * math.sqrt(1 + 1 / n))
    lo = min(lo, med, floor_lo if floor_lo is not None else med)
    hi = max(hi, med, floor_hi if floor_hi is not None else med)
    return Between(n, med, lo, hi, xs[-1] / xs[0], min(nlo, lo), max(nhi, hi))


# -- modes --------------------------------------------------------------------
@dataclass(frozen=True)
class Mode:
    lo_ns: float
    hi_ns: float
    center_ns: float
    count: int

    @property
    def label(self) -> str:
        return f"floor~{self.center_ns:.0f}ns"

    def holds(self, floor_ns: float) -> bool:
        return self.lo_ns <= floor_ns <= self.hi_ns


def detect_modes(floors: Iterable[float | None], gap: float = MODE_GAP) -> list[Mode]:
    """Cluster floor readings: sorted, a new mode starts wherever a reading
    exceeds the previous one by more than `gap`.  Modes only where every
    cluster is tight (MODE_SPAN): where one chains readings over a wider
    range, the floor drifts continuously and the readings are one mode
    (a run far from its point's others is left out there: far_floor)."""
    xs = sorted(f for f in floors if f is not None and f > 0)
    groups: list[list[float]] = []
    for x in xs:
        if groups and x <= groups[-1][-1] * gap:
            groups[-1].append(x)
        else:
            groups.append([x])
    if len(groups) > 1 and any(_inner(g) > MODE_SPAN for g in groups):
        groups = [xs]
    return [Mode(g[0], g[-1], statistics.median(g), len(g)) for g in groups]


def _inner(g: Sequence[float]) -> float:
    """How wide a sorted cluster of floors is: its 95th percentile over its
    5th.  A host with discrete modes also reads a few floors between them
    (a handful of 80-125 ns records among 7,000 at 52-80 ns, on a host whose
    other mode is 200-330 ns), and they chain the nearer mode into a wide
    cluster: its ends are no measure of it, its middle 90% is."""
    lo, hi = g[int(0.05 * (len(g) - 1))], g[math.ceil(0.95 * (len(g) - 1))]
    return hi / lo


def mode_of(floor_ns: float | None, modes: Sequence[Mode]) -> Mode | None:
    if floor_ns is None:
        return None
    return next((m for m in modes if m.holds(floor_ns)), None)


# -- aggregation ------------------------------------------------------------------
# the fields a point takes the median of over its runs, as a record declares them
RATE_KEYS, TIME_KEYS = combined("rate"), combined("time")


def named_mode(modes: Sequence[Mode], label: str) -> Mode | None:
    """The mode a label (floor~58ns) names among these: a mode's label is
    the median floor of the records it was found among, so the same mode
    read from a subset (one implementation's records) may be floor~57ns;
    the mode of these within MODE_GAP of it, the nearest."""
    m = re.fullmatch(r"floor~(\d+(?:\.\d+)?)ns", label)
    if m is None:
        return None
    ns = float(m.group(1))
    near = [x for x in modes if same_mode(x.center_ns, ns)]
    return min(near, key=lambda x: abs(math.log(x.center_ns / ns)), default=None)


def pick_mode(modes: Sequence[Mode], mode: str | None) -> str | None:
    """The label of the mode to keep, or None to keep every record: a
    "dominant" mode must hold more than half of the records with a floor
    (with two records in two modes, neither is the machine's usual state)."""
    if mode is None or len(modes) < 2:
        return None
    if mode != "dominant":
        m = named_mode(modes, mode)
        return m.label if m is not None else mode
    top = max(modes, key=lambda m: m.count)
    return top.label if 2 * top.count > sum(m.count for m in modes) else None


def aggregate(rows: Sequence[Mapping[str, object]], *, mode: str | None = None,
              modes: Sequence[Mode] | None = None) -> list[Any]:
    """One point (analysis/point.py: typed, frozen, every field there) per
    (configuration, benchmark, size) from its repetitions:
    median over runs as median_us, the between-run 95% interval as
    ci_lo_us/ci_hi_us (so every analysis that separates CIs uses it), the
    within-run CI kept as within_ci_us, and the runs' floors and modes.

    mode: None keeps every record; otherwise a run far from its point's
    others (far_floor) is left out, and "dominant" keeps, where the set spans
    several modes, the runs measured in the mode most records were (when
    one holds more than half of them; records without a floor are kept); a
    mode label keeps that mode.  A point none of whose runs was measured in
    that mode keeps them all, marked other_mode."""
    if modes is None:
        modes = detect_modes(r["floor_ns"] for r in rows)  # type: ignore[misc]
    want = pick_mode(modes, mode)
    groups: dict[tuple[object, ...], list[Mapping[str, object]]] = defaultdict(list)
    for r in rows:
        key = (r["config_key"] or r["mpi_name"], r["bench"], r["np"], r["size_bytes"])
        groups[key].append(r)
    out = []
    dropped = 0
    for rs in groups.values():
        other = False
        if want is not None:
            mine = [r for r in rs if (m := mode_of(r["floor_ns"], modes)) is None  # type: ignore[arg-type]
                    or m.label == want]
            if not _clean(mine) and _clean(rs):
                # the mode's runs were all taken while other processes used the
                # CPU (or failed): the clean runs of another mode stand in, marked,
                # rather than a hole
                mine = []
            # a point measured only in other modes keeps its runs (and says so):
            # a hole in a series would say nothing at all
            other = not mine
            dropped += 0 if other else len(rs) - len(mine)
            kept = {id(r) for r in mine}
            elsewhere = [r for r in rs if mine and id(r) not in kept]
            rs = mine or rs
        else:
            elsewhere = []
        # a mode the user named is the state asked about: no other state widens it
        row = _combine(rs, modes, drop_far=mode is not None, elsewhere=elsewhere,
                       widen=mode == "dominant")
        row["other_mode"] = other
        out.append(row)
    if dropped:
        for row in out:
            row["mode_dropped"] = dropped
    _pool_next(out)
    return [point(row) for row in out]


def next_interval(r: Mapping[str, object]) -> tuple[float, float] | None:
    """A point's time interval as the tables print it: where a next run's
    figure is expected (what _combine and _pool_next stored), or one run's
    own CI for a record not combined over runs."""
    lo, hi = r["ci_lo_us"], r["ci_hi_us"]
    if r["next_lo_us"] is not None:
        lo, hi = r["next_lo_us"], r["next_hi_us"]
    if lo is None or hi is None or not float(lo) > 0:  # type: ignore[arg-type]
        return None
    return float(lo), float(hi)  # type: ignore[arg-type]


# A point's run-to-run spread is pooled with its configuration's points of
# the same benchmark and process count within this factor of its size: the
# spread differs by size (reduce: 0.013 of log at 1 KiB and below, 0.064
# above, on one store), so a band, not the whole benchmark.
POOL_BAND = 16


def _pool_next(rows: Sequence[dict[str, object]]) -> None:
    """Where a point rests on one or two runs (the others in another machine
    mode, or fewer were taken), its own spread says next to nothing about a
    next run (a t interval from two values is 12.7 standard errors wide).
    Its interval for a next run is then the prediction interval from the
    run-to-run spread of its configuration's points of the same benchmark
    and process count within POOL_BAND of its size, pooled (the variance of
    the logarithms, weighted by their degrees of freedom), where they have
    three degrees of freedom or more; reaching its own runs, one run's own
    CI and the runs taken in another state of the host."""
    spread: dict[tuple[object, ...], list[tuple[int, float, int]]] = defaultdict(list)
    for r in rows:
        meds = r["rep_medians_us"] or ()
        if len(meds) >= 2:  # type: ignore[arg-type]
            logs = [math.log(float(v)) for v in meds]  # type: ignore[union-attr]
            spread[_series_of(r)].append((int(r["size_bytes"]), statistics.variance(logs),  # type: ignore[call-overload]
                                          len(logs) - 1))
    for r in rows:
        meds = r["rep_medians_us"] or ()
        if not meds or len(meds) > 2:  # type: ignore[arg-type]
            continue
        size = max(1, int(r["size_bytes"]))  # type: ignore[call-overload]
        near = [(v, d) for x, v, d in spread.get(_series_of(r), ())
                if size / POOL_BAND <= max(1, x) <= size * POOL_BAND]
        df = sum(d for _, d in near)
        if df < 3:
            continue
        ss = sum(v * d for v, d in near)
        n = len(meds)  # type: ignore[arg-type]
        m = statistics.fmean(math.log(float(v)) for v in meds)  # type: ignore[union-attr]
        half = t975(df) * math.sqrt(ss / df) * math.sqrt(1 + 1 / n)
        med, w = float(r["median_us"]), float(r["within_ci_us"] or 0.0)  # type: ignore[arg-type]
        seen = [float(x) for x in r["other_state_us"]]  # type: ignore[attr-defined]
        own = [float(x) for x in meds]  # type: ignore[union-attr]
        r["next_lo_us"] = min([math.exp(m - half), med - w, *own, *seen])
        r["next_hi_us"] = max([math.exp(m + half), med + w, *own, *seen])
        r["next_pooled"] = True


def _series_of(r: Mapping[str, object]) -> tuple[object, ...]:
    return (r["config_key"] or r["mpi_name"], r["bench"], r["np"])


def _clean(rs: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """The valid runs measured with no other process on the CPU."""
    return [r for r in rs if r["valid"] and r["median_us"] and not r["flagged"]]


def far_floor(rs: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """The runs of one point taken far from the others' machine state: a
    core-to-core floor more than JUMP from their median (where the floor
    drifts continuously, no mode separates such a run; its figure measures
    the host).  Only with three runs or more, and never more than leaves two."""
    floors = [float(f) for r in rs if (f := r["floor_ns"])]  # type: ignore[arg-type]
    if len(rs) < 3 or len(floors) < 3:
        return []
    med = statistics.median(floors)
    far = [r for r in rs if (f := r["floor_ns"])
           and not med / JUMP <= float(f) <= med * JUMP]  # type: ignore[arg-type]
    return far if len(rs) - len(far) >= 2 else []


def _combine(rs: Sequence[Mapping[str, object]], modes: Sequence[Mode],
             drop_far: bool = False, elsewhere: Sequence[Mapping[str, object]] = (),
             widen: bool = False) -> dict[str, object]:
    """One point from its runs; `elsewhere`: its runs left out as taken in
    another machine mode (and, with drop_far, those far from the others'
    floor): they are not the figure, but a next run may be taken in that
    state too, so with `widen` (the usual mode kept, not one the user named)
    the interval for a next run reaches their figures."""
    valid = [r for r in rs if r["valid"] and r["median_us"]]
    # a run measured while others took the CPU counts only when every run was
    clean = _clean(valid)
    good = clean or valid
    # one machine state asked for (a mode, or the dominant one): a run taken
    # far from its point's others is another state, whatever the modes say
    far = far_floor(good) if drop_far else []
    good = [r for r in good if r not in far]
    first = rs[0] if not good else sorted(good, key=lambda r: float(r["median_us"]))[  # type: ignore[arg-type]
        (len(good) - 1) // 2]
    # the record's fields (a column an older commscope stored, and no field declares now,
    # is not the point's)
    base: dict[str, object] = {k: first[k] for k in first.keys() if k in NAMES}
    base.update(dict.fromkeys(AGGREGATED_NAMES))  # each set below where it applies
    base["n_reps"] = len(rs)
    # the runs the figure combines: a run measured while other processes
    # took the CPU is left out where a clean one exists
    base["n_used"] = len(good)
    base["far_reps"] = len(far)  # left out: taken far from the others' floor
    windows = [int(w) for r in good if (w := r["window"])]  # type: ignore[call-overload]
    if windows:  # a run narrowed by the time bound: the figure is no wider than it
        base["window"] = min(windows)
        base["windows"] = tuple(sorted(set(windows)))
    base["valid"] = all(bool(r["valid"]) for r in rs)
    base["flagged"] = bool(valid) and not clean
    base["noisy_reps"] = len(valid) - len(clean)
    # runs that stopped at the time cap or the sample limit before their
    # interval reached the target
    base["unconverged_reps"] = sum(1 for r in good if r["converged"] is not None
                                   and not r["converged"])
    base["rep_ids"] = tuple(int(r["id"]) for r in rs)  # type: ignore[call-overload]
    floors = [r["floor_ns"] for r in rs]
    base["floors_ns"] = tuple(floors)
    base["modes"] = tuple(sorted({m.label for f in floors
                                  if (m := mode_of(f, modes)) is not None}))  # type: ignore[arg-type]
    if not base["valid"] or not good:
        return base
    meds = [float(r["median_us"]) for r in good]  # type: ignore[arg-type]
    within = [float(r["ci_us"]) for r in good if r["ci_us"] is not None]  # type: ignore[arg-type]
    w = statistics.median(within) if within else 0.0
    med = statistics.median(meds)
    b = between(meds, med - w, med + w)
    base["median_us"] = b.median
    base["ci_lo_us"], base["ci_hi_us"] = b.lo, b.hi
    base["ci_us"] = (b.hi - b.lo) / 2.0
    # where a next run's figure is expected: the prediction interval, reaching
    # the figures of this point's clean runs taken in another state of the host
    seen = [float(r["median_us"]) for r in _clean([*far, *elsewhere])] if widen else []  # type: ignore[arg-type]
    # two runs: their range (a t interval from two values is 12.7 standard errors
    # wide), held to one run's CI; _pool_next replaces it where a spread is pooled
    lo, hi = (b.next_lo, b.next_hi) if len(meds) != 2 else (min(*meds, med - w),
                                                              max(*meds, med + w))
    base["next_lo_us"] = min([lo, *seen])
    base["next_hi_us"] = max([hi, *seen])
    base["other_state_us"] = tuple(seen)
    base["within_ci_us"] = w
    base["rep_medians_us"] = tuple(meds)
    base["spread"] = b.spread
    for k in TIME_KEYS + RATE_KEYS:
        vals = [float(v) for r in good if (v := r[k]) is not None]  # type: ignore[arg-type]
        base[k] = statistics.median(vals) if vals else None
    if base["phases"]:  # each phase's slowest-rank time: its median over the runs
        runs = [json.loads(str(r["phases"])) for r in good if r["phases"]]
        ph = json.loads(str(base["phases"]))
        for name, v in ph.items():
            has = [x[name] for x in runs if name in x]
            v["max_us"] = statistics.median(float(x["max_us"]) for x in has)
            # and the ranks' arrival skew alike, over the same runs (where
            # each of them has one), so that the two a prediction adds and
            # sets against each other are medians of one set of runs
            skews = [float(x["skew_us"]) for x in has
                     if isinstance(x.get("skew_us"), int | float)]
            if "skew_us" in v and len(skews) == len(has):
                v["skew_us"] = statistics.median(skews)
        base["phases"] = json.dumps(ph)
    return base
