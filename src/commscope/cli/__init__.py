"""The command line: subcommands registered in one table, one error handler."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from .. import __version__
from ..advise import doctor as doctor_mod
from ..analysis.repeats import aggregate
from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import cluster as cluster_mod
from ..measure import discovery, provenance
from ..measure import installs as installs_mod
from ..measure import mpi as mpi_mod
from ..measure import probe as probe_mod
from ..measure import settings as settings_mod
from ..measure.cache import cache_dir
from ..measure.cluster import emu as emu_mod
from ..measure.cluster.slurm import sbatch_script
from ..measure.runner import (
    PATHS,
    CoreOptions,
    Job,
    NoisePolicy,
    Progress,
    expand,
    gpu_path_runs,
    gpu_standin,
    param_variants,
    placements,
    resolve_benches,
    run_options,
    run_sweep,
)
from ..report.tables import export, run_table, tables
from ..store import outputs
from ..store.config import place, what
from ..store.db import Store
from ..store.sizes import expand_sizes

DEFAULT_DB = "commscope.db"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CommscopeError(f"{self.prog}: {message}")


def _list(values: Sequence[str] | None) -> list[str]:
    """Repeatable options that also take comma-separated values."""
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


MAX_RANKS = 1 << 20  # processes, nodes, per node: the largest systems, and SQLite's range


def _ints(values: Sequence[str] | None, what: str) -> list[int]:
    out = []
    for v in _list(values):
        try:
            n = int(v)
        except ValueError:
            raise CommscopeError(f"{what} must be an integer, got '{v}'") from None
        if n < 1:
            raise CommscopeError(f"{what} must be at least 1, got {n}")
        if n > MAX_RANKS:
            raise CommscopeError(f"{what} {n} is beyond any machine this runs on (at most "
                                 f"{MAX_RANKS})")
        out.append(n)
    return out


def _positive(kind: type, lo: float, hi: float) -> Callable[[str], object]:
    def conv(text: str) -> object:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: '{text}'") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text} is outside [{lo:g}, {hi:g}]")
        return v

    return conv


def _mode(text: str) -> str:
    """--mode: dominant, all, or a mode's label (floor~50ns)."""
    if text in ("dominant", "all") or re.fullmatch(r"floor~\d+ns", text):
        return text
    raise argparse.ArgumentTypeError(f"'{text}' is not a mode: dominant, all, or a label "
                                     "such as floor~50ns (commscope show prints them)")


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str) -> Callable[[Callable[[argparse.Namespace], int]],
                                   Callable[[argparse.Namespace], int]]:
    def deco(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = fn
        return fn

    return deco


# -- run ------------------------------------------------------------------
def _impls(a: argparse.Namespace) -> list[mpi_mod.MpiImpl]:
    """--mpi, each once per --cc compiler (each its own build and configuration)."""
    impls = discovery.select(_list(a.mpi))
    ccs = _list(a.cc)
    return [mpi_mod.with_compiler(m, c) for m in impls for c in ccs] if ccs else impls


@command("run")
def cmd_run(a: argparse.Namespace) -> int:
    benches = _list(a.bench)
    nps = _ints(a.np, "--np")
    opts = CoreOptions(**{str(o["field"]): getattr(a, str(o["field"])) for o in run_options()})
    expand_sizes(opts.sizes, opts.factor)  # bad sizes fail before anything is built
    clusters = [cluster_mod.parse(c) for c in _list(a.cluster) or ["local"]]
    nodes, ppns = _ints(a.nodes, "--nodes"), _ints(a.ppn, "--ppn")
    places = {c.label: placements(c, nps, nodes, ppns) for c in clusters}
    impls = _impls(a)
    if not a.mpi:  # every implementation found: those a cluster cannot launch, left out
        for m in list(impls):
            why = next((w for c in clusters if (w := c.cannot_launch(m)) is not None), None)
            if why is not None and len(impls) > 1:
                impls.remove(m)
                print(f"commscope: left out {m.name}: {why}", file=sys.stderr)
    cores = [build_mod.build(m) for m in impls]
    fors = [_for_spec(x, cores[0]) for x in a.for_ or []]
    if fors and (a.path or a.transport):
        raise CommscopeError("--for plans host runs over MPI: not with --path or --transport")
    if not benches and not fors:
        benches = [str(b["name"]) for b in cores[0].benches if b["group"] == "p2p"]
    if not benches:  # --for alone: its jobs are added below
        benches = [fors[0][0]]
    paths = _paths(a.path, cores, clusters)
    on_path = {p: on for p, e in paths if (on := _on_path(cores[0], benches, p, e))}
    if not on_path:
        raise CommscopeError(f"none of {', '.join(benches)} runs on --path "
                             f"{', '.join(p for p, _ in paths)}")
    path0, picked = next(iter(on_path.items()))
    jobs = expand(cores, picked, [], replace(opts, path=path0), clusters[0],
                  places[clusters[0].label])
    variants = param_variants(opts.param, cores[0])
    # the core's own rules for its options and parameters, before any launch
    for pv in variants:
        build_mod.check_options(cores[0], ["--bench", jobs[0].bench,
                                           *replace(jobs[0].opts, param=pv).argv()])
    transports = _list(a.transport) or ["mpi"]
    for t in transports:
        if t not in ("mpi", "chan", "chan-cma"):
            raise CommscopeError(f"unknown transport '{t}' (mpi, chan or chan-cma)")
    if any(p != "host" for p, _ in paths) and transports != ["mpi"]:
        raise CommscopeError("the GPU paths move data themselves: not with --transport "
                             + ",".join(t for t in transports if t != "mpi"))
    settings = tuple(provenance.settings().items())
    strict = False
    if a.settings:
        if any(c.kind != "local" for c in clusters):
            raise CommscopeError("--settings applies to local runs only (the launchers of "
                                 "clusters would need each variable forwarded)")
        settings = tuple(sorted({**dict(settings),
                                 **dict(settings_mod.parse_file(a.settings))}.items()))
        strict = True
    jobs = [replace(j, settings=settings, strict=strict) for cl in clusters for t in transports
            for path, on in on_path.items() for pv in variants
            for j in expand(cores, on, [], replace(opts, transport=t, param=pv, path=path), cl,
                            places[cl.label])] if a.bench or not fors else []
    jobs += [replace(j, settings=settings, strict=strict) for cl in clusters
             for j in _for_apps(fors, cores, opts, cl, places[cl.label])]
    _plan_check(jobs)
    series = [replace(j, settings=settings, strict=strict) for cl in clusters
              for j in _for_series(fors, cores, opts, cl, places[cl.label])]
    _plan_check(series)  # cold pools are memory too
    jobs += series
    store = Store(a.db)
    policy = NoisePolicy(max_other_cores=a.noise_max_cores, retries=a.retry_noisy)
    progress = Progress(len(jobs) * a.repeat, enabled=not a.quiet)
    # the probe describes this machine: where every rank runs on it
    here = not a.no_probe and all(c.kind in ("local", "emu") for c in clusters)
    outcomes = run_sweep(jobs, store, argv=sys.argv, resume=a.resume, timeout_s=a.timeout,
                         policy=policy, progress=progress, repeat=a.repeat,
                         probe=(lambda: probe_mod.run(pair_ms=20.0)) if here else None)
    if not a.quiet:
        ids = [o.run_id for o in outcomes if o.status == "ok"] or [o.run_id for o in outcomes]
        if ids:
            agg = aggregate(store.result_rows(run_ids=ids), mode="dominant")
            print(tables(agg), end="")
            for line in probe_mod.lines_for(store, agg):
                print(line)
    if not a.no_advise:
        _advise(a, store, outcomes, cores, opts, policy)
    # a path asked for by name must run; one from 'all' may be skipped
    named = {p for p, every in paths if not every}
    skipped = [o for o in outcomes if o.status == "skipped" and o.job.opts.path not in named]
    for o in skipped:
        print(f"commscope: {o.job.label}: {o.message}", file=sys.stderr)
    bad = [o for o in outcomes if o.status != "ok" and o not in skipped]
    store.close()
    if bad:
        print(f"commscope: {len(bad)} of {len(outcomes)} job(s) did not finish cleanly: "
              + ", ".join(f"{o.job.label} ({o.status}"
                          + (f": {o.message[:200]}" if o.message.startswith(("settings", "skip"))
                             else "")
                          + ")" for o in bad), file=sys.stderr)
        return 1
    return 0


PREDICTED = ("matmul", "summa", "jacobi")  # the applications analyze predict models


def _for_spec(text: str, core: build_mod.Core) -> tuple[str, str, list[int]]:
    """--for APP,K=V;K=V: the application, its parameters as --param takes
    them, and its N values (a comma-separated list is the sweep)."""
    app, _, spec = text.partition(",")
    app = app.strip()
    if app not in PREDICTED or app not in core.bench_names():
        raise CommscopeError(f"--for: unknown application '{app}' (predicted: "
                             f"{', '.join(PREDICTED)})")
    known = [str(p["name"]) for p in core.bench(app)["params"]]  # type: ignore[union-attr]
    given: dict[str, str] = {}
    for item in (x.strip() for x in spec.split(";") if x.strip()):
        key, eq, value = item.partition("=")
        if not eq or key not in known:
            raise CommscopeError(f"--for {app}: unknown parameter '{key}' ({', '.join(known)})")
        given[key] = value
    if "N" not in given:
        raise CommscopeError(f"--for {app}: give its size, e.g. --for {app},N=2000")
    ns = []
    for v in given["N"].split(","):
        if not v.strip().isdigit() or int(v) < 1:
            raise CommscopeError(f"--for {app}: N must be positive whole numbers, got '{v}'")
        ns.append(int(v))
    return app, ";".join(f"{k}={v}" for k, v in given.items()), ns


def _for_apps(fors: Sequence[tuple[str, str, list[int]]], cores: Sequence[build_mod.Core],
              opts: CoreOptions, cl: cluster_mod.Cluster, places: Sequence) -> list[Job]:
    """The applications of --for, on every placement."""
    return [j for pl in places for app, spec, _ in fors
            for pv in param_variants(spec, cores[0])
            for j in expand(cores, [app], [], replace(opts, param=pv), cl, [pl])]


def _for_series(fors: Sequence[tuple[str, str, list[int]]], cores: Sequence[build_mod.Core],
                opts: CoreOptions, cl: cluster_mod.Cluster, places: Sequence) -> list[Job]:
    """The series the predictions of --for read: each benchmark once per
    ranks and buffers, from the smallest size of --sizes to the largest
    message any phase moves.  The applications' values must have passed the
    core's rules (_plan_check) first: they are planned with."""
    from ..analysis import predict
    from ..analysis.apps import parse_params

    llc = probe_mod.l3_bytes() if cl.kind in ("local", "emu") else None
    lo = expand_sizes(opts.sizes, opts.factor)[0]
    largest: dict[tuple[int, bool], dict[str, int]] = {}  # (ranks, cold) -> bench -> bytes
    for pl in places:
        for app, spec, ns in fors:
            for pv in param_variants(spec, cores[0]):
                for need in predict.needs(app, ns, pl.np, parse_params(pv), llc):
                    got = largest.setdefault((need.np, need.cold), {})
                    got[need.bench] = max(got.get(need.bench, 0), need.up_to)
    jobs: list[Job] = []
    for (np_, cold), benches in sorted(largest.items()):
        where = placements(cl, [np_], [], [])[0]
        for up in sorted(set(benches.values())):
            first, top, factor = _for_sizes(lo, up, opts.factor)
            jobs += expand(cores, [b for b, u in benches.items() if u == up], [], replace(
                opts, sizes=f"{first}:{top}", factor=factor,
                buffers="cold" if cold else "hot"), cl, [where])
    return jobs


def _for_sizes(lo: int, up: int, factor: int) -> tuple[int, int, int]:
    """A sweep for --for: from --sizes' smallest (at least 8 B: no phase
    moves less than a double) to the largest message `up`, which is a point
    of the grid, with at least two points to fit a model (so up to 32 B at
    least); --factor where its grid reaches `up` exactly, else 2."""
    top = max(up, 32)
    first = min(max(lo, 8), top // 4)
    for f in (factor, 2):
        s = top
        while s % f == 0 and s // f >= first:
            s //= f
        if s < top:
            return s, top, f
    return first, top, 2


def _advise(a: argparse.Namespace, store: Store, outcomes: Sequence, cores, opts: CoreOptions,
            policy: NoisePolicy) -> None:
    """The sweep's conclusions whose cause is a setting, each fix measured
    against the configuration as it ran (advise.py), within --advise-budget."""
    from ..advise import fixes as advise
    from ..analysis import findings
    from ..analysis.series import collect

    ids = [o.run_id for o in outcomes if o.status == "ok"]
    if not ids:
        return
    rows = aggregate(store.result_rows(run_ids=ids), mode="dominant")
    series = collect(rows)
    found, _ = findings.explained(store, series, ids)
    if not advise.tasks(found):
        return
    # the mode the conclusions were drawn in: the fixes are judged in it
    mode_ns = findings.dominant_floor(rows)
    row = store.db.execute("SELECT sweep_id FROM runs WHERE id=?", (ids[0],)).fetchone()
    say = (lambda _: None) if a.quiet else print
    t0 = time.monotonic()
    fixes = advise.advise(found, {c.impl.name: c for c in cores}, opts, store,
                          sweep_id=row[0] if row else None, budget_s=a.advise_budget,
                          out_dir=Path(a.db).resolve().parent / "advice", argv=sys.argv,
                          policy=policy, progress=Progress(0, enabled=not a.quiet), say=say,
                          mode_ns=mode_ns)
    for f in fixes:
        where = f" -> {f.file}" if f.file else ""
        what = f.label or f"{f.bench} ({f.cause_key.split('|')[0]})"
        say(f"advise: {what}: {f.verdict}"
            + (f" ({f.bench} {f.ratio:.2f}x [{f.lo:.2f}, {f.hi:.2f}], {f.rounds} rounds)"
               if f.rounds else f" ({f.reason})" if f.reason else "") + where)
    say(f"advise: {len(fixes)} cause(s) measured in {time.monotonic() - t0:.1f} s "
        f"(--advise-budget {a.advise_budget:g} s; commscope analyze findings says them)")


def _paths(given: list[str] | None, cores: Sequence[build_mod.Core],
           clusters: Sequence[cluster_mod.Cluster]) -> list[tuple[str, bool]]:
    """The GPU paths asked for, each with whether it came from 'all' (a
    sweep over every path: one this machine cannot run is recorded as
    skipped, with the reason).  A path named explicitly where this machine
    has no GPU is refused before any launch, with the driver's reason."""
    names = _list(given) or ["host"]
    out: list[tuple[str, bool]] = []
    for n in names:
        if n == "all":
            out += [(p, True) for p in PATHS if (p, False) not in out]
        elif n in PATHS:
            out.append((n, False))
        else:
            raise CommscopeError(f"unknown --path '{n}' ({', '.join(PATHS)} or all)")
    explicit = [p for p, every in out if p != "host" and not every]
    if explicit and all(c.kind in ("local", "emu") for c in clusters):
        for core in cores:
            info = build_mod.gpu_info(core)
            if not info.get("devices") and not gpu_standin():
                raise CommscopeError(f"--path {explicit[0]}: {core.impl.name}'s core sees no "
                                     f"GPU: {info.get('reason') or 'no device'}")
    seen: set[str] = set()
    return [(p, e) for p, e in out if not (p in seen or seen.add(p))]


def _on_path(core: build_mod.Core, benches: list[str], path: str, every: bool) -> list[str]:
    """The benchmarks a job runs on `path`: as given, except that a sweep
    over every path runs on each path only those that run there (none: no
    job on that path)."""
    if not every:
        return benches
    names = resolve_benches(core, benches) if benches else []
    if path == "host":
        return [b for b in names if not core.bench(b).get("gpu_only")]
    return [b for b in names if gpu_path_runs(core, b, path)]


def _plan_check(jobs: Sequence[Job]) -> None:
    """Applications judged before any launch at each job's process count,
    by the core's own rules (a grid that does not decompose, a value not
    allowed), and their memory where every rank runs on this machine (local
    runs and emulated clusters, whose nodes share it), and so the pools of
    --buffers cold: one line, exit 2."""
    seen = set()
    for j in jobs:
        if bind := dict(j.settings).get("COMMSCOPE_BIND"):
            mpi_mod.bind_flags(j.core.impl.family, bind)  # a value it does not know
            if j.cluster.kind != "local":
                cluster_mod.local_only(bind, j.cluster.label)
        apps = [b for b in j.bench.split(",") if j.core.bench(b).get("size_param")]
        one_host = j.cluster.kind in ("local", "emu")
        if j.opts.buffers == "cold" and one_host:  # the pools are memory too
            apps = j.bench.split(",")
        key = (j.core.exe, tuple(apps), j.np, one_host, j.opts.param)
        if not apps or key in seen:
            continue
        seen.add(key)
        build_mod.check_options(j.core, ["--bench", ",".join(apps), *j.opts.argv(),
                                         "--plan-np", str(j.np),
                                         *(["--plan-mem"] if one_host else [])])


# -- show / export --------------------------------------------------------
def _picked(a: argparse.Namespace, store: Store, narrowed: bool = False) -> list:
    """Every stored record (of the newest complete sweeps, without --all)
    that --bench, --mpi and --np pick; with narrowed, also those measured
    again in their sweep at a common window."""
    rows = store.result_rows(latest=not a.all, narrowed=narrowed)
    benches, mpis, nps = set(_list(a.bench)), set(_list(a.mpi)), set(_ints(a.np, "--np"))
    return [r for r in rows if (not benches or r["bench"] in benches)
            and (not mpis or r["mpi_name"] in mpis) and (not nps or r["np"] in nps)]


def aggregate_keep(rows: list, mode: str) -> list:
    """The records of one machine mode (records without a floor stay)."""
    from ..analysis.repeats import detect_modes, mode_of, pick_mode

    modes = detect_modes(r["floor_ns"] for r in rows)
    want = pick_mode(modes, mode)
    if want is None:
        return rows
    return [r for r in rows if (m := mode_of(r["floor_ns"], modes)) is None or m.label == want]


def _filtered(a: argparse.Namespace, store: Store, mode: str = "dominant") -> list:
    """The records the filters pick, one row per configuration, benchmark
    and size, combined over its repetitions (analysis/repeats.py); `mode`
    unless --mode says otherwise."""
    rows = _picked(a, store)
    want = getattr(a, "mode", None) or mode
    return aggregate(rows, mode=None if want == "all" else want)


@command("show")
def cmd_show(a: argparse.Namespace) -> int:
    store = Store(a.db, create=False)
    if a.runs:
        print(run_table(store.runs()), end="")
        return 0
    rows = _filtered(a, store)
    if not rows:
        raise CommscopeError(f"no stored results match in {a.db}")
    print(tables(rows, per_node=a.per_node), end="")
    for line in probe_mod.lines_for(store, rows):
        print(line)
    return 0


@command("export")
def cmd_export(a: argparse.Namespace) -> int:
    """Every record of every repetition, with its configuration, repetition
    and floor: the data itself, for a user's own analysis (the --mode filter
    applies, all modes by default).  With --all, also the records measured
    again at a common window (narrowed_in: the run that did)."""
    out = None if a.output == "-" else outputs.target(a.output, "export --output", a.db)
    store = Store(a.db, create=False)
    rows = _picked(a, store, narrowed=a.all)
    if a.mode and a.mode != "all":
        keep = {id(r) for r in aggregate_keep(rows, a.mode)}
        rows = [r for r in rows if id(r) in keep]
    text = export(rows, a.format)
    if out is not None:
        outputs.write_text(out, text)
    else:
        sys.stdout.write(text)
    return 0


# -- analysis -------------------------------------------------------------
def _matching(a: argparse.Namespace) -> tuple[Store, list]:
    """The store and the results the filters pick; none is an error.  The
    analyses compare configurations, so they keep one machine mode (the
    dominant one) unless --mode says otherwise: a comparison across modes
    would measure the host, not the MPI."""
    store = Store(a.db, create=False)
    rows = _filtered(a, store)
    if not rows:
        raise CommscopeError(f"no stored results match in {a.db}")
    return store, rows


@command("analyze crossover")
def cmd_crossover(a: argparse.Namespace) -> int:
    from ..analysis import crossover
    from ..analysis.series import collect

    store, picked = _matching(a)
    # The equivalent sends come from latency records, whatever --np says.
    mpis = {r["mpi_name"] for r in picked}
    lat = aggregate([r for r in store.result_rows()
                     if r["bench"] == "latency" and r["mpi_name"] in mpis],
                    mode=None if a.mode == "all" else (a.mode or "dominant"))
    have = {(r["config_key"], r["bench"]) for r in picked}
    series = collect([*picked, *(r for r in lat if (r["config_key"], r["bench"]) not in have)])
    wanted = {(r["config_key"] or what(r), r["np"]) for r in picked}
    rows = [r for r in crossover.analyze(series)
            if (r.config.key or r.config.mpi, r.config.np) in wanted]
    if not rows:
        raise CommscopeError("no collective with a reference to compare: run bcast, reduce, "
                             "gather, scatter or alltoall together with latency or their "
                             "_sends versions (e.g. --bench coll,coll-sends,latency)")
    print(crossover.table(rows), end="")
    if not any(r.advises for r in rows):
        print("\nno advice: against the equivalent sends from latency a verdict is the "
              "collective's overhead, not a replacement; only the hand-written equivalents, "
              "which compute the same result, are advised (--bench coll,coll-sends)")
    return 0


@command("analyze findings")
def cmd_findings(a: argparse.Namespace) -> int:
    from ..analysis import findings, summary
    from ..analysis.series import collect

    store, rows = _matching(a)
    series = collect(rows)
    floor = findings.dominant_floor(rows)
    found, fixes = findings.explained(store, series, sorted({int(r["run_id"]) for r in rows}),
                                      floor)
    top = summary.text(summary.summarize(series, found, fixes=fixes))
    if top and floor:
        # which of the host's modes the conclusions come from: a later
        # sweep in another mode may conclude otherwise
        dropped = max((int(r["mode_dropped"]) for r in rows if "mode_dropped" in r.keys()
                       and r["mode_dropped"]), default=0)
        top += (f"Drawn from records taken with the host's core-to-core time at ~{floor:.0f} ns"
                + (f"; {dropped} record(s) taken in its other modes were left out (--mode all "
                   "keeps them)" if dropped else "") + "\n\n")
    print(top + ("Every finding, those that save most first:\n" if top and found else "")
          + findings.text(found, limit=a.limit or None), end="")
    return 0


@command("analyze guidelines")
def cmd_guidelines(a: argparse.Namespace) -> int:
    from ..analysis import guidelines
    from ..analysis.series import collect

    res = guidelines.check(collect(_matching(a)[1]))
    if not res.checked:
        raise CommscopeError("no guideline can be checked: it needs a collective and the "
                             "collectives it is composed of at matching sizes, or two sizes "
                             "of one benchmark (e.g. --bench coll --repeat 3)")
    print(guidelines.table(res), end="")
    return 0


@command("analyze predict")
def cmd_predict(a: argparse.Namespace) -> int:
    from ..analysis import predict
    from ..analysis.series import collect

    store, picked = _matching(a)
    apps = [r for r in picked if r["phases"]]
    if not apps:
        raise CommscopeError("no application records (matmul, jacobi) match: run them, and "
                             "the collectives and latency of the same configuration, first "
                             "(e.g. --bench matmul,jacobi,latency,coll)")
    mode = None if a.mode == "all" else (a.mode or "dominant")
    models = collect(aggregate(store.result_rows(), mode=mode))
    print(predict.table(predict.predict(apps, models, predict.llc_in(store, apps))), end="")
    return 0


@command("fit")
def cmd_fit(a: argparse.Namespace) -> int:
    from ..analysis import hockney, loggp
    from ..analysis.series import collect

    store, rows = _matching(a)
    series = collect(rows)
    run_of = {(r["config_key"] or what(r), r["np"], place(r), r["bench"]): r["run_id"]
              for r in rows}
    done = 0
    if a.model in ("hockney", "all"):
        # Which benchmarks are of a message size: the core's own table (its
        # group), as every core built here wrote it (read, never built: the
        # store may hold an implementation no longer installed); a benchmark
        # no table knows is an application when its records carry one's
        # fields (the swept parameter, the parameters, the phases).
        groups: dict[str, str] = {}
        metas = sorted((cache_dir() / "build").glob("*/meta.json"),
                       key=lambda p: p.stat().st_mtime, reverse=True)
        for meta in metas:
            try:
                for b in json.loads(meta.read_text()).get("benches", ()):
                    groups.setdefault(str(b["name"]), str(b["group"]))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
        app_like = {r["bench"] for r in rows
                    if any(k in r.keys() and r[k] for k in ("size_param", "params", "phases"))}
        print(f"{'configuration':<34} {'bench':<15} {'alpha_us':>9} {'beta_GB/s':>10} "
              f"{'break_B':>9} {'alpha2_us':>9} {'beta2_GB/s':>10} {'rms_err':>8}")
        apps: list[str] = []
        for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][1])):
            why = hockney.skipped(bench, groups.get(bench), bench in app_like)
            if why:
                if why.startswith("an application") and bench not in apps:
                    apps.append(bench)
                continue
            sizes = sorted(x for x in s if x > 0)
            if len(sizes) < 2:
                print(f"{cfg.label():<34} {bench:<15} not stored: {len(sizes)} size(s), "
                      "a line needs more")
                continue
            f = hockney.fit(sizes, [s[x].median for x in sizes])
            bad = hockney.implausible(f, sizes)
            if bad:
                print(f"{cfg.label():<34} {bench:<15} not stored: {bad}")
                done += 1  # fitted and refused: said, not an empty result
                continue
            store.save_fit(run_of[(cfg.key or cfg.mpi, cfg.np, cfg.cluster, bench)], "hockney",
                           f.to_json())
            p1 = f.pieces[0]
            p2 = f.pieces[1] if len(f.pieces) > 1 else None
            print(f"{cfg.label():<34} {bench:<15} {p1.alpha_us:>9.3f} {p1.beta_gb_per_s:>10.2f} "
                  f"{f.breakpoint or '-':>9} "
                  f"{(f'{p2.alpha_us:.3f}' if p2 else '-'):>9} "
                  f"{(f'{p2.beta_gb_per_s:.2f}' if p2 else '-'):>10} {f.rms_rel_error:>8.3f}")
            done += 1
        if apps:
            print(f"not fitted: {', '.join(apps)} (applications: their size is a problem "
                  "size, not a message; Hockney's model is of messages)")
    if a.model in ("loggp", "all"):
        configs = {cfg for (cfg, bench) in series if bench == "loggp_1"}
        for cfg in sorted(configs, key=lambda c: (c.mpi, c.np)):
            trains = {b: series.get((cfg, b)) for b in ("loggp_1", "loggp_n", "loggp_nd",
                                                        "loggp_ndr")}
            if not all(trains.values()):
                continue
            rid = run_of[(cfg.key or cfg.mpi, cfg.np, cfg.cluster, "loggp_nd")]
            opts = json.loads(store.db.execute("SELECT options FROM runs WHERE id=?",
                                               (rid,)).fetchone()[0])
            med = {b: {s: p.median for s, p in t.items()} for b, t in trains.items() if t}
            p = loggp.extract(med["loggp_1"], med["loggp_n"], med["loggp_nd"], med["loggp_ndr"],
                              int(opts["loggp_n"]), float(opts["loggp_delay_us"]))
            store.save_fit(rid, "loggp", p.to_json())
            print(f"LogGP {cfg.label()}: L={p.L_us:.3f} us  o_s={p.o_s_us:.3f} us  "
                  f"o_r={p.o_r_us:.3f} us  g={p.g_us:.3f} us  G={p.G_us_per_byte * 1e3:.4f} ns/B"
                  f" ({p.G_gb_per_s:.2f} GB/s)"
                  + ("  [L < 0: the overheads account for the whole small-message time]"
                     if p.L_us < 0 else ""))
            done += 1
    if not done:
        raise CommscopeError("nothing to fit: store latency or other series (hockney) or the "
                             "loggp trains (--bench loggp)")
    return 0


