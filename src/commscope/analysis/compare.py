"""Two runs, or two sets of runs, compared per benchmark, configuration and
size: the ratio of medians B/A with a 95% interval and a verdict, as asv
and ReFrame gate their comparisons.  A verdict (and exit status 1, for a
regression) needs the change beyond the minimum factor and its interval
beyond 1, under one of two rules, chosen per pair by its repetitions:

between runs (both sides repeated, `commscope run --repeat N`): Welch's t
on the logarithms of the runs' own medians and its interval of the ratio,
kept by Benjamini-Hochberg over every size so tested, so that 400 sizes
tested at 5% do not give 20 regressions by chance.

single run (a side measured once): one run's samples say nothing about the
next run.  Two back-to-back runs of one configuration on the development VM
(407 sizes) differ by 2-3x where the host put them in different modes, and
by 1.2-1.6x over whole bands of neighbouring sizes in one mode (roundtrip
4 B-4 KiB, sendloop 1-4 KiB, reduce_scatter 2-4 MiB); the within-run test
(Mann-Whitney U on raw samples, else non-overlapping CIs) calls 15-22% of
the sizes different.  So a single-run verdict needs all of: the ratio
beyond SINGLE_FACTOR (2x, or --factor where larger: the bands above stay
under 1.6x), the within-run test, a z-test of the log ratio against the
run-to-run noise (the larger of RUN_SIGMA and the scatter the comparison
shows itself between neighbouring sizes) kept by Benjamini-Hochberg over
the sizes, and a neighbouring size changed alike (series.lone_is_no_claim).
Each guard alone fails somewhere: without the 2x floor, two of the three
pairs of runs of that VM that share a mode exit 1 on their bands; with the
floor alone, noise of 15-20% a run crosses 2x at 0.3-3% of the sizes, so
at some size in nearly every comparison of 400.  With all of them, no size
of those pairs and none of 120,000 simulated sizes (lognormal 10-20% a
run, a shift common to each benchmark, CIs of +-1%) is called different
(tests/unit/analysis/test_compare.py).  The price: a single run sees a change of about
2.5x and more; gating on less takes repetitions.

Under either rule, records measured in different host modes (their
cache-line floors, repeats.detect_modes) are not compared: the ratio would
be the host's; nor are bw and bibw records that ran different windows (the
time bound narrowed one): they are different benchmarks."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import CommscopeError
from ..store.config import config_of
from ..store.sizes import human
from .repeats import detect_modes, mode_of, t975
from .series import lone_is_no_claim
from .significance import FDR, MIN_FACTOR, bh_keep, mann_whitney_p, welch, welch_p

ALPHA = 0.05
# The sd of log(B/A) between two single runs of one configuration in one
# host mode, where a comparison has too few sizes to say its own: measured
# 0.068 over the 407 sizes of two back-to-back runs on the development VM.
RUN_SIGMA = 0.07
MIN_SCALE_SIZES = 5  # fewer sizes than this say nothing about their own spread
MAD_SD = 1.4826  # MAD to sd, for normal noise

# A single run's change must be at least this factor: back-to-back runs of
# one configuration in one host mode differ by 1.2-1.6x over bands of
# neighbouring sizes, as one run's placement and timing shift a protocol's
# whole range together (the module's docstring).
SINGLE_FACTOR = 2.0

BETWEEN = "between runs"
SINGLE = "single run"
APART = "host modes differ"
WINDOWS = "windows differ"
RULES = {
    BETWEEN: "between runs: Welch t on the runs' medians (log), Benjamini-Hochberg over the "
             "sizes, ratio beyond --factor and its 95% interval beyond 1",
    SINGLE: f"single run: ratio beyond {SINGLE_FACTOR:g}x (or --factor where larger), the "
            "within-run test, a z-test against the run-to-run noise (sd: the larger of "
            f"{RUN_SIGMA} and the ratios' scatter between neighbouring sizes) kept by "
            "Benjamini-Hochberg over the sizes, and a neighbouring size alike; to gate on "
            "less, repeat: "
            "commscope run ... --repeat 3",
    APART: "host modes differ: records measured at different cache-line floors are not "
           "compared (the ratio would be the host's)",
    WINDOWS: "windows differ: bw or bibw records that ran different windows (one narrowed "
             "by the time bound) are different benchmarks, not compared",
}

# the configuration's fields in the order a row names them; buffer is the --path
FIELDS = ("mpi", "identity", "transport", "buffer", "params", "settings", "extra", "cluster",
          "nodes", "np")
FIELD_NAMES = {"buffer": "path"}


@dataclass(frozen=True)
class Comparison:
    bench: str
    np: int
    size: int
    a_median: float
    b_median: float
    ratio: float  # b / a of times: above 1 means B is slower
    verdict: str  # slower | faster | same | no claim (not comparable)
    test: str  # what decided it, with its numbers
    a_id: int
    b_id: int
    # the configuration fields that differ among the compared rows:
    # (field, A's value, B's value), '' where the field is at its default
    config: tuple[tuple[str, str, str], ...] = ()
    lo: float = math.nan  # 95% interval of the ratio
    hi: float = math.nan
    rule: str = ""  # BETWEEN | SINGLE | APART (not judged)

    @property
    def regression(self) -> bool:
        return self.verdict == "slower"

    def fields(self) -> dict[str, str]:
        """Each differing field as a row shows it: the value, or 'A -> B'
        where the pair's two sides differ in it."""
        return {FIELD_NAMES.get(f, f): va or "-" if va == vb else f"{va or '-'} -> {vb or '-'}"
                for f, va, vb in self.config}


