"""Collectives against sends: each collective against the point-to-point
sends that do its job, size by size."""

from __future__ import annotations

from ...analysis import crossover
from ..figures import Figure, Grid, Line
from ..page import Item, Page, Para, items, table
from .common import Tick, slug


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


