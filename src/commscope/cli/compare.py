"""commscope compare and report: two selections of stored runs set side by
side, and the HTML report."""

from __future__ import annotations

import argparse
import json

from ..analysis.repeats import aggregate, detect_modes, pick_mode
from ..errors import CommscopeError
from ..measure.progress import (
    Progress,
)
from ..store import outputs
from ..store.db import Store
from .analyze import matching
from .common import command


def sides(raw_a: list, raw_b: list) -> tuple[list, list]:
    """Two sets of results, one row per configuration, benchmark and size
    over its repetitions (analysis/repeats.py), both from one machine mode:
    the mode most of the two sets' records together were measured in, where
    one holds more than half of them.  Each side over its own dominant mode
    set a run taken mostly in the host's slow state against one taken mostly
    in its fast state, and of an A/A comparison of two such default runs
    left 660 of 814 pairs uncompared (host modes differ); one mode for both,
    106.  A point a side measured only in
    other modes keeps its runs, marked, and is not compared (compare's
    "host modes differ"): a change that moves the floor (the ranks placed on
    other cores) is said so, not judged."""
    modes = detect_modes(r["floor_ns"] for r in [*raw_a, *raw_b])
    want = pick_mode(modes, "dominant")
    if want is None:  # no mode holds most of them: each side its own, pairs across modes
        # not compared (rather than medians over mixed states)
        return aggregate(raw_a, mode="dominant"), aggregate(raw_b, mode="dominant")
    return aggregate(raw_a, mode=want, modes=modes), aggregate(raw_b, mode=want, modes=modes)


@command("compare")
def cmd_compare(a: argparse.Namespace) -> int:
    """Exit 1 only for a regression beyond the factor and its interval,
    under the rule the repetitions allow (analysis/compare.py)."""
    from ..analysis import compare as cmp

    store = Store(a.db, create=False)
    raw_a, raw_b = store.selection(a.a), store.selection(a.b)
    runs = {int(r["run_id"]) for r in raw_a}
    if runs == {int(r["run_id"]) for r in raw_b}:
        raise CommscopeError(f"{a.a} and {a.b} select the same runs "
                             f"({', '.join(map(str, sorted(runs)))}): compare two different sets")
    comps = cmp.compare_rows(*sides(raw_a, raw_b), a.factor)
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

    out = outputs.target(a.out, "report --out", a.db, folder=True,
                         writes=("index.html", "figures.json"))
    try:
        store, rows = matching(a)
    except CommscopeError:
        # a store of profiled programs alone (commscope profile) still has a report
        store = Store(a.db, create=False)
        if not store.profiles():
            raise
        rows = []
    comparison = None
    if bool(a.compare_a) != bool(a.compare_b):
        raise CommscopeError("--compare-a and --compare-b go together")
    if a.compare_a:
        comparison = (a.compare_a, a.compare_b, cmp.compare_rows(
            *sides(store.selection(a.compare_a), store.selection(a.compare_b)), a.factor))
    progress = Progress(0, enabled=True, name="report", each=False, unit="figure")
    try:
        index = build(store, out, rows, comparison=comparison, progress=progress)
    except OSError as exc:
        raise CommscopeError(f"cannot write the report in {out}: "
                             f"{exc.strerror or exc}") from exc
    progress.close()
    print(f"report written to {index}")
    return 0
