"""The static HTML report: one folder, index.html and SVG figures, no
script, every label from the user or the machine escaped."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from .. import __version__
from .. import probe as probe_mod
from ..analysis import apps, crossover, findings, hockney
from ..analysis import compare as compare_mod
from ..analysis.series import collect
from ..config import what
from ..show import place
from ..sizes import human
from ..store import Store
from .figures import Figure, Line, lines_for, render_svg

P2P = (("latency", "time", "one-way latency (us)", "Latency (ping-pong, round trip / 2)"),
       ("bw", "bandwidth", "bandwidth (MB/s)", "Unidirectional bandwidth"),
       ("bibw", "bandwidth", "bandwidth (MB/s, both ways)", "Bidirectional bandwidth"),
       ("roundtrip", "rate", "round trips per second", "Round-trip rate"),
       ("sendloop", "time", "time per send (us)", "Send loop: time per send"))
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "alltoall",
               "allgather", "reduce_scatter")

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;
color:#1a1a1a;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:2px solid #0072B2;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.86rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef4fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1rem 0;display:inline-block;vertical-align:top}
figure img{width:680px;max-width:100%;border:1px solid #ddd}
figcaption{font-size:.82rem;color:#444;max-width:680px}
.finding{margin:.35rem 0}.kind{font-size:.75rem;background:#eee;padding:.05rem .3rem;
border-radius:3px;margin-right:.3rem}.bad{color:#b00020}.muted{color:#666;font-size:.85rem}
"""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class Report:
    def __init__(self, out_dir: Path) -> None:
        self.out = out_dir
        (out_dir / "fig").mkdir(parents=True, exist_ok=True)
        self.parts: list[str] = []
        self.figures: list[Figure] = []

    def add(self, html: str) -> None:
        self.parts.append(html)

    def figure(self, fig: Figure, caption: str) -> None:
        if not fig.lines:
            return
        self.figures.append(fig)
        (self.out / "fig" / f"{fig.fig_id}.svg").write_text(render_svg(fig))
        self.add(f'<figure id="{escape(fig.fig_id)}"><img src="fig/{escape(fig.fig_id)}.svg" '
                 f'alt="{escape(fig.title)}"><figcaption>{escape(caption)}</figcaption></figure>')


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], num: set[int] = frozenset()
           ) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(
            f'<td{" class=num" if i in num else ""}>{escape(str(v))}</td>'
            for i, v in enumerate(r)) + "</tr>")
    return "".join(out) + "</table>"


def _provenance(store: Store, run_ids: set[int]) -> str:
    rows = []
    for r in store.runs():
        if r["id"] not in run_ids:
            continue
        ver = (r["mpi_version"] or "").splitlines()
        rows.append((r["id"], r["status"], r["mpi_name"], ver[0] if ver else "", r["bench"],
                     r["np"], place(r) + (" (oversubscribed)" if r["oversubscribed"] else ""),
                     r["hostname"], r["cpu_model"], r["n_cores"], r["kernel"],
                     f"{r['commscope_version']} {r['git_rev'] or ''}".strip(), r["started_at"]))
    return _table(("run", "status", "MPI", "version", "benchmark", "ranks", "cluster", "host",
                   "CPU", "cores", "kernel", "commscope", "started"), rows, {0, 5, 9})


def _first_line(r: sqlite3.Row) -> str:
    return (r["stderr_tail"] or "").strip().splitlines()[0][:160] if r["stderr_tail"] else ""