# -- report and compare -----------------------------------------------------
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
    store, rows = _matching(a)
    comparison = None
    if bool(a.compare_a) != bool(a.compare_b):
        raise CommscopeError("--compare-a and --compare-b go together")
    if a.compare_a:
        comparison = (a.compare_a, a.compare_b, cmp.compare_rows(
            select_rows(store, a.compare_a), select_rows(store, a.compare_b), a.factor))
    index = build(store, out, rows, comparison=comparison, progress=Progress(0, enabled=True))
    print(f"report written to {index}")
    return 0


# -- tune -----------------------------------------------------------------
@command("tune")
def cmd_tune(a: argparse.Namespace) -> int:
    from ..advise import selection, tune

    started = time.monotonic()
    opts = CoreOptions(**{str(o["field"]): getattr(a, str(o["field"])) for o in run_options()})
    expand_sizes(opts.sizes, opts.factor)
    (impl,) = discovery.select([a.mpi])
    core = build_mod.build(impl)
    benches = _list(a.bench) or ["bw"]
    expand([core], benches, [2], opts)  # unknown benchmarks, ranks, roots: before any launch
    if a.validate != "none" and (a.validate not in core.bench_names()
                                 or not core.bench(a.validate).get("size_param")):
        raise CommscopeError(f"--validate takes an application (matmul, jacobi) or none, "
                             f"not {a.validate}")
    if a.validate != "none":  # the application's values, by the core's own rules
        _plan_check(expand([core], [a.validate], [2], replace(opts, param=a.validate_param)))
    if a.write:  # where the result goes, and the files beside it: before the search
        for p in (a.write, str(Path(a.write).with_suffix(".rules")),
                  str(Path(a.write).with_suffix(".json"))):
            outputs.target(p, "tune --write", a.db)
    given = [tune.Candidate(settings_mod.parse_file(f), f"from {f}")
             for f in _list(a.candidates)] if a.candidates else []
    store = Store(a.db)
    cvars = tune.read_cvars(core)
    mpich = None
    if impl.family == "intel":
        algorithms = tune.intel_algorithms(core, [b for b in benches if b in tune.COLLS])
    elif impl.family == "mpich" and any(b in tune.COLLS for b in benches):
        mpich = selection.mpich_library(core.exe, impl.env)
        algorithms = dict(mpich.algorithms)
    else:
        algorithms = None
    cands = tune.space(core, cvars, benches, algorithms) + given
    if not cands:
        raise CommscopeError(f"no setting to search for {impl.name} and "
                             f"{', '.join(benches)} (add your own with --candidates FILE)")
    policy = NoisePolicy(max_other_cores=a.noise_max_cores, retries=0)
    progress = Progress(0, enabled=not a.quiet and not a.apply)
    timeout = a.timeout or 3 * tune.estimate_s(opts, benches) + 30
    outcomes = tune.search(core, benches, opts, cands, store, rounds=a.rounds,
                           budget_s=a.budget, argv=sys.argv, timeout_s=timeout, policy=policy,
                           progress=progress, extra_rounds=a.extra_rounds)
    w = tune.best(outcomes)
    text = tune.settings_text(w, core) if w is not None else None
    choices = selection.choices(outcomes, cvars, impl.family)
    side = None  # the implementation's own file of per-size choices
    if choices and impl.family == "intel":
        text = tune.with_selection(w, selection.intel_adjust(choices),
                                   "Intel MPI's I_MPI_ADJUST syntax", core)
    elif choices and a.write and impl.family == "openmpi":
        # each algorithm over the sizes it won, in a file beside the
        # settings, instead of one forced everywhere
        side = Path(a.write).with_suffix(".rules")
        outputs.write_text(side, selection.openmpi_rules(choices, 2, core.impl.name))
        text = tune.with_rules(w, side, core)
    elif choices and a.write and mpich is not None:
        side = Path(a.write).with_suffix(".json")
        outputs.write_text(side, selection.mpich_json(choices, mpich, cvars))
        text = tune.with_selection(w, [(selection.MPICH_JSON_CVAR, str(side.resolve()))],
                                   str(side), core)
    rc = 0
    if side is not None and text:
        # the file, as written, in a real job before it is handed over
        chk = tune.check_settings(core, sorted({c.coll for c in choices}), opts,
                                  settings_mod.parse_text(text), store, argv=sys.argv,
                                  timeout_s=timeout, policy=policy)
        if not chk.ok:
            print(f"commscope: {impl.name} did not take {side} in a check job ({chk.reason}); "
                  "the settings leave it out", file=sys.stderr)
            side, rc = None, 1
            text = tune.settings_text(w, core) if w is not None else None
    # what the user is handed: the per-size file and the best winner besides
    handed = tune.Candidate(settings_mod.parse_text(text) if text else (),
                            "the settings handed over")
    kind = {"openmpi": "Open MPI's rules file", "mpich": "MPICH's selection file"}.get(
        impl.family, "")
    if a.apply:
        if text:
            print("\n".join(x for x in text.splitlines() if x.startswith("export ")))
        if choices and not a.write and kind:
            print(f"# collective algorithms won per size range: add --write FILE for {kind}")
        return rc
    print(tune.report(core, outcomes, a.rounds, a.extra_rounds), end="")
    if side is not None and text:
        # the per-size choices and the best winner besides were measured
        # apart: measure what is handed over, together
        print(tune.together_text(tune.together(
            core, benches, opts, handed.settings, store, rounds=a.rounds,
            budget_s=a.budget - (time.monotonic() - started), argv=sys.argv, timeout_s=timeout,
            policy=policy, progress=progress)), end="")
    if not text and a.validate != "none":
        print(f"nothing to validate on {a.validate}: no candidate won")
    if text and a.validate != "none":
        # what the user is handed, not only the best single candidate
        print(f"validating {handed.label} against the default on {a.validate}")
        es = tune.validate(core, handed, a.validate, a.validate_param, opts, store,
                           rounds=a.rounds, argv=sys.argv, timeout_s=max(timeout, 300.0),
                           policy=policy, progress=progress)
        for e in es:
            verdict = ("faster" if e.wins else "slower" if e.loses
                       else "not told apart from the default")
            print(f"validated on {e.bench} {a.validate_param}: end-to-end time "
                  f"default/tuned {e.ratio:.2f} [{e.lo:.2f}, {e.hi:.2f}] over {e.n} rounds: "
                  f"{verdict}")
    if text and a.write:
        outputs.write_text(Path(a.write), text)
        print(f"settings written to {a.write} (commscope run --settings {a.write})")
        if side is not None:
            print(f"collective algorithms per size range in {side}, {kind} it names (taken in "
                  "a check job)")
    store.close()
    return rc


