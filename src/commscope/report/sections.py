"""The report's sections after the first screen, each a function that makes
its figures and returns the items its template block shows."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..advise.selection import forced_collective
from ..analysis import compare as compare_mod
from ..analysis import crossover, findings, hockney
from ..analysis.headlines import ratio_text
from ..analysis.repeats import MODE_GAP
from ..store.benches import bench as bench_facts
from ..store.benches import names
from ..store.config import config_of, place
from ..store.db import Store
from ..store.sizes import human
from .figures import Figure, Grid, Line, lines_for
from .page import Item, Page, Para, Table, Term, fold, items, table
from .tables import reading_order

# The point-to-point figures in the order the report shows them, each with its
# axis and title; what each plots (time, bandwidth, rate) is the core's figure.
P2P = (("latency", "one-way latency (us)", "Latency (ping-pong, round trip / 2)"),
       ("bw", "bandwidth (MB/s)", "Unidirectional bandwidth"),
       ("bibw", "bandwidth (MB/s, both ways)", "Bidirectional bandwidth"),
       ("roundtrip", "round trips per second", "Round-trip rate"),
       ("sendloop", "time per send (us)", "Send loop: time per send"))
COLLECTIVES = names("coll")  # the core's collectives, in its order
LEAD_FINDINGS = 8  # the findings shown before any fold: the ones that save most

Tick = Callable[[str], None]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# -- findings ---------------------------------------------------------------
def finding_anchor(f: findings.Finding, xrows: list[crossover.Row]) -> str:
    """The figure that shows a finding; the section, for benchmarks that
    have no figure of their own (the hand-written *_sends versions)."""
    if f.xrow is not None and f.xrow in xrows:
        return xfig_id(f.xrow, xrows.index(f.xrow))
    if f.bench in {b for b, *_ in P2P} or f.bench in COLLECTIVES:
        return f"fig-{f.bench}"
    return "crossover" if xrows else "findings"


def finding_view(i: int, f: findings.Finding, xrows: list[crossover.Row],
                 n_recs: int = 20) -> dict[str, object]:
    recs = ", ".join(str(x) for x in f.records[:n_recs]) + ("…" if len(f.records) > n_recs
                                                             else "")
    return {"id": f"finding-{i}", "kind": f.kind, "text": f.text, "recs": recs,
            "save": f"({s})" if (s := findings.saving(f)) else "",
            "anchor": finding_anchor(f, xrows)}


def findings_section(found: Sequence[findings.Finding], xrows: list[crossover.Row]
                     ) -> dict[str, object]:
    """Every finding, those that save most first: the implementation
    comparisons in a table of their own, the others as sentences, past
    LEAD_FINDINGS folded away.  Ids follow the order of `found`."""
    views = [finding_view(i, f, xrows, 20 if f.kind != "faster" else 8)
             for i, f in enumerate(found)]
    return {"lead": [v for v, f in zip(views, found, strict=True) if f.kind != "faster"],
            "faster": [v for v, f in zip(views, found, strict=True) if f.kind == "faster"],
            "shown": LEAD_FINDINGS}


# -- what the page was made from -------------------------------------------------
def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def _has(r: Mapping[str, object] | sqlite3.Row, k: str) -> bool:
    return k in r.keys()


def _key(r: Mapping[str, object] | sqlite3.Row) -> tuple[object, ...]:
    """A point's key, as analysis/repeats.aggregate groups records."""
    cfg = (r["config_key"] if _has(r, "config_key") else None) or r["mpi_name"]
    return (cfg, r["bench"], r["np"], r["size_bytes"])


def _measurement(r: Mapping[str, object] | sqlite3.Row) -> tuple[str, object]:
    """The measurement a record belongs to: its sweep, or its run alone."""
    return ("sweep", r["sweep_id"]) if r["sweep_id"] is not None else ("run", r["run_id"])


@dataclass(frozen=True)
class Behind:
    """What the page's points were made from, counted in the store: the
    records of the measurements (sweeps) behind them, those the points
    combine, and what else the store holds."""

    points: int
    reps: tuple[int, ...]  # how many repetitions the points combine (each count once)
    records: int  # the records of those measurements, before the machine mode's filter
    used: int  # those the points combine
    mode_dropped: int  # left out as measured in another machine mode
    run_ids: frozenset[int]
    sweeps: int
    outside: int  # runs of no sweep
    store_records: int
    store_runs: int
    again: int  # the store's records measured again at a common window, not shown
    noisy_left: int = 0  # in a point, but left out of its figure: a clean run exists

    def text(self) -> str:
        reps = self.reps
        if not self.points:  # a store of profiled programs alone
            return (f"No benchmark records ({self.store_records} in the store); the "
                    "programs profiled are below.")
        over = ("each from one run" if reps == (1,) else
                f"over {reps[0]} repetitions" if len(reps) == 1 else
                f"over {reps[0]} to {reps[-1]} repetitions")
        where = f" in {_n(self.sweeps, 'sweep')}" if self.sweeps else ""
        if self.sweeps and self.outside:
            where += f" and {self.outside} outside any sweep"
        out = (f"{_n(self.records, 'record')} from {_n(len(self.run_ids), 'run')}{where}, "
               f"combined into {_n(self.points, 'point')} (configuration × benchmark × size, "
               f"{over})")
        left = self.records - self.used
        if left and left == self.mode_dropped:
            out += f"; {left} of them, measured in another machine mode, are in no point"
        elif left:
            out += f"; {left} of the records are in no point"
        if self.noisy_left:
            out += (f"; {self.noisy_left} more, measured while other processes used the CPU, "
                    "are left out of their point's figure (a run measured without them "
                    "exists)")
        out += "."
        rest = self.store_records - self.records - self.again
        if self.store_records != self.records:
            parts = []
            if self.again:
                parts.append(f"{self.again} measured again at a common window (the newer "
                             "measurement is the one shown)")
            if rest > 0:
                parts.append(f"{rest} of other sweeps, configurations or benchmarks, not "
                             "shown here")
            out += (f" The store holds {_n(self.store_records, 'record')} from "
                    f"{_n(self.store_runs, 'run')}" + (": " + " and ".join(parts) if parts
                                                       else "") + ".")
        return out


