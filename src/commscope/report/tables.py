"""Tables for people: one column per implementation, as the seeds compare
Open MPI and MVAPICH2 side by side."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from functools import cache

from ..analysis import apps
from ..analysis.repeats import next_interval
from ..errors import CommscopeError
from ..store.config import PARAM_DEFAULTS, Apart, config_of, place, stored, what
from ..store.core_facts import bench as bench_facts
from ..store.core_facts import benches, unit_of
from ..store.sizes import human


def primary(rs: Sequence[sqlite3.Row]) -> tuple[str, str]:
    """Which number a table shows, and its unit: the core's to say (each
    record names its primary figure); records stored before it did, by the
    core's table of benchmarks (a time where it does not know the benchmark)."""
    key = next((r["primary_figure"] for r in rs if r["primary_figure"] is not None), None)
    key = key or bench_facts(rs[0]["bench"]).primary
    return key, unit_of(key)

def _cell(r: sqlite3.Row, key: str, per_node: bool = False) -> str:
    """A figure as the table shows it: the value, its interval in
    brackets (figure_interval), the windows a bandwidth ran, and its marks
    (legend())."""
    v = r[key]
    if per_node and v is not None and key == "mb_per_s":
        v = v * r["np"] / max(1, r["nodes"])
    if not r["valid"]:
        return "INVALID"
    if v is None:
        return "-"
    fmt = "{:.3f}" if key == "median_us" else "{:.1f}" if "mb_per_s" in key else "{:.0f}"
    txt = fmt.format(v)
    if (rng := figure_interval(r, v, key)) is not None:
        txt += f" ({fmt.format(rng[0])}-{fmt.format(rng[1])})"
    if key == "mb_per_s" and "window" in bench_facts(r["bench"]).changed_by:
        txt += window_text(r)
    return txt + "".join(m for m, on in _marks(r) if on)


def figure_interval(r: Mapping[str, object], v: float,
                    key: str = "median_us") -> tuple[float, float] | None:
    """The figure's interval in its own unit (repeats.next_interval: where
    a next run's figure is expected).  A rate or bandwidth is inversely
    proportional to its time: [v med/hi, v med/lo]."""
    med = r["median_us"]
    got = next_interval(r)
    if got is None or not med:
        return None
    lo, hi = got
    if key == "median_us":
        return lo, hi
    return v * float(med) / hi, v * float(med) / lo  # type: ignore[arg-type]


def window_text(r: Mapping[str, object]) -> str:
    """'(window N)' where the time bound narrowed the window below the
    configuration's; '(windows a, b)' where its runs ran different ones."""
    ws = r["windows"] or ()  # type: ignore[arg-type]
    if len(ws) > 1:  # type: ignore[arg-type]
        return f" (windows {', '.join(map(str, ws))})"  # type: ignore[call-overload]
    if r["window"] is not None and _config_window(r) > r["window"]:  # type: ignore[arg-type, operator]
        return f" (window {r['window']})"
    return ""


def n_used(r: Mapping[str, object]) -> int:
    """The runs a figure combines (those left out: another machine mode,
    or other processes on the CPU where a clean run exists)."""
    used = r["n_used"]
    return int(used) if used is not None else _n_reps(r)  # type: ignore[call-overload, arg-type]


# The marks a cell carries, in this order, and what each says (legend()).
MARKS = (
    ("¹", "one run behind this figure (the sweep's others were measured in another machine "
          "mode or with other processes on the CPU, or it had one): the interval is from the "
          "run-to-run spread of its configuration's points of this benchmark within 16x of its "
          "size, pooled (holding its own runs), where they have three "
          "degrees of freedom or more; otherwise that run's own CI, which does not hold from "
          "one run to the next"),
    ("²", "two runs behind this figure: the interval is from the pooled spread as for ¹, "
          "otherwise their range (two runs alone are too few for a 95% interval)"),
    ("~", "not converged: a run stopped at the time cap or the sample limit before its "
          "interval reached the target (--time-cap, --max-samples)"),
    ("*", "measured while other processes used the CPU (see export: other_cpu_s)"),
    ("†", "every run of this point was measured in another machine mode"),
)


def _marks(r: sqlite3.Row) -> list[tuple[str, bool]]:
    return list(zip((m for m, _ in MARKS), (
        n_used(r) == 1,
        n_used(r) == 2,
        bool(r["unconverged_reps"]),
        bool(r["flagged"]),
        bool(r["other_mode"])), strict=True))


