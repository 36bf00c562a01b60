"""Figure data from stored records, and SVG plots of it.  The data step is
separate from drawing so tests can hold every plotted point to the store."""

from __future__ import annotations

import io
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import what
from ..show import place

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000")


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
    xbytes: bool = True  # x is a size in bytes (ticks 1K, 1M); else a count (N, ranks)


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
            label = f"{what(r)}, {r['np']} ranks ({place(r)})"
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


def render_svg(fig: Figure) -> str:
    """The figure as an SVG document (no script, fonts as paths)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "path"
    f, ax = plt.subplots(figsize=(7.2, 4.2), dpi=100)
    for i, ln in enumerate(fig.lines):
        c = PALETTE[i % len(PALETTE)]
        ax.plot(ln.sizes, ln.values, marker="o", markersize=3, linewidth=1.5, color=c,
                label=ln.label, linestyle="--" if ln.dashed else "-")
        ax.fill_between(ln.sizes, ln.lo, ln.hi, color=c, alpha=0.18, linewidth=0)
    for size, label in fig.vlines:
        ax.axvline(size, color="#555555", linestyle=":", linewidth=1)
        ax.annotate(label, (size, 1), xycoords=("data", "axes fraction"), rotation=90,
                    va="top", ha="right", fontsize=8, color="#333333")
    ax.set_xscale("log", base=2)
    from matplotlib.ticker import FixedLocator, FuncFormatter

    from ..sizes import human

    sizes = sorted({x for ln in fig.lines for x in ln.sizes})
    if sizes and not fig.xbytes:
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}"))
    elif sizes:
        ticks = [2**k for k in range(0, 41, 3) if sizes[0] <= 2**k <= sizes[-1]]
        ax.xaxis.set_major_locator(FixedLocator(ticks or sizes))
        ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human(int(v))))
    if fig.logy:
        ax.set_yscale("log")
    ax.set_xlabel(fig.xlabel)
    ax.set_ylabel(fig.ylabel)
    ax.set_title(fig.title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    if fig.lines:
        ax.legend(fontsize=8, loc="best")
    f.tight_layout()
    buf = io.StringIO()
    f.savefig(buf, format="svg")
    plt.close(f)
    return buf.getvalue()
