"""commscope run: a sweep planned from the options (--for: what analyze
predict needs), run, stored, summed up, and its conclusions' fixes
measured."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..analysis.repeats import aggregate
from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import cluster as cluster_mod
from ..measure import probe as probe_mod
from ..measure import provenance
from ..measure import settings as settings_mod
from ..measure.plan import (
    PATHS,
    CoreOptions,
    Job,
    cuda_aware_forced,
    expand,
    gpu_path_runs,
    gpu_standin,
    param_variants,
    placements,
    plan_check,
    resolve_benches,
    run_options,
)
from ..measure.progress import Progress
from ..measure.runner import NoisePolicy, run_sweep
from ..report.tables import tables
from ..store.core_facts import choices as option_choices
from ..store.core_facts import listing as bench_listing
from ..store.db import Store
from ..store.sizes import expand_sizes
from . import screen
from .common import command, ints, listed, named_impls


@command("run")
def cmd_run(a: argparse.Namespace) -> int:
    benches = listed(a.bench)
    if benches == ["list"]:  # what there is to run, before anything is built
        sys.stdout.write(bench_listing())
        return 0
    nps = ints(a.np, "--np")
    opts = CoreOptions(**{str(o["field"]): getattr(a, str(o["field"])) for o in run_options()})
    expand_sizes(opts.sizes, opts.factor)  # bad sizes fail before anything is built
    clusters = [cluster_mod.parse(c) for c in listed(a.cluster) or ["local"]]
    nodes, ppns = ints(a.nodes, "--nodes"), ints(a.ppn, "--ppn")
    places = {c.label: placements(c, nps, nodes, ppns) for c in clusters}
    impls = named_impls(a)
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
    transports = listed(a.transport) or ["mpi"]
    for t in transports:
        if t not in option_choices("transport"):
            raise CommscopeError(f"unknown transport '{t}' "
                                 f"({', '.join(option_choices('transport'))})")
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
    plan_check(jobs)
    series = [replace(j, settings=settings, strict=strict) for cl in clusters
              for j in _for_series(fors, cores, opts, cl, places[cl.label])]
    plan_check(series)  # cold pools are memory too
    jobs += series
    store = Store(a.db)
    policy = NoisePolicy(max_other_cores=a.noise_max_cores, retries=a.retry_noisy)
    progress = Progress(len(jobs) * a.repeat, enabled=not a.quiet, name="sweep")
    # the probe describes this machine: where every rank runs on it
    here = not a.no_probe and all(c.kind in ("local", "emu") for c in clusters)
    outcomes = run_sweep(jobs, store, argv=sys.argv, resume=a.resume, timeout_s=a.timeout,
                         policy=policy, progress=progress, repeat=a.repeat,
                         probe=(lambda: probe_mod.run(pair_ms=20.0)) if here else None)
    if not a.quiet:
        ids = [o.run_id for o in outcomes if o.status == "ok"] or [o.run_id for o in outcomes]
        if ids:
            agg = aggregate(store.result_rows(run_ids=ids), mode="dominant")
            if a.show:
                print(tables(agg), end="")
            else:
                print(f"the sweep's tables: commscope show --db {shlex.quote(str(a.db))}")
            print(screen.headline(store, agg), end="")
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
    core's rules (plan_check) first: they are planned with."""
    from ..analysis import predict
    from ..analysis.apps import parse_params

    llc = probe_mod.l3_bytes() if cl.kind in ("local", "emu") else None
    lo = expand_sizes(opts.sizes, opts.factor)[0]
    largest: dict[tuple[int, str], dict[str, int]] = {}  # (ranks, buffers) -> bench -> bytes
    for pl in places:
        for app, spec, ns in fors:
            for pv in param_variants(spec, cores[0]):
                for need in predict.needs(app, ns, pl.np, parse_params(pv), llc):
                    got = largest.setdefault((need.np, need.buffers), {})
                    got[need.bench] = max(got.get(need.bench, 0), need.up_to)
    jobs: list[Job] = []
    for (np_, buffers), benches in sorted(largest.items()):
        where = placements(cl, [np_], [], [])[0]
        for up in sorted(set(benches.values())):
            first, top, factor = _for_sizes(lo, up, opts.factor)
            jobs += expand(cores, [b for b, u in benches.items() if u == up], [], replace(
                opts, sizes=f"{first}:{top}", factor=factor,
                buffers=buffers), cl, [where])
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
    """The diagnosis of the sweep (advise/diagnose.py): its candidate gaps
    confirmed, explained and their settings checked, within --advise-budget."""
    from ..advise import diagnose
    from ..analysis import conclude, findings
    from ..analysis.series import collect

    ids = [o.run_id for o in outcomes if o.status == "ok"]
    if not ids or a.advise_budget <= 0:
        return
    rows = aggregate(store.result_rows(run_ids=ids), mode="dominant")
    series = collect(rows)
    found, _ = findings.explained(store, series, ids, screen=True)
    sweep = store.sweep_of(ids[0])
    width = screen.width()

    def say(m: str) -> None:
        """The diagnosis's steps, a line each at most the width (the whole
        of each: commscope analyze findings --details)."""
        if not a.quiet:
            print("\n".join(conclude.fit_line(x, width) for x in m.split("\n")))

    t0 = time.monotonic()
    d = diagnose.diagnose(store, [sweep] if sweep is not None else [], found, series,
                          {c.impl.name: c for c in cores}, budget_s=a.advise_budget,
                          out_dir=Path(a.db).resolve().parent / "advice", policy=policy,
                          progress=Progress(0, enabled=not a.quiet and sys.stderr.isatty(),
                                            failures=False),
                          say=say)
    say(f"diagnosis: {d.status} in {time.monotonic() - t0:.0f} s (--advise-budget "
        f"{a.advise_budget:g} s); {len(conclude.conclusions(d, None))} conclusion(s)")
    # the last thing on the screen: what the diagnosis established (the
    # details, and what the sweep screened: commscope analyze findings)
    # each conclusion in two lines at most, to the terminal's width (100 under a pipe)
    say("\n" + screen.conclusions(d, width).rstrip("\n"))


