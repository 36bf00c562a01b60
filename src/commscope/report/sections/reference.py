"""What the GPU and the settings sections share: a configuration set against
the same library's reference (host buffers, the defaults), call by call."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...analysis import findings
from ...analysis.headlines import ratio_text
from ...store.config import config_of
from ...store.core_facts import bench as bench_facts
from ...store.sizes import human
from ..figures import Figure, lines_for
from .common import slug

# the axes of the benchmarks a GPU path is shown for besides the collectives;
# what each plots is the core's figure (the others: time per call)
YLABEL = {"latency": "one-way latency (us)", "bw": "MB/s", "bibw": "MB/s, both ways"}


def metric_of(bench: str) -> tuple[str, str]:
    if bench in YLABEL:
        return bench_facts(bench).figure, YLABEL[bench]
    return "time", "time (us)"


def impl_of(r: sqlite3.Row) -> str:
    cfg = config_of(r)
    return cfg.mpi if cfg and cfg.mpi else str(r["mpi_name"])


def buffer_of(r: sqlite3.Row) -> str:
    cfg = config_of(r)
    return cfg.buffer if cfg else "host"


def settings_of(r: sqlite3.Row) -> dict[str, str]:
    cfg = config_of(r)
    return dict(cfg.settings) if cfg else {}


def same_impl(found: Sequence[findings.Finding]):
    """(finding, faster, slower) for each separated difference between two
    configurations of one implementation."""
    for f in found:
        if f.kind == "faster" and len(f.parties) == 2:
            w, lo = f.parties
            if w.implementation == lo.implementation:
                yield f, w, lo


def by_how_much(f: findings.Finding) -> tuple[str, str, str]:
    s0, s1 = f.span or (0, 0)
    return f"{human(s0)}-{human(s1)}", ratio_text(f.ratio), ratio_text(f.ratio_lo)


RATIO_HEAD = ("sizes", "median ratio", "at least")


def against_reference(mine: Sequence[sqlite3.Row], benches: Sequence[str], impl: str,
                       prefix: str) -> list[Figure]:
    """A panel per benchmark of one implementation's configurations, its
    reference line (host memory, its defaults: the bare implementation
    name) first."""
    panels = []
    for b in benches:
        metric, ylabel = metric_of(b)
        lines = lines_for([r for r in mine if r["bench"] == b], b, metric, label_np=True)
        lines.sort(key=lambda ln: (ln.label.split(",")[0] != impl, ln.label))
        panels.append(Figure(f"{prefix}-{slug(impl)}-{b}", b, ylabel, lines))
    return panels
