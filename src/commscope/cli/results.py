"""commscope show and export: the stored records as tables, CSV or JSON."""

from __future__ import annotations

import argparse
import sys

from ..analysis.repeats import aggregate
from ..errors import CommscopeError
from ..report.export import export
from ..report.points import export_points
from ..report.tables import run_table, tables
from ..store import outputs
from ..store.db import Store
from . import screen
from .common import command, ints, listed, unknown_mode, unknown_names


def picked(a: argparse.Namespace, store: Store, narrowed: bool = False) -> list:
    """Every stored record (of the newest complete sweeps, without --all)
    that --bench, --mpi and --np pick; with narrowed, also those measured
    again in their sweep at a common window."""
    rows = store.result_rows(latest=not a.all, narrowed=narrowed)
    benches, mpis, nps = set(listed(a.bench)), set(listed(a.mpi)), set(ints(a.np, "--np"))
    unknown_names(store, rows, listed(a.bench), listed(a.mpi), a.db)  # a typo is said as one
    out = [r for r in rows if (not benches or r["bench"] in benches)
           and (not mpis or r["mpi_name"] in mpis) and (not nps or r["np"] in nps)]
    unknown_mode(rows, out, getattr(a, "mode", None))
    return out


def aggregate_keep(rows: list, mode: str) -> list:
    """The records of one machine mode (records without a floor stay)."""
    from ..analysis.repeats import detect_modes, mode_of, pick_mode

    modes = detect_modes(r["floor_ns"] for r in rows)
    want = pick_mode(modes, mode)
    if want is None:
        return rows
    return [r for r in rows if (m := mode_of(r["floor_ns"], modes)) is None or m.label == want]


def filtered(a: argparse.Namespace, store: Store, mode: str = "dominant") -> list:
    """The records the filters pick, one row per configuration, benchmark
    and size, combined over its repetitions (analysis/repeats.py); `mode`
    unless --mode says otherwise."""
    rows = picked(a, store)
    want = getattr(a, "mode", None) or mode
    return aggregate(rows, mode=None if want == "all" else want)


@command("show")
def cmd_show(a: argparse.Namespace) -> int:
    store = Store(a.db, create=False)
    if a.profile:
        return _show_profile(store, a.profile, a.db)
    if a.runs:
        print(run_table(store.runs()), end="")
        return 0
    rows = filtered(a, store)
    if not rows:
        raise CommscopeError(f"no stored results match in {a.db}")
    print(tables(rows, per_node=a.per_node, busbw=a.busbw), end="")
    for line in screen.beside(store, rows):
        print(line)
    return 0


def profile_rows(store: Store, db: str) -> list:
    rows = store.profiles()
    if not rows:
        raise CommscopeError(f"no profile stored in {db} (commscope profile -- PROGRAM)")
    return rows


def profile_row(store: Store, which: str, db: str, listing: bool = False):
    """The stored profile `which` names: its id, or 'last'."""
    rows = profile_rows(store, db)
    if which == "last":
        return rows[-1]
    try:
        return next(r for r in rows if r["id"] == int(which))
    except (ValueError, StopIteration):
        ids = str(rows[0]["id"]) if len(rows) == 1 else f"{rows[0]['id']} to {rows[-1]['id']}"
        raise CommscopeError(f"--profile {which!r}: no such profile in {db} (its ids: {ids}; "
                             + ("'last' or 'list')" if listing else "or 'last')")) from None


def _show_profile(store: Store, which: str, db: str) -> int:
    from ..analysis.profile import named
    from .profile import stored_text

    if which == "list":
        for r in profile_rows(store, db):
            batch = f" verify batch {r['batch']} round {r['round'] + 1}" if r["batch"] else ""
            print(f"{r['id']:>4}  {r['started_at']}  {r['status']:<11} {r['mpi_name']:<10} "
                  f"np={r['np']:<3} {named(r)}"[:150] + batch)
        return 0
    print(stored_text(profile_row(store, which, db, listing=True)), end="")
    return 0


@command("export")
def cmd_export(a: argparse.Namespace) -> int:
    """Every record of every repetition, with its configuration, repetition
    and floor: the data itself, for a user's own analysis (the --mode filter
    applies, all modes by default).  With --all, also the records measured
    again at a common window (narrowed_in: the run that did).  With
    --points, the figures show prints instead (its machine mode: the
    dominant one unless --mode says otherwise), and the JSON their
    provenance (report/points.py, docs/export.md)."""
    out = None if a.output == "-" else outputs.target(a.output, "export --output", a.db)
    store = Store(a.db, create=False)
    if a.points:
        text = export_points(store, picked(a, store), filtered(a, store), a.format)
        if out is not None:
            outputs.write_text(out, text)
        else:
            sys.stdout.write(text)
        return 0
    rows = picked(a, store, narrowed=a.all)
    if a.mode and a.mode != "all":
        keep = {id(r) for r in aggregate_keep(rows, a.mode)}
        rows = [r for r in rows if id(r) in keep]
    text = export(rows, a.format)
    if out is not None:
        outputs.write_text(out, text)
    else:
        sys.stdout.write(text)
    return 0
