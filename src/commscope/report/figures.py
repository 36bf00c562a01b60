"""Figure data from stored records, and SVG plots of it.  The data step is
separate from drawing so tests can hold every plotted point to the store."""

from __future__ import annotations

import io
import re
import sqlite3
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..store.config import place, what

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000")


def tight(f, **kw) -> None:
    """matplotlib's tight layout, where it fits: with very long legend labels
    (a configuration with several settings) it cannot, says so on stderr,
    and keeps the layout it had; the figure is drawn either way, and the
    warning is no business of the report's reader."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied")
        f.tight_layout(**kw)


@dataclass(frozen=True)
class Line:
    label: str
    sizes: tuple[int, ...]
    values: tuple[float, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    record_ids: tuple[int, ...]
    dashed: bool = False


@dataclass
class Figure:
    fig_id: str
    title: str
    ylabel: str
    lines: list[Line] = field(default_factory=list)
    xlabel: str = "message size (bytes)"
    vlines: list[tuple[int, str]] = field(default_factory=list)  # (size, label)
    logy: bool = True
    xbytes: bool = True  # x is a size in bytes (ticks 1K, 1M); else a count (N, processes)
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # shaded x ranges
    inches: tuple[float, float] = (7.2, 4.2)
    # thin reference levels under the series ("equal" at 1): no colour of their own
    hlines: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class Grid:
    """Small multiples: panels of one kind side by side, on shared axes and
    one legend where their lines are the same, each line one colour in
    every panel."""

    fig_id: str
    title: str
    panels: list[Figure]
    sharey: bool = True
    cols: int = 3


def _value(r: sqlite3.Row, metric: str) -> tuple[float, float, float] | None:
    """(value, low, high) of a record for a metric, its CI carried over."""
    med, lo, hi = r["median_us"], r["ci_lo_us"], r["ci_hi_us"]
    if not r["valid"] or med is None or med <= 0:
        return None
    lo = lo if lo and lo > 0 else med
    hi = hi if hi and hi > 0 else med
    if metric == "time":
        return med, lo, hi
    if metric == "rate":
        return 1e6 / med, 1e6 / hi, 1e6 / lo
    if metric == "bandwidth":
        if r["mb_per_s"] is None:
            return None
        k = r["mb_per_s"] * med  # bytes per op: MB/s = bytes / us
        return k / med, k / hi, k / lo
    raise ValueError(metric)


def lines_for(rows: Sequence[sqlite3.Row], bench: str, metric: str,
              label_np: bool = False) -> list[Line]:
    """One line per implementation x cluster (x process count)."""
    groups: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for r in rows:
        if r["bench"] != bench:
            continue
        label = f"{what(r)} ({place(r)})"
        if label_np:
            label = f"{what(r)}, {r['np']} processes ({place(r)})"
        groups[label].append(r)
    out: list[Line] = []
    for label, rs in sorted(groups.items()):
        pts = []
        for r in sorted(rs, key=lambda x: x["size_bytes"]):
            v = _value(r, metric)
            if v is not None and r["size_bytes"] > 0:
                pts.append((r["size_bytes"], *v, r["id"]))
        if pts:
            out.append(Line(label, tuple(p[0] for p in pts), tuple(p[1] for p in pts),
                            tuple(p[2] for p in pts), tuple(p[3] for p in pts),
                            tuple(p[4] for p in pts)))
    return out


def line_of(label: str, pts: Sequence[tuple[int, float, float, float, int]],
            dashed: bool = False) -> Line:
    """A line from (x, value, low, high, record id) points, in x order."""
    pts = sorted(pts)
    return Line(label, tuple(p[0] for p in pts), tuple(p[1] for p in pts),
                tuple(p[2] for p in pts), tuple(p[3] for p in pts), tuple(p[4] for p in pts),
                dashed)


def phase_lines(rows: Sequence[sqlite3.Row], benches: Sequence[str], np_: int,
                phase: str) -> list[Line]:
    """An application phase (the slowest rank's median; "total": the whole
    sample with its between-run interval) against N at one process count,
    one line per benchmark x configuration x cluster."""
    from ..analysis.apps import phases

    groups: dict[str, list[tuple[int, float, float, float, int]]] = defaultdict(list)
    for r in rows:
        if r["bench"] not in benches or r["np"] != np_ or not r["valid"] or not r["median_us"]:
            continue
        label = f"{r['bench']} {what(r)} ({place(r)})" if len(benches) > 1 else (
            f"{what(r)} ({place(r)})")
        if phase == "total":
            v = _value(r, "time")
            if v:
                groups[label].append((int(r["size_bytes"]), *v, int(r["id"])))
            continue
        ph = phases(r).get(phase)
        if ph and float(ph["max_us"]) > 0:  # type: ignore[arg-type]
            t = float(ph["max_us"])  # type: ignore[arg-type]
            groups[label].append((int(r["size_bytes"]), t, t, t, int(r["id"])))
    return [line_of(k, v) for k, v in sorted(groups.items())]


_NP = re.compile(r", \d+ process(?:es)?\b")


def colour_key(label: str) -> str:
    """What keeps its colour from figure to figure: the configuration, not
    the process count ("mpich (local)" in latency's figure and "mpich, 2
    processes (local)" in bcast's are one implementation)."""
    return _NP.sub("", label)


def _colours(figs: Sequence[Figure], registry: dict[str, str] | None = None
             ) -> dict[str, str]:
    """One colour per line label.  With a report's `registry`, a
    configuration keeps the colour it was first given in every figure (MPICH
    was blue in one figure and orange in the next); a colour another line of
    the same figure holds goes to the first one free."""
    reg = {} if registry is None else registry
    out: dict[str, str] = {}
    for f in figs:
        for ln in f.lines:
            if ln.label in out:
                continue
            used = set(out.values())
            c = reg.get(colour_key(ln.label))
            if c is None or c in used:
                free = [p for p in PALETTE if p not in used]
                fresh = [p for p in free if p not in reg.values()]
                c = (fresh or free or [PALETTE[len(out) % len(PALETTE)]])[0]
                reg.setdefault(colour_key(ln.label), c)
            out[ln.label] = c
    return out


@lru_cache(maxsize=1)
def _plain_log():
    """matplotlib's log formatter (which labels it thins out), writing each
    label as a plain number; the class made once (matplotlib loads late)."""
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):  # noqa: ARG002
            return f"{x:g}"

    return Plain


