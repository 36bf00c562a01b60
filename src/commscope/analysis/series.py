"""Stored results as series: one configuration's medians and confidence
intervals against message size."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import CommscopeError
from ..store.config import Apart, Configuration, place, shown_params, stored, what


@dataclass(frozen=True)
class Point:
    size: int
    median: float
    lo: float
    hi: float
    result_id: int | None = None
    reps: tuple[float, ...] = ()  # the runs' own medians, where repetitions were made
    equiv_sends: int | None = None  # collectives: the sends of one message it stands for
    window: int | None = None  # bw, bibw: the messages in flight it ran (the narrowest run's)
    # collectives: each call's time averaged over the ranks, then over the
    # samples (mean_rank_avg_us; a mean, where median is the slowest rank's median)
    rank_avg: float | None = None
    # every run behind it was taken while other processes used the CPU (kept
    # where asked: collect(keep_flagged)); no comparison is drawn from it
    flagged: bool = False

    def scaled(self, k: float) -> Point:
        return Point(self.size, self.median * k, self.lo * k, self.hi * k, self.result_id,
                     tuple(x * k for x in self.reps), window=self.window,
                     rank_avg=self.rank_avg * k if self.rank_avg else None,
                     flagged=self.flagged)


@dataclass(frozen=True, eq=False)
class Config:
    """Where a series was measured: what (the implementation with its
    transport, parameters and settings where not the defaults), process
    count, cluster (with its node count when the ranks span several).

    Its identity is the configuration's canonical key (runs.config_key,
    which every stored run has: a store made before configurations gets
    them as it opens, Store._backfill_configs): `mpi` is for display only,
    and nothing is looked up by it."""

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
    key: str = field(default="", compare=False)  # config.Configuration.key; '' where unknown
    # Configuration.base_key: what it runs on short of the benchmark's parameters and
    # the placement ('' where unknown); and the parameters its label names
    base_key: str = field(default="", compare=False)
    params: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError(f"a series configuration without its key: {self.mpi}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return (self.key, self.np, self.cluster, self.oversubscribed) == (
            other.key, other.np, other.cluster, other.oversubscribed)

    def __hash__(self) -> int:
        return hash((self.key, self.np, self.cluster, self.oversubscribed))

    @property
    def implementation(self) -> str:
        return self.impl or self.mpi.split()[0]

    def label(self) -> str:
        over = " (oversubscribed)" if self.oversubscribed else ""
        return f"{self.mpi}, {self.np} processes, {self.cluster}{over}"


Series = dict[int, Point]


def point(r: sqlite3.Row, keep_flagged: bool = False) -> Point | None:
    """A valid record's point; none for invalid ones, nor (unless asked for)
    for records measured while other processes took the CPU (flagged noisy):
    a prediction may read those, marked, where comparisons may not."""
    if not r["valid"] or r["median_us"] is None or (r["flagged"] and not keep_flagged):
        return None
    lo = r["ci_lo_us"] if r["ci_lo_us"] is not None else r["median_us"]
    hi = r["ci_hi_us"] if r["ci_hi_us"] is not None else r["median_us"]
    reps = tuple(r["rep_medians_us"] or ())
    # a hand-written collective (equiv_of set) is itself a reference: it
    # stands for no sends of its own
    hand = r["equiv_of"]
    equiv = r["equiv_sends"] if not hand else None
    window = r["window"] or None
    avg = r["mean_rank_avg_us"]
    return Point(int(r["size_bytes"]), float(r["median_us"]), float(lo), float(hi),
                 int(r["id"]), reps, int(equiv) if equiv else None,
                 int(window) if window else None,
                 float(avg) if isinstance(avg, int | float) and avg > 0 else None,
                 bool(r["flagged"]))


def only_noisy(rows: Iterable[sqlite3.Row]) -> list[tuple[str, str, int]]:
    """(configuration, benchmark, records) of each series whose every valid
    record was measured while other processes used the CPU (flagged noisy):
    left out of every comparison, so an analysis that finds no series there
    must say why, not that nothing was measured."""
    clean: set[tuple[str, str]] = set()
    noisy: dict[tuple[str, str], int] = {}
    for r in rows:
        if not r["valid"] or r["median_us"] is None:
            continue
        k = (f"{what(r)}, {r['np']} processes", str(r["bench"]))
        if r["flagged"]:
            noisy[k] = noisy.get(k, 0) + 1
        else:
            clean.add(k)
    return sorted((c, b, n) for (c, b), n in noisy.items() if (c, b) not in clean)


def noisy_text(rows: Iterable[sqlite3.Row]) -> str:
    """One line on the series left out for noise (only_noisy), or ''."""
    gone = only_noisy(rows)
    if not gone:
        return ""
    names = "; ".join(f"{b} ({c})" for c, b, _ in gone[:6]) + (
        f" and {len(gone) - 6} more" if len(gone) > 6 else "")
    return (f"{len(gone)} series had only records measured while other processes used the CPU "
            f"(flagged noisy) and are left out of every comparison: {names}; measure on an "
            "idle machine, or raise --noise-max-cores when running (commscope show lists "
            "them, marked)")


def collect(rows: Iterable[sqlite3.Row], keep_flagged: bool = False
            ) -> dict[tuple[Config, str], Series]:
    """(configuration, benchmark) -> series of valid points (with
    keep_flagged, those measured on a busy machine too, marked).  Records are
    told apart by their configuration's key; where two keys would be shown
    by one label, every label names what tells them apart (config.Apart),
    and where nothing stored does, this is a CommscopeError."""
    recs = []
    for r in rows:
        p = point(r, keep_flagged)
        if p is not None:
            key, full = stored(r)
            over = bool(r["oversubscribed"])
            shown = Config(what(r), int(r["np"]), place(r), over, key=key)
            recs.append((r, p, key, full, shown))
    apart = Apart((c.label(), key, full) for _, _, key, full, c in recs)
    out: dict[tuple[Config, str], Series] = defaultdict(dict)
    owner: dict[str, str] = {}  # label -> the key behind it
    for r, p, key, full, c in recs:
        impl, settings, buffer = _identity(r, full)
        cfg = Config(apart.name(c.mpi, full), c.np, c.cluster, c.oversubscribed,
                     apart.name(what(r, params=False), full), impl, settings, buffer, key,
                     full.base_key if full is not None else "", shown_params(r))
        held = owner.setdefault(cfg.label(), key)
        if held != key:  # named fields that still read alike (True and "True")
            raise CommscopeError(f"two configurations are both labelled '{cfg.label()}' even "
                                 f"naming {', '.join(apart.fields) or 'nothing more'}: "
                                 f"{held or '(no key)'} and {key or '(no key)'}")
        out[(cfg, str(r["bench"]))][p.size] = p
    return dict(out)


def find(series: Mapping[tuple[Config, str], Series], like: Config, bench: str, np_: int,
         oversubscribed: bool, params: Mapping[str, str] | None = None) -> Series | None:
    """The series of `bench` measured where `like` was, short of its own
    benchmark's parameters and placement (the same build, transport,
    buffers and settings: Configuration.base_key), at np_ processes on its
    cluster, naming exactly `params` ({}: the defaults)."""
    want = dict(params or {})
    for (c, b), pts in series.items():
        if (b, c.np, c.cluster, c.oversubscribed) != (bench, np_, like.cluster, oversubscribed):
            continue
        if c.base_key == like.base_key and dict(c.params) == want:
            return pts
    return None


def _identity(r: sqlite3.Row, full: Configuration | None
              ) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """The implementation, runtime settings and buffer kind a record ran with."""
    if full is None:
        return str(r["mpi_name"]), (), "host"
    return full.mpi, full.settings, full.buffer


def separated(a: Point, b: Point) -> int:
    """+1 when a is surely above b, -1 when surely below, 0 when their 95%
    confidence intervals overlap."""
    if a.lo > b.hi:
        return 1
    if a.hi < b.lo:
        return -1
    return 0


T = TypeVar("T")
M = TypeVar("M")


def runs(marks: Iterable[tuple[T, M]]) -> list[tuple[M, list[T]]]:
    """Runs of consecutive entries with the same mark: (mark, the entries'
    sizes, or whatever they are, in order), in order."""
    out: list[tuple[M, list[T]]] = []
    for s, m in marks:
        if out and out[-1][0] == m:
            out[-1][1].append(s)
        else:
            out.append((m, [s]))
    return out


def lone_is_no_claim(marks: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A verdict needs two neighbouring sizes marked the same way: with
    20-odd sizes each tested at 95%, one separated size alone among equal
    ones is what chance gives about once per comparison.  Marks are
    (size, mark) in size order, '=' for no verdict.  Series of one or two
    sizes are left as they are."""
    if len(marks) < 3:
        return marks
    return [(s, m if m == "=" or len(sizes) > 1 else "=")
            for m, sizes in runs(marks) for s in sizes]
