"""Point-to-point and collectives, figure by figure, and the Hockney fits."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...analysis import hockney
from ...store.core_facts import bench as bench_facts
from ...store.sizes import human
from ..figures import Figure, Grid, lines_for
from ..page import Item, Page, Para, Table, items, table
from .common import COLLECTIVES, P2P, Tick


def p2p(page: Page, rows: Sequence[sqlite3.Row], series, benches: set[str], tick: Tick
        ) -> list[Item]:
    out: list[Item] = []
    for bench, ylabel, title in P2P:
        if bench not in benches:
            continue
        out += items(page.figure(Figure(f"fig-{bench}", title, ylabel,
                                        lines_for(rows, bench, bench_facts(bench).figure)),
                                 f"{title}: one line per implementation and cluster."))
        tick(bench)
    if out:
        out += items(*hockney_table(series))
    return out


def collectives(page: Page, rows: Sequence[sqlite3.Row], benches: set[str], tick: Tick
                ) -> list[Item]:
    """Small multiples: one panel per collective on shared axes, each
    configuration one colour in every panel."""
    colls = [c for c in COLLECTIVES if c in benches]
    panels = [Figure(f"fig-{c}", f"MPI_{c.capitalize()}", "time (us)",
                     lines_for(rows, c, "time", label_np=True)) for c in colls]
    for c in colls:
        tick(c)
    return items(page.grid(Grid("fig-collectives", "Collectives: time per call", panels),
                           "One panel per collective, one line per implementation, process "
                           "count and cluster, bands the 95% interval between runs."))


def hockney_table(series) -> tuple[Table | None, Para | None]:
    """The fits `commscope fit` stores, and the ones it refuses with its
    reason (never a piece with β inf: the report said 'β inf GB/s' where fit
    said 'not stored ... beta <= 0')."""
    rows, refused = [], []
    for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][1], kv[0][0].mpi)):
        sizes = sorted(x for x in s if x > 0)
        if bench not in ("latency", "bw", "sendloop") or len(sizes) < 2:
            continue
        f = hockney.fit(sizes, [s[x].median for x in sizes])
        bad = hockney.implausible(f, sizes, [s[x].median for x in sizes])
        if bad:
            refused.append(f"{bench} under {cfg.label()}: {bad}")
            continue
        p1 = f.pieces[0]
        p2 = f.pieces[1] if len(f.pieces) > 1 else None
        rows.append((bench, cfg.label(), f"{p1.alpha_us:.3f}", f"{p1.beta_gb_per_s:.2f}",
                     human(f.breakpoint) if f.breakpoint else "none",
                     f"{p2.alpha_us:.3f}" if p2 else "", f"{p2.beta_gb_per_s:.2f}" if p2 else "",
                     f"{f.rms_rel_error:.3f}"))
    note = Para("Not fitted (as commscope fit refuses them): " + "; ".join(refused) + ".") \
        if refused else None
    if not rows:
        return None, note
    return table(("benchmark", "configuration", "α (us)", "β (GB/s)", "breakpoint",
                  "α after (us)", "β after (GB/s)", "rms rel. error"), rows, (2, 3, 5, 6, 7)), note