def _raw(r: Mapping[str, object]) -> list[float] | None:
    raw = r["raw_us"]
    return [float(x) for x in json.loads(str(raw))] if raw else None


def _parts(r: Mapping[str, object]) -> dict[str, str]:
    cfg = config_of(r)
    p = cfg.parts() if cfg else {"mpi": str(r["mpi_name"]), "cluster": str(r["cluster"])}
    p["np"] = str(r["np"])  # the record's own, also where no configuration was stored
    return p


def _floors(r: Mapping[str, object]) -> list[float]:
    """The cache-line floors a record (or its repetitions) was measured at."""
    vals = r["floors_ns"] if r["floors_ns"] is not None else [r["floor_ns"]]
    return [float(f) for f in vals or [] if f]  # type: ignore[union-attr]


def _reps(r: Mapping[str, object]) -> list[float]:
    return [float(x) for x in r["rep_medians_us"] or ()]  # type: ignore[union-attr]


def _separate(ra: Mapping[str, object], rb: Mapping[str, object]) -> bool:
    """Do the records' own 95% CIs stay apart? (no CI stored: no evidence)"""
    if None in (ra["ci_lo_us"], ra["ci_hi_us"], rb["ci_lo_us"], rb["ci_hi_us"]):
        return False
    return ra["ci_hi_us"] < rb["ci_lo_us"] or rb["ci_hi_us"] < ra["ci_lo_us"]  # type: ignore[operator]


def noise_scale(series: Mapping[object, Sequence[float]]) -> dict[object, float]:
    """The run-to-run noise of a comparison's single-run log ratios, per
    series (one benchmark and configuration, in size order): the larger of
    RUN_SIGMA, the series' own scatter (where it has MIN_SCALE_SIZES sizes)
    and the scatter over the whole comparison, so a series never claims to
    be quieter than the floor or than the comparison it is part of.  The
    scatter is from the differences between neighbouring sizes (a robust sd
    of them over sqrt 2): a change over a range of sizes, the regression
    looked for, moves one difference, where it would widen a spread about
    the series' median."""
    steps = {k: [y - x for x, y in zip(vs, vs[1:], strict=False)] for k, vs in series.items()}

    def scatter(ds: Sequence[float]) -> float:
        return MAD_SD * statistics.median(abs(d) for d in ds) / math.sqrt(2.0)

    every = [d for ds in steps.values() for d in ds]
    pooled = scatter(every) if len(every) >= MIN_SCALE_SIZES else 0.0
    return {k: max(RUN_SIGMA, pooled, scatter(ds) if len(ds) + 1 >= MIN_SCALE_SIZES else 0.0)
            for k, ds in steps.items()}