def _failures(store: Store, run_ids: set[int]) -> str:
    """Jobs that failed, and apart from them the GPU paths this machine
    could not run (skipped, with the driver's reason: not a failure).  The
    jobs are those of the sweeps the report's records came from, so that a
    job that stored no record (a skip, a crash at start) is listed too."""
    runs = store.runs()
    sweeps = {r["sweep_id"] for r in runs if r["id"] in run_ids and r["sweep_id"] is not None}
    mine = [r for r in runs if (r["id"] in run_ids or r["sweep_id"] in sweeps)
            and r["status"] != "ok"]
    bad = [r for r in mine if r["status"] != "skipped"]
    skipped = [r for r in mine if r["status"] == "skipped"]
    out = ""
    if skipped:
        rows = [(r["id"], r["mpi_name"], json.loads(r["config"] or "{}").get("buffer", ""),
                 r["bench"], _first_line(r)) for r in skipped]
        out += ("<p>Paths this machine could not run were skipped (nothing measured):</p>"
                + _table(("run", "MPI", "path", "benchmark", "reason"), rows, {0}))
    if not bad:
        return out + ("<p>Every job that ran finished cleanly and every moved byte was "
                      "validated.</p>")
    rows = [(r["id"], r["status"], r["mpi_name"], r["bench"], r["np"], _first_line(r))
            for r in bad]
    return out + ('<p class="bad">Some jobs failed; what they measured before failing is '
                  'kept.</p>'
                  + _table(("run", "status", "MPI", "benchmark", "ranks", "first line of stderr"),
                           rows, {0, 4}))


LEAD_FINDINGS = 8  # the findings shown before any fold: the ones that save most


def _uncertainty_note(rows: Sequence[sqlite3.Row]) -> str:
    """What the bands and intervals of this report mean, and which machine
    mode its comparisons come from."""
    reps = sorted({int(r["n_reps"]) for r in rows if "n_reps" in r.keys()})
    text = ("Bands and intervals are the 95% interval between repeated runs "
            f"({'/'.join(map(str, reps))} repetitions, interleaved)" if reps and reps[-1] > 1
            else "Every configuration was measured once: bands and intervals are that run's "
                 "own confidence interval, which does not hold from one run to the next on "
                 "a VM (run with --repeat 3)")
    dropped = max((int(r["mode_dropped"]) for r in rows
                   if "mode_dropped" in r.keys() and r["mode_dropped"]), default=0)
    if dropped:
        text += (f"; {dropped} record(s) measured in another machine mode (core-to-core "
                 "cache-line floor) were left out, so that every comparison comes from one "
                 "mode")
    return f"<p class=muted>{escape(text)}.</p>"