# -- probe ----------------------------------------------------------------
@command("probe")
def cmd_probe(a: argparse.Namespace) -> int:
    """The machine's own figures, without MPI: printed, and stored unless
    --no-store."""
    data = probe_mod.run(cpus=a.cpus, pair_ms=a.pair_ms)
    if not a.no_store:
        store = Store(a.db)
        store.add_probe(data, provenance.machine().get("hostname") or "")
        store.close()
    if a.json:
        print(json.dumps(data, indent=1))
    else:
        print(probe_mod.text(data), end="")
    return 0


# -- mpi ------------------------------------------------------------------
@command("mpi list")
def cmd_mpi_list(a: argparse.Namespace) -> int:
    impls = discovery.discover()
    rows = []
    for m in impls:
        root = os.geteuid() == 0
        cores = os.cpu_count() or 1
        entry: dict[str, object] = {**m.to_json()}
        try:
            core = build_mod.build(m)
            entry["version"] = core.mpi_version
            entry["mpi_standard"] = core.info.get("mpi_standard")
        except CommscopeError as exc:
            entry["version"] = None
            entry["error"] = str(exc).splitlines()[0]
        spec2 = mpi_mod.LaunchSpec(2, cores, root)
        specn = mpi_mod.LaunchSpec(cores + 2, cores, root)
        entry["flags"] = mpi_mod.launcher_flags(m, spec2)
        entry["flags_oversubscribed"] = mpi_mod.launcher_flags(m, specn)
        rows.append(entry)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("no MPI implementation found (commscope mpi add PATH/TO/mpicc adds one)")
        return 0
    for e in rows:
        ver = str(e.get("version") or e.get("error") or "?").splitlines()[0]
        print(f"{e['name']}  [{e['family']}, {e['source']}]")
        print(f"  version   {ver}")
        print(f"  mpicc     {e['mpicc']}")
        print(f"  launcher  {e['launcher']}")
        print(f"  flags     {' '.join(e['flags']) or '(none)'}   "  # type: ignore[arg-type]
              f"oversubscribed: {' '.join(e['flags_oversubscribed']) or '(none)'}")  # type: ignore[arg-type]
    return 0


