"""The headline figures against the machine's own limits ("is this
normal?"): for each implementation on two ranks of this machine, its
smallest-message latency against the core-to-core floor its jobs measured,
its peak uni- and bidirectional bandwidth against the probe's single copy
(process_vm_readv, the path MPI's large messages take within a node) and
its memory copy, 8 B allreduce and barrier.  Each figure with the interval
its repetitions allow; where the implementations' intervals overlap, the
figure does not tell them apart and is marked.

Figures from aggregated rows (repeats.aggregate), so the interval is the
between-runs one where runs were repeated."""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..store.config import config_of, what
from ..store.sizes import human_bytes
from .repeats import next_interval

TIED = "≈"  # a figure whose interval overlaps another implementation's
BUSY = "*"  # a figure from records taken while other processes used the CPU


@dataclass(frozen=True)
class Figure:
    value: float
    lo: float
    hi: float
    size: int = 0  # where a peak was measured
    times: float | None = None  # against its limit (x the floor, share of a copy rate)
    against: str = ""  # which limit
    tied: bool = False
    busy: bool = False  # only records taken while other processes used the CPU stood behind it
    # the interval printed: where a next run's figure is expected
    # (repeats.next_interval); lo-hi, the typical figure's, tell implementations apart
    shown: tuple[float, float] | None = None


@dataclass(frozen=True)
class Headline:
    names: tuple[str, ...]  # the implementations, in column order
    rows: tuple[tuple[str, str, tuple[Figure | None, ...]], ...]  # (figure, unit, per name)
    floor_ns: float | None  # the jobs' own core-to-core floor (median over the records)
    probe_floor_ns: float | None  # the probe's, taken once at the sweep's start
    cma_gbs: float | None  # process_vm_readv at 4 MiB
    copy: tuple[tuple[str, float], ...]  # (where, GB/s) of the probe's memory copy
    floor_spread: tuple[float, float] | None = None  # the middle 80% of the jobs' floors


def _ok(r: Mapping[str, object]) -> bool:
    return (r["np"] == 2 and r["cluster"] == "local" and bool(r["valid"])
            and bool(r["median_us"]))


def _time(r: Mapping[str, object]) -> Figure:
    m = float(r["median_us"])  # type: ignore[arg-type]
    lo = float(r["ci_lo_us"] if r["ci_lo_us"] is not None else m)  # type: ignore[arg-type]
    hi = float(r["ci_hi_us"] if r["ci_hi_us"] is not None else m)  # type: ignore[arg-type]
    return Figure(m, lo, hi, int(r["size_bytes"]), busy=bool(r["flagged"]),  # type: ignore[call-overload]
                  shown=next_interval(r) or (lo, hi))


def _rate(r: Mapping[str, object]) -> Figure:
    """MB/s, its interval from the time's (a shorter time, a higher rate)."""
    t = _time(r)
    mb = float(r["mb_per_s"])  # type: ignore[arg-type]
    shown = (mb * t.value / t.shown[1], mb * t.value / t.shown[0]) if t.shown else None
    return Figure(mb, mb * t.value / t.hi, mb * t.value / t.lo, t.size, busy=t.busy,
                  shown=shown)


def _mark(figs: list[Figure | None]) -> tuple[Figure | None, ...]:
    """Mark each figure whose interval overlaps another's."""
    out = []
    for i, f in enumerate(figs):
        if f is None:
            out.append(None)
            continue
        tied = any(g is not None and j != i and f.lo <= g.hi and g.lo <= f.hi
                   for j, g in enumerate(figs))
        out.append(replace(f, tied=tied))
    return tuple(out)


def jobs_floor_ns(records: Sequence[Mapping[str, object]]) -> float | None:
    """The core-to-core floor the jobs measured beside these records: their
    median, over those of a quiet machine where there are any."""
    quiet = [r for r in records if not r["flagged"]]
    fl = [float(r["floor_ns"]) for r in quiet or records  # type: ignore[arg-type]
          if r["floor_ns"]]
    return statistics.median(fl) if fl else None


def latency_floor_ns(small: Sequence[Mapping[str, object]], every: Sequence[Mapping[str, object]],
                     probe_floor_ns: float | None) -> float | None:
    """The one floor an implementation's smallest-message latency is set
    against, wherever it is (the headline table, `show`, the report): the
    floor its own latency jobs measured (the host moves between jobs), else
    the median of every job's, else the probe's from the sweep's start."""
    return jobs_floor_ns(small) or jobs_floor_ns(every) or probe_floor_ns


