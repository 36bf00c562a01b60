"""The figure beside each conclusion of the first screen: only the lines the
conclusion compares, the sizes it holds for shaded, so that the picture
carries the sentence next to it without the reader hunting in a figure of
ten lines."""

from __future__ import annotations

from collections.abc import Mapping

from ..analysis.crossover import mpi_name
from ..analysis.findings import Finding
from ..analysis.series import Config, Point, Series
from ..analysis.summary import Conclusion
from ..store.core_facts import bench as bench_facts
from .figures import Figure, Line

SIZE = (4.6, 2.7)  # inches: beside a paragraph, within one screen


def _bandwidth(bench: str, np_: int) -> float | None:
    """Bytes moved per byte of size where the core plots a benchmark as a
    bandwidth (bw 1, bibw 2), else None: a time (sendloop too: it moves
    bytes, but its figure is the time per send)."""
    b = bench_facts(bench)
    return b.per_size(np_) if b.figure == "bandwidth" else None


def line(label: str, s: Series, bench: str = "", dashed: bool = False, np_: int = 2) -> Line:
    """A series as a line: time, or bandwidth (MB/s) for the bandwidth
    benchmarks, with its interval."""
    sizes = sorted(x for x in s if x > 0)
    k = _bandwidth(bench, np_)
    if k:
        vals = [(k * x / s[x].median, k * x / s[x].hi, k * x / s[x].lo) for x in sizes]
    else:
        vals = [(s[x].median, s[x].lo, s[x].hi) for x in sizes]
    return Line(label, tuple(sizes), tuple(v[0] for v in vals), tuple(v[1] for v in vals),
                tuple(v[2] for v in vals), tuple(s[x].result_id or 0 for x in sizes), dashed)


def _ylabel(bench: str) -> str:
    return "bandwidth (MB/s)" if bench_facts(bench).figure == "bandwidth" else "time (us)"


def _lines(f: Finding, series: Mapping[tuple[Config, str], Series]) -> list[Line]:
    if f.kind == "faster":
        return [line(c.mpi, series[(c, f.bench)], f.bench, np_=c.np) for c in f.parties
                if (c, f.bench) in series]
    if f.kind == "collective-slower" and f.xrow is not None:
        x = f.xrow
        return [line(mpi_name(x.collective), x.coll), line(x.reference, x.ref, dashed=True)]
    if f.kind == "guideline" and f.violation is not None:
        v = f.violation
        own = series.get((v.config, v.lhs), {})
        rhs = [(c.size, c.rhs_median, c.rhs_lo, c.rhs_hi) for c in v.checks]
        composed = Line(v.guideline.split("<=")[-1].strip() or "composition",
                        tuple(p[0] for p in rhs), tuple(p[1] for p in rhs),
                        tuple(p[2] for p in rhs), tuple(p[3] for p in rhs),
                        tuple(0 for _ in rhs), dashed=True)
        return [line(mpi_name(v.lhs), own), composed] if own else [composed]
    (c,) = f.parties or (None,)
    if c is not None and (c, f.bench) in series:
        return [line(c.mpi, series[(c, f.bench)], f.bench, np_=c.np)]
    return []


def _fixed(c: Conclusion, series: Mapping[tuple[Config, str], Series]) -> list[Line]:
    """Default against fixed, on the benchmark the fix was measured on: the
    configuration under study, those it was slower than, and beside them the
    first with each size's measured ratio (default over fixed, paired within
    rounds) applied."""
    fix, cfg = c.fix, c.cause.config if c.cause else None
    s = series.get((cfg, fix.bench)) if fix and cfg else None
    if not s or fix is None or cfg is None:
        return []
    others = {f.parties[0] for f in (c.finding, *c.also) if f.kind == "faster" and f.parties}
    out = [line(cfg.mpi, s, fix.bench, np_=cfg.np)]
    out += [line(w.mpi, series[(w, fix.bench)], fix.bench, np_=w.np) for w in sorted(
        others, key=lambda w: w.mpi) if (w, fix.bench) in series]
    pts = {size: (r, lo, hi) for size, r, lo, hi in fix.effects if size in s}
    fixed = {size: Point(size, s[size].median / r, s[size].median / hi, s[size].median / lo)
             for size, (r, lo, hi) in pts.items()}
    return out + [line(f"with {fix.label} (measured ratio)", fixed, fix.bench, dashed=True,
                       np_=cfg.np)]