@command("mpi add")
def cmd_mpi_add(a: argparse.Namespace) -> int:
    impl = mpi_mod.describe_path(a.mpicc, name=a.name, source="user")
    core = build_mod.build(impl)  # only an implementation that builds is remembered
    discovery.add_user(impl)
    print(f"added {impl.name} ({impl.family}): {core.mpi_version.splitlines()[0]}")
    return 0


@command("mpi install")
def cmd_mpi_install(a: argparse.Namespace) -> int:
    names = installs_mod.check_names(a.names, a.version)
    for name in names:
        if installs_mod.is_installed(name) and not a.force:
            print(f"{name} is installed already in {discovery.root() / name} "
                  "(--force reinstalls)")
            continue
        impl, core = installs_mod.install(name, version=a.version, wheels=a.wheels)
        pkgs = discovery.details(impl.name).get("packages") or {}
        print(f"installed {impl.name} ({impl.family}) in {Path(impl.mpicc).parent.parent}: "
              + ", ".join(f"{k} {v}" for k, v in pkgs.items()))  # type: ignore[union-attr]
        print(f"  {core.mpi_version.splitlines()[0] if core.mpi_version else '?'}")
        print(f"  run with: commscope run --mpi {impl.name} ...")
    return 0


@command("mpi remove")
def cmd_mpi_remove(a: argparse.Namespace) -> int:
    if not installs_mod.uninstall(a.name):
        discovery.remove_user(a.name)
    print(f"removed {a.name}")
    return 0