def behind(store: Store, rows: Sequence[Mapping[str, object] | sqlite3.Row]) -> Behind:
    """The records and runs the points (rows: one per configuration,
    benchmark and size, over its repetitions) were made from, read from the
    store: the records the points combine, and the other records of the
    same points in the same measurements (those another machine mode left
    out)."""
    used: set[int] = set()
    for r in rows:
        ids = r["rep_ids"] if _has(r, "rep_ids") else None
        if ids:  # a point over its repetitions
            used.update(int(i) for i in ids)  # type: ignore[union-attr]
        else:  # a record as stored
            used.add(int(r["id"]))  # type: ignore[call-overload]
    keys = {_key(r) for r in rows}
    stored = store.result_rows(latest=False, narrowed=True)
    meas: dict[tuple[object, ...], set[tuple[str, object]]] = {}
    for x in stored:
        if int(x["id"]) in used:
            meas.setdefault(_key(x)[:2], set()).add(_measurement(x))
    recs = [x for x in stored if int(x["id"]) in used or (
        x["narrowed_in"] is None and _key(x) in keys
        and _measurement(x) in meas.get(_key(x)[:2], ()))]
    runs = {int(x["run_id"]): x["sweep_id"] for x in recs}
    n_store, n_runs = store.counts()
    shown = {int(x["id"]) for x in recs}
    again = len(store.measured_again()[0] - shown)
    return Behind(
        points=len(rows),
        reps=tuple(sorted({int(r["n_reps"]) if _has(r, "n_reps") else 1 for r in rows})),  # type: ignore[call-overload]
        records=len(recs), used=len(used & shown),
        mode_dropped=max((int(r["mode_dropped"]) for r in rows  # type: ignore[call-overload]
                          if _has(r, "mode_dropped") and r["mode_dropped"]), default=0),
        run_ids=frozenset(runs), sweeps=len({s for s in runs.values() if s is not None}),
        outside=sum(1 for s in runs.values() if s is None),
        store_records=int(n_store), store_runs=int(n_runs), again=again,
        noisy_left=sum(int(r["n_reps"]) - int(r["n_used"]) for r in rows  # type: ignore[call-overload]
                       if _has(r, "n_reps") and _has(r, "n_used")))


# -- runs and failures --------------------------------------------------------
def _json(text: object) -> dict[str, object]:
    try:
        d = json.loads(str(text)) if text else {}
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def id_ranges(ids: Sequence[int]) -> str:
    """1-3, 7, 9-12 (run ids, CPU numbers)"""
    out: list[str] = []
    xs = sorted(set(ids))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ", ".join(out)


def _launch_part(argv: Sequence[str]) -> list[str]:
    """The launcher's own arguments: those before the core's executable."""
    for i, a in enumerate(argv):
        if i and "cs-core" in a.rsplit("/", 1)[-1]:
            return list(argv[1:i])
    return list(argv[1:])


def binding(argv: Sequence[str], env: Mapping[str, object]) -> str:
    """How the job's launch bound each process, as its command line and
    environment say (measure/mpi.py bind_flags): the flags themselves."""
    a = _launch_part(argv)
    said = []
    for i, x in enumerate(a):
        nxt = a[i + 1] if i + 1 < len(a) else ""
        if x in ("--bind-to", "-bind-to", "--map-by", "-map-by", "-binding"):
            said.append(f"{x} {nxt}")
        elif x.startswith(("--cpu-bind", "--cpu_bind")):
            said.append(x)
        elif x == "--oversubscribe":
            said.append(x)
        elif x == "-genv" and nxt.startswith("I_MPI_PIN"):
            said.append(f"{nxt}={a[i + 2] if i + 2 < len(a) else ''}")
    said += [f"{k}={v}" for k, v in sorted(env.items())
             if "BIND" in k.upper() or "binding_policy" in k or k.startswith("I_MPI_PIN")]
    return " ".join(said) if said else "no flag (the launcher's default)"


def _opt(r: sqlite3.Row, k: str) -> object:
    """An option of a run as commscope asked for it (runs.options), else as
    the core's header echoed it; None where neither kept it."""
    for src in (_json(r["options"]), _json(_json(r["header"]).get("options"))):
        if src.get(k) is not None:
            return src[k]
    return None


