"""Models and comparisons: the LogGP table, two sets compared, and the
diagnosis in full."""

from __future__ import annotations

import json

from ...analysis import compare as compare_mod
from ...store.config import place
from ...store.db import Store
from ...store.sizes import human
from ..page import Table, table


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
    from ...analysis import conclude

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