@dataclass(frozen=True)
class _Pair:
    key: tuple[object, ...]  # (bench, np, size, configuration fields A and B share)
    a: Mapping[str, object]
    b: Mapping[str, object]
    pa: dict[str, str]
    pb: dict[str, str]

    @property
    def series(self) -> tuple[object, ...]:
        return (self.key[0], self.key[1], *self.key[3:])

    @property
    def size(self) -> int:
        return int(self.key[2])  # type: ignore[call-overload]


def pair_rows(a_rows: Sequence[Mapping[str, object]], b_rows: Sequence[Mapping[str, object]]
              ) -> list[_Pair]:
    """Pair the two sets record by record: same benchmark, process count and
    size, and the same configuration in every field except those in which
    the two sets differ as wholes (A all openmpi, B all mpich: pair by
    everything else).  A set that holds two candidates for one pair is an
    error, never a silent pick."""
    a_ok = [r for r in a_rows if r["valid"] and r["median_us"]]
    b_ok = [r for r in b_rows if r["valid"] and r["median_us"]]
    pa, pb = [_parts(r) for r in a_ok], [_parts(r) for r in b_ok]
    fields = sorted({f for p in pa + pb for f in p})
    differ = {f for f in fields if {p.get(f) for p in pa} != {p.get(f) for p in pb}}

    def key(r: Mapping[str, object], p: dict[str, str]) -> tuple[object, ...]:
        rest = tuple(p.get(f) for f in fields if f not in differ and f != "np")
        return (r["bench"], int(r["np"]), int(r["size_bytes"]), *rest)  # type: ignore[call-overload]

    def index(rows: Sequence[Mapping[str, object]], parts: list[dict[str, str]], side: str
              ) -> dict[tuple[object, ...], tuple[Mapping[str, object], dict[str, str]]]:
        out: dict[tuple[object, ...], tuple[Mapping[str, object], dict[str, str]]] = {}
        for r, p in zip(rows, parts, strict=True):
            k = key(r, p)
            if k in out:
                raise CommscopeError(
                    f"set {side} holds two configurations for {k[0]} at {k[2]} B with "
                    f"{k[1]} processes that differ only in what the two sets share "
                    f"({', '.join(sorted(differ)) or 'nothing'} differs between the sets): "
                    "narrow the selection")
            out[k] = (r, p)
        return out

    a_map, b_map = index(a_ok, pa, "A"), index(b_ok, pb, "B")
    return [_Pair(k, a_map[k][0], b_map[k][0], a_map[k][1], b_map[k][1])
            for k in set(a_map) & set(b_map)]


@dataclass(frozen=True)
class _Test:
    p: float  # two-sided, before the correction over the family
    lo: float  # 95% interval of the ratio B/A
    hi: float
    text: str
    factor: float  # the least change this rule calls a change
    within: bool = True  # single runs: the within-run test also separates them


def _between(ra: Sequence[float], rb: Sequence[float], factor: float) -> _Test:
    d, var, df = welch(ra, rb)
    half = t975(max(1, int(df))) * math.sqrt(max(var, 0.0))
    pv = welch_p(ra, rb)
    return _Test(pv, math.exp(d - half), math.exp(d + half),
                 f"between runs ({len(ra)}+{len(rb)}) welch p={pv:.2g}", factor)


def _single(p: _Pair, lr: float, sd: float, factor: float) -> _Test:
    # sd is the run-to-run noise, which holds each run's own sampling noise
    # too: the records' CIs (or raw samples) enter as the within-run test,
    # not twice
    pv = math.erfc(abs(lr) / sd / math.sqrt(2.0))
    xa, xb = _raw(p.a), _raw(p.b)
    if xa and xb:
        mw = mann_whitney_p(xa, xb)
        within, inner = mw < ALPHA, f"mann-whitney p={mw:.2g}"
    else:
        within, inner = _separate(p.a, p.b), "ci"
    return _Test(pv, math.exp(lr - 1.96 * sd), math.exp(lr + 1.96 * sd),
                 f"one run: {inner}, run noise sd {sd:.2f} p={pv:.2g}",
                 max(factor, SINGLE_FACTOR), within)