def _draw(ax, fig: Figure, colours: Mapping[str, str], legend: bool, small: bool,
          xsizes: Sequence[int] = ()) -> None:
    """One panel; xsizes: the sizes of every panel sharing this x axis."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from ..store.sizes import human

    for ln in fig.lines:
        c = colours[ln.label]
        ax.plot(ln.sizes, ln.values, marker="o", markersize=2.5 if small else 3,
                linewidth=1.2 if small else 1.5, color=c, label=ln.label,
                linestyle="--" if ln.dashed else "-")
        ax.fill_between(ln.sizes, ln.lo, ln.hi, color=c, alpha=0.18, linewidth=0)
    for lo, hi, label in fig.spans:
        ax.axvspan(lo, hi, color="#888888", alpha=0.13, linewidth=0)
        if label:
            ax.annotate(label, ((lo * hi) ** 0.5, 0.98), xycoords=("data", "axes fraction"),
                        va="top", ha="center", fontsize=7, color="#333333")
    for y, label in fig.hlines:
        ax.axhline(y, color="#555555", linestyle=":", linewidth=0.9, zorder=0)
        ax.annotate(label, (1, y), xycoords=("axes fraction", "data"), va="bottom", ha="right",
                    fontsize=7 if small else 8, color="#555555")
    for size, label in fig.vlines:
        ax.axvline(size, color="#555555", linestyle=":", linewidth=1)
        ax.annotate(label, (size, 1), xycoords=("data", "axes fraction"), rotation=90,
                    va="top", ha="right", fontsize=7 if small else 8, color="#333333")
    ax.set_xscale("log", base=2)
    sizes = sorted(set(xsizes) or {x for ln in fig.lines for x in ln.sizes})
    if sizes and not fig.xbytes:
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}"))
    elif sizes:
        step = 6 if small and sizes[-1] / sizes[0] > 2**18 else 3
        ticks = [2**k for k in range(0, 41, step) if sizes[0] <= 2**k <= sizes[-1]]
        ax.xaxis.set_major_locator(FixedLocator(ticks or sizes))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human(int(v))))
    ax.xaxis.set_minor_locator(NullLocator())
    if fig.logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_plain_log()())  # 0.2, 6, 10: not 6x10^0 nor 6e-01
        ax.yaxis.set_minor_formatter(_plain_log()(minor_thresholds=(1.5, 0.6)))
    fs = 8 if small else 10
    ax.set_xlabel(fig.xlabel, fontsize=fs)
    ax.set_ylabel(fig.ylabel, fontsize=fs)
    ax.tick_params(which="both", labelsize=fs - 1)
    ax.set_title(fig.title, fontsize=fs + 1)
    ax.grid(True, which="major", alpha=0.3)
    if legend and fig.lines:
        ax.legend(fontsize=6 if small else 8, loc="best")


def _svg(f) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    f.savefig(buf, format="svg")
    plt.close(f)
    return buf.getvalue()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "path"  # no fonts to load: text as paths
    return plt


def render_svg(fig: Figure, colours: dict[str, str] | None = None) -> str:
    """The figure as an SVG document (no script, fonts as paths); `colours`:
    the report's registry (_colours)."""
    plt = _pyplot()
    f, ax = plt.subplots(figsize=fig.inches, dpi=100)
    _draw(ax, fig, _colours([fig], colours), legend=True, small=fig.inches[0] < 6)
    tight(f)
    return _svg(f)


