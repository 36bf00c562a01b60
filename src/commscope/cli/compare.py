"""commscope compare and report: two selections of stored runs set side by
side, and the HTML report."""

from __future__ import annotations

import argparse
import json

from ..analysis.repeats import aggregate
from ..errors import CommscopeError
from ..measure.runner import (
    Progress,
)
from ..store import outputs
from ..store.db import Store
from .analyze import matching
from .common import command

SELECT_KEYS = ("run", "sweep", "mpi", "cluster")


def selected(store: Store, sel: str) -> list:
    """The stored records of a selection, one per repetition:
    run=1,2 | sweep=3 | mpi=openmpi | cluster=local; none is an error."""
    key, _, value = sel.partition("=")
    values = [v.strip() for v in value.split(",") if v.strip()]
    if key not in SELECT_KEYS or not values:
        raise CommscopeError(f"bad selection '{sel}' (use run=ID[,ID], sweep=ID, mpi=NAME or "
                             "cluster=NAME)")
    if key in ("run", "sweep"):
        try:
            ids = [int(v) for v in values]
        except ValueError:
            raise CommscopeError(f"{key} ids must be integers: '{value}'") from None
        if any(not 0 < i < 1 << 63 for i in ids):  # SQLite's integers, and ids start at 1
            raise CommscopeError(f"{key} ids are positive and below 2^63: '{value}'")
        if key == "sweep":
            marks = ",".join("?" * len(ids))
            ids = [r[0] for r in store.db.execute(
                f"SELECT id FROM runs WHERE sweep_id IN ({marks})", ids).fetchall()]
        rows = store.result_rows(run_ids=ids) if ids else []
    else:
        col = "mpi_name" if key == "mpi" else "cluster"
        rows = [r for r in store.result_rows() if r[col] in values]
    if not rows:
        raise CommscopeError(f"no stored results for {sel}")
    return rows


def select_rows(store: Store, sel: str) -> list:
    """A set of results, one row per configuration, benchmark and size over
    its repetitions (analysis/repeats.py), those of the side's dominant
    machine mode: repetitions across the host's modes measure the host."""
    return aggregate(selected(store, sel), mode="dominant")


@command("compare")
def cmd_compare(a: argparse.Namespace) -> int:
    """Exit 1 only for a regression beyond the factor and its interval,
    under the rule the repetitions allow (analysis/compare.py)."""
    from ..analysis import compare as cmp

    store = Store(a.db, create=False)
    raw_a, raw_b = selected(store, a.a), selected(store, a.b)
    runs = {int(r["run_id"]) for r in raw_a}
    if runs == {int(r["run_id"]) for r in raw_b}:
        raise CommscopeError(f"{a.a} and {a.b} select the same runs "
                             f"({', '.join(map(str, sorted(runs)))}): compare two different sets")
    # each side over its dominant host mode, as select_rows (report --compare-a) has it
    comps = cmp.compare_rows(aggregate(raw_a, mode="dominant"), aggregate(raw_b, mode="dominant"),
                             a.factor)
    if not comps:
        raise CommscopeError(f"{a.a} and {a.b} have no benchmark, process count and size "
                             "in common")
    if a.format == "json":
        print(json.dumps(cmp.to_json(comps, a.a, a.b, a.factor), indent=1))
    else:
        print(cmp.table(comps, a.a, a.b), end="")
    return cmp.exit_status(comps)


@command("report")
def cmd_report(a: argparse.Namespace) -> int:
    from ..analysis import compare as cmp
    from ..report.html import build

    out = outputs.target(a.out, "report --out", a.db, folder=True)
    store, rows = matching(a)
    comparison = None
    if bool(a.compare_a) != bool(a.compare_b):
        raise CommscopeError("--compare-a and --compare-b go together")
    if a.compare_a:
        comparison = (a.compare_a, a.compare_b, cmp.compare_rows(
            select_rows(store, a.compare_a), select_rows(store, a.compare_b), a.factor))
    index = build(store, out, rows, comparison=comparison, progress=Progress(0, enabled=True))
    print(f"report written to {index}")
    return 0