@command("build")
def cmd_build(a: argparse.Namespace) -> int:
    for impl in _impls(a):
        core = build_mod.build(impl, force=a.force)
        print(f"{impl.name}{' cc=' + impl.cc if impl.cc else ''}: {core.exe} "
              f"({core.info.get('compiler') or 'compiler unknown'})")
    return 0


# -- clusters -------------------------------------------------------------
@command("doctor")
def cmd_doctor(a: argparse.Namespace) -> int:
    impl = discovery.select([a.mpi] if a.mpi else [])[0]

    def show(ch: doctor_mod.Check) -> None:
        if not a.json:
            print(ch.line(), flush=True)

    checks = doctor_mod.diagnose(a.cluster, impl, db=Path(a.db) if a.db else None,
                                 timeout_s=a.timeout, progress=show)
    if a.json:
        print(doctor_mod.to_json(checks))
    else:
        print(doctor_mod.summary(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


@command("cluster up")
def cmd_cluster_up(a: argparse.Namespace) -> int:
    name = a.name or next(f"emu{i}" for i in range(1, 1000)
                          if not (emu_mod.STATE_ROOT / emu_mod.prefix(f"emu{i}")).exists())
    c = emu_mod.up(name, a.nodes, a.link)
    p = emu_mod.PROFILES[c.link]
    print(f"emulated cluster {c.name}: {len(c.nodes)} node(s), link {p.name} ({p.what}), "
          f"subnet {c.subnet}")
    for n in c.nodes:
        print(f"  {n.hostname:<16} {n.address:<12} netns {n.netns}")
    print(f"use it with: commscope run --cluster emu:{c.name} ...   remove it with: "
          f"commscope cluster down {c.name}")
    return 0


@command("cluster down")
def cmd_cluster_down(a: argparse.Namespace) -> int:
    for name in a.names:
        killed = emu_mod.down(name)
        print(f"removed emulated cluster {name}"
              + (f" ({killed} process(es) left inside were killed)" if killed else ""))
    return 0


@command("cluster list")
def cmd_cluster_list(a: argparse.Namespace) -> int:
    found = emu_mod.list_clusters()
    if a.json:
        print(json.dumps([c.to_json() for c in found], indent=1))
        return 0
    if not found:
        print("no emulated cluster (commscope cluster up --nodes 2 --link 1gbit makes one)")
    for c in found:
        print(f"{c.name:<12} {len(c.nodes)} node(s)  link {c.link:<9} subnet {c.subnet}  "
              f"prefix {c.prefix}")
    stray = emu_mod.stray_namespaces()
    if stray:
        print(f"namespaces left by an interrupted `cluster up`: {', '.join(stray)} "
              "(`commscope cluster down NAME` removes them)")
    return 0


@command("slurm script")
def cmd_slurm_script(a: argparse.Namespace) -> int:
    run_args = list(a.run_args)
    if run_args and run_args[0] == "--":
        run_args = run_args[1:]
    _no_empty_values(run_args)
    ra = make_parser().parse_args(["run", *run_args])  # bad options fail here, not in the queue
    expand_sizes(ra.sizes, ra.factor)
    _ints(ra.np, "--np")
    # benchmark names and their options, by this machine's core (the table is the same
    # on the cluster's nodes): an unknown one fails here, not after the queue
    try:
        impl = _impls(ra)[0]
    except CommscopeError:  # an MPI of the cluster's own, not installed here
        impl = discovery.select([])[0]
    core = build_mod.build(impl)
    opts = CoreOptions(**{str(o["field"]): getattr(ra, str(o["field"])) for o in run_options()})
    expand([core], _list(ra.bench) or ["p2p"], [], opts, places=[])
    build_mod.check_options(core, ["--bench", (_list(ra.bench) or ["latency"])[0], *opts.argv()])
    text = sbatch_script(nodes=a.nodes, ppn=a.ppn, time_min=a.time, run_args=run_args,
                         db=os.path.abspath(a.db), partition=a.partition, account=a.account)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        outputs.write_text(outputs.target(a.out, "slurm script --out", a.db), text, 0o755)
        print(f"wrote {a.out}; submit it with: sbatch {shlex.quote(a.out)}", file=sys.stderr)
    return 0


# -- parser ---------------------------------------------------------------
def _core_run_options(p: argparse.ArgumentParser) -> None:
    """`run`'s options that the core takes, from the core's own table
    (type, range, default and help are written once, in options.c)."""
    for o in run_options():
        name, kind, default = f"--{o['name']}", str(o["type"]), o["default"]
        text = str(o["help"]).replace("%", "%%")
        hidden = o["scope"] == "hidden"
        if kind == "flag":
            p.add_argument(name, dest=str(o["field"]), action="store_true",
                           help=argparse.SUPPRESS if hidden else text)
            continue
        conv: Callable[[str], object] = str
        if kind in ("int", "float"):
            conv = _positive(int if kind == "int" else float, float(o["lo"]), float(o["hi"]))  # type: ignore[arg-type]
        p.add_argument(name, dest=str(o["field"]), type=conv,
                       default=int(default) if kind == "int" else  # type: ignore[call-overload]
                       float(default) if kind == "float" else default,  # type: ignore[arg-type]
                       help=argparse.SUPPRESS if hidden else f"{text} (default {default})")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    p.add_argument("--bench", action="append", help="only these benchmarks (e.g. latency,bw)")
    p.add_argument("--mpi", action="append", help="only these implementations (e.g. openmpi)")
    p.add_argument("--np", action="append", help="only these process counts (e.g. 2)")
    p.add_argument("--all", action="store_true",
                   help="every stored run, not only the newest per configuration")
    p.add_argument("--mode", type=_mode,
                   help="which machine mode's records (core-to-core cache-line floor): "
                        "'dominant' (default: the mode most records were measured in), a "
                        "label such as floor~50ns, or 'all'")


def make_parser() -> Parser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = Parser(prog="commscope", formatter_class=fmt,
               description="Measure how fast MPI communicates here, store it, show it.",
               epilog="example: commscope run --bench latency,bw --mpi openmpi,mpich --np 2")
    p.add_argument("--version", action="version", version=f"commscope {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)

    r = sub.add_parser("run", help="run a sweep and store it", formatter_class=fmt,
                       epilog="example: commscope run --bench latency --bench bw "
                              "--mpi openmpi --mpi mpich --np 2 --sizes 1:4M --db my.db")
    r.add_argument("--bench", action="append",
                   help="benchmarks or groups (p2p, loggp, coll, coll-sends, all), "
                        "repeatable or comma-separated (default: p2p)")
    r.add_argument("--mpi", action="append",
                   help="implementations by name or mpicc path (default: all found)")
    r.add_argument("--cc", action="append",
                   help="C compilers the wrappers drive instead of their own, each a "
                        "configuration of its own (e.g. --cc gcc,clang)")
    r.add_argument("--np", action="append", help="process counts (default 2; e.g. --np 2,4)")
    r.add_argument("--cluster", action="append",
                   help="where: local (default), hostfile:PATH, slurm, slurm:mpirun or "
                        "emu:NAME; repeat to run the sweep on several side by side")
    r.add_argument("--nodes", action="append",
                   help="nodes to spread the ranks over (default: one rank per node, as many "
                        "nodes as the cluster has)")
    r.add_argument("--ppn", action="append",
                   help="processes per node; np = nodes x ppn (instead of --np)")
    r.add_argument("--for", dest="for_", action="append", metavar="APP,PARAMS",
                   help="measure what predicting an application needs: the application at "
                        "these parameters and every benchmark its phases are predicted from, "
                        "up to the largest message, with cold buffers for data that comes "
                        "from memory (e.g. --for matmul,N=2000,4000 or --for "
                        "'summa,N=4000;nb=128'); then see analyze predict")
    r.add_argument("--repeat", type=_positive(int, 1, 1000), default=1,
                   help="independent repetitions of every job, run in interleaved rounds whose "
                        "order changes; figures are medians over them with a between-run "
                        "interval (e.g. --repeat 3)")
    r.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    r.add_argument("--timeout", type=_positive(float, 1, 86400), default=None,
                   help="seconds before a job is killed (default: from sizes and --time-cap)")
    _core_run_options(r)
    r.add_argument("--transport", action="append",
                   help="mpi (default), chan or chan-cma: Chai, Hartono and Panda's intra-node "
                        "channel design, bootstrapped by the MPI (e.g. --transport mpi,chan)")
    r.add_argument("--path", action="append",
                   help="where the buffers live and what moves them: host (default), staged, "
                        "staged-pageable, staged-pipelined (--stage-chunk), cuda-aware, ipc, "
                        "nccl, or all (every path; those this "
                        "machine cannot run are recorded as skipped) (e.g. --path host,staged)")
    r.add_argument("--resume", action="store_true",
                   help="skip jobs whose results are already stored")
    r.add_argument("--advise-budget", type=_positive(float, 1, 86400), default=60.0,
                   help="seconds for measuring, after the sweep, the fix of each conclusion "
                        "whose cause is a setting (e.g. --advise-budget 120; default 60)")
    r.add_argument("--no-advise", action="store_true",
                   help="conclude without measuring any fix (the conclusions say how to)")
    r.add_argument("--retry-noisy", type=_positive(int, 0, 10), default=0,
                   help="re-run a job up to N times while records are flagged noisy")
    r.add_argument("--noise-max-cores", type=_positive(float, 0, 1024), default=0.10,
                   help="flag records when others used more than this many cores (default 0.1)")
    r.add_argument("--quiet", action="store_true", help="no progress and no summary table")
    r.add_argument("--settings", metavar="FILE",
                   help="NAME=VALUE lines of MPI settings (e.g. from commscope tune --write), "
                        "applied to every job and read back inside it; a setting not taken "
                        "fails the job")
    r.add_argument("--no-probe", action="store_true",
                   help="do not take the machine probe (about half a second) at the start")

    s = sub.add_parser("show", help="print stored results as tables", formatter_class=fmt,
                       epilog="example: commscope show --db my.db --bench latency")
    _filters(s)
    s.add_argument("--runs", action="store_true", help="list runs with their status instead")
    s.add_argument("--per-node", action="store_true",
                   help="bandwidth per machine: per-process MB/s x processes per node "
                        "(as the UMBC cluster report does)")

    e = sub.add_parser("export", help="write stored results as CSV or JSON", formatter_class=fmt,
                       epilog="example: commscope export --db my.db --format csv > results.csv")
    _filters(e)
    e.add_argument("--format", choices=("csv", "json"), default="csv", help="csv or json")
    e.add_argument("--output", default="-", help="file to write (default stdout)")

    an = sub.add_parser("analyze", help="crossovers and findings from stored results",
                        formatter_class=fmt, epilog="example: commscope analyze crossover")
    asub = an.add_subparsers(dest="anacmd", metavar="ANALYSIS", parser_class=Parser)
    ac = asub.add_parser("crossover",
                         help="collectives against equivalent sends (the commodity-cluster study)",
                         epilog="example: commscope analyze crossover --db my.db --np 4")
    _filters(ac)
    af = asub.add_parser("findings", help="what the data shows, each with its records",
                         epilog="example: commscope analyze findings --db my.db --limit 5")
    _filters(af)
    af.add_argument("--limit", type=_positive(int, 0, 100000), default=10,
                    help="show the N findings that save most (default 10; 0: all)")
    ag = asub.add_parser("guidelines", help="collectives slower than a composition of others "
                         "that does the same job, or slower on a smaller message",
                         epilog="example: commscope analyze guidelines --db my.db --np 4")
    _filters(ag)
    ap_ = asub.add_parser("predict", help="each application phase predicted from the models "
                          "of the same configuration, against its measurement",
                          epilog="example: commscope analyze predict --db my.db --np 2")
    _filters(ap_)
    ft = sub.add_parser("fit", help="fit Hockney and LogGP models and store them",
                        epilog="example: commscope fit --db my.db --model hockney --bench latency")
    _filters(ft)
    ft.add_argument("--model", choices=("hockney", "loggp", "all"), default="all",
                    help="which model (default all)")

    rp = sub.add_parser("report", help="write a self-contained HTML report",
                        epilog="example: commscope report --db my.db --out report/")
    _filters(rp)
    rp.add_argument("--out", default="report", help="folder to write (default ./report)")
    rp.add_argument("--compare-a", help="add a comparison: set A (e.g. mpi=openmpi)")
    rp.add_argument("--compare-b", help="and set B (e.g. mpi=mpich)")
    rp.add_argument("--factor", type=_positive(float, 1.0, 100.0), default=1.05,
                    help="minimum change factor of the comparison (default 1.05)")
    cp = sub.add_parser("compare", help="compare two runs or sets; exit 1 on a regression",
                        epilog="example: commscope compare --db my.db --a run=3 --b run=7")
    cp.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    cp.add_argument("--a", required=True, help="baseline: run=ID[,ID], sweep=ID, mpi=NAME, "
                                               "cluster=NAME")
    cp.add_argument("--b", required=True, help="candidate, same forms as --a")
    cp.add_argument("--factor", type=_positive(float, 1.0, 100.0), default=1.05,
                    help="smallest change that counts (default 1.05 = 5%%; single runs "
                         "need 2x)")
    cp.add_argument("--format", choices=("text", "json"), default="text",
                    help="text (default) or json, for CI")

    tu = sub.add_parser("tune", help="search settings that make an implementation faster "
                        "here, decided over interleaved rounds", formatter_class=fmt,
                        epilog="example: commscope tune --mpi openmpi --bench bw --sizes 64K:4M "
                               "--write tuned.env")
    tu.add_argument("--mpi", required=True, help="the implementation to tune (one)")
    tu.add_argument("--bench", action="append", help="what to make faster (default bw)")
    tu.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    tu.add_argument("--rounds", type=_positive(int, 3, 50), default=4,
                    help="interleaved rounds of every candidate and the default (default 4)")
    tu.add_argument("--extra-rounds", type=_positive(int, 0, 50), default=4,
                    help="more rounds, after --rounds, for the default and the candidates "
                         "still close (a gain whose interval reaches 1), while --budget "
                         "allows (default 4)")
    tu.add_argument("--budget", type=_positive(float, 1, 86400), default=900.0,
                    help="seconds the search may take at most; a larger plan is refused "
                         "before it starts (default 900)")
    tu.add_argument("--candidates", action="append", metavar="FILE",
                    help="settings files of your own to try besides the built-in space")
    tu.add_argument("--validate", default="none",
                    help="after the search, the winner against the default on this "
                         "application's end-to-end time: matmul, jacobi or none (default)")
    tu.add_argument("--validate-param", default="N=1000",
                    help="the application's parameters for --validate (default N=1000)")
    tu.add_argument("--write", metavar="FILE", help="write the winning settings here")
    tu.add_argument("--apply", action="store_true",
                    help="print only the winner's export lines (for eval)")
    tu.add_argument("--timeout", type=_positive(float, 1, 86400),
                    help="seconds before one job is killed")
    tu.add_argument("--noise-max-cores", type=_positive(float, 0, 1024), default=0.10,
                    help="flag records when others used more than this many cores")
    tu.add_argument("--quiet", action="store_true", help="no progress")
    _core_run_options(tu)

    pr = sub.add_parser("probe", help="this machine's own figures, without MPI",
                        formatter_class=fmt,
                        epilog="example: commscope probe --cpus 0-3 --json")
    pr.add_argument("--db", default="commscope.db", help="store file (default ./commscope.db)")
    pr.add_argument("--no-store", action="store_true", help="print only, store nothing")
    pr.add_argument("--json", action="store_true", help="the probe's JSON")
    pr.add_argument("--cpus", help="the cores to measure between (default: every core this "
                                   "process may use), e.g. 0-3,8")
    pr.add_argument("--pair-ms", type=_positive(float, 0.1, 10000), default=40.0,
                    help="milliseconds of cache-line bounces per pair of cores (default 40)")

    m = sub.add_parser("mpi", help="find, describe and add MPI implementations",
                       formatter_class=fmt, epilog="example: commscope mpi list")
    msub = m.add_subparsers(dest="mpicmd", metavar="ACTION", parser_class=Parser)
    ml = msub.add_parser("list", help="describe every implementation found",
                         epilog="example: commscope mpi list --json")
    ml.add_argument("--json", action="store_true", help="machine-readable output")
    ma = msub.add_parser("add", help="add an implementation by the path of its mpicc",
                         epilog="example: commscope mpi add /opt/mpich/bin/mpicc --name mpich42")
    ma.add_argument("mpicc", help="path of the implementation's mpicc")
    ma.add_argument("--name", help="name to use in --mpi (default: FAMILY-user)")
    mi = msub.add_parser("install", help="install a PyPI build of an MPI into a prefix of "
                         "its own and build the core with it",
                         epilog="example: commscope mpi install mpich5 impi")
    mi.add_argument("names", nargs="+", metavar="NAME",
                    help=f"any of: {', '.join(discovery.KNOWN)}, or all")
    mi.add_argument("--version", help="an exact release (default: the newest of the series)")
    mi.add_argument("--wheels", metavar="DIR", help="install from the wheels in DIR, "
                    "without an index (offline)")
    mi.add_argument("--force", action="store_true", help="reinstall over an installed one")
    mr = msub.add_parser("remove", help="uninstall an installed implementation, or forget a "
                         "user-added one", epilog="example: commscope mpi remove mpich42")
    mr.add_argument("name")

    dr = sub.add_parser("doctor", help="check a cluster is ready for a sweep: hosts reached "
                        "without a password, the same core and MPI, records, TCP between pairs",
                        formatter_class=fmt,
                        epilog="example: commscope doctor --cluster hostfile:hosts --mpi openmpi")
    dr.add_argument("--cluster", required=True,
                    help="hostfile:PATH, slurm (inside an allocation) or emu:NAME")
    dr.add_argument("--mpi", help="the implementation to check (default: the first found)")
    dr.add_argument("--db", help="the store the sweep will write (its folder must be writable)")
    dr.add_argument("--timeout", type=_positive(float, 1, 600), default=20.0,
                    help="seconds each remote command and each ping may take (default 20)")
    dr.add_argument("--json", action="store_true", help="the checks as JSON")

    cl = sub.add_parser("cluster", help="emulated clusters of this machine (root)",
                        formatter_class=fmt)
    clsub = cl.add_subparsers(dest="clcmd", metavar="ACTION", parser_class=Parser)
    cu = clsub.add_parser("up", help="make N nodes: namespaces joined by shaped links",
                          epilog="example: commscope cluster up --nodes 2 --link 1gbit --name a")
    cu.add_argument("--nodes", type=_positive(int, 1, emu_mod.MAX_NODES), required=True,
                    help="number of nodes")
    cu.add_argument("--link", default="unshaped", choices=list(emu_mod.PROFILES),
                    help="link profile (default unshaped)")
    cu.add_argument("--name", help="cluster name: a letter, then letters or digits "
                                   "(default emu1, emu2, ...)")
    cd = clsub.add_parser("down", help="kill what runs inside, delete the namespaces",
                          epilog="example: commscope cluster down a")
    cd.add_argument("names", nargs="+", metavar="NAME")
    cls = clsub.add_parser("list", help="emulated clusters that exist",
                           epilog="example: commscope cluster list --json")
    cls.add_argument("--json", action="store_true", help="machine-readable output")

    sl = sub.add_parser("slurm", help="Slurm helpers", formatter_class=fmt)
    slsub = sl.add_subparsers(dest="slcmd", metavar="ACTION", parser_class=Parser)
    ss = slsub.add_parser("script", help="write an sbatch script for a sweep",
                          epilog="example: commscope slurm script --nodes 2 --ppn 1 --out "
                                 "sweep.sh -- --bench latency,bw --mpi openmpi")
    ss.add_argument("--nodes", type=_positive(int, 1, 100000), required=True)
    ss.add_argument("--ppn", type=_positive(int, 1, 100000), default=1,
                    help="processes per node (default 1)")
    ss.add_argument("--time", type=_positive(int, 1, 100000), default=30,
                    help="time limit in minutes (default 30)")
    ss.add_argument("--partition", help="partition to submit to")
    ss.add_argument("--account", help="account to charge")
    ss.add_argument("--db", default=DEFAULT_DB, help="store file the job writes")
    ss.add_argument("--out", default="-", help="script file (default: standard output)")
    ss.add_argument("run_args", nargs=argparse.REMAINDER,
                    help="after --: options of `commscope run` for the sweep")

    b = sub.add_parser("build", help="build the core for implementations (cached)",
                       epilog="example: commscope build --mpi openmpi --force")
    b.add_argument("--mpi", action="append", help="implementations (default: all found)")
    b.add_argument("--cc", action="append", help="C compilers the wrappers drive instead of "
                   "their own (e.g. --cc clang)")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    return p


def _no_empty_values(argv: Sequence[str]) -> None:
    """An option given an empty value is a mistake (an unset shell
    variable), never a request for the default: refused, naming it."""
    for i, tok in enumerate(argv):
        if tok == "--":
            return
        if tok.startswith("--") and "=" in tok and not tok.split("=", 1)[1].strip():
            raise CommscopeError(f"{tok.split('=', 1)[0]} was given an empty value")
        if not tok.strip():
            before = argv[i - 1] if i and argv[i - 1].startswith("-") else "an argument"
            raise CommscopeError(f"{before} was given an empty value")


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    try:
        args = list(sys.argv[1:] if argv is None else argv)
        _no_empty_values(args)
        a = parser.parse_args(args)
        if a.cmd is None:
            parser.print_help()
            return 2
        name = a.cmd
        if name == "mpi":
            if a.mpicmd is None:
                raise CommscopeError("commscope mpi: choose an action: list, install, add "
                                     "or remove")
            name = f"mpi {a.mpicmd}"
        elif name in ("cluster", "slurm"):
            action = a.clcmd if name == "cluster" else a.slcmd
            if action is None:
                raise CommscopeError(f"commscope {name}: choose an action: "
                                     + ("up, down or list" if name == "cluster" else "script"))
            name = f"{name} {action}"
        elif name == "analyze":
            if a.anacmd is None:
                raise CommscopeError("commscope analyze: choose crossover, findings, "
                                     "guidelines or predict")
            name = f"analyze {a.anacmd}"
        return COMMANDS[name](a)
    except CommscopeError as exc:
        # a value the user typed may hold control characters: shown escaped,
        # never acted out on the terminal
        msg = "".join(ch if ch.isprintable() or ch in "\n\t" else repr(ch)[1:-1]
                      for ch in str(exc))
        print(f"commscope: error: {msg}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("commscope: interrupted; finished jobs are stored", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped (show | head): the end of output
        try:  # what is still buffered goes nowhere, not into a second error at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as exc:  # a bug: one line, and how to see the trace
        if os.environ.get("COMMSCOPE_DEBUG"):
            raise
        print(f"commscope: internal error: {type(exc).__name__}: {exc} (rerun with "
              "COMMSCOPE_DEBUG=1 for the trace, and report it)", file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
