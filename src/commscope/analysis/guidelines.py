"""Self-consistent performance guidelines (Träff, Gropp and Thakur; Hunold
et al.'s PGMPI): a collective should not be slower than a composition of
other collectives that does the same job, nor slower on a smaller message.

Sizes follow the core's convention (docs/collectives.md): bcast, reduce and
allreduce are timed at the message (vector) size m; gather, scatter,
allgather and reduce_scatter at each rank's block s, so a vector of m bytes
over n ranks is a block of m/n.  A guideline is checked at a size only where
every record it needs was measured at exactly the size it needs.

A violation is claimed only where it holds beyond the uncertainty: the
collective's 95% interval lies wholly above the composition's (the sum of
the parts' intervals, which is wider than the sum's own and so errs toward
no claim), the medians differ by at least 5%, and a size separated alone
among measured neighbours is no claim (as for crossovers), nor is the
first or the last size alone.  A smaller message slower than a larger one
(monotony) at the first size swept alone is said as what it most likely
is, the sweep's first size paying its warm-up, with no advice."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..store.sizes import human_bytes
from .crossover import edge_alone_is_no_claim, mpi_name
from .series import Config, Point, Series, lone_is_no_claim
from .significance import MIN_FACTOR

# (benchmark, the part's size for the collective's size m over n ranks)
Part = tuple[str, Callable[[int, int], float]]


def _same(m: int, n: int) -> float:
    return m


def _block(m: int, n: int) -> float:
    return m / n


def _whole(m: int, n: int) -> float:
    return m * n


@dataclass(frozen=True)
class Guideline:
    lhs: str
    parts: tuple[Part, ...]
    text: str  # the inequality as a person reads it

    def sizes_for(self, m: int, n: int) -> list[int] | None:
        """The sizes of the parts for the collective's size m, or None when
        one is not a whole number of bytes."""
        out = []
        for _, f in self.parts:
            s = f(m, n)
            if s != int(s) or s < 1:
                return None
            out.append(int(s))
        return out


GUIDELINES: tuple[Guideline, ...] = (
    Guideline("allreduce", (("reduce", _same), ("bcast", _same)),
              "allreduce(m) <= reduce(m) + bcast(m)"),
    Guideline("allreduce", (("reduce_scatter", _block), ("allgather", _block)),
              "allreduce(m) <= reduce_scatter(m/n) + allgather(m/n)"),
    Guideline("bcast", (("scatter", _block), ("allgather", _block)),
              "bcast(m) <= scatter(m/n) + allgather(m/n)"),
    Guideline("reduce", (("allreduce", _same),), "reduce(m) <= allreduce(m)"),
    Guideline("gather", (("allgather", _same),), "gather(s) <= allgather(s)"),
    Guideline("scatter", (("bcast", _whole),), "scatter(s) <= bcast(n s)"),
    Guideline("allgather", (("gather", _same), ("bcast", _whole)),
              "allgather(s) <= gather(s) + bcast(n s)"),
    Guideline("reduce_scatter", (("reduce", _whole), ("scatter", _same)),
              "reduce_scatter(s) <= reduce(n s) + scatter(s)"),
)

MONOTONE = ("latency", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
            "alltoall", "reduce_scatter")


@dataclass(frozen=True)
class Check:
    """One guideline at one size: the collective against the composition."""
    size: int
    lhs: Point
    rhs_median: float
    rhs_lo: float
    rhs_hi: float
    parts: tuple[tuple[str, int], ...]  # (benchmark, size) of each part
    repeated: bool = True  # every point from two runs or more: between-run intervals

    @property
    def ratio(self) -> float:
        return self.lhs.median / self.rhs_median

    @property
    def separated(self) -> bool:
        """One run's own interval does not hold in the next run here: no
        claim without repetitions."""
        return self.repeated and self.lhs.lo > self.rhs_hi and self.ratio >= MIN_FACTOR


@dataclass(frozen=True)
class Violation:
    config: Config
    guideline: str  # the inequality, or "monotony"
    lhs: str
    checks: tuple[Check, ...]  # the separated sizes
    advice: str

    @property
    def ratio(self) -> float:
        """The median of the violated sizes' ratios."""
        rs = sorted(c.ratio for c in self.checks)
        return rs[len(rs) // 2]

    def where(self) -> str:
        sizes = [c.size for c in self.checks]
        if len(sizes) == 1:
            return f"at {human_bytes(sizes[0])}"
        return f"from {human_bytes(sizes[0])} to {human_bytes(sizes[-1])} ({len(sizes)} sizes)"

    def records(self) -> tuple[int, ...]:
        return tuple(c.lhs.result_id for c in self.checks if c.lhs.result_id is not None)


def _compose(g: Guideline, m: int, n: int, lhs: Point,
             series: Mapping[str, Series]) -> Check | None:
    sizes = g.sizes_for(m, n)
    if sizes is None:
        return None
    pts = []
    for (name, _), s in zip(g.parts, sizes, strict=True):
        p = series.get(name, {}).get(s)
        if p is None:
            return None
        pts.append(p)
    names = tuple((nm, s) for (nm, _), s in zip(g.parts, sizes, strict=True))
    return Check(m, lhs, sum(p.median for p in pts), sum(p.lo for p in pts),
                 sum(p.hi for p in pts), names, _repeated(lhs, *pts))


def _repeated(*pts: Point) -> bool:
    return all(len(p.reps) >= 2 for p in pts)


def _advice(g: Guideline) -> str:
    """What the violation is: a candidate, whose settings the diagnosis
    searches (the library's own composition among them) before anything is
    advised; never code or a composition from the screening alone."""
    parts = " followed by ".join(mpi_name(p) for p, _ in g.parts)
    return (f"{parts} does {mpi_name(g.lhs)}'s job faster here: a candidate for the "
            f"diagnosis, which searches {mpi_name(g.lhs)}'s settings")


WARMUP = ("likely a first-size (warm-up) effect: the first size swept runs first, and one "
          "size alone at the edge of the sweep supports no claim; no advice")


@dataclass(frozen=True)
class Result:
    violations: list[Violation]
    checked: int  # (guideline, size) pairs whose records all exist
    one_run: int  # of those, how many had a point from a single run (no claim)
    # separated at the first size swept alone: no claim, said as a warm-up
    first_size: list[Violation] = field(default_factory=list)


def check(series: Mapping[tuple[Config, str], Series]) -> Result:
    """Every guideline on every configuration where its records exist."""
    checked = one_run = 0
    by_cfg: dict[Config, dict[str, Series]] = {}
    for (cfg, bench), s in series.items():
        if not cfg.oversubscribed:
            by_cfg.setdefault(cfg, {})[bench] = s
    out: list[Violation] = []
    first: list[Violation] = []
    for cfg, benches in sorted(by_cfg.items(), key=lambda kv: (kv[0].mpi, kv[0].np,
                                                                kv[0].cluster)):
        for g in GUIDELINES:
            lhs = benches.get(g.lhs)
            if not lhs:
                continue
            checks = [c for m in sorted(lhs)
                      if (c := _compose(g, m, cfg.np, lhs[m], benches)) is not None]
            checked += len(checks)
            one_run += sum(not c.repeated for c in checks)
            marks = edge_alone_is_no_claim(
                lone_is_no_claim([(c.size, "V" if c.separated else "=") for c in checks]))
            bad = tuple(c for c, (_, m) in zip(checks, marks, strict=True) if m == "V")
            if bad:
                out.append(Violation(cfg, g.text, g.lhs, bad, _advice(g)))
        for name in MONOTONE:
            s = benches.get(name)
            if s:
                v, w = _monotony(cfg, name, s)
                checked += len(s) - 1
                ordered = [s[k] for k in sorted(s)]
                one_run += sum(not _repeated(x, y)
                               for x, y in zip(ordered, ordered[1:], strict=False))
                if v:
                    out.append(v)
                if w:
                    first.append(w)
    return Result(out, checked, one_run, first)


def _monotony(cfg: Config, name: str, s: Series
              ) -> tuple[Violation | None, Violation | None]:
    """A size surely slower than a larger one: each size against the
    largest larger size it is surely above (the widest gap).  Returns the
    violation, and apart from it the first size swept where it was slower
    alone (the next size not slower too): no claim, said as a likely
    warm-up, with no advice."""
    sizes = sorted(s)
    worst_of: dict[int, Check] = {}
    for i, a in enumerate(sizes):
        worst: Check | None = None
        for b in sizes[i + 1:]:
            c = Check(a, s[a], s[b].median, s[b].lo, s[b].hi, ((name, b),),
                      _repeated(s[a], s[b]))
            if c.separated and (worst is None or c.ratio > worst.ratio):
                worst = c
        if worst:
            worst_of[a] = worst
    marks = edge_alone_is_no_claim([(a, "V" if a in worst_of else "=") for a in sizes])
    bad = tuple(worst_of[a] for a, m in marks if m == "V")
    edge = tuple(worst_of[a] for a, m in marks if m == "=" and a in worst_of)
    rule = f"monotony: {name}(m) <= {name}(m') for m < m'"
    what = (f"{mpi_name(name) if name != 'latency' else 'a send'} of a smaller message "
            "takes longer than a larger one")
    why = ("a protocol or algorithm switch is mistuned here; pad the message, or move the "
           "threshold")
    if cfg.buffer != "host":
        # on an H200 without MPS the staged path's 1 B-16 KiB sends took 152-162 us and
        # 64 KiB 34 us; with MPS it was monotone: the GPU's sharing, not a threshold
        why = ("cause not established: on a GPU path the device's copies and how the ranks "
               "share the GPU are in the time (docs/gpu.md, Measured)")
    v = Violation(cfg, rule, name, bad, f"{what}: {why}") if bad else None
    w = Violation(cfg, rule, name, edge, WARMUP) if edge else None
    return v, w


def _first_size_notes(res: Result) -> str:
    """The first sizes swept that were slower alone: said, not claimed."""
    out = [f"  {v.config.label()}: {v.lhs} at {human_bytes(c.size)} ({c.lhs.median:.2f} us) "
           f"above {v.lhs}({human_bytes(c.parts[0][1])}) ({c.rhs_median:.2f} us): {v.advice}"
           for v in res.first_size for c in v.checks]
    return ("not claimed, the first size swept alone:\n" + "\n".join(out) + "\n\n"
            if out else "")


def table(res: Result) -> str:
    note = (f"{res.checked} checks could be made"
            + (f"; {res.one_run} of them involve a size measured in one run only, which "
               f"supports no claim (run with --repeat 3)" if res.one_run else "") + "\n")
    if not res.violations:
        return (_first_size_notes(res)
                + "no guideline violated beyond the between-run uncertainty: " + note)
    out: list[str] = []
    last: Config | None = None
    for v in res.violations:
        if v.config != last:
            out.append(f"\n{v.config.label()}")
            last = v.config
        out.append(f"  {v.guideline}: violated {v.where()}, {v.ratio:.2f}x the composition")
        for c in v.checks:
            parts = " + ".join(f"{p}({human_bytes(s)})" for p, s in c.parts)
            out.append(f"    {human_bytes(c.size):>8}: {v.lhs} {c.lhs.median:.2f} us "
                       f"[{c.lhs.lo:.2f}, {c.lhs.hi:.2f}]  >  {parts} {c.rhs_median:.2f} us "
                       f"[{c.rhs_lo:.2f}, {c.rhs_hi:.2f}]")
        out.append(f"    {v.advice}")
    return "\n".join(out).lstrip("\n") + "\n\n" + _first_size_notes(res) + note