def compare_rows(a_rows: Sequence[Mapping[str, object]], b_rows: Sequence[Mapping[str, object]],
                 factor: float = MIN_FACTOR) -> list[Comparison]:
    """Every pair (pair_rows) with its ratio, interval and verdict under the
    rule its repetitions allow (the module's docstring), in the order of
    benchmark, differing configuration, process count and numeric size."""
    pairs = pair_rows(a_rows, b_rows)
    sides = [q for p in pairs for q in (p.pa, p.pb)]
    shown = [f for f in FIELDS if len({q.get(f, "") for q in sides}) > 1]
    if "identity" in shown and all(len({q.get("identity") for q in sides if q["mpi"] == m}) < 2
                                   for m in {q["mpi"] for q in sides}):
        shown.remove("identity")  # each implementation has one build: its name says which
    modes = detect_modes(f for p in pairs for r in (p.a, p.b) for f in _floors(r))

    def apart(p: _Pair) -> bool:
        """Measured in different host modes only: the ratio would be the host's."""
        ma = {m.label for f in _floors(p.a) if (m := mode_of(f, modes))}
        mb = {m.label for f in _floors(p.b) if (m := mode_of(f, modes))}
        return bool(ma and mb) and not ma & mb

    lr = {p.key: math.log(float(p.b["median_us"]) / float(p.a["median_us"]))  # type: ignore[arg-type]
          for p in pairs}
    def window(r: Mapping[str, object]) -> int | None:
        w = r["window"]
        return int(w) if w else None  # type: ignore[call-overload]

    unequal = {p.key: (wa, wb) for p in pairs
               if (wa := window(p.a)) and (wb := window(p.b)) and wa != wb}
    judged = [p for p in pairs if not apart(p) and p.key not in unequal]
    between = {p.key for p in judged if len(_reps(p.a)) >= 2 and len(_reps(p.b)) >= 2}
    single = [p for p in judged if p.key not in between]
    by_series: dict[object, list[float]] = defaultdict(list)
    for p in sorted(single, key=lambda p: p.size):
        by_series[p.series].append(lr[p.key])
    scale = noise_scale(by_series)
    tests = {p.key: _between(_reps(p.a), _reps(p.b), factor) if p.key in between
             else _single(p, lr[p.key], scale[p.series], factor) for p in judged}
    # each rule's sizes are one family: Benjamini-Hochberg over it
    kept = (bh_keep({k: tests[k].p for k in between}, FDR)
            | bh_keep({p.key: tests[p.key].p for p in single}, FDR))

    def mark(k: tuple[object, ...]) -> str:
        t, ratio = tests[k], math.exp(lr[k])
        if k in kept and t.within and ratio >= t.factor and t.lo > 1.0:
            return "slower"
        if k in kept and t.within and ratio <= 1.0 / t.factor and t.hi < 1.0:
            return "faster"
        return "="

    verdict = {k: mark(k) for k in tests}
    # a single-run verdict needs a neighbouring size alike: one size alone
    # among hundreds is what the noise's tails give
    runs: dict[object, list[_Pair]] = defaultdict(list)
    for p in sorted(single, key=lambda p: p.size):
        runs[p.series].append(p)
    for run in runs.values():
        for p, (_, m) in zip(run, lone_is_no_claim([(p.size, verdict[p.key]) for p in run]),
                             strict=True):
            verdict[p.key] = m

    none = _Test(1.0, math.nan, math.nan, "host modes differ: no claim", factor, False)
    out = []
    for p in pairs:
        t = tests.get(p.key, none)
        if p.key in unequal:
            wa, wb = unequal[p.key]
            t = _Test(1.0, math.nan, math.nan, f"windows differ (A {wa}, B {wb}): no claim",
                      factor, False)
        v = verdict.get(p.key, "=")
        out.append(Comparison(
            str(p.key[0]), int(p.key[1]), p.size,  # type: ignore[call-overload]
            float(p.a["median_us"]), float(p.b["median_us"]),  # type: ignore[arg-type]
            math.exp(lr[p.key]), ("no claim" if p.key not in tests else "same") if v == "="
            else v, t.text,
            int(p.a["id"]), int(p.b["id"]),  # type: ignore[call-overload]
            tuple((f, p.pa.get(f, ""), p.pb.get(f, "")) for f in shown), t.lo, t.hi,
            BETWEEN if p.key in between else SINGLE if p.key in tests
            else WINDOWS if p.key in unequal else APART))
    return sorted(out, key=lambda c: (c.bench, c.config, c.np, c.size))


