"""The static HTML report: one folder with index.html and SVG figures, no
script.  The page comes from Jinja2 templates (templates/report.html.j2, one
block per section) with autoescaping on: every label from the user or the
machine is escaped by the environment, never by hand.

The first screen says what matters most here: the machine, what was
measured, and the few ranked conclusions (analysis/summary.py), each with a
figure of just the lines it compares and links to the details below."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from .. import __version__
from ..analysis import compare as compare_mod
from ..analysis import conclude, crossover, findings, limits, summary
from ..analysis.series import collect
from ..analysis.significance import MIN_CHANGE
from ..measure import probe as probe_mod
from ..store.config import place, what
from . import applications, focus, matrix, programs, sections
from .figures import Figure, lines_for
from .page import FigRef, Page
from .tables import n_used


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("commscope.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=False)


def _stored_runs(r: sqlite3.Row) -> int:
    return int(r["n_reps"] or 1)


def _uncertainty(rows: Sequence[sqlite3.Row]) -> str:
    """What the bands and intervals of this report mean, and which machine
    mode its comparisons come from."""
    reps = sorted({n_used(r) for r in rows})
    over = (f"{reps[0]} to {reps[-1]}" if reps[0] != reps[-1] else str(reps[0])) if reps else ""
    few = sum(1 for r in rows if n_used(r) < 3 and n_used(r) < _stored_runs(r))
    text = ("Bands are the 95% interval of the typical figure between repeated runs "
            f"({over} runs combined per point, interleaved), the one comparisons use; the "
            "tables' intervals say where a next run's figure is expected (a 95% prediction "
            f"interval, wider); with {reps[-1]} runs a wide interval is what {reps[-1]} runs "
            "allow"
            + (f"; {few} point(s) rest on fewer runs than the sweep took (the others were "
               "measured in another machine mode or with other processes on the CPU)"
               if few else "") if reps and reps[-1] > 1
            else "Every configuration was measured once: bands and intervals are that run's "
                 "own confidence interval, which does not hold from one run to the next on "
                 "a VM (run with --repeat 3)")
    dropped = max((int(r["mode_dropped"]) for r in rows
                   if r["mode_dropped"]), default=0)
    if dropped:
        text += (f"; {dropped} record{'' if dropped == 1 else 's'} measured in another machine "
                 "mode (another core-to-core floor) were left out, so that every comparison "
                 "comes from one mode")
    return text


def _facts(store, rows: Sequence[sqlite3.Row], run_ids: set[int],
           probe: dict | None) -> list[tuple[str, str]]:
    """The machine and what was measured on it, one line each."""
    runs = [r for r in store.runs() if r["id"] in run_ids]
    hosts = sorted({(r["hostname"] or "?", r["cpu_model"] or "?", r["n_cores"] or 0)
                    for r in runs})
    machine = "; ".join(f"{h}, {cpu}, {n} cores" for h, cpu, n in hosts[:3])
    if len(hosts) > 3:
        machine += f" and {len(hosts) - 3} more"
    out = [("Machine", machine or "unknown")]
    if probe:
        bits = []
        floor = probe_mod.floor_ns(probe)
        jobs = limits.floor_spread(rows)
        if jobs:
            bits.append(limits.floor_words(*jobs, floor))
        elif floor:
            bits.append(f"core to core {floor:.0f} ns one way (one cache line: the probe)")
        for c in probe.get("copy", []) or []:
            if c.get("gbs") is not None and c.get("where") == "memory":
                bits.append(f"one-core copy {c['gbs']:.1f} GB/s from memory")
        cma = probe.get("process_vm_readv") or {}
        if isinstance(cma, dict) and cma.get("gbs_4mib") is not None:
            bits.append(f"single copy (process_vm_readv) {cma['gbs_4mib']:.1f} GB/s at 4 MiB")
        if bits:
            out.append(("Without MPI", "; ".join(bits) + " (details below)"))
    # each configuration with the library version its runs reported (its
    # first line, up to the first comma: "Open MPI v4.1.4")
    version_of = {r["id"]: " ".join((r["mpi_version"] or "").strip().split("\n")[0]
                                    .split(",")[0].split())[:60] for r in runs}
    measured: dict[str, str] = {}
    for r in rows:
        measured.setdefault(what(r), version_of.get(int(r["run_id"]), ""))
    out.append(("Measured", "; ".join(f"{name} ({v})" if v else name
                                      for name, v in sorted(measured.items()))))
    nps = sorted({int(r["np"]) for r in rows})
    places = sorted({place(r) for r in rows})
    benches = sorted({str(r["bench"]) for r in rows})
    # the counts of records and runs are the header's (sections.Behind), said once
    out.append(("Where", f"{', '.join(map(str, nps))} process{'' if nps == [1] else 'es'}; "
                f"{', '.join(places)}; {len(benches)} benchmark{'' if len(benches) == 1 else 's'} "
                "(listed under runs)"))
    return out


def _diagnosed(page: Page, d) -> list[dict[str, object]]:
    """The first screen's cards from what the diagnosis established."""
    cards = []
    for i, c in enumerate(conclude.conclusions(d), 1):
        fig = focus.diagnosis_figure(c, d, f"fig-top-{i}")
        ref = page.figure(fig, "The gap measured again, round by round (median and 95% "
                               "interval); shaded: the sizes it held at.") if fig else None
        cards.append({"kind": c.kind, "headline": c.headline, "because": "; ".join(c.details),
                      "save": c.saving, "fig": ref, "details": f"diagnosis-{i}",
                      "finding_id": "diagnosis"})
    return cards