def build(store: Store, out_dir: Path, rows: Sequence[sqlite3.Row], *,
          comparison: tuple[str, str, list[compare_mod.Comparison]] | None = None,
          progress=None) -> Path:
    rep = Report(out_dir)
    run_ids = {int(r["run_id"]) for r in rows}
    series = collect(rows)
    benches = {r["bench"] for r in rows}
    flagged = sum(1 for r in rows if r["flagged"])
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rep.add(f"<h1>commscope report</h1><p class=muted>{escape(now)} · commscope "
            f"{escape(__version__)} · store {escape(str(store.path))} · {len(run_ids)} runs, "
            f"{len(rows)} records"
            + (f", {flagged} measured while the machine was busy (marked in the tables of "
               "<code>commscope show</code>)" if flagged else "") + "</p>")

    prow = store.probe_for(run_ids)
    if prow is not None:
        pdata = json.loads(prow["data"])
        over = probe_mod.beside_latency(rows, pdata)
        rep.add("<h2 id=machine>This machine, without MPI</h2><p class=muted>The probe taken "
                + ("with these runs" if prow["sweep_id"] is not None else "on its own")
                + f" ({escape(str(prow['taken_at']))}): what the hardware and kernel allow "
                "before any library adds its cost.</p><pre>" + escape(probe_mod.text(pdata))
                + "</pre>" + "".join(f"<p>{escape(x)}</p>" for x in over))

    found = findings.all_findings(series)
    xrows = crossover.analyze(series)
    steps = [b for b, *_ in P2P if b in benches] + [c for c in COLLECTIVES if c in benches]
    steps += sorted({str(r["bench"]) for r in rows if r["phases"]})
    steps += [f"{xr.collective} vs {xr.reference} ({xr.config.label()})" for xr in xrows]
    if progress:
        progress.total = len(steps)

    def tick(label: str) -> None:
        if progress:
            progress.start(label)
            progress.end(label, "drawn")

    # Findings first: what a reader wants, those that save most first, each
    # linked to its figure; the rest folded away.
    rep.add("<h2 id=findings>Findings and recommendations</h2>")
    rep.add(_uncertainty_note(rows))
    if not found:
        rep.add("<p>No statistically separated difference to report.</p>")
    lead = [f for f in found if f.kind != "faster"]

    def para(f: findings.Finding) -> str:
        anchor = _finding_anchor(f, xrows)
        recs = ", ".join(str(x) for x in f.records[:20]) + ("…" if len(f.records) > 20 else "")
        save = f" (saves ~{100 * f.gain:.0f}%)" if f.gain >= 0.02 else ""
        return (f'<p class=finding><span class=kind>{escape(f.kind)}</span>{escape(save)} '
                f'{escape(f.text)} <a href="#{escape(anchor)}">figure</a> '
                f'<span class=muted>(records {escape(recs)})</span></p>')

    rep.add("".join(para(f) for f in lead[:LEAD_FINDINGS]))
    if len(lead) > LEAD_FINDINGS:
        rep.add(f"<details><summary>{len(lead) - LEAD_FINDINGS} more findings, each saving "
                "less</summary>" + "".join(para(f) for f in lead[LEAD_FINDINGS:])
                + "</details>")
    faster = [f for f in found if f.kind == "faster"]
    if faster:
        rep.add("<h3>Which implementation is faster, where</h3><p>Size ranges where one "
                "implementation's median is lower by 5% or more with separated 95% confidence "
                "intervals.</p>")
        rep.add("<table><tr><th>finding</th><th>figure</th><th>records</th></tr>" + "".join(
            f"<tr><td>{escape(f.text)}</td><td><a href=\"#{escape(_finding_anchor(f, xrows))}"
            f"\">figure</a></td><td class=muted>{escape(', '.join(map(str, f.records[:8])))}"
            f"{'…' if len(f.records) > 8 else ''}</td></tr>" for f in faster) + "</table>")

    rep.add("<h2 id=provenance>Runs</h2>" + _provenance(store, run_ids))
    rep.add("<h2 id=failures>Failures</h2>" + _failures(store, run_ids))

    if any(b in benches for b, *_ in P2P):
        rep.add("<h2 id=p2p>Point-to-point</h2><p>Lines are medians over repetitions; "
                "bands are the 95% interval between runs (one run's own CI where there was "
                "one run).</p>")
        for bench, metric, ylabel, title in P2P:
            if bench not in benches:
                continue
            rep.figure(Figure(f"fig-{bench}", title, ylabel, lines_for(rows, bench, metric)),
                       f"{title}: one line per implementation and cluster.")
            tick(bench)
        rep.add(_hockney_table(series))

    colls = [c for c in COLLECTIVES if c in benches]
    if colls:
        rep.add("<h2 id=collectives>Collectives</h2><p>Time per call: each iteration starts "
                "after a barrier and lasts until the slowest rank returns.</p>")
        for c in colls:
            rep.figure(Figure(f"fig-{c}", f"MPI_{c.capitalize()}", "time (us)",
                              lines_for(rows, c, "time", label_np=True)),
                       f"{c}: one line per implementation, process count and cluster.")
            tick(c)
    if any(r["phases"] for r in rows):
        _applications(rep, [r for r in rows if r["phases"]], series, tick)
    if xrows:
        rep.add("<h2 id=crossover>Collectives against sends (the commodity-cluster study)</h2>"
                "<p>H: the collective is slower, L: faster, =: not told apart (95% CIs "
                "overlap or less than 5% apart). The dotted line marks the changing length."
                "</p>")
        rep.add(_crossover_table(xrows))
        for i, xr in enumerate(xrows):
            rep.figure(_crossover_figure(xr, i), f"{xr.collective} against "
                       f"{xr.reference} under {xr.config.label()}: "
                       f"{xr.verdict.advice(xr.collective, xr.reference)}.")
            tick(f"{xr.collective} vs {xr.reference} ({xr.config.label()})")
    rep.add(_loggp_table(store, run_ids))
    if comparison:
        a_label, b_label, comps = comparison
        rep.add(f"<h2 id=compare>Comparison</h2><p>A = {escape(a_label)}, B = "
                f"{escape(b_label)}; ratio B/A of times.</p>")
        rep.add(_table(("benchmark", "ranks", "size", "A (us)", "B (us)", "B/A", "verdict",
                        "test"),
                       [(c.bench, c.np, human(c.size), f"{c.a_median:.3f}", f"{c.b_median:.3f}",
                         f"{c.ratio:.3f}", c.verdict, c.test) for c in comps], {1, 3, 4, 5}))
    page = ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width'>"
            f"<title>commscope report</title><style>{CSS}</style></head><body>"
            + "\n".join(rep.parts) + "</body></html>\n")
    index = out_dir / "index.html"
    index.write_text(page)
    (out_dir / "figures.json").write_text(json.dumps(
        [{"id": f.fig_id, "title": f.title, "lines": [ln.__dict__ for ln in f.lines]}
         for f in rep.figures]))
    return index