def _num(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _each(rs: Sequence[sqlite3.Row], text: Callable[[sqlite3.Row], str]) -> str:
    """What each run says, each different text once ("-" where none)."""
    seen = dict.fromkeys(t for r in rs if (t := text(r)))
    return " / ".join(seen) if seen else "-"


def _bench_list(benches: Sequence[str]) -> str:
    """The benchmarks in reading order, each group named, and what the
    hand-written equivalents are at their first mention."""
    groups: dict[str, list[str]] = {}
    for b in sorted(benches, key=reading_order):
        groups.setdefault(bench_facts(b).group, []).append(b)
    named = {"p2p": "point-to-point", "loggp": "LogGP trains", "coll": "collectives",
             "coll-sends": "hand-written equivalents (each a collective written by hand from "
                           "point-to-point sends, validated the same way)",
             "apps": "applications", "": "other"}
    return "; ".join(f"{named.get(g, g)}: {', '.join(bs)}" for g, bs in groups.items())


def _stats(store: Store, ids: Sequence[int]) -> sqlite3.Row:
    return store.sampling_of(ids)


def _span(lo: object, hi: object) -> str:
    return "" if lo is None else str(lo) if lo == hi else f"{lo}-{hi}"


def runs_section(store: Store, b: Behind) -> dict[str, object]:
    """The runs behind the page, one row per configuration: the machine
    once above it, then each configuration's library, benchmarks, runs and
    status, and the settings that change its numbers (binding, compiler,
    window, warm-up, iterations per sample, samples, time cap) as the store
    kept them."""
    runs = store.runs()
    sweeps = {r["sweep_id"] for r in runs if r["id"] in b.run_ids and r["sweep_id"] is not None}
    mine = [r for r in runs if r["id"] in b.run_ids
            or (r["sweep_id"] in sweeps and r["status"] != "ok")]
    if not mine:
        return {"machine": [], "made": "", "benches": "", "configs": None, "settings": None}
    machines = sorted({(r["hostname"] or "?", r["cpu_model"] or "?", r["n_cores"] or 0,
                        r["kernel"] or "?") for r in mine})
    machine = [f"{h}: {cpu}, {n} cores, kernel {k}" for h, cpu, n, k in machines]
    nodes = sorted({str(h) for r in mine for h in (_json(r["header"]).get("hosts") or [])}  # type: ignore[union-attr]
                   - {str(h) for h, *_ in machines})
    if nodes:
        machine.append(f"processes ran on {', '.join(nodes)}")
    versions = sorted({f"commscope {r['commscope_version'] or '?'}"
                       + (f" ({r['git_rev']})" if r["git_rev"] else "") for r in mine})
    started = sorted(str(r["started_at"]) for r in mine if r["started_at"])
    made = ", ".join(versions) + (f"; runs started from {started[0]} to {started[-1]}"
                                  if started else "")
    again = store.measured_again()[1]
    groups: dict[str, list[sqlite3.Row]] = {}
    for r in mine:
        groups.setdefault(str(r["config_key"] or r["mpi_name"]), []).append(r)
    benches = {k: [x for x in dict.fromkeys(b_.strip() for r in rs
                                            for b_ in str(r["bench"]).split(",")) if x]
               for k, rs in groups.items()}
    common = len({tuple(sorted(v)) for v in benches.values()}) == 1
    labels = {k: _label(rs[0]) for k, rs in groups.items()}
    twice = {v for v in labels.values() if list(labels.values()).count(v) > 1}
    for k, rs in groups.items():
        if labels[k] in twice:
            cfg = config_of(rs[0])
            labels[k] += f" ({cfg.parts()['identity'] if cfg else k[:8]})"
    order = sorted(groups, key=lambda k: labels[k])
    rows, settings = [], []
    for k in order:
        rs = groups[k]
        ids = [int(r["id"]) for r in rs]
        where = ", ".join(dict.fromkeys(
            f"{r['np']} processes, {place(r)}" + (" (oversubscribed)" if r["oversubscribed"]
                                                 else "") for r in rs))
        version = max((str(r["mpi_version"] or "") for r in rs),
                      key=lambda v: sum(str(r["mpi_version"] or "") == v for r in rs))
        reps = sorted({int(r["repetition"]) for r in rs})
        n_runs = f"{len(rs)} (repetition{'s' if len(reps) > 1 else ''} {_span(reps[0], reps[-1])}"
        redo = sorted(set(ids) & again)
        if redo:
            n_runs += (f"; run{'s' if len(redo) > 1 else ''} {id_ranges(redo)} measured sizes "
                       "again at a common window")
        n_runs += f"): {'runs' if len(ids) > 1 else 'run'} {id_ranges(ids)}"
        status = Counter(str(r["status"]) for r in rs)
        rows.append((labels[k], where, fold(version) if version else "-",
                     *(() if common else (_bench_list(benches[k]),)), n_runs,
                     ", ".join(f"{n} {s}" for s, n in sorted(status.items()))))
        st = _stats(store, ids)
        windowed = [x for x in benches[k] if "window" in bench_facts(x).changed_by]
        window = "-"
        if windowed:
            # the repetitions' window; the runs measuring sizes again, and the
            # records, say where it was narrowed
            asked = [r for r in rs if int(r["id"]) not in again] or rs
            window = _each(asked, lambda r: _num(v) if (v := _opt(r, "window")) is not None
                           else "")
            least = [int(w) for w in (st["w0"], *(_opt(r, "window") for r in rs))
                     if isinstance(w, int)]
            if least and window.isdigit() and min(least) < int(window):
                window += f", narrowed to {min(least)} at some sizes"
            window += f" ({', '.join(windowed)})"

        def warm(r: sqlite3.Row) -> str:
            n, t = _opt(r, "warmup"), _opt(r, "warmup_s")
            said = [f"{_num(n)} samples" if n is not None else "",
                    f"{_num(1e3 * float(t))} ms" if isinstance(t, int | float) else ""]  # type: ignore[arg-type]
            return ", at least ".join(x for x in said if x)

        def per_sample(r: sqlite3.Row) -> str:
            us = _opt(r, "sample_us")
            if not isinstance(us, int | float):
                return ""
            return ("each iteration timed" if us == 0 else "automatic: samples of 200 clock "
                    "reads" if us < 0 else f"samples of about {_num(us)} us")

        def samples(r: sqlite3.Row) -> str:
            lo, hi, ci = _opt(r, "min_samples"), _opt(r, "max_samples"), _opt(r, "target_ci")
            said = f"{_num(lo)} to {_num(hi)}" if lo is not None and hi is not None else ""
            if isinstance(ci, int | float):
                said += f", stops at ±{_num(100 * ci)}%"
            return said

        def cap(r: sqlite3.Row) -> str:
            hi, lo = _opt(r, "time_cap_s"), _opt(r, "min_time_s")
            return ((f"{_num(hi)} s" if hi is not None else "")
                    + (f" (at least {_num(lo)} s)" if lo is not None else ""))

        batch = _span(st["b0"], st["b1"])
        taken = _span(st["s0"], st["s1"])
        rule = _each(rs, per_sample)
        settings.append((
            labels[k], _each(rs, lambda r: binding(json.loads(r["launch_argv"] or "[]"),
                                                   _json(r["env"]))),
            _each(rs, lambda r: str(_json(r["header"]).get("compiler") or "")), window,
            _each(rs, warm), (batch or "-") + (f" ({rule})" if rule != "-" else ""),
            "; ".join(x for x in (_each(rs, samples), f"taken {taken}" if taken else "")
                      if x and x != "-") or "-", _each(rs, cap)))
    head = ("configuration", "processes", "MPI library (its first line; click for all)",
            *(() if common else ("benchmarks",)), "runs", "status")
    return {
        "machine": machine, "made": made,
        "benches": _bench_list(next(iter(benches.values()))) if common else "",
        "configs": table(head, rows),
        "settings": table(("configuration", "binding (launch flags)", "compiler",
                           "window (messages in flight)", "warm-up per size",
                           "iterations per sample", "samples per size", "time per size"),
                          settings)}


# what a run's stored stderr says the libraries chose (settings.read_back's
# notes), and how the report's table says it
CHOSE = {"UCX protocols, ": "UCX protocols, ", "UCX lanes to the other ranks: ": "UCX lanes: "}


def library_choices(store: Store, run_ids: set[int]) -> Table | None:
    """What the libraries said they chose, per implementation and its
    settings: UCX's protocol per range of message sizes, its lanes."""
    seen: dict[tuple[str, str], list[int]] = {}
    for r in store.runs():
        if r["id"] not in run_ids:
            continue
        for line in (r["stderr_tail"] or "").splitlines():
            for head, shown in CHOSE.items():
                if line.startswith(head):
                    key = (_label(r), shown + line[len(head):])
                    seen.setdefault(key, []).append(r["id"])
    rows = [(label, said, f"{len(ids)} run(s), e.g. {min(ids)}")
            for (label, said), ids in sorted(seen.items())]
    return table(("configuration", "what the library chose", "runs"), rows, ()) if rows else None


def _label(r: sqlite3.Row) -> str:
    """The run's configuration as every label of the report says it."""
    cfg = config_of(r)
    return cfg.label() if cfg else str(r["mpi_name"])


def _first_line(r: sqlite3.Row) -> str:
    """The first line of the job's stderr, with the signal named where the
    exit status is a shell's 128 + signal (139: SIGSEGV) and the line says
    no more than the number."""
    line = (r["stderr_tail"] or "").strip().splitlines()[0][:160] if r["stderr_tail"] else ""
    code = r["exit_code"]
    if isinstance(code, int) and 128 < code < 160 and line in ("", f"exit code {code}"):
        try:
            line = f"exit code {code} ({signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return line


def failures(store: Store, run_ids: set[int]) -> dict[str, Table | None]:
    """Jobs that failed, and apart from them the GPU paths this machine
    could not run (skipped, with the driver's reason: not a failure).  The
    jobs are those of the sweeps the report's records came from, every job
    started while they were taken, and every job of a configuration of
    these implementations that only failed: a job that stored no record (a
    skip, a crash at start) is listed too, and so is one of a sweep of its
    own (`commscope run` called once a round, as the lease scripts of
    docs/gpu.md do: the third lease's crashed jobs were not)."""
    runs = store.runs()
    sweeps = {r["sweep_id"] for r in runs if r["id"] in run_ids and r["sweep_id"] is not None}
    theirs = [r for r in runs if r["id"] in run_ids or r["sweep_id"] in sweeps]
    began = sorted(str(r["started_at"]) for r in theirs if r["started_at"])
    ended = sorted(str(r["finished_at"] or r["started_at"]) for r in theirs
                   if r["finished_at"] or r["started_at"])
    shown = {r["config_key"] for r in theirs if r["config_key"]}
    mpis = {r["mpi_name"] for r in theirs}

    def listed(r: sqlite3.Row) -> bool:
        if r["id"] in run_ids or r["sweep_id"] in sweeps:
            return True
        at = str(r["started_at"] or "")
        # started while the records were taken; or a configuration of these
        # implementations that only failed (nothing else of it is in the report)
        return bool(at and began and began[0] <= at <= ended[-1]) or bool(
            r["mpi_name"] in mpis and r["config_key"] and r["config_key"] not in shown)

    mine = [r for r in runs if r["status"] != "ok" and listed(r)]
    bad = [r for r in mine if r["status"] != "skipped"]
    skipped = [r for r in mine if r["status"] == "skipped"]
    return {
        "skipped": table(("run", "MPI", "path", "benchmark", "reason"),
                         [(r["id"], r["mpi_name"], cfg.buffer if (cfg := config_of(r)) else "",
                           r["bench"], _first_line(r)) for r in skipped],
                         (0,)) if skipped else None,
        "bad": table(("run", "status", "configuration", "benchmark", "processes",
                      "first line of stderr"),
                     [(r["id"], r["status"], _label(r), r["bench"], r["np"],
                       _first_line(r)) for r in bad], (0, 4)) if bad else None,
    }


# -- point-to-point and collectives ---------------------------------------------
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


# -- GPU buffers and runtime settings -----------------------------------------------
# the axes of the benchmarks a GPU path is shown for besides the collectives;
# what each plots is the core's figure (the others: time per call)
YLABEL = {"latency": "one-way latency (us)", "bw": "MB/s", "bibw": "MB/s, both ways"}


def _metric(bench: str) -> tuple[str, str]:
    if bench in YLABEL:
        return bench_facts(bench).figure, YLABEL[bench]
    return "time", "time (us)"


def _impl(r: sqlite3.Row) -> str:
    cfg = config_of(r)
    return cfg.mpi if cfg and cfg.mpi else str(r["mpi_name"])


def _buffer(r: sqlite3.Row) -> str:
    cfg = config_of(r)
    return cfg.buffer if cfg else "host"


def _settings(r: sqlite3.Row) -> dict[str, str]:
    cfg = config_of(r)
    return dict(cfg.settings) if cfg else {}


def gpu_impls(rows: Sequence[sqlite3.Row]) -> list[str]:
    """The implementations measured with a GPU path."""
    return sorted({_impl(r) for r in rows if _buffer(r) != "host"})


def tuned_impls(rows: Sequence[sqlite3.Row]) -> list[str]:
    """The implementations measured with runtime settings of their own
    beside their defaults (beyond what every configuration of it ran with)."""
    base = _base_settings(rows)
    return sorted({_impl(r) for r in rows if frozenset(_settings(r).items()) != base[_impl(r)]})


def _same_impl(found: Sequence[findings.Finding]):
    """(finding, faster, slower) for each separated difference between two
    configurations of one implementation."""
    for f in found:
        if f.kind == "faster" and len(f.parties) == 2:
            w, lo = f.parties
            if w.implementation == lo.implementation:
                yield f, w, lo


def _by_how_much(f: findings.Finding) -> tuple[str, str, str]:
    s0, s1 = f.span or (0, 0)
    return f"{human(s0)}-{human(s1)}", ratio_text(f.ratio), ratio_text(f.ratio_lo)


RATIO_HEAD = ("sizes", "median ratio", "at least")


def _against_reference(mine: Sequence[sqlite3.Row], benches: Sequence[str], impl: str,
                       prefix: str) -> list[Figure]:
    """A panel per benchmark of one implementation's configurations, its
    reference line (host memory, its defaults: the bare implementation
    name) first."""
    panels = []
    for b in benches:
        metric, ylabel = _metric(b)
        lines = lines_for([r for r in mine if r["bench"] == b], b, metric, label_np=True)
        lines.sort(key=lambda ln: (ln.label.split(",")[0] != impl, ln.label))
        panels.append(Figure(f"{prefix}-{slug(impl)}-{b}", b, ylabel, lines))
    return panels


APP_BENCHES = ("gpu_matmul", "gpu_jacobi")


def gpu_sharing(store, run_ids: set[int]) -> dict[str, int]:
    """Of the GPU applications' runs of more than one rank: how many put more
    ranks on a node than it has GPUs ("shared"), how many did not ("own"),
    and how many recorded neither (stored before the core said: "unknown")."""
    out = {"shared": 0, "own": 0, "unknown": 0}
    for r in store.runs():
        if r["id"] not in run_ids or r["bench"] not in APP_BENCHES or int(r["np"]) < 2:
            continue
        try:
            path = (json.loads(r["header"] or "{}").get("path") or {})
        except ValueError:
            path = {}
        if path.get("path") == "host":
            continue
        gpus, here = path.get("gpus"), path.get("ranks_on_node")
        out["unknown" if not gpus or not here else "shared" if here > gpus else "own"] += 1
    return out


SHARED_NOTE = ("Ranks shared one GPU in {n} of the applications' runs: their compute phases "
               "and weak scaling measure how the device is shared, not scaling (on an H200, "
               "gpu_jacobi's t(1)/t(2) was 0.11-0.14 without MPS and 0.51-0.54 with it in "
               "three leases; docs/gpu.md).")
UNKNOWN_NOTE = ("Whether the ranks of {n} of the applications' runs shared a GPU was not "
                "recorded (the core says so since 2026-11-27): where they did, compute and weak "
                "scaling measure how the device is shared, not scaling (docs/gpu.md).")


def gpu(page: Page, rows: Sequence[sqlite3.Row], found: Sequence[findings.Finding],
        tick: Tick, sharing: dict[str, int] | None = None) -> list[Item]:
    """The GPU users' paths side by side (the IIT Bombay study's figure 5:
    CUDA-aware against staged): for each implementation, a panel per
    benchmark with one line per path, host memory as the reference; then
    which path beats which over which sizes, from the separated findings."""
    out: list[Item] = []
    for impl in gpu_impls(rows):
        mine = [r for r in rows if _impl(r) == impl]
        benches = [b for b in (*YLABEL, *COLLECTIVES)
                   if any(r["bench"] == b and _buffer(r) != "host" for r in mine)]
        panels = _against_reference(mine, benches, impl, "fig-gpu")
        # time and bandwidth panels side by side: each its own y axis
        out += items(page.grid(Grid(f"fig-gpu-{slug(impl)}", f"{impl}: every buffer path",
                                    panels, sharey=False),
                               f"{impl}: one line per path (host memory the reference), a "
                               "panel per benchmark; bands the 95% interval between runs."))
        tick(f"gpu {impl}")
    if not out:
        return []
    if sharing and sharing.get("shared"):
        out.append(Para(SHARED_NOTE.format(n=sharing["shared"])))
    if sharing and sharing.get("unknown"):
        out.append(Para(UNKNOWN_NOTE.format(n=sharing["unknown"])))
    pairs = [(w.implementation, ", ".join(f.benches or (f.bench,)), w.buffer, lo.buffer,
              *_by_how_much(f)) for f, w, lo in _same_impl(found) if w.buffer != lo.buffer]
    out.append(table(("implementation", "benchmark", "faster path", "than", *RATIO_HEAD), pairs)
               if pairs else
               Para("No path is told apart from another by the between-run statistics."))
    return out


def _base_settings(rows: Sequence[sqlite3.Row]) -> dict[str, frozenset[tuple[str, str]]]:
    """Per implementation, the settings of its configuration that set the
    fewest: its defaults as this machine gives them (the H200's image set
    OMPI_MCA_btl_vader_single_copy_mechanism=none for every job, so every
    configuration there carries it)."""
    out: dict[str, frozenset[tuple[str, str]]] = {}
    for r in rows:
        mine = frozenset(_settings(r).items())
        impl = _impl(r)
        if impl not in out or len(mine) < len(out[impl]):
            out[impl] = mine
    return out


def tuning(page: Page, rows: Sequence[sqlite3.Row], found: Sequence[findings.Finding],
           tick: Tick) -> list[Item]:
    """Configurations run with settings (commscope run --settings, the
    candidates of commscope tune) against the same implementation's
    defaults: a panel per benchmark with the default and each setting, then
    where a setting is faster or slower, from the separated findings."""
    out: list[Item] = []
    for impl in tuned_impls(rows):
        mine = [r for r in rows if _impl(r) == impl]
        benches = sorted({str(r["bench"]) for r in mine if _settings(r)})
        panels = _against_reference(mine, benches, impl, "fig-set")
        out += items(page.grid(Grid(f"fig-set-{slug(impl)}", f"{impl}: settings against its "
                                    "defaults", panels, sharey=False),
                               f"{impl} with its defaults and with each setting measured, a "
                               "panel per benchmark; bands the 95% interval between runs."))
        tick(f"settings {impl}")
    if not out:
        return []
    rows_: list[tuple[object, ...]] = []
    elsewhere = 0
    base = _base_settings(rows)
    for f, w, lo in _same_impl(found):
        common = base.get(w.implementation, frozenset())
        if w.buffer != lo.buffer or (set(w.settings) == common) == (set(lo.settings) == common):
            continue  # against the defaults only: one side set nothing of its own
        tried = lo if set(w.settings) == common else w
        changed = sorted(set(tried.settings) - common)
        benches = f.benches or (f.bench,)
        if all(forced_collective(k) not in (None, *benches) for k, _ in changed):
            elsewhere += 1
            continue
        rows_.append((w.implementation, ", ".join(benches),
                      " ".join(f"{k}={v}" for k, v in changed),
                      "faster with it" if tried is w else "slower with it", *_by_how_much(f)))
    out.append(table(("implementation", "benchmark", "setting", "verdict", *RATIO_HEAD), rows_)
               if rows_ else
               Para("No setting is told apart from the defaults by the between-run "
                    "statistics."))
    if elsewhere:
        out.append(Para(f"{elsewhere} difference(s) of a collective's algorithm setting on "
                        "other benchmarks were left out: such a setting changes nothing "
                        "there, so what separated them is the machine between runs (tune "
                        "pairs each candidate with the defaults in rounds to avoid this).",
                        "muted"))
    return out


# -- the words the page uses ----------------------------------------------------------
# Each term as the analysis means it (analysis/crossover.py, analysis/repeats.py,
# docs/collectives.md), for the place on the page a reader meets it.
STUDY_DOC = "docs/collectives.md"


def crossover_terms(min_change: str) -> list[Term]:
    """The words of the table of collectives against sends."""
    return [
        Term("H, L and =", "term-marks",
             "at one message size, H: the collective is surely slower than what it is set "
             "against; L: surely faster; =: not told apart (the 95% intervals between runs "
             f"overlap, the medians are less than {min_change} apart, or the size is the only "
             "one among its neighbours to be separated: a claim needs two neighbouring sizes, "
             "and the first or last size compared alone is none either)."),
        Term("short and long", "term-short-long",
             "the verdict for short messages is the mark of the first size told apart, the "
             "verdict for long messages that of the last; sizes not told apart decide "
             "neither."),
        Term("changing length", "term-changing-length",
             "where the verdict changes from the short-message side to the long-message side "
             "(the crossover), claimed only when the sizes told apart change mark exactly "
             "once: the first size surely on the long-message side, or the span of sizes "
             "between the two sides where nothing is told apart. Empty where none is "
             "claimed."),
        Term("scenario", "term-scenario",
             "the commodity-cluster study's four cases, short then long: 1: H/H, the "
             "collective is slower at short and long messages; 2: L/L, faster at both; 3: H "
             "then L, slower for short messages and faster for long ones; 4: L then H, faster "
             "for short and slower for long. Mixed: the marks change more than once, and no "
             "crossover is claimed; empty: no size is told apart."),
        Term("hand-written equivalent", "term-hand-written",
             "a benchmark whose name ends in _sends (bcast_sends, reduce_sends, gather_sends, "
             "scatter_sends, alltoall_sends): the collective written by hand from "
             "point-to-point sends (the root sends to, or receives from, every process in "
             "turn; the hand-made alltoall posts every receive, then sends to every process "
             "in a rotated order), computing the same result and validated the same way as "
             "the collective. Only these are ever advised instead of a collective."),
        Term("equivalent sends (k x MPI_Send)", "term-equivalent-sends",
             "the commodity-cluster study's count of the sends a collective stands for (n-1 "
             "for bcast, reduce, gather and scatter, n(n-1) for alltoall, with n processes), "
             "priced from the measured one-way latency: a reference for the collective's "
             "overhead, never advice (a send combines no data, and a sum of latencies is no "
             "measured program)."),
        Term("the commodity-cluster study", "term-study",
             "the study whose comparison of each collective with its equivalent sends, H/L "
             "marks and four scenarios this section follows; commscope's source describes it "
             f"in {STUDY_DOC}, section \"Against the equivalent sends (the commodity-cluster "
             "study)\"."),
    ]


def terms(min_change: str) -> list[Term]:
    """The words the findings and tables use, for the page's glossary (those
    of the crossover table are defined above it: crossover_terms)."""
    out = [
        Term("point", "term-point",
             "one configuration, benchmark and message size: the median over its "
             "repetitions (separate launches of the same job, interleaved with the other "
             "configurations')."),
        Term("±, bands and intervals", "term-interval",
             "two 95% intervals from the spread of the combined runs' medians (Student's t "
             "on their logarithms), never narrower than one run's own interval. The tables' "
             "intervals say where a next run's figure is expected (a prediction interval, "
             "about twice as wide as the other with three runs), reaching the figures of the "
             "point's runs taken in another machine mode, since a next run may be taken in "
             "that state. The bands of the figures, and every comparison, use the interval "
             "of the typical figure, which runs measured together can be compared by. With "
             "three runs a wide interval is what three runs allow, not an error; more "
             "repetitions (--repeat) narrow it. A point combines the runs measured in its "
             "machine mode and, where a clean run exists, without other processes on the "
             "CPU: where that leaves one or two runs, the tables' interval comes from the "
             "spread of its configuration's points of the benchmark near its size, pooled "
             "(holding its own runs), or else from that run's own "
             "interval (which does not hold from one run to the next on a virtual machine) "
             "or the two runs' range; the tables and the export mark such points (¹, ²)."),
        Term("told apart (separated)", "term-separated",
             "two figures whose 95% intervals do not overlap and whose medians differ by "
             f"{min_change} or more; \"not separated\" and \"not told apart\": no claim "
             "either way."),
        Term("floor and host mode", "term-floor",
             "the floor is the time one cache line takes from one core to another, one way, "
             "measured before every record (the core-to-core floor). On a virtual machine the "
             "host moves the virtual CPUs, and the floor jumps between levels that last for "
             "seconds (hyper-threads of one core, other cores, other sockets); each level is "
             f"a host mode (machine mode), floors more than {MODE_GAP:g}x apart being "
             "different ones. A comparison between configurations is drawn only from records "
             "of one mode: across modes it would measure the host, not the MPI."),
        Term("processes", "term-processes",
             "the MPI processes of one job (MPI calls them ranks), one per core unless "
             "marked oversubscribed."),
    ]
    return out


# -- collectives against sends ----------------------------------------------------
def xfig_id(xr: crossover.Row, i: int) -> str:
    return f"fig-x-{slug(xr.config.label())}-{xr.collective}-{slug(xr.reference)}-{i}"


def _crossover_panel(xr: crossover.Row, i: int) -> Figure:
    def line(label: str, s, dashed: bool = False) -> Line:
        sizes = sorted(x for x in s if x > 0)
        return Line(label, tuple(sizes), tuple(s[x].median for x in sizes),
                    tuple(s[x].lo for x in sizes), tuple(s[x].hi for x in sizes),
                    tuple(s[x].result_id or 0 for x in sizes), dashed)

    fig = Figure(xfig_id(xr, i), f"{crossover.mpi_name(xr.collective)} vs {xr.reference}",
                 "time (us)", [line("collective", xr.coll),
                               line("sends (reference)", xr.ref, dashed=True)])
    if xr.verdict.bracket:
        fig.vlines.append((xr.verdict.bracket[1], f"changes at {xr.verdict.changing}"))
    if xr.advises:  # shaded: exactly the runs of sizes the advice says to use the sends at
        fig.spans += [(lo, hi, "") for m, lo, hi in xr.verdict.runs() if m == "H"]
    return fig


def crossover_section(page: Page, xrows: list[crossover.Row], tick: Tick) -> list[Item]:
    """The H/L table, then one set of small multiples per configuration:
    each collective against its sends, a panel each."""
    rows = []
    for xr in xrows:
        v = xr.verdict
        rows.append((xr.config.label(), xr.collective, xr.reference, *v.cells(),
                     "" if v.changing == "-" else v.changing,
                     v.scenario or ("mixed" if v.mixed else ""), xr.text()))
    out: list[Item] = [
        Para("Two references.  Against the commodity-cluster study's count of equivalent "
             "sends (k x MPI_Send, from measured latency) a verdict is the collective's "
             "overhead over bare sends, and no advice: those sends do not do the "
             "collective's job (a send combines no data, and a sum of latencies is no "
             "measured program).  Only the hand-written equivalents (the benchmarks named "
             "*_sends), which compute the same result and are validated like the collective, "
             "are advised instead of it."),
        table(("configuration", "collective", "against", "short", "long",
               "changing length", "scenario",
               "advice (against a hand-written equivalent) or meaning"), rows)]
    by_cfg: dict[str, list[tuple[int, crossover.Row]]] = {}
    for i, xr in enumerate(xrows):
        by_cfg.setdefault(xr.config.label(), []).append((i, xr))
    for label, group in by_cfg.items():
        out += items(page.grid(
            Grid(f"fig-x-{slug(label)}", f"Collectives against sends: {label}",
                 [_crossover_panel(xr, i) for i, xr in group]),
            f"Under {label}: each collective (solid) against the equivalent sends (dashed), "
            "a panel each; the dotted line marks where the verdict changes; shaded, against "
            "a hand-written equivalent, the sizes where the advice is to use it."))
        for _, xr in group:
            tick(f"{xr.collective} vs {xr.reference} ({xr.config.label()})")
    return out


# -- models and the comparison --------------------------------------------------------
def loggp_table(store: Store, run_ids: set[int]) -> Table | None:
    rows = []
    for f in store.fits("loggp"):
        if f["run_id"] not in run_ids:
            continue
        p = json.loads(f["params"])
        rows.append((f"{f['mpi_name']}, {f['np']} processes, {place(f)}",
                     f"{p['L_us']:.3f}", f"{p['o_s_us']:.3f}", f"{p['o_r_us']:.3f}",
                     f"{p['g_us']:.3f}", f"{p['G_us_per_byte'] * 1e3:.4f}"))
    if not rows:
        return None
    return table(("configuration", "L (us)", "o_s (us)", "o_r (us)", "g (us)", "G (ns/B)"),
                 rows, (1, 2, 3, 4, 5))


def comparison(a_label: str, b_label: str, comps: list[compare_mod.Comparison]
               ) -> dict[str, object]:
    # the configuration fields that tell the rows apart, so two
    # implementations' rows at one size are not two unnamed rows
    return {"a": a_label, "b": b_label, "table": table(
        ("benchmark", "configuration", "processes", "size", "A (us)", "B (us)", "B/A", "verdict",
         "test"),
        [(c.bench, " ".join(f"{k}={v}" for k, v in c.fields().items()), c.np, human(c.size),
          f"{c.a_median:.3f}", f"{c.b_median:.3f}", f"{c.ratio:.3f}", c.verdict, c.test)
         for c in comps], (2, 4, 5, 6))}


def diagnosis_section(d) -> dict[str, object] | None:
    """Everything the diagnosis established, each conclusion with what
    established it and what was tried; the gaps that did not hold when
    measured again; the settings files as checked; what it did not reach."""
    if d is None:
        return None
    from ..analysis import conclude

    cs = conclude.conclusions(d, None)
    checks = []
    for fc in d.checks:
        checks.append(f"{fc.impl}: {', '.join(f'{k}={v}' for k, v in fc.settings)}: "
                      + conclude.file_text(fc))
    return {"status": d.status, "spent": f"{d.spent_s:.0f} s of {d.budget_s:.0f} s",
            "rounds": d.rounds.last_round, "runs": len(d.rounds.run_ids),
            "items": [{"id": f"diagnosis-{i}", "kind": c.kind, "headline": c.headline,
                       "details": list(c.details)} for i, c in enumerate(cs, 1)],
            "unconfirmed": [o.gap.text + " " + conclude.where(o) for o in
                            conclude.not_confirmed(d)],
            "checks": checks, "notes": list(d.notes)}