def _summary(page: Page, store, rows: Sequence[sqlite3.Row], run_ids: set[int], series,
             found: list[findings.Finding], xrows: list[crossover.Row], probe: dict | None,
             failed: int, key: FigRef | None, fixes=None, diag=None) -> dict[str, object]:
    s = summary.summarize(series, found, fixes=fixes)
    if diag is not None:
        cards = _diagnosed(page, diag)
        return {"facts": _facts(store, rows, run_ids, probe), "cards": cards,
                "screening": False,
                "notes": list(s.notes), "key_figure": None if any(c["fig"] for c in cards)
                else key,
                "failed": (f"{failed} job(s) failed or timed out; what they measured before "
                           "is kept" if failed else "")}
    cards = []
    for i, c in enumerate(s.conclusions, 1):
        fig = focus.figure(c, series, f"fig-top-{i}")
        ref = page.figure(fig, "Shaded: the sizes it holds for; bands: the 95% interval "
                               "between runs.") if fig else None
        n = found.index(c.finding)
        cards.append({"kind": c.kind, "headline": c.headline, "because": c.finding.text,
                      "save": c.saving,
                      "fig": ref, "details": sections.finding_anchor(c.finding, xrows),
                      "finding_id": f"finding-{n}"})
    return {"facts": _facts(store, rows, run_ids, probe), "cards": cards, "screening": True,
            "notes": list(s.notes), "key_figure": None if any(c["fig"] for c in cards) else key,
            "failed": (f"{failed} job(s) failed or timed out; what they measured before is "
                       "kept" if failed else "")}


