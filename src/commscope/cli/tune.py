"""commscope tune: settings searched over interleaved rounds, the winner
written as a selection file."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import discovery
from ..measure import settings as settings_mod
from ..measure.runner import (
    CoreOptions,
    NoisePolicy,
    Progress,
    expand,
    run_options,
)
from ..store import outputs
from ..store.db import Store
from ..store.sizes import expand_sizes
from .common import command, listed
from .run import plan_check


@command("tune")
def cmd_tune(a: argparse.Namespace) -> int:
    from ..advise import selection, tune

    started = time.monotonic()
    opts = CoreOptions(**{str(o["field"]): getattr(a, str(o["field"])) for o in run_options()})
    expand_sizes(opts.sizes, opts.factor)
    (impl,) = discovery.select([a.mpi])
    core = build_mod.build(impl)
    benches = listed(a.bench) or ["bw"]
    expand([core], benches, [2], opts)  # unknown benchmarks, ranks, roots: before any launch
    if a.validate != "none" and (a.validate not in core.bench_names()
                                 or not core.bench(a.validate).get("size_param")):
        raise CommscopeError(f"--validate takes an application (matmul, jacobi) or none, "
                             f"not {a.validate}")
    if a.validate != "none":  # the application's values, by the core's own rules
        plan_check(expand([core], [a.validate], [2], replace(opts, param=a.validate_param)))
    if a.write:  # where the result goes, and the files beside it: before the search
        for p in (a.write, str(Path(a.write).with_suffix(".rules")),
                  str(Path(a.write).with_suffix(".json"))):
            outputs.target(p, "tune --write", a.db)
    given = [tune.Candidate(settings_mod.parse_file(f), f"from {f}")
             for f in listed(a.candidates)] if a.candidates else []
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
