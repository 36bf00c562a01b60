"""Collectives against the equivalent point-to-point sends (the
commodity-cluster study).

For each size a collective is H (surely slower) or L (surely faster) than
its reference, or '=' when the 95% confidence intervals overlap, the
medians differ by less than 5%, or the size is the only one of its
neighbours separated that way (a claim needs two neighbouring sizes; the
first or the last size compared alone is none either: the first size swept
also carries the sweep's warm-up).  Only separated sizes decide the short-
and long-message verdicts; a crossover ("changing length") is claimed only
when the separated sizes change label exactly once.  The four scenarios are
the commodity-cluster study's: 1 H/H, 2 L/L, 3 H then L, 4 L then H.

Two references, two meanings.  The study's equivalent sends (n-1 for
bcast, reduce, gather and scatter, n(n-1) for alltoall, from measured
latency) are an aggregate of latencies, not a program that does the
collective's job: a bare send combines no data (a reduce does), and nothing
checks that the sends deliver what the collective does.  Against them a
verdict says the collective's overhead over the sends it stands for, and
advises nothing.  Only the hand-written equivalents (the *_sends
benchmarks), which compute the same result and are validated like the
collective, can be advised instead of it; they are the only rows with
advice, so each size of one collective on one configuration gets one
verdict at most."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..store.core_facts import bench as bench_facts
from ..store.sizes import human, human_bytes
from .series import Config, Series, find, lone_is_no_claim, runs, separated
from .significance import MIN_FACTOR  # under it, no verdict (advise.search gates on it too)

HAND = "_sends"  # the suffix of the hand-written equivalents: the only references advised


def mpi_name(coll: str) -> str:
    """MPI_Bcast for bcast: the call a collective benchmark times."""
    return "MPI_" + coll.capitalize()


def is_hand_written(reference: str) -> bool:
    """A reference that computes the collective's result (bcast_sends...),
    not the study's count of bare sends ("3 x MPI_Send")."""
    return reference.endswith(HAND)


def edge_alone_is_no_claim(marks: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A run of one mark at the first or the last size compared is no
    verdict: an edge size has one neighbour to confirm it, and the first
    size swept also carries the sweep's warm-up.  (lone_is_no_claim does
    this for three sizes or more; this holds it for any number.)"""
    out = list(marks)
    rs = runs(marks)
    if not rs:
        return out
    for i, (m, sizes) in ((0, rs[0]), (-1, rs[-1])):
        if m != "=" and len(sizes) == 1:
            out[i] = (out[i][0], "=")
    return out


def _runs_text(v: Verdict, said: dict[str, str]) -> str:
    parts = []
    for m, lo, hi in v.runs():
        where = (f"at {human_bytes(lo)}" if lo == hi
                 else f"from {human_bytes(lo)} to {human_bytes(hi)}")
        parts.append(f"{said[m]} {where}")
    return "; ".join(parts)


def equivalent_sends(coll: Series) -> int | None:
    """How many sends of one message a collective stands for (the
    commodity-cluster study: n-1 for bcast, reduce, gather and scatter,
    n(n-1) for alltoall), as the core's table says in every record."""
    return next((p.equiv_sends for p in coll.values() if p.equiv_sends), None)


@dataclass(frozen=True)
class Verdict:
    short: str  # H, L or '=' (nothing separated)
    long: str
    scenario: int | None  # 1-4, None: no separated size or mixed
    crossover: int | None  # first size of the long-message behaviour
    bracket: tuple[int, int] | None  # last short-behaviour size, first long-behaviour size
    marks: tuple[tuple[int, str], ...]
    mixed: bool = False

    def runs(self) -> list[tuple[str, int, int]]:
        """Consecutive sizes with one mark: (mark, first size, last size)."""
        return [(m, sizes[0], sizes[-1]) for m, sizes in runs(self.marks)]

    def cells(self) -> tuple[str, str]:
        """The short and long verdicts as a table shows them: where the
        smallest (largest) sizes were not told apart, the size the verdict
        starts (ends) at, so that an H decided at 16 KiB does not read as
        the small messages' verdict."""
        if not self.marks or self.short == "=":
            return self.short, self.long
        rs = self.runs()
        short = self.short if rs[0][0] != "=" else f"{self.short} from {human_bytes(rs[1][1])}"
        long_ = self.long if rs[-1][0] != "=" else f"{self.long} to {human_bytes(rs[-2][2])}"
        return short, long_

    @property
    def changing(self) -> str:
        """Where the behaviour changes: one size when the two verdicts touch,
        else the span between them where nothing is told apart."""
        if self.bracket is None:
            return "-"
        lo, hi = self.bracket
        sizes = [s for s, _ in self.marks]
        between = [s for s in sizes if lo < s < hi]
        if not between:
            return human(hi)
        return human(between[0]) if len(between) == 1 else (
            f"{human(between[0])}-{human(between[-1])}")

    def advice(self, coll: str, ref: str) -> str:
        """What to do, over exactly the sizes where the verdict was
        separated; sizes in between are said to be not separated (the intervals
        overlap: no claim either way)."""
        name = mpi_name(coll)
        if self.mixed:
            return f"{name} and {ref} trade places more than once: no crossover claimed"
        if self.scenario is None:
            return f"{name} and {ref} are not told apart at any size"
        runs = self.runs()
        if len(runs) == 1:
            return (f"{ref} faster than {name} at every measured size on this configuration "
                    "(a candidate: the diagnosis searches the library's settings first)"
                    if self.scenario == 1
                    else f"{name} beats {ref} at every measured size")
        said = {"H": f"{ref} faster than {name}", "L": f"{name} faster", "=": "not separated"}
        return f"{_runs_text(self, said)} (this configuration)"

    def overhead(self, coll: str, ref: str) -> str:
        """What a verdict against the study's equivalent sends means: the
        collective's overhead over the bare sends it stands for.  No advice:
        those sends do not do the collective's job."""
        name = mpi_name(coll)
        # a reduction (what --dtype changes) combines data; a send does not
        why = ("a send combines no data" if "dtype" in bench_facts(coll).changed_by
               else "the sends are an aggregate of measured latencies, not a program that "
                    "does the collective's job")
        tail = f"the collective's overhead over bare sends, a reference and no advice: {why}"
        if self.mixed:
            return f"{name} against the {ref} it stands for changes side more than once; {tail}"
        if self.scenario is None:
            return f"{name} and the {ref} it stands for are not told apart at any size; {tail}"
        runs = self.runs()
        if len(runs) == 1:
            what = "slower" if runs[0][0] == "H" else "faster"
            return f"{name} against the {ref} it stands for: {what} at every measured size; {tail}"
        said = {"H": "slower", "L": "faster", "=": "not separated"}
        return f"{name} against the {ref} it stands for: {_runs_text(self, said)}; {tail}"