def build(store, out_dir: Path, rows: Sequence[sqlite3.Row], *,
          comparison: tuple[str, str, list[compare_mod.Comparison]] | None = None,
          progress=None) -> Path:
    page = Page(out_dir)
    run_ids = {int(r["run_id"]) for r in rows}
    series = collect(rows)
    benches = {str(r["bench"]) for r in rows}
    found, fixes = findings.explained(store, series, sorted(run_ids),
                                      findings.dominant_floor(rows))
    diag = conclude.of_rows(store, rows)
    xrows = crossover.analyze(series)
    app_rows = [r for r in rows if r["phases"]]

    steps = [b for b, *_ in sections.P2P if b in benches]
    steps += [c for c in sections.COLLECTIVES if c in benches]
    steps += sorted({str(r["bench"]) for r in app_rows})
    steps += [f"{xr.collective} vs {xr.reference} ({xr.config.label()})" for xr in xrows]
    steps += [f"gpu {m}" for m in sections.gpu_impls(rows)]
    steps += [f"settings {m}" for m in sections.tuned_impls(rows)]
    if progress:
        progress.total = len(steps)

    def tick(label: str) -> None:
        if progress:
            progress.start(label)
            progress.end(label, "drawn")

    prow = store.probe_for(run_ids)
    probe = json.loads(prow["data"]) if prow is not None else None
    machine = None
    if probe is not None:
        machine = {"when": ("with these runs" if prow["sweep_id"] is not None else "on its own")
                   + f" ({prow['taken_at']})", "text": probe_mod.text(probe),
                   "beside": limits.beside_latency(rows, probe_mod.floor_ns(probe))}
    fails = sections.failures(store, run_ids)
    failed = len(fails["bad"].rows) if fails["bad"] else 0
    # is this normal? against the machine's own figures
    head = limits.headline(rows, probe, probe_mod.floor_ns(probe) if probe else None)
    headline = None if head is None else {
        "names": head.names, "rows": limits.compact(head), "against": limits.limits_text(head),
        "title": limits.title(head)}

    p2p = sections.p2p(page, rows, series, benches, tick)
    colls = sections.collectives(page, rows, benches, tick)
    # predictions read records taken on a busy machine too, marked, rather than none
    appl = (applications.applications(page, app_rows, collect(rows, keep_flagged=True), tick,
                                      probe) if app_rows else [])
    xsec = sections.crossover_section(page, xrows, tick) if xrows else []
    gpu = sections.gpu(page, rows, findings.path_differences(series), tick,
                       sections.gpu_sharing(store, run_ids))
    settings = sections.tuning(page, rows, found, tick)
    # with no conclusion to draw, the first screen still shows the data
    key = next((x for x in p2p + colls + appl if isinstance(x, FigRef)), None)
    if key is None and rows:
        key = page.figure(Figure("fig-overview", "Time per operation", "time (us)",
                                 lines_for(rows, str(rows[0]["bench"]), "time")), "")
    flagged = sum(1 for r in rows if r["flagged"])
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = f"{now} · commscope {__version__} · store {store.path}"
    made_of = sections.behind(store, rows)
    progs = programs.section(store, collect(rows, keep_flagged=True))
    pairs = matrix.section(out_dir, rows)
    counts = made_of.text() + (f" {flagged} of the points were measured while the machine "
                               "was busy (marked in the tables of commscope show)."
                               if flagged else "")
    parts = [("diagnosis", "the diagnosis", diag is not None),
             ("findings", "findings", bool(rows)), ("machine", "the machine", machine is not None),
             ("p2p", "point-to-point", bool(p2p)), ("collectives", "collectives", bool(colls)),
             ("applications", "applications", bool(appl)), ("gpu", "GPU buffers", bool(gpu)),
             ("tuning", "settings", bool(settings)), ("programs", "your programs", bool(progs)),
             ("pairs", "every pair of nodes", bool(pairs)),
             ("crossover", "collectives against sends", bool(xsec)),
             ("provenance", "runs", True), ("failures", "failures", True),
             ("terms", "terms", True)]
    html = environment().get_template("report.html.j2").render(
        meta=meta, counts=counts, uncertainty=_uncertainty(rows),
        min_change=f"{MIN_CHANGE:.0%}",
        terms=sections.terms(f"{MIN_CHANGE:.0%}"),
        crossover_terms=sections.crossover_terms(f"{MIN_CHANGE:.0%}"),
        contents=[(anchor, title) for anchor, title, shown in parts if shown],
        summary=_summary(page, store, rows, run_ids, series, found, xrows, probe, failed, key,
                         fixes, diag),
        diagnosis=sections.diagnosis_section(diag), headline=headline,
        findings=sections.findings_section(found, xrows), machine=machine,
        runs=sections.runs_section(store, made_of), chose=sections.library_choices(store, run_ids),
        failures=fails, p2p=p2p,
        collectives=colls, applications=appl, crossover=xsec, gpu=gpu, tuning=settings,
        loggp=sections.loggp_table(store, run_ids), programs=progs, pairs=pairs,
        programs_only=not rows and bool(progs),
        compare=sections.comparison(*comparison) if comparison else None)
    index = out_dir / "index.html"
    index.write_text(html)
    page.write_index()
    return index