def _applications(rep: Report, rows: Sequence[sqlite3.Row], series, tick) -> None:
    """The applications: the IIT Bombay study's figures (total, broadcast of
    B, sending A, gathering C against N, one panel per process count),
    1D against SUMMA, Jacobi's scaling and its variants, and each
    communication phase against its prediction."""
    from ..analysis import predict as predict_mod
    from ..show import overlap_table, scaling_lines, where
    from .figures import line_of, phase_lines

    rep.add("<h2 id=applications>Applications</h2><p>Time per sample (one product, or "
            "<code>iters</code> Jacobi sweeps) against the problem size N, one panel per "
            "process count and one line per implementation, parameters and cluster; each "
            "phase is the slowest rank's median, the total carries the between-run interval. "
            "Then where the time goes, Jacobi's scaling, and each communication phase against "
            "the prediction of the same configuration's micro-benchmarks.</p>")
    benches = sorted({str(r["bench"]) for r in rows})
    for app in benches:
        mine = [r for r in rows if r["bench"] == app]
        names = list(apps.phases(mine[0]))
        for np_ in sorted({int(r["np"]) for r in mine}):
            over = " (oversubscribed: correctness only)" if any(
                r["oversubscribed"] for r in mine if r["np"] == np_) else ""
            for ph in ["total", *names]:
                lines = phase_lines(mine, [app], np_, ph)
                if not lines:
                    continue
                rep.figure(Figure(f"fig-{app}-{np_}-{ph}", f"{app}, {np_} ranks: {ph}",
                                  "time (us)", lines, xlabel="N", xbytes=False),
                           f"{app} {ph} against N at {np_} ranks{over}.")
        tick(app)
    if {"matmul", "summa"} <= set(benches):
        rep.add("<h3>Row blocks (1D) against SUMMA (2D)</h3>")
        for np_ in sorted({int(r["np"]) for r in rows if r["bench"] == "summa"}):
            lines = phase_lines(rows, ["matmul", "summa"], np_, "total")
            if len({ln.label.split()[0] for ln in lines}) == 2:
                rep.figure(Figure(f"fig-1d-summa-{np_}", f"matmul against summa, {np_} ranks",
                                  "time per product (us)", lines, xlabel="N", xbytes=False),
                           f"The same product by row blocks and by SUMMA at {np_} ranks.")
    scs = apps.scaling(rows, where)
    if scs:
        rep.add("<h3>Jacobi scaling</h3>")
        eff = {f"{sc.label}, N={sc.n}{' weak' if sc.weak else ''} {sc.rest}":
               [(p.np, p.efficiency, *(p.eff_range or (p.efficiency, p.efficiency)),
                 p.record_id) for p in sc.points if p.efficiency is not None]
               for sc in scs}
        lines = [line_of(k, v) for k, v in sorted(eff.items()) if len(v) > 1]
        if lines:
            rep.figure(Figure("fig-jacobi-efficiency", "Jacobi parallel efficiency",
                              "efficiency (1 = perfect)", lines, xlabel="ranks", xbytes=False,
                              logy=False),
                       "Strong: T1 / (p Tp) at the same N; weak: T1 / Tp at the same N per "
                       "rank; against the one-rank run of the same configuration; the band "
                       "from the two times' intervals.")
        rep.add("<pre>" + escape("\n".join(scaling_lines(scs) + overlap_table(rows)))
                + "</pre>")
    rep.add(_phase_table(rows))
    preds = predict_mod.predict(rows, series)
    if not any(p.predicted_us for p in preds):
        return
    by: dict[tuple[str, str], dict[str, list]] = {}
    for p in preds:
        if p.predicted_us:
            d = by.setdefault((p.bench, p.phase), {})
            d.setdefault(f"{p.config.label()} measured", []).append(
                (p.size, p.measured_us, p.measured_us, p.measured_us, 0))
            d.setdefault(f"{p.config.label()} predicted", []).append(
                (p.size, p.predicted_us, p.predicted_us / (1 + p.tolerance),
                 p.predicted_us * (1 + p.tolerance), 0))
    rep.add("<h3>Predicted against measured</h3>")
    for (bench, phase), d in sorted(by.items()):
        lines = [line_of(k, v, dashed=k.endswith("predicted")) for k, v in sorted(d.items())]
        rep.figure(Figure(f"fig-predict-{bench}-{phase}", f"{bench} {phase}: predicted and "
                          "measured", "time (us)", lines, xlabel="N", xbytes=False),
                   f"{bench} {phase}: measured (slowest rank) and predicted from the "
                   "micro-benchmarks (dashed, band: the models' tolerance).")
    rep.add(_table(
        ("configuration", "bench", "N", "phase", "measured ms (slowest rank)",
         "least-waiting rank ms", "predicted ms", "predicted / measured", "verdict", "note"),
        [(p.config.label(), p.bench, p.size, p.phase, f"{p.measured_us / 1e3:.3f}",
          f"{(p.least_us or 0) / 1e3:.3f}",
          f"{p.predicted_us / 1e3:.3f}" if p.predicted_us else "-",
          f"{p.ratio:.2f}" if p.ratio else "-", p.verdict, p.note) for p in preds],
        {2, 4, 5, 6, 7}))


