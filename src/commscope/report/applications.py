"""The report's applications section: the IIT Bombay study's figures of
each application against its problem size N (its size is no message size,
so nothing here is shared with the message-size sections), Jacobi's scaling
and overlap, the phases' table, and each communication phase against its
prediction from the micro-benchmarks."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from ..analysis import apps
from ..analysis import predict as predict_mod
from ..store.config import place, what
from .figures import Figure, Grid, line_of, phase_lines
from .page import Heading, Item, Page, Pre, Table, items, table
from .sections import Tick
from .tables import overlap_table, scaling_lines, where


def applications(page: Page, rows: Sequence[sqlite3.Row], series, tick: Tick,
                 probe: Mapping[str, object] | None = None) -> list[Item]:
    """The IIT Bombay study's figures (total, broadcast of B, sending A,
    gathering C against N) as small multiples, a panel per process count;
    1D against SUMMA, Jacobi's scaling and its variants, and each
    communication phase against its prediction."""
    out: list[Item] = []
    benches = sorted({str(r["bench"]) for r in rows})
    for app in benches:
        mine = [r for r in rows if r["bench"] == app]
        nps = sorted({int(r["np"]) for r in mine})
        over = {n for n in nps if any(r["oversubscribed"] for r in mine if r["np"] == n)}
        for ph in ["total", *apps.phases(mine[0])]:
            panels = [Figure(f"fig-{app}-{n}-{ph}",
                             f"{n} process{'es' if n > 1 else ''}"
                             + (" (oversubscribed)" if n in over else ""),
                             "time (us)", phase_lines(mine, [app], n, ph), xlabel="N",
                             xbytes=False) for n in nps]
            note = " Oversubscribed panels are correctness only." if over else ""
            out += items(page.grid(Grid(f"fig-{app}-{ph}", f"{app}: {ph} against N", panels),
                                   f"{app} {ph} against N, a panel per process count on "
                                   f"the same axes.{note}"))
        tick(app)
    if {"matmul", "summa"} <= set(benches):
        out.append(Heading("Row blocks (1D) against SUMMA (2D)"))
        for np_ in sorted({int(r["np"]) for r in rows if r["bench"] == "summa"}):
            lines = phase_lines(rows, ["matmul", "summa"], np_, "total")
            if len({ln.label.split()[0] for ln in lines}) == 2:
                out += items(page.figure(
                    Figure(f"fig-1d-summa-{np_}", f"matmul against summa, {np_} processes",
                           "time per product (us)", lines, xlabel="N", xbytes=False),
                    f"The same product by row blocks and by SUMMA at {np_} processes."))
    scs = apps.scaling(rows, where)
    if scs:
        out.append(Heading("Jacobi scaling"))
        eff = {f"{sc.label}, N={sc.n}{' weak' if sc.weak else ''} {sc.rest}":
               [(p.np, p.efficiency, *(p.eff_range or (p.efficiency, p.efficiency)),
                 p.record_id) for p in sc.points if p.efficiency is not None]
               for sc in scs}
        lines = [line_of(k, v) for k, v in sorted(eff.items()) if len(v) > 1]
        if lines:
            out += items(page.figure(
                Figure("fig-jacobi-efficiency", "Jacobi parallel efficiency",
                       "efficiency (1 = perfect)", lines, xlabel="processes", xbytes=False,
                       logy=False),
                "Strong: T1 / (p Tp) at the same N; weak: T1 / Tp at the same N per process; "
                "against the one-process run of the same configuration; the band from the two "
                "times' intervals."))
        out.append(Pre("\n".join(scaling_lines(scs) + overlap_table(rows))))
    out += [Heading("Phases (slowest process's median, ms)"), phase_table(rows)]
    out += _predictions(page, predict_mod.predict(rows, series, predict_mod.llc_of(probe)),
                        line_of)
    return out


def _predictions(page: Page, preds, line_of) -> list[Item]:
    if not any(p.predicted_us for p in preds):
        return []
    by: dict[tuple[str, str], dict[str, list]] = {}
    for p in preds:
        if p.predicted_us:
            d = by.setdefault((p.bench, p.phase), {})
            d.setdefault(f"{p.config.label()} measured", []).append(
                (p.size, p.measured_us, p.measured_us, p.measured_us, 0))
            d.setdefault(f"{p.config.label()} predicted", []).append(
                (p.size, p.predicted_us, p.predicted_us / (1 + p.tolerance),
                 p.predicted_us * (1 + p.tolerance), 0))
    out: list[Item] = [Heading("Predicted against measured")]
    for (bench, phase), d in sorted(by.items()):
        lines = [line_of(k, v, dashed=k.endswith("predicted")) for k, v in sorted(d.items())]
        out += items(page.figure(
            Figure(f"fig-predict-{bench}-{phase}", f"{bench} {phase}: predicted and measured",
                   "time (us)", lines, xlabel="N", xbytes=False),
            f"{bench} {phase}: measured (slowest process) and predicted from the "
            "micro-benchmarks (dashed, band: the models' tolerance)."))
    out.append(table(
        ("configuration", "bench", "N", "phase", "measured ms (slowest process)",
         "least-waiting process ms", "predicted ms", "predicted / measured", "verdict", "note"),
        [(p.config.label(), p.bench, p.size, p.phase, f"{p.measured_us / 1e3:.3f}",
          f"{(p.least_us or 0) / 1e3:.3f}",
          f"{p.predicted_us / 1e3:.3f}" if p.predicted_us else "-",
          f"{p.ratio:.2f}" if p.ratio else "-", p.verdict, p.note) for p in preds],
        (2, 4, 5, 6, 7)))
    return out


def phase_table(rows: Sequence[sqlite3.Row]) -> Table:
    """Each application record's phases: the slowest rank's median, ms."""
    out = []
    for r in sorted(rows, key=lambda r: (r["bench"], what(r), r["np"], r["size_bytes"])):
        ph = apps.phases(r)
        moved = " · ".join(f"{k} {apps.bytes_text(v)}" for k, v in apps.phase_bytes(r).items()
                           if any(v))
        m = apps.memory_rate(r)
        out.append((r["bench"], f"{what(r)}, {r['np']} processes ({place(r)})", r["size_bytes"],
                    " · ".join(f"{k} {float(v['max_us']) / 1e3:.3f}"  # type: ignore[arg-type]
                               for k, v in ph.items()),
                    f"{r['median_us'] / 1e3:.3f}" if r["median_us"] else "-",
                    moved or "-", m.text() if m else "-"))
    return table(("bench", "configuration", "N", "phases", "total ms",
                  "MB moved per process (busiest/least busy)", "memory rate"), out, (2, 4))

