"""The report's section on every pair of nodes (`commscope matrix`): for each
cluster whose records name pairs, the verdict (which node or link is slow)
and a heat map of each pair over the cluster's typical pair: bandwidth,
latency and, where latency was sampled long enough (--stall-time), the
longest stall."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..analysis import pairs
from ..store.sizes import human_bytes

# what each benchmark's matrix reads: the largest bandwidth size, the smallest latency
FIGURES = (("bw", max, "time of one {size} message"), ("latency", min, "latency at {size}"))


def matrices(rows: Sequence[Mapping[str, object]]
             ) -> list[tuple[str, str, list[str], list[pairs.Pair], pairs.Verdict]]:
    """(cluster, what, its nodes, the pairs as measured, the verdict) for
    each cluster and figure whose records name pairs of nodes."""
    out = []
    # pairs measured one at a time and those measured beside their round's: two matrices
    # (the pairs measured alone after a matrix at once are a check of its slow pairs, said
    # by the command: a few pairs, no matrix)
    # and each sweep (one `matrix` command) its own: two Slurm allocations are both
    # "slurm", and a node mended between two sweeps of one cluster is two verdicts
    clusters = sorted({(str(r["cluster"]), pairs.mode(r), int(r["sweep_id"] or 0))  # type: ignore[call-overload]
                       for r in rows
                       if pairs.pair_of(r) is not None and pairs.mode(r) != pairs.ALONE})
    sweeps_of: dict[tuple[str, str], set[int]] = {}
    for cl, how, sid in clusters:
        sweeps_of.setdefault((cl, how), set()).add(sid)
    for cl, how, sid in clusters:
        together = how == pairs.AT_ONCE
        mine = [r for r in rows if r["cluster"] == cl and pairs.mode(r) == how
                and int(r["sweep_id"] or 0) == sid  # type: ignore[call-overload]
                and pairs.pair_of(r) is not None]
        named = f"{cl} (sweep {sid})" if len(sweeps_of[(cl, how)]) > 1 else cl
        moved = tuple(pairs.transports(mine))  # said once, under the group's first figure
        for bench, pick, words in FIGURES:
            sizes = {int(r["size_bytes"]) for r in mine if r["bench"] == bench}  # type: ignore[call-overload]
            if not sizes:
                continue
            size = pick(sizes)
            what = words.format(size=human_bytes(size))
            got = pairs.judge(mine, bench, size, what)
            if got is None:
                continue
            found, v = got
            names = sorted({p.a for p in found} | {p.b for p in found})
            title = f"{named}, each round's pairs at once" if together else named
            out.append((title, what, names, found, replace(v, lines=v.lines + moved)))
            moved = ()
            # sampled long enough to see a node stop (matrix --stall-time): its longest
            # sample, judged by the stall's own cut
            long = [r for r in mine if r["bench"] == bench and r["valid"]  # as per_pair takes them
                    and int(r["size_bytes"]) == size]  # type: ignore[call-overload]
            if bench == "latency" and long and all(
                    float(r["wall_s"] or 0.0) >= pairs.STALL_WALL_S for r in long):  # type: ignore[arg-type]
                stall = f"longest stall at {human_bytes(size)}"
                if (got := pairs.judge(mine, bench, size, stall, figure="stall")) is not None:
                    found, v = got
                    out.append((title, stall, sorted({p.a for p in found} | {p.b for p in found}),
                                found, v))
    return out


def heat_map_svg(names: Sequence[str], found: Sequence[pairs.Pair], typical: float,
                 title: str) -> str:
    """Nodes x nodes, each pair's median over the typical pair on a log
    scale, centred on 1: a diverging palette read by the colour-blind
    (ColorBrewer's PuOr), each cell's ratio written in it, the diagonal
    and any pair not measured left grey."""
    from .figures import _pyplot, _svg

    plt = _pyplot()
    n = len(names)
    grid = [[math.nan if r is None else math.log2(r) for r in row]  # row sends, column receives
            for row in pairs.grid(names, typical, found)]
    span = max([abs(x) for row in grid for x in row if not math.isnan(x)] + [math.log2(1.5)])
    side = min(8.0, 2.0 + 0.6 * n)
    f, ax = plt.subplots(figsize=(side + 1.2, side), dpi=100)
    cmap = plt.get_cmap("PuOr_r").with_extremes(bad="#dddddd")
    im = ax.imshow(grid, cmap=cmap, vmin=-span, vmax=span)
    short = pairs.short_names(names)
    ax.set_xticks(range(n), short, fontsize=8)
    ax.set_yticks(range(n), short, fontsize=8)
    if n <= 16:
        for i in range(n):
            for j in range(n):
                if not math.isnan(grid[i][j]):
                    r = round(2 ** grid[i][j], 2)
                    ax.text(j, i, f"{r:.2f}" if r < 10 else f"{r:.1f}", ha="center",
                            va="center", fontsize=7,
                            color="white" if abs(grid[i][j]) > 0.6 * span else "black")
    bar = f.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ticks = [t for t in (-4, -3, -2, -1, 0, 1, 2, 3, 4) if abs(t) <= span] or [0]
    bar.set_ticks(ticks, labels=[f"{2 ** t:g}x" for t in ticks])
    bar.ax.tick_params(labelsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("from (rank 0)", fontsize=8)
    ax.set_xlabel("to", fontsize=8)
    f.tight_layout()
    return _svg(f)


def section(out: Path, rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """One entry a cluster and figure: its title, the verdict's lines and
    the heat map's file (written under out/fig)."""
    entries = []
    for k, (cl, what, names, found, v) in enumerate(matrices(rows)):
        if v.typical <= 0:  # two nodes: one pair, nothing to set it against
            continue
        fig_id = f"fig-matrix-{k}"
        title = f"{cl}: {what}, each pair over the typical pair"
        (out / "fig" / f"{fig_id}.svg").write_text(heat_map_svg(names, found, v.typical, title))
        entries.append({"title": f"{cl}: {what}", "lines": list(v.lines), "fig": fig_id,
                        "typical": f"{v.typical:.4g} us", "nodes": len(names)})
    return entries