def _finding_anchor(f: findings.Finding, xrows: list[crossover.Row]) -> str:
    """The figure that shows a finding; the section, for benchmarks that
    have no figure of their own (the hand-written *_sends versions)."""
    if f.xrow is not None and f.xrow in xrows:
        return _xfig_id(f.xrow, xrows.index(f.xrow))
    if f.bench in {b for b, *_ in P2P} or f.bench in COLLECTIVES:
        return f"fig-{f.bench}"
    return "crossover" if xrows else "findings"


def _xfig_id(xr: crossover.Row, i: int) -> str:
    return f"fig-x-{_slug(xr.config.label())}-{xr.collective}-{_slug(xr.reference)}-{i}"


def _crossover_figure(xr: crossover.Row, i: int) -> Figure:
    def line(label: str, s, dashed: bool = False) -> Line:
        sizes = sorted(x for x in s if x > 0)
        return Line(label, tuple(sizes), tuple(s[x].median for x in sizes),
                    tuple(s[x].lo for x in sizes), tuple(s[x].hi for x in sizes),
                    tuple(s[x].result_id or 0 for x in sizes), dashed)

    fig = Figure(_xfig_id(xr, i), f"{crossover.mpi_name(xr.collective)} vs {xr.reference}, "
                 f"{xr.config.label()}", "time (us)",
                 [line(crossover.mpi_name(xr.collective), xr.coll),
                  line(xr.reference, xr.ref, dashed=True)])
    if xr.verdict.bracket:
        fig.vlines.append((xr.verdict.bracket[1], f"changes at {xr.verdict.changing}"))
    return fig