def _n_reps(r: sqlite3.Row) -> int:
    return int(r["n_reps"] or 1)


def names(rows: Sequence[sqlite3.Row]) -> dict[int, tuple[str, str]]:
    """Each record's (what, where) by id(): `what` and `where` as they are,
    but where one label would show records of two configurations (keys),
    both name what tells those apart (config.Apart), everywhere they appear;
    a CommscopeError where nothing stored does."""
    recs = [(r, *stored(r)) for r in rows]
    apart = Apart((f"{what(r)}, {r['np']} processes, {place(r)}", key, full)
                  for r, key, full in recs)
    return {id(r): (apart.name(what(r), full),
                    f"{apart.name(what(r, params=False), full)}, {place(r)}")
            for r, _, full in recs}


# The order a person reads: point-to-point first, then the collectives each
# followed by its hand-written equivalent, then the applications.
P2P_ORDER = ("latency", "bw", "bibw", "roundtrip", "sendloop")
GROUP_ORDER = ("p2p", "loggp", "coll", "apps")


@cache
def reading_order(bench: str) -> tuple[int, int, int, str]:
    b = bench_facts(bench)
    group = "coll" if b.group == "coll-sends" else b.group
    rank = GROUP_ORDER.index(group) if group in GROUP_ORDER else len(GROUP_ORDER)
    if b.group == "p2p" and bench in P2P_ORDER:
        return rank, P2P_ORDER.index(bench), 0, bench
    core = [x.name for x in benches()]
    base = bench.removesuffix("_sends") if b.group == "coll-sends" else bench
    pos = core.index(base) if base in core else len(core)
    return rank, pos, int(b.group == "coll-sends"), bench