def regressions(rows: Sequence[Comparison]) -> int:
    return sum(c.regression for c in rows)


def exit_status(rows: Sequence[Comparison]) -> int:
    """1 where a pair regressed beyond both the factor and its interval
    (under its rule, so never for noise more often than the rules allow)."""
    return 1 if regressions(rows) else 0


def rules_used(rows: Sequence[Comparison]) -> list[str]:
    return [RULES[r] for r in (BETWEEN, SINGLE, APART, WINDOWS)
            if any(c.rule == r for c in rows)]


def footer(rows: Sequence[Comparison]) -> list[str]:
    n_slow = regressions(rows)
    n_fast = sum(c.verdict == "faster" for c in rows)
    apart = sum(c.rule == APART for c in rows)
    windows = sum(c.rule == WINDOWS for c in rows)
    out = [f"{len(rows)} pairs: {n_slow} slower, {n_fast} faster, "
           f"{len(rows) - n_slow - n_fast - apart - windows} the same within the test and "
           "factor"
           + (f", {apart} not compared (no claim: measured in different host modes; "
              "compare runs taken in one mode, or repeat them)" if apart else "")
           + (f", {windows} not compared (no claim: they ran different windows; run both "
              "with one --window)" if windows else "")]
    return out + [f"rule, {r}" for r in rules_used(rows)]


def _interval(c: Comparison) -> str:
    return "-" if math.isnan(c.lo) else f"{c.lo:.2f}-{c.hi:.2f}"


def table(rows: Sequence[Comparison], a_label: str, b_label: str) -> str:
    names = list(rows[0].fields()) if rows else []
    cells = [[c.fields()[n] for n in names] for c in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    conf = "".join(f" {n:<{w}}" for n, w in zip(names, widths, strict=True))
    lines = [f"A = {a_label}   B = {b_label}   (times: ratio B/A above 1 means B is slower)",
             f"{'bench':<15}{conf} {'size':>6} {'A_us':>11} {'B_us':>11} {'B/A':>7} "
             f"{'95% B/A':>11} {'verdict':<8} test"]
    for c, cell in zip(rows, cells, strict=True):
        conf = "".join(f" {v:<{w}}" for v, w in zip(cell, widths, strict=True))
        lines.append(f"{c.bench:<15}{conf} {human(c.size):>6} {c.a_median:>11.3f} "
                     f"{c.b_median:>11.3f} {c.ratio:>7.3f} {_interval(c):>11} {c.verdict:<8} "
                     f"{c.test}")
    return "\n".join(lines + footer(rows)) + "\n"


def to_json(rows: Sequence[Comparison], a_label: str, b_label: str, factor: float
            ) -> dict[str, object]:
    """What a CI job reads: the selections, the rules used, every pair and
    the count of regressions (the exit status is 1 where it is not zero)."""
    def num(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "a": a_label, "b": b_label, "factor": factor, "rules": rules_used(rows),
        "rows": [{"bench": c.bench, "size_bytes": c.size, "np": c.np,
                  "config": {FIELD_NAMES.get(f, f): {"a": va, "b": vb} for f, va, vb in c.config},
                  "a_median_us": c.a_median, "b_median_us": c.b_median, "ratio": c.ratio,
                  "interval": [num(c.lo), num(c.hi)], "verdict": c.verdict, "rule": c.rule,
                  "test": c.test, "a_id": c.a_id, "b_id": c.b_id} for c in rows],
        "regressions": regressions(rows),
    }