def render_grid_svg(grid: Grid, colours: dict[str, str] | None = None) -> str:
    """Small multiples as one SVG: shared x (and y where asked), one legend
    below the panels where every panel draws the same lines, else one each."""
    plt = _pyplot()
    n = len(grid.panels)
    cols = max(1, min(grid.cols, n))
    rows = -(-n // cols)
    labels = [tuple(ln.label for ln in p.lines) for p in grid.panels]
    shared = len({frozenset(x) for x in labels}) == 1
    n_legend = len(labels[0]) if shared and labels else 0
    ncol = max(1, min(3, n_legend))
    legend_in = 0.3 + 0.17 * -(-n_legend // ncol) if n_legend else 0.0
    f, axes = plt.subplots(rows, cols, figsize=(3.7 * cols, 2.9 * rows + legend_in + 0.3),
                           dpi=100, sharex=all(p.xbytes for p in grid.panels),
                           sharey=grid.sharey, squeeze=False)
    colours = _colours(grid.panels, colours)
    xs = sorted({x for p in grid.panels for ln in p.lines for x in ln.sizes})
    for i, panel in enumerate(grid.panels):
        ax = axes[i // cols][i % cols]
        _draw(ax, panel, colours, legend=not shared, small=True, xsizes=xs)
        if grid.sharey and i % cols:  # the first panel of the row carries the y label
            ax.set_ylabel("")
        if i + cols < n:  # a panel below carries the x axis's labels
            ax.set_xlabel("")
        else:
            ax.xaxis.set_tick_params(labelbottom=True)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    f.suptitle(grid.title, fontsize=11)
    if shared and n_legend:
        handles, names = axes[0][0].get_legend_handles_labels()
        f.legend(handles, names, loc="lower center", fontsize=8, ncol=ncol, frameon=False)
        tight(f, rect=(0, legend_in / f.get_figheight(), 1, 1))
    else:
        tight(f)
    return _svg(f)