def legend(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """What the intervals and the marks say, once, above the first table:
    only those the tables use."""
    used_runs = sorted({n_used(r) for r in rows})
    out = []
    if used_runs and used_runs[-1] > 2:
        out.append("(low-high): where a next run's figure is expected: the 95% prediction "
                   "interval from the spread between runs (figures combine "
                   f"{'/'.join(map(str, used_runs))} interleaved runs), never narrower than one "
                   "run's own CI, reaching the figures of its runs taken in another machine mode "
                   "(a next run may be taken in that state); with few runs a wide interval is "
                   "what they allow, not an error. Comparisons use the narrower interval of the "
                   "typical figure (export: ci_lo_us, ci_hi_us)")
    elif used_runs:
        out.append("(low-high): the figure's interval (see the marks)")
    used = {m for r in rows for m, on in _marks(r) if on}  # type: ignore[arg-type]
    out += [f"{m} {text}" for m, text in MARKS if m in used]
    return [*out, ""] if out else []


def tables(rows: Sequence[sqlite3.Row], per_node: bool = False, busbw: bool = False) -> str:
    """One table per (benchmark, process count); clusters and placements of
    a sweep that spans several stand side by side as columns, one column
    per configuration (its key), headed by its label (`names`).  With
    per_node, bandwidth is shown per machine: the per-process figure times
    the processes per node, as the UMBC cluster report gives its collectives;
    with busbw, the collectives' bus bandwidth (nccl-tests' busbw: the
    algorithm's bandwidth scaled to what each link carries) instead of
    their time.  Benchmarks in reading order (reading_order), the legend
    once above them."""
    name = names(rows)
    groups: dict[tuple[str, int], list[sqlite3.Row]] = defaultdict(list)
    for r in rows:
        groups[(r["bench"], r["np"])].append(r)
    out: list[str] = legend(rows)
    for (bench, np_), rs in sorted(groups.items(), key=lambda kv: (reading_order(kv[0][0]),
                                                                  kv[0][1])):
        key, unit = primary(rs)
        if per_node and any(r["mb_per_s"] is not None for r in rs):
            key, unit = "mb_per_s", "MB/s per node"
        elif busbw and any(r["busbw_mb_per_s"] is not None for r in rs):
            key, unit = "busbw_mb_per_s", "MB/s bus bandwidth"
        places = sorted({place(r) for r in rs})
        col = {id(r): name[id(r)][0] if len(places) == 1 else f"{name[id(r)][0]} {place(r)}"
               for r in rs}
        _one_key_each(rs, col, f"{bench}, {np_} processes")
        cols = sorted(set(col.values()))
        cells: dict[int, dict[str, str]] = defaultdict(dict)
        for r in rs:
            cells[r["size_bytes"]][col[id(r)]] = _cell(r, key, per_node)
        over = " (oversubscribed: correctness only)" if any(r["oversubscribed"] for r in rs) else ""
        where = f", {places[0]}" if len(places) == 1 else ""
        out.append(f"{bench}, {np_} processes{where}: {unit}{over}")
        w = max(8, *(len(h) for h in cols),
                *(len(v) for row in cells.values() for v in row.values())) + 2
        axis = next((str(r["size_param"]) for r in rs if r["size_param"] is not None), None)
        out.append(f"{axis or 'size':>8}  " + "  ".join(f"{m:>{w}}" for m in cols))
        for size in sorted(cells):
            out.append(f"{(str(size) if axis else human(size)):>8}  "
                       + "  ".join(f"{cells[size].get(m, '-'):>{w}}" for m in cols))
        out.append("")
        out.extend(phase_table(rs, col, axis or "size"))
    out.extend(scaling_table(rows, lambda r: name[id(r)][1]))
    out.extend(overlap_table(rows, lambda r: name[id(r)][1]))
    out.extend(mode_lines(rows))
    return "\n".join(out).rstrip() + "\n"


def phase_table(rs: Sequence[sqlite3.Row], col: dict[int, str], axis: str) -> list[str]:
    """Applications: where the time of one sample goes, phase by phase (the
    slowest rank's median per phase, ms), one block per column."""
    out: list[str] = []
    by_col: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for r in rs:
        if r["phases"] is not None and r["valid"]:
            by_col[col[id(r)]].append(r)
    for name, group in sorted(by_col.items()):
        names = list(apps.phases(group[0]))
        out.append(f"  phases of {name}: ms, slowest process's median per phase; total is the "
                   "slowest process's whole sample")
        out.append(f"  {axis:>8} " + " ".join(f"{n:>10}" for n in [*names, "total"]))
        ordered = sorted(group, key=lambda r: r["size_bytes"])
        for r in ordered:
            ph = apps.phases(r)
            vals = [float(ph[n]["max_us"]) / 1e3 if n in ph else float("nan")  # type: ignore[arg-type]
                    for n in names]
            out.append(f"  {r['size_bytes']:>8} " + " ".join(f"{v:>10.3f}" for v in vals)
                       + f" {r['median_us'] / 1e3:>10.3f}")
        if any(any(v) for r in ordered for v in apps.phase_bytes(r).values()):
            out.append("  MB each process moved per sample (payload sent + received, or memory "
                       "read + written; busiest/least busy process where they differ)")
            for r in ordered:
                pb = apps.phase_bytes(r)
                out.append(f"  {r['size_bytes']:>8} " + " ".join(
                    f"{apps.bytes_text(pb.get(n, ())):>10}" for n in names))
        for r in ordered:
            if (m := apps.memory_rate(r)) is not None:
                out.append(f"  {r['size_bytes']:>8} {m.text()}")
        out.append("")
    return out


def where(r: sqlite3.Row) -> str:
    """An application record's configuration short of its parameters, and
    where it ran: what its scaling and overlap tables group by."""
    return f"{what(r, params=False)}, {place(r)}"


def _one_key_each(rs: Sequence[sqlite3.Row], col: Mapping[int, str], table: str) -> None:
    """A column shows one configuration: never two keys under one header."""
    owner: dict[str, str] = {}
    for r in rs:
        key = stored(r)[0]
        held = owner.setdefault(col[id(r)], key)
        if held != key:
            raise CommscopeError(f"{table}: two configurations are both labelled "
                                 f"'{col[id(r)]}': {held or '(no key)'} and {key or '(no key)'}")


def overlap_table(rows: Sequence[sqlite3.Row],
                  label: Callable[[sqlite3.Row], str] = where) -> list[str]:
    """Jacobi: how much of the halo time the overlapped exchange hides."""
    pairs = apps.overlaps(rows, label)  # type: ignore[arg-type]
    if not pairs:
        return []
    out = ["jacobi overlap: the fraction of the blocking run's halo time (pack + exchange + "
           "unpack) that computing the interior meanwhile hides",
           f"  {'processes':>9} {'N':>6} {'blocking ms':>12} {'overlap ms':>11} {'halo ms':>9} "
           f"{'hidden':>7} {'interval':>14}  configuration"]
    for p in pairs:
        over = " (oversubscribed)" if p.oversubscribed else ""
        lo, hi = p.hidden_range
        out.append(f"  {p.np:>9} {p.n:>6} {p.blocking_us / 1e3:>12.3f} "
                   f"{p.overlap_us / 1e3:>11.3f} {p.halo_us / 1e3:>9.3f} {p.hidden:>7.2f} "
                   f"{f'{lo:.2f}..{hi:.2f}':>14}  {p.label}{over}")
    out.append("  hidden = (blocking - overlap) / halo: 1 hides all of it, 0 nothing, below 0 "
               "the overlap costs more than it hides; the interval comes from the two totals' "
               "intervals (between runs where repeated)")
    out.append("")
    return out


def scaling_table(rows: Sequence[sqlite3.Row],
                  label: Callable[[sqlite3.Row], str] = where) -> list[str]:
    """Jacobi: lattice updates per second, in all and per rank, and the
    parallel efficiency against the one-rank run (analysis.apps.scaling)."""
    return scaling_lines(apps.scaling(rows, label))  # type: ignore[arg-type]


def scaling_lines(scs: Sequence[apps.Scaling]) -> list[str]:
    out: list[str] = []
    for sc in scs:
        kind = "weak: N per process" if sc.weak else "strong"
        out.append(f"jacobi scaling, {sc.label}, N={sc.n} ({kind}, {sc.iters} sweeps a "
                   f"sample; {sc.rest})")
        out.append(f"  {'processes':>9} {'MLUP/s':>10} {'per process':>11} {'efficiency':>10} "
                   f"{'interval':>12}")
        for p in sc.points:
            eff = "-" if p.efficiency is None else f"{p.efficiency:.2f}"
            rng = "" if p.eff_range is None else f"{p.eff_range[0]:.2f}..{p.eff_range[1]:.2f}"
            over = " (oversubscribed)" if p.oversubscribed else ""
            out.append(f"  {p.np:>9} {p.mlups:>10.1f} {p.mlups / p.np:>11.1f} {eff:>10} "
                       f"{rng:>12}{over}")
        out.append("")
    return out


def mode_lines(rows: Sequence[sqlite3.Row]) -> list[str]:
    """A line when the records were measured in more than one machine mode."""
    from ..analysis.repeats import detect_modes

    floors = [f for r in rows for f in _floors(r)]
    modes = detect_modes(floors)
    dropped = max((int(r["mode_dropped"]) for r in rows if r["mode_dropped"]), default=0)
    if len(modes) < 2 and not dropped:
        return []
    parts = ", ".join(f"{m.label} ({m.count} record(s), {m.lo_ns:.0f}-{m.hi_ns:.0f} ns)"
                      for m in modes)
    if dropped:
        return [f"machine mode (core-to-core cache-line floor): {parts}; {dropped} record(s) "
                "measured in other modes were left out (--mode all keeps them, --mode LABEL "
                "picks one)"]
    return [f"machine modes (core-to-core cache-line floor): {parts}"]


def _config_window(r: sqlite3.Row) -> int:
    """The window the record's configuration planned (the default where it says none)."""
    cfg = config_of(r)
    return int(dict(cfg.params if cfg else ()).get("window", PARAM_DEFAULTS["window"]))  # type: ignore[call-overload]


def _floors(r: sqlite3.Row) -> tuple:
    if r["floors_ns"] is not None:
        return tuple(r["floors_ns"])
    return (r["floor_ns"],) if r["floor_ns"] is not None else ()


def run_table(rows: Sequence[sqlite3.Row]) -> str:
    out = [f"{'id':>4} {'status':<14} {'mpi':<14} {'bench':<10} {'np':>3} {'where':<18} "
           f"{'started':<25} note"]
    for r in rows:
        note = (r["stderr_tail"] or "").strip().splitlines()
        first = note[0][:60] if note and r["status"] != "ok" else ""
        out.append(f"{r['id']:>4} {r['status']:<14} {r['mpi_name']:<14} {r['bench']:<10} "
                   f"{r['np']:>3} {place(r):<18} {r['started_at']:<25} {first}")
    return "\n".join(out) + "\n"