def figure(c: Conclusion, series: Mapping[tuple[Config, str], Series], fig_id: str
           ) -> Figure | None:
    f = c.finding
    lines = _lines(f, series)
    bench = f.bench if f.kind in ("faster", "drop") else ""
    if c.kind == "cause" and c.fix is not None and c.fix.effects:
        fixed = _fixed(c, series)
        if fixed:
            lines, bench = fixed, c.fix.bench
    if not lines:
        return None
    title = {"cause": "a setting's cause", "implementation": "which implementation",
             "setting": "a setting",
             "variant": "which build", "collective": "collective or sends",
             "anomaly": "worth a look"}[c.kind]
    c0 = f.parties[0] if f.parties else None
    where = f", {c0.np} processes, {c0.cluster}" if c0 else ""
    fig = Figure(fig_id, f"{title}: {bench or f.bench}{where}", _ylabel(bench), lines,
                 inches=SIZE)
    if f.kind == "collective-slower" and f.xrow is not None:
        # exactly the runs of sizes the advice names, not one span over the
        # sizes between them where it says there is no difference
        fig.spans += [(lo, hi, "") for m, lo, hi in f.xrow.verdict.runs() if m == "H"]
    elif c.kind == "cause" and c.cause is not None and c.cause.kind == "algorithm":
        # each range the sentence names, not one span over the sizes between
        fig.spans += [(*g.span, "") for g in (f, *c.also) if g.span]
    elif c.kind == "cause" and c.cause is not None and c.cause.sizes:
        fig.spans.append((*c.cause.sizes, ""))  # every size the one cause concerns
    elif f.span:
        lo, hi = f.span
        fig.spans.append((lo, hi, ""))
    return fig


def diagnosis_figure(c, d, fig_id: str) -> Figure | None:
    """A diagnosis's conclusion: the gap as its own rounds measured it
    (slow over fast, each size's median and 95% interval), the confirmed
    sizes shaded, and where a setting was handed over, the gap with it."""
    o = c.outcome
    if o.conf is None or not o.conf.ratios:
        return None
    g = o.gap

    def ratio_line(label: str, rs, dashed: bool = False) -> Line:
        rs = sorted(rs, key=lambda r: r.size)
        return Line(label, tuple(max(r.size, 1) for r in rs), tuple(r.median for r in rs),
                    tuple(r.lo for r in rs), tuple(r.hi for r in rs), tuple(0 for _ in rs),
                    dashed)

    slow, fast = d.labels.get(g.slow_arm, g.slow_arm), d.labels.get(g.fast_arm, g.fast_arm)
    # a collective by its call (MPI_Bcast); a point-to-point benchmark by its
    # name (bw times a window of sends, not a call "MPI_Bw")
    call = mpi_name(g.call) if bench_facts(g.call).group == "coll" else g.call
    ref = "hand-written equivalent" if g.kind == "reference" else "reference"
    what = (f"{slow} over {fast}" if g.kind == "implementation" else
            f"{call} over its {ref}")
    lines = [ratio_line(what, o.conf.ratios)]
    t = o.best_setting()
    if t is not None and t.after:
        # the setting is spelled out in the sentence beside the figure: a legend that long
        # covered the plot (MPICH's barrier: two variables)
        label = f"with {t.hypothesis.label}"
        lines.append(ratio_line(label if len(label) <= 44 else "with the setting", t.after,
                                dashed=True))
    sizes = [r.size for r in o.conf.ratios]
    # "equal" is a thin reference, not a series: a setting that closed the gap
    # lies on it, and must stay the line the reader sees there
    sizeless = all(s == 0 for s in sizes)
    fig = Figure(fig_id, f"{call}, {g.np} processes: the gap measured again",
                 "times as long (paired rounds)", lines, inches=SIZE,
                 xbytes=not sizeless, hlines=[(1.0, "equal")],
                 xlabel="no message: one point" if sizeless else "message size (bytes)")
    fig.spans += [(run[0], run[-1], "") for run in o.conf.held]
    return fig