def _paths(given: list[str] | None, cores: Sequence[build_mod.Core],
           clusters: Sequence[cluster_mod.Cluster]) -> list[tuple[str, bool]]:
    """The GPU paths asked for, each with whether it came from 'all' (a
    sweep over every path: one this machine cannot run is recorded as
    skipped, with the reason).  A path named explicitly where this machine
    has no GPU is refused before any launch, with the driver's reason."""
    names = listed(given) or ["host"]
    out: list[tuple[str, bool]] = []
    for n in names:
        if n == "all":
            out += [(p, True) for p in PATHS if (p, False) not in out]
        elif n in PATHS:
            out.append((n, False))
        else:
            raise CommscopeError(f"unknown --path '{n}' ({', '.join(PATHS)} or all)")
    explicit = [p for p, every in out if p != "host" and not every]
    if "cuda-aware" in explicit and not gpu_standin() and not cuda_aware_forced():
        for core in cores:  # how the library was built: the same on every node
            support = build_mod.gpu_info(core).get("mpi_cuda_support")
            if isinstance(support, dict) and not support.get("compile_time"):
                which = core.mpi_version.splitlines()[0] if core.mpi_version else core.impl.mpicc
                raise CommscopeError(
                    f"--path cuda-aware: {core.impl.name} ({which}) was built without CUDA "
                    "support (its MPIX_CUDA_AWARE_SUPPORT is 0): build one with `commscope mpi "
                    "install openmpi-cuda`, add the site's with "
                    "`commscope mpi add PATH/TO/mpicc`, or set COMMSCOPE_FORCE_CUDA_AWARE=1 "
                    "to try anyway")
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