def beside_latency(rows: Sequence[Mapping[str, object]],
                   probe_floor_ns: float | None) -> list[str]:
    """For each implementation's smallest-message latency between two ranks
    of this machine: against the core-to-core floor, and how much MPI adds."""
    mine = [r for r in rows if _ok(r)]  # the records the headline table reads
    by: dict[str, list[Mapping[str, object]]] = {}
    for r in mine:
        if r["bench"] == "latency" and int(r["size_bytes"]) >= 1:  # type: ignore[call-overload]
            by.setdefault(what(r), []).append(r)
    out = []
    for name, recs in sorted(by.items()):
        r = min(recs, key=lambda x: int(x["size_bytes"]))  # type: ignore[call-overload]
        ns = float(r["median_us"]) * 1000  # type: ignore[arg-type]
        f = latency_floor_ns(recs, mine, probe_floor_ns)
        if f is None:
            continue
        whose = ("the floor its jobs measured" if jobs_floor_ns(recs) else
                 "the floor the sweep's jobs measured" if jobs_floor_ns(mine) else
                 "the probe's floor")
        out.append(f"{name}: {human_bytes(int(r['size_bytes']))} latency {ns:.0f} ns, "  # type: ignore[call-overload]
                   f"{ns / f:.1f}x the core-to-core floor ({f:.0f} ns, {whose}); MPI adds "
                   f"{ns - f:.0f} ns")
    return out


