"""commscope run: a sweep planned from the options (--for: what analyze
predict needs), run, stored, summed up, and its conclusions' fixes
measured."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..analysis import predict
from ..analysis.repeats import aggregate
from ..measure import build as build_mod
from ..measure import cluster as cluster_mod
from ..measure import probe as probe_mod
from ..measure import provenance
from ..measure.plan import (
    CoreOptions,
    Request,
    build_plan,
    parse_for,
    placements,
    run_options,
)
from ..measure.progress import Progress
from ..measure.runner import NoisePolicy, run_sweep
from ..report.tables import tables
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
    given = frozenset(k for k in ("bench", "path", "transport") if getattr(a, k))
    plan = build_plan(Request(
        cores, benches, opts, clusters, places, paths=listed(a.path),
        transports=listed(a.transport), settings=tuple(provenance.settings().items()),
        settings_file=a.settings, given=given,
        fors=[parse_for(x, cores[0]) for x in a.for_ or []]), needs=predict.needs)
    jobs = plan.jobs
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
    skipped = [o for o in outcomes
               if o.status == "skipped" and o.job.opts.path not in plan.named_paths]
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