def _crossover_table(xrows: list[crossover.Row]) -> str:
    rows = []
    for xr in xrows:
        v = xr.verdict
        rows.append((xr.config.label(), xr.collective, xr.reference, v.short, v.long,
                     "" if v.changing == "-" else v.changing,
                     v.scenario or ("mixed" if v.mixed else ""),
                     v.advice(xr.collective, xr.reference)))
    return _table(("configuration", "collective", "against", "short", "long",
                   "changing length", "scenario", "advice"), rows)


def _phase_table(rows: Sequence[sqlite3.Row]) -> str:
    """Each application record's phases: the slowest rank's median, ms."""
    out = []
    for r in sorted(rows, key=lambda r: (r["bench"], what(r), r["np"], r["size_bytes"])):
        ph = apps.phases(r)
        moved = " · ".join(f"{k} {apps.bytes_text(v)}" for k, v in apps.phase_bytes(r).items()
                           if any(v))
        m = apps.memory_rate(r)
        out.append((r["bench"], f"{what(r)}, {r['np']} ranks ({place(r)})", r["size_bytes"],
                    " · ".join(f"{k} {float(v['max_us']) / 1e3:.3f}"  # type: ignore[arg-type]
                               for k, v in ph.items()),
                    f"{r['median_us'] / 1e3:.3f}" if r["median_us"] else "-",
                    moved or "-", m.text() if m else "-"))
    return ("<h3>Phases (slowest rank's median, ms)</h3>"
            + _table(("bench", "configuration", "N", "phases", "total ms",
                      "MB moved per rank (busiest/least busy)", "memory rate"), out, {2, 4}))


def _hockney_table(series) -> str:
    rows = []
    for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][1], kv[0][0].mpi)):
        sizes = sorted(x for x in s if x > 0)
        if bench not in ("latency", "bw", "sendloop") or len(sizes) < 2:
            continue
        f = hockney.fit(sizes, [s[x].median for x in sizes])
        p1 = f.pieces[0]
        p2 = f.pieces[1] if len(f.pieces) > 1 else None
        rows.append((bench, cfg.label(), f"{p1.alpha_us:.3f}", f"{p1.beta_gb_per_s:.2f}",
                     human(f.breakpoint) if f.breakpoint else "none",
                     f"{p2.alpha_us:.3f}" if p2 else "", f"{p2.beta_gb_per_s:.2f}" if p2 else "",
                     f"{f.rms_rel_error:.3f}"))
    if not rows:
        return ""
    return ("<h3>Hockney model T(m) = α + m/β</h3>" + _table(
        ("benchmark", "configuration", "α (us)", "β (GB/s)", "breakpoint", "α after (us)",
         "β after (GB/s)", "rms rel. error"), rows, {2, 3, 5, 6, 7}))


def _loggp_table(store: Store, run_ids: set[int]) -> str:
    rows = []
    for f in store.fits("loggp"):
        if f["run_id"] not in run_ids:
            continue
        p = json.loads(f["params"])
        rows.append((f"{f['mpi_name']}, {f['np']} processes, {place(f)}",
                     f"{p['L_us']:.3f}", f"{p['o_s_us']:.3f}", f"{p['o_r_us']:.3f}",
                     f"{p['g_us']:.3f}", f"{p['G_us_per_byte'] * 1e3:.4f}"))
    if not rows:
        return ""
    return ("<h2 id=loggp>LogGP</h2>" + _table(
        ("configuration", "L (us)", "o_s (us)", "o_r (us)", "g (us)", "G (ns/B)"), rows,
        {1, 2, 3, 4, 5}))