def floor_spread(rows: Sequence[Mapping[str, object]]
                 ) -> tuple[float, tuple[float, float]] | None:
    """The core-to-core floor the jobs of these two-rank records measured
    beside their figures: the median, and the middle 80% of them."""
    fl = sorted(float(r["floor_ns"]) for r in rows  # type: ignore[arg-type]
                if _ok(r) and r["floor_ns"])
    if not fl:
        return None
    return statistics.median(fl), (fl[len(fl) // 10], fl[9 * len(fl) // 10])


def floor_words(floor: float, spread: tuple[float, float] | None,
                probe_floor_ns: float | None) -> str:
    """The floor, named the same wherever it is said (the headline's note,
    the report's header, the findings)."""
    lo_hi = (f", {spread[0]:.0f}-{spread[1]:.0f} ns in the middle 80%"
             if spread and spread[1] > spread[0] else "")
    return (f"core to core {floor:.0f} ns one way (the median of the jobs' own floors{lo_hi}"
            + (f"; the probe read {probe_floor_ns:.0f} ns at the sweep's start"
               if probe_floor_ns and abs(probe_floor_ns - floor) > 0.1 * floor else "")
            + ")")


def headline(rows: Sequence[Mapping[str, object]], probe: Mapping[str, object] | None,
             probe_floor_ns: float | None = None) -> Headline | None:
    """The table, from aggregated rows and the sweep's probe (None: no
    limit to set the bandwidths against) with its core-to-core floor
    (measure.probe.floor_ns); None without a 2-rank latency."""
    mine = [r for r in rows if _ok(r)]
    names = tuple(sorted({what(r) for r in mine if r["bench"] == "latency"}))
    if not names:
        return None
    floor, spread = floor_spread(mine) or (None, None)
    cma = (probe or {}).get("process_vm_readv") or {}
    cma_gbs = float(cma["gbs_4mib"]) if isinstance(cma, dict) and cma.get("gbs_4mib") else None

    def of(name: str, bench: str) -> list[Mapping[str, object]]:
        """Its records, those of a quiet machine where there are any; else
        those taken beside other work, which the figure then says."""
        got = [r for r in mine if r["bench"] == bench and what(r) == name]
        quiet = [r for r in got if not r["flagged"]]
        return quiet or got

    lat, bw, bibw, at4, ar, bar = [], [], [], [], [], []
    # the probe's copies by how far they reach: (where, bytes, GB/s), the smallest first
    copy_sizes = sorted(((str(c["where"]), int(c["bytes"]), float(c["gbs"]))
                         for c in (probe or {}).get("copy", []) or []  # type: ignore[union-attr]
                         if isinstance(c, dict) and c.get("gbs") and c.get("bytes")),
                        key=lambda c: c[1])
    copy = tuple((w, g) for w, _, g in copy_sizes)

    def on_device(name: str) -> bool:
        """A GPU path's: its limits are the device's copies and the host
        link (bench/gpu.py --seeds measures them), not these host ones."""
        return any((cfg := config_of(r)) is not None and cfg.buffer != "host"
                   for r in mine if what(r) == name)

    for n in names:
        host = not on_device(n)
        small = [r for r in of(n, "latency") if int(r["size_bytes"]) >= 1]  # type: ignore[call-overload]
        f = _time(min(small, key=lambda r: int(r["size_bytes"]))) if small else None  # type: ignore[call-overload]
        fl = latency_floor_ns(small, mine, probe_floor_ns)
        lat.append(replace(f, times=f.value * 1000 / fl, against=f"{fl:.0f} ns")
                   if f and fl and host else f)
        for bench, into, k in (("bw", bw, 1.0), ("bibw", bibw, 2.0)):
            got = [r for r in of(n, bench) if r["mb_per_s"]]
            if not got:
                into.append(None)
                continue
            p = _rate(max(got, key=lambda r: float(r["mb_per_s"])))  # type: ignore[arg-type]
            # against a memory copy of the same reach (a peak in cache, the copy in
            # cache); bibw runs two copies at once, one a direction
            lim = next((c for c in copy_sizes if p.size <= c[1]), copy_sizes[-1] if copy_sizes
                       else None) if host else None
            into.append(replace(p, times=p.value / (k * lim[2] * 1000) if lim else None,
                                against=f"of {'two copies' if k > 1 else 'a copy'} in {lim[0]}"
                                if lim else ""))
        big = [r for r in of(n, "bw") if r["mb_per_s"] and r["size_bytes"] == 4 << 20]
        if big:
            p = _rate(big[0])
            lim4 = cma_gbs if host else None
            at4.append(replace(p, times=p.value / (lim4 * 1000) if lim4 else None,
                               against="of process_vm_readv at 4 MiB" if lim4 else ""))
        else:
            at4.append(None)
        for bench, size, into in (("allreduce", 8, ar), ("barrier", None, bar)):
            got = [r for r in of(n, bench) if size is None or r["size_bytes"] == size]
            into.append(_time(got[0]) if got else None)
    table = (("latency, smallest message", "us", _mark(lat)),
             ("bw, peak", "MB/s", _mark(bw)), ("bibw, peak", "MB/s", _mark(bibw)),
             ("bw at 4 MiB", "MB/s", _mark(at4)),
             ("allreduce 8 B", "us", _mark(ar)), ("barrier", "us", _mark(bar)))
    return Headline(names, tuple(t for t in table if any(t[2])), floor, probe_floor_ns,
                    cma_gbs, copy, floor_spread=spread)


def _value(f: Figure | None) -> str:
    if f is None:
        return "-"
    d = 3 if f.value < 10 else 0
    lo, hi = f.shown or (f.lo, f.hi)
    return (f"{f.value:.{d}f} ({lo:.{d}f}-{hi:.{d}f})" + (f" {TIED}" if f.tied else "")
            + (f" {BUSY}" if f.busy else ""))


def busy(h: Headline) -> bool:
    return any(f is not None and f.busy for _, _, figs in h.rows for f in figs)


def title(h: Headline) -> str:
    return ("Headline figures, 2 processes, one node: median (where a next run is "
            f"expected); {TIED}: not told apart from another implementation (the intervals "
            "of their typical figures overlap)"
            + (f"; {BUSY}: measured while other processes used the CPU (flagged noisy: "
               "no record of a quiet machine)" if busy(h) else ""))


def cells(h: Headline) -> list[tuple[str, list[str]]]:
    """The table's rows as words: a figure a row, with the size a peak was
    measured at and its limit on rows of their own (label starting "  ")."""
    lines: list[tuple[str, list[str]]] = []
    for label, unit, figs in h.rows:
        lines.append((f"{label} ({unit})", [_value(f) for f in figs]))
        if label.endswith("peak"):
            lines.append(("  at", [human_bytes(f.size) if f else "" for f in figs]))
        said = next((f for f in figs if f is not None and f.times), None)
        if said is not None:
            lim = "x the core-to-core floor" if label.startswith("latency") else said.against
            lines.append((f"  {lim}", [
                "" if f is None or not f.times else f"{f.times:.1f}x of {f.against}"
                if label.startswith("latency") else f"{100 * f.times:.0f}%" for f in figs]))
    return lines


def compact(h: Headline) -> list[tuple[str, list[tuple[str, str]]]]:
    """The rows for a page: a figure a row, each cell its value and, under
    it, where a peak was and its limit ("at 512 KiB, 29% of a copy in
    cache"; "2.4x the core-to-core floor")."""
    out = []
    for label, unit, figs in h.rows:
        row = []
        for f in figs:
            said = []
            if f is not None and label.endswith("peak"):
                said.append(f"at {human_bytes(f.size)}")
            if f is not None and f.times:
                said.append(f"{f.times:.1f}x the core-to-core floor of {f.against}"
                            if label.startswith("latency") else
                            f"{100 * f.times:.0f}% {f.against}")
            row.append((_value(f), ", ".join(said)))
        out.append((f"{label} ({unit})", row))
    return out


def limits_text(h: Headline) -> str:
    """What the figures are set against, in one sentence."""
    said = []
    if h.floor_ns:
        said.append(floor_words(h.floor_ns, h.floor_spread, h.probe_floor_ns)
                    + "; each latency above against its own jobs' floor")
    if h.cma_gbs:
        said.append(f"process_vm_readv (the single copy) {h.cma_gbs:.1f} GB/s at 4 MiB")
    said += [f"a copy on one core {g:.1f} GB/s ({w})" for w, g in h.copy]
    return ("Set against this machine's own figures (commscope probe): " + "; ".join(said)
            if said else "")


def text(h: Headline) -> str:
    """The table, a figure a row (its limit on the row under it), an
    implementation a column, then the limits it is set against: narrow
    enough for a terminal of 80 columns with two or three implementations."""
    lines = cells(h)
    w0 = max(len(x) for x, _ in lines)
    ws = [max(len(n), *(len(c[i]) for _, c in lines)) for i, n in enumerate(h.names)]
    out = [*textwrap.wrap(title(h), 88),
           " " * w0 + "  " + "  ".join(f"{n:>{w}}" for n, w in zip(h.names, ws, strict=True))]
    for head, row in lines:
        out.append(f"{head:<{w0}}  " + "  ".join(f"{c:>{w}}" for c, w in
                                                 zip(row, ws, strict=True)))
    out += textwrap.wrap(limits_text(h), 88)
    return "\n".join(out) + "\n"