def classify(coll: Series, ref: Series, min_factor: float = MIN_FACTOR) -> Verdict:
    sizes = sorted(set(coll) & set(ref))
    marks: list[tuple[int, str]] = []
    for s in sizes:
        a, b = coll[s].median, ref[s].median
        big_enough = max(a, b) >= min_factor * min(a, b)
        sign = separated(coll[s], ref[s]) if big_enough else 0
        marks.append((s, "H" if sign > 0 else "L" if sign < 0 else "="))
    marks = edge_alone_is_no_claim(lone_is_no_claim(marks))
    sep = [(s, m) for s, m in marks if m != "="]
    if not sep:
        return Verdict("=", "=", None, None, None, tuple(marks))
    short, long_ = sep[0][1], sep[-1][1]
    changes = [i for i in range(1, len(sep)) if sep[i][1] != sep[i - 1][1]]
    if not changes:
        return Verdict(short, long_, 1 if short == "H" else 2, None, None, tuple(marks))
    if len(changes) > 1:
        return Verdict(short, long_, None, None, None, tuple(marks), mixed=True)
    i = changes[0]
    return Verdict(short, long_, 3 if short == "H" else 4, sep[i][0], (sep[i - 1][0], sep[i][0]),
                   tuple(marks))


def sends_reference(latency: Series, k: int) -> Series:
    """The commodity-cluster study's aggregate: k sends of the message, from measured latency."""
    return {s: p.scaled(k) for s, p in latency.items()}


@dataclass(frozen=True)
class Row:
    config: Config
    collective: str
    reference: str  # e.g. "3 x MPI_Send" or "bcast_sends"
    verdict: Verdict
    # the two series the verdict was drawn from, for figures
    coll: Series = field(default_factory=dict, compare=False, repr=False)
    ref: Series = field(default_factory=dict, compare=False, repr=False)

    @property
    def advises(self) -> bool:
        """Whether this row may say what to use: only against a hand-written
        equivalent that computes the same result."""
        return is_hand_written(self.reference)

    @property
    def reference_text(self) -> str:
        """The reference as a sentence names it."""
        if self.advises:
            return "the hand-written equivalent"
        k = self.reference.split(" x ", 1)[0]
        return f"{k} MPI_Send call" + ("" if k == "1" else "s")

    def text(self) -> str:
        """The advice (hand-written equivalents), or what the comparison
        means (the study's equivalent sends)."""
        if self.advises:
            return self.verdict.advice(self.collective, self.reference_text)
        return self.verdict.overhead(self.collective, self.reference_text)


def analyze(series: Mapping[tuple[Config, str], Series]) -> list[Row]:
    """Every collective with a reference: the equivalent sends (from latency
    records of the same implementation and cluster, same process count
    preferred, else 2), and the measured hand-rolled version."""
    rows: list[Row] = []
    for (cfg, bench), coll in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][0].np,
                                                                      kv[0][0].cluster, kv[0][1])):
        k = equivalent_sends(coll)
        if k is None:
            continue
        lat = (find(series, cfg, "latency", cfg.np, cfg.oversubscribed)
               or find(series, cfg, "latency", 2, False))
        refs = []
        if lat:
            refs.append((f"{k} x MPI_Send", sends_reference(lat, k)))
        hand = series.get((cfg, f"{bench}{HAND}"))
        if hand:
            refs.append((f"{bench}{HAND}", hand))
        rows.extend(Row(cfg, bench, name, classify(coll, ref), coll, ref) for name, ref in refs)
    return rows


def table(rows: list[Row]) -> str:
    out: list[str] = []
    last: str | None = None
    for r in rows:
        # by label: one job's benchmarks share a configuration key, while a
        # rooted collective's label names the root and alltoall's does not
        if r.config.label() != last:
            out.append(f"\n{r.config.label()}")
            out.append(f"  {'collective':<11} {'against':<15} {'short':<14} {'long':<14} "
                       f"{'changing':>9}  {'scen.':<5} against its hand-written equivalent, "
                       "or meaning")
            last = r.config.label()
        v = r.verdict
        change = v.changing
        scen = str(v.scenario) if v.scenario else ("mixed" if v.mixed else "-")
        short, long_ = v.cells()
        out.append(f"  {r.collective:<11} {r.reference:<15} {short:<14} {long_:<14} "
                   f"{change:>9}  {scen:<5} {r.text()}")
    return "\n".join(out).lstrip("\n") + "\n"
