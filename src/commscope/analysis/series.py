"""Stored results as series: one configuration's medians and confidence
intervals against message size."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..config import Configuration, what
from ..show import place


@dataclass(frozen=True)
class Point:
    size: int
    median: float
    lo: float
    hi: float
    result_id: int | None = None
    reps: tuple[float, ...] = ()  # the runs' own medians, where repetitions were made
    equiv_sends: int | None = None  # collectives: the sends of one message it stands for

    def scaled(self, k: float) -> Point:
        return Point(self.size, self.median * k, self.lo * k, self.hi * k, self.result_id,
                     tuple(x * k for x in self.reps))


@dataclass(frozen=True)
class Config:
    """Where a series was measured: what (the implementation with its
    transport, parameters and settings where not the defaults), process
    count, cluster (with its node count when the ranks span several)."""

    mpi: str
    np: int
    cluster: str
    oversubscribed: bool = False  # more ranks than cores: correctness only
    # `mpi` without the benchmark's own parameters: where a collective's
    # point-to-point reference (latency, which has none) is found
    base: str = field(default="", compare=False)
    # the implementation alone, and the runtime settings, of `mpi`: what
    # tells "another implementation" from "the same one, set otherwise"
    impl: str = field(default="", compare=False)
    settings: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    buffer: str = field(default="host", compare=False)  # host, or a GPU path (staged, ipc...)

    @property
    def implementation(self) -> str:
        return self.impl or self.mpi.split()[0]

    def label(self) -> str:
        over = " (oversubscribed)" if self.oversubscribed else ""
        return f"{self.mpi}, {self.np} processes, {self.cluster}{over}"


Series = dict[int, Point]


def point(r: sqlite3.Row) -> Point | None:
    """A valid record's point; none for invalid ones, nor for records
    measured while other processes took the CPU (flagged noisy)."""
    if not r["valid"] or r["median_us"] is None or r["flagged"]:
        return None
    lo = r["ci_lo_us"] if r["ci_lo_us"] is not None else r["median_us"]
    hi = r["ci_hi_us"] if r["ci_hi_us"] is not None else r["median_us"]
    reps = tuple(r["rep_medians_us"]) if "rep_medians_us" in r.keys() else ()
    # a hand-written collective (equiv_of set) is itself a reference: it
    # stands for no sends of its own
    hand = "equiv_of" in r.keys() and r["equiv_of"]
    equiv = r["equiv_sends"] if "equiv_sends" in r.keys() and not hand else None
    return Point(int(r["size_bytes"]), float(r["median_us"]), float(lo), float(hi),
                 int(r["id"]), reps, int(equiv) if equiv else None)


def collect(rows: Iterable[sqlite3.Row]) -> dict[tuple[Config, str], Series]:
    """(configuration, benchmark) -> series of valid points."""
    out: dict[tuple[Config, str], Series] = defaultdict(dict)
    for r in rows:
        p = point(r)
        if p is not None:
            over = "oversubscribed" in r.keys() and bool(r["oversubscribed"])
            impl, settings, buffer = _identity(r)
            cfg = Config(what(r), int(r["np"]), place(r), over, what(r, params=False), impl,
                         settings, buffer)
            out[(cfg, r["bench"])][p.size] = p
    return dict(out)


def _identity(r: sqlite3.Row) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """The implementation, runtime settings and buffer kind a record ran with."""
    text = r["config"] if "config" in r.keys() else None
    if not text:
        return str(r["mpi_name"]), (), "host"
    cfg = Configuration.from_json(json.loads(text))
    return cfg.mpi, cfg.settings, cfg.buffer


def separated(a: Point, b: Point) -> int:
    """+1 when a is surely above b, -1 when surely below, 0 when their 95%
    confidence intervals overlap."""
    if a.lo > b.hi:
        return 1
    if a.hi < b.lo:
        return -1
    return 0


def lone_is_no_claim(marks: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A verdict needs two neighbouring sizes marked the same way: with
    20-odd sizes each tested at 95%, one separated size alone among equal
    ones is what chance gives about once per comparison.  Marks are
    (size, mark) in size order, '=' for no verdict.  Series of one or two
    sizes are left as they are."""
    if len(marks) < 3:
        return marks
    out = []
    for i, (s, m) in enumerate(marks):
        left = marks[i - 1][1] if i > 0 else None
        right = marks[i + 1][1] if i + 1 < len(marks) else None
        out.append((s, m if m == "=" or m in (left, right) else "="))
    return out
