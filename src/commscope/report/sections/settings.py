"""Runtime settings against the library's defaults, call by call."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...advise.selection import forced_collective
from ...analysis import findings
from ..figures import Grid
from ..page import Item, Page, Para, items, table
from .common import Tick, slug
from .reference import (
    RATIO_HEAD,
    against_reference,
    by_how_much,
    impl_of,
    same_impl,
    settings_of,
)


def tuned_impls(rows: Sequence[sqlite3.Row]) -> list[str]:
    """The implementations measured with runtime settings of their own
    beside their defaults (beyond what every configuration of it ran with)."""
    base = _base_settings(rows)
    return sorted({impl_of(r) for r in rows
                   if frozenset(settings_of(r).items()) != base[impl_of(r)]})


def _base_settings(rows: Sequence[sqlite3.Row]) -> dict[str, frozenset[tuple[str, str]]]:
    """Per implementation, the settings of its configuration that set the
    fewest: its defaults as this machine gives them (the H200's image set
    OMPI_MCA_btl_vader_single_copy_mechanism=none for every job, so every
    configuration there carries it)."""
    out: dict[str, frozenset[tuple[str, str]]] = {}
    for r in rows:
        mine = frozenset(settings_of(r).items())
        impl = impl_of(r)
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
        mine = [r for r in rows if impl_of(r) == impl]
        benches = sorted({str(r["bench"]) for r in mine if settings_of(r)})
        panels = against_reference(mine, benches, impl, "fig-set")
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
    for f, w, lo in same_impl(found):
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
                      "faster with it" if tried is w else "slower with it", *by_how_much(f)))
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
