"""The report's sections after the first screen, each a function that makes
its figures and returns the items its template block shows."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence

from ..advise.selection import forced_collective
from ..analysis import compare as compare_mod
from ..analysis import crossover, findings, hockney
from ..analysis.headlines import ratio_text
from ..store.benches import bench as bench_facts
from ..store.benches import names
from ..store.config import config_of, place
from ..store.db import Store
from ..store.sizes import human
from .figures import Figure, Grid, Line, lines_for
from .page import Item, Page, Para, Table, items, table

# The point-to-point figures in the order the report shows them, each with its
# axis and title; what each plots (time, bandwidth, rate) is the core's figure.
P2P = (("latency", "one-way latency (us)", "Latency (ping-pong, round trip / 2)"),
       ("bw", "bandwidth (MB/s)", "Unidirectional bandwidth"),
       ("bibw", "bandwidth (MB/s, both ways)", "Bidirectional bandwidth"),
       ("roundtrip", "round trips per second", "Round-trip rate"),
       ("sendloop", "time per send (us)", "Send loop: time per send"))
COLLECTIVES = names("coll")  # the core's collectives, in its order
LEAD_FINDINGS = 8  # the findings shown before any fold: the ones that save most

Tick = Callable[[str], None]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# -- findings ---------------------------------------------------------------
def finding_anchor(f: findings.Finding, xrows: list[crossover.Row]) -> str:
    """The figure that shows a finding; the section, for benchmarks that
    have no figure of their own (the hand-written *_sends versions)."""
    if f.xrow is not None and f.xrow in xrows:
        return xfig_id(f.xrow, xrows.index(f.xrow))
    if f.bench in {b for b, *_ in P2P} or f.bench in COLLECTIVES:
        return f"fig-{f.bench}"
    return "crossover" if xrows else "findings"


def finding_view(i: int, f: findings.Finding, xrows: list[crossover.Row],
                 n_recs: int = 20) -> dict[str, object]:
    recs = ", ".join(str(x) for x in f.records[:n_recs]) + ("…" if len(f.records) > n_recs
                                                             else "")
    return {"id": f"finding-{i}", "kind": f.kind, "text": f.text, "recs": recs,
            "save": f"(saves ~{100 * f.gain:.0f}%)" if f.gain >= 0.02 else "",
            "anchor": finding_anchor(f, xrows)}


def findings_section(found: Sequence[findings.Finding], xrows: list[crossover.Row]
                     ) -> dict[str, object]:
    """Every finding, those that save most first: the implementation
    comparisons in a table of their own, the others as sentences, past
    LEAD_FINDINGS folded away.  Ids follow the order of `found`."""
    views = [finding_view(i, f, xrows, 20 if f.kind != "faster" else 8)
             for i, f in enumerate(found)]
    return {"lead": [v for v, f in zip(views, found, strict=True) if f.kind != "faster"],
            "faster": [v for v, f in zip(views, found, strict=True) if f.kind == "faster"],
            "shown": LEAD_FINDINGS}


# -- runs and failures --------------------------------------------------------
def runs_table(store: Store, run_ids: set[int]) -> Table:
    rows = []
    for r in store.runs():
        if r["id"] not in run_ids:
            continue
        ver = (r["mpi_version"] or "").splitlines()
        rows.append((r["id"], r["status"], r["mpi_name"], ver[0] if ver else "", r["bench"],
                     r["np"], place(r) + (" (oversubscribed)" if r["oversubscribed"] else ""),
                     r["hostname"], r["cpu_model"], r["n_cores"], r["kernel"],
                     f"{r['commscope_version']} {r['git_rev'] or ''}".strip(), r["started_at"]))
    return table(("run", "status", "MPI", "version", "benchmark", "ranks", "cluster", "host",
                  "CPU", "cores", "kernel", "commscope", "started"), rows, (0, 5, 9))


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
    return (r["stderr_tail"] or "").strip().splitlines()[0][:160] if r["stderr_tail"] else ""


def failures(store: Store, run_ids: set[int]) -> dict[str, Table | None]:
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
    return {
        "skipped": table(("run", "MPI", "path", "benchmark", "reason"),
                         [(r["id"], r["mpi_name"], cfg.buffer if (cfg := config_of(r)) else "",
                           r["bench"], _first_line(r)) for r in skipped],
                         (0,)) if skipped else None,
        "bad": table(("run", "status", "MPI", "benchmark", "ranks", "first line of stderr"),
                     [(r["id"], r["status"], r["mpi_name"], r["bench"], r["np"],
                       _first_line(r)) for r in bad], (0, 4)) if bad else None,
    }


# -- point-to-point and collectives ---------------------------------------------
def p2p(page: Page, rows: Sequence[sqlite3.Row], series, benches: set[str], tick: Tick
        ) -> list[Item]:
    out: list[Item] = []
    for bench, ylabel, title in P2P:
        if bench not in benches:
            continue
        out += items(page.figure(Figure(f"fig-{bench}", title, ylabel,
                                        lines_for(rows, bench, bench_facts(bench).figure)),
                                 f"{title}: one line per implementation and cluster."))
        tick(bench)
    if out:
        out += items(hockney_table(series))
    return out


def collectives(page: Page, rows: Sequence[sqlite3.Row], benches: set[str], tick: Tick
                ) -> list[Item]:
    """Small multiples: one panel per collective on shared axes, each
    configuration one colour in every panel."""
    colls = [c for c in COLLECTIVES if c in benches]
    panels = [Figure(f"fig-{c}", f"MPI_{c.capitalize()}", "time (us)",
                     lines_for(rows, c, "time", label_np=True)) for c in colls]
    for c in colls:
        tick(c)
    return items(page.grid(Grid("fig-collectives", "Collectives: time per call", panels),
                           "One panel per collective, one line per implementation, process "
                           "count and cluster, bands the 95% interval between runs."))


def hockney_table(series) -> Table | None:
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
        return None
    return table(("benchmark", "configuration", "α (us)", "β (GB/s)", "breakpoint",
                  "α after (us)", "β after (GB/s)", "rms rel. error"), rows, (2, 3, 5, 6, 7))


# -- GPU buffers and runtime settings -----------------------------------------------
# the axes of the benchmarks a GPU path is shown for besides the collectives;
# what each plots is the core's figure (the others: time per call)
YLABEL = {"latency": "one-way latency (us)", "bw": "MB/s", "bibw": "MB/s, both ways"}


def _metric(bench: str) -> tuple[str, str]:
    if bench in YLABEL:
        return bench_facts(bench).figure, YLABEL[bench]
    return "time", "time (us)"


def _impl(r: sqlite3.Row) -> str:
    cfg = config_of(r)
    return cfg.mpi if cfg and cfg.mpi else str(r["mpi_name"])


def _buffer(r: sqlite3.Row) -> str:
    cfg = config_of(r)
    return cfg.buffer if cfg else "host"


def _settings(r: sqlite3.Row) -> dict[str, str]:
    cfg = config_of(r)
    return dict(cfg.settings) if cfg else {}


def gpu_impls(rows: Sequence[sqlite3.Row]) -> list[str]:
    """The implementations measured with a GPU path."""
    return sorted({_impl(r) for r in rows if _buffer(r) != "host"})


def tuned_impls(rows: Sequence[sqlite3.Row]) -> list[str]:
    """The implementations measured with runtime settings."""
    return sorted({_impl(r) for r in rows if _settings(r)})


def _same_impl(found: Sequence[findings.Finding]):
    """(finding, faster, slower) for each separated difference between two
    configurations of one implementation."""
    for f in found:
        if f.kind == "faster" and len(f.parties) == 2:
            w, lo = f.parties
            if w.implementation == lo.implementation:
                yield f, w, lo


def _by_how_much(f: findings.Finding) -> tuple[str, str, str]:
    s0, s1 = f.span or (0, 0)
    return f"{human(s0)}-{human(s1)}", ratio_text(f.ratio), ratio_text(f.ratio_lo)


RATIO_HEAD = ("sizes", "median ratio", "at least")


def _against_reference(mine: Sequence[sqlite3.Row], benches: Sequence[str], impl: str,
                       prefix: str) -> list[Figure]:
    """A panel per benchmark of one implementation's configurations, its
    reference line (host memory, its defaults: the bare implementation
    name) first."""
    panels = []
    for b in benches:
        metric, ylabel = _metric(b)
        lines = lines_for([r for r in mine if r["bench"] == b], b, metric, label_np=True)
        lines.sort(key=lambda ln: (ln.label.split(",")[0] != impl, ln.label))
        panels.append(Figure(f"{prefix}-{slug(impl)}-{b}", b, ylabel, lines))
    return panels


def gpu(page: Page, rows: Sequence[sqlite3.Row], found: Sequence[findings.Finding],
        tick: Tick) -> list[Item]:
    """The GPU users' paths side by side (the IIT Bombay study's figure 5:
    CUDA-aware against staged): for each implementation, a panel per
    benchmark with one line per path, host memory as the reference; then
    which path beats which over which sizes, from the separated findings."""
    out: list[Item] = []
    for impl in gpu_impls(rows):
        mine = [r for r in rows if _impl(r) == impl]
        benches = [b for b in (*YLABEL, *COLLECTIVES)
                   if any(r["bench"] == b and _buffer(r) != "host" for r in mine)]
        panels = _against_reference(mine, benches, impl, "fig-gpu")
        # time and bandwidth panels side by side: each its own y axis
        out += items(page.grid(Grid(f"fig-gpu-{slug(impl)}", f"{impl}: every buffer path",
                                    panels, sharey=False),
                               f"{impl}: one line per path (host memory the reference), a "
                               "panel per benchmark; bands the 95% interval between runs."))
        tick(f"gpu {impl}")
    if not out:
        return []
    pairs = [(w.implementation, ", ".join(f.benches or (f.bench,)), w.buffer, lo.buffer,
              *_by_how_much(f)) for f, w, lo in _same_impl(found) if w.buffer != lo.buffer]
    out.append(table(("implementation", "benchmark", "faster path", "than", *RATIO_HEAD), pairs)
               if pairs else
               Para("No path is told apart from another by the between-run statistics."))
    return out


def tuning(page: Page, rows: Sequence[sqlite3.Row], found: Sequence[findings.Finding],
           tick: Tick) -> list[Item]:
    """Configurations run with settings (commscope run --settings, the
    candidates of commscope tune) against the same implementation's
    defaults: a panel per benchmark with the default and each setting, then
    where a setting is faster or slower, from the separated findings."""
    out: list[Item] = []
    for impl in tuned_impls(rows):
        mine = [r for r in rows if _impl(r) == impl]
        benches = sorted({str(r["bench"]) for r in mine if _settings(r)})
        panels = _against_reference(mine, benches, impl, "fig-set")
        out += items(page.grid(Grid(f"fig-set-{slug(impl)}", f"{impl}: settings against its "
                                    "defaults", panels, sharey=False),
                               f"{impl} with its defaults and with each setting measured, a "
                               "panel per benchmark; bands the 95% interval between runs."))
        tick(f"settings {impl}")
    if not out:
        return []
    rows_: list[tuple[object, ...]] = []
    elsewhere = 0
    for f, w, lo in _same_impl(found):
        if bool(w.settings) == bool(lo.settings):
            continue  # against the defaults only: one side set nothing
        changed = sorted(set(w.settings) ^ set(lo.settings))
        benches = f.benches or (f.bench,)
        if all(forced_collective(k) not in (None, *benches) for k, _ in changed):
            elsewhere += 1
            continue
        rows_.append((w.implementation, ", ".join(benches),
                      " ".join(f"{k}={v}" for k, v in changed),
                      "faster with it" if w.settings else "slower with it", *_by_how_much(f)))
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


# -- collectives against sends ----------------------------------------------------
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
        rows.append((xr.config.label(), xr.collective, xr.reference, v.short, v.long,
                     "" if v.changing == "-" else v.changing,
                     v.scenario or ("mixed" if v.mixed else ""), xr.text()))
    out: list[Item] = [
        Para("Two references.  Against the commodity-cluster study's count of equivalent "
             "sends (k x MPI_Send, from measured latency) a verdict is the collective's "
             "overhead over bare sends, and no advice: those sends do not do the "
             "collective's job (a send combines no data, and a sum of latencies is no "
             "measured program).  Only the hand-written equivalents (*_sends), which compute "
             "the same result and are validated like the collective, are advised instead "
             "of it."),
        table(("configuration", "collective", "against", "short", "long",
               "changing length", "scenario", "advice (hand-written sends) or meaning"), rows)]
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


# -- models and the comparison --------------------------------------------------------
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
        ("benchmark", "configuration", "ranks", "size", "A (us)", "B (us)", "B/A", "verdict",
         "test"),
        [(c.bench, " ".join(f"{k}={v}" for k, v in c.fields().items()), c.np, human(c.size),
          f"{c.a_median:.3f}", f"{c.b_median:.3f}", f"{c.ratio:.3f}", c.verdict, c.test)
         for c in comps], (2, 4, 5, 6))}
