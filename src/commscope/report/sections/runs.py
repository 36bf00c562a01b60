"""How the runs were made (launch, binding, the library's own choices, the
sampling) and which failed, with why."""

from __future__ import annotations

import json
import signal
import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from ...store.config import config_of, place
from ...store.core_facts import bench as bench_facts
from ...store.db import Store
from ..page import Table, fold, table
from ..tables import reading_order
from .behind import Behind


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
        st = store.sampling_of(ids)
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


