"""`commscope tune` from what it was asked to what it hands over: every input
judged before the first job, the implementation's own variables and
algorithms read, the search (search.py), the winner or the collectives'
per-size choices in the implementation's own file (checked in a real job
first), what is handed over measured together and validated on an
application, and the files written (tune_text.py words them)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import discovery
from ..measure import settings as settings_mod
from ..measure.plan import CoreOptions, expand, plan_check
from ..measure.progress import Progress
from ..measure.runner import NoisePolicy
from ..store import outputs
from ..store.db import Store
from ..store.sizes import expand_sizes
from . import search, selection, tune_text


@dataclass(frozen=True)
class Request:
    """What `commscope tune` was asked, as plain values."""

    mpi: str  # the implementation to tune (one)
    benches: Sequence[str]  # what to make faster (none given: bw)
    opts: CoreOptions
    db: str
    rounds: int
    extra_rounds: int
    budget_s: float
    timeout_s: float | None  # one job's; None: from the search's sizes
    noise_max_cores: float
    validate: str  # an application to validate what is handed over on, or "none"
    validate_param: str
    write: str | None  # the settings file to write
    candidates: Sequence[str]  # settings files of the user's, tried besides
    quiet: bool
    apply: bool  # say only the export lines
    argv: Sequence[str]


def workflow(r: Request, *, say: Callable[[str], None], warn: Callable[[str], None]) -> int:
    """The search, its report and the settings handed over, said as they
    come (`say`: the output; `warn`: a note besides it).  The exit status:
    1 where a selection file the implementation did not take was left out."""
    started = time.monotonic()
    opts = r.opts
    expand_sizes(opts.sizes, opts.factor)
    (impl,) = discovery.select([r.mpi])
    core = build_mod.build(impl)
    benches = list(r.benches) or ["bw"]
    expand([core], benches, [2], opts)  # unknown benchmarks, ranks, roots: before any launch
    if r.validate != "none" and (r.validate not in core.bench_names()
                                 or not core.bench(r.validate).get("size_param")):
        raise CommscopeError(f"--validate takes an application (matmul, jacobi) or none, "
                             f"not {r.validate}")
    if r.validate != "none":  # the application's values, by the core's own rules
        plan_check(expand([core], [r.validate], [2], replace(opts, param=r.validate_param)))
    if r.write:  # where the result goes, and the files beside it: before the search
        for p in (r.write, str(Path(r.write).with_suffix(".rules")),
                  str(Path(r.write).with_suffix(".json"))):
            outputs.target(p, "tune --write", r.db)
    given = [search.Candidate(settings_mod.parse_file(f), f"from {f}") for f in r.candidates]
    store = Store(r.db)
    # the first job: every input was judged above
    cvars = search.read_cvars(core)
    mpich = None
    if impl.family == "intel":
        algorithms = search.intel_algorithms(core, [b for b in benches if b in search.COLLS])
    elif (impl.family == "mpich" and impl.variant != "mvapich2"  # MVAPICH2: its own tables
          and any(b in search.COLLS for b in benches)):
        mpich = selection.mpich_library(core.exe, impl.env)
        algorithms = dict(mpich.algorithms)
    else:
        algorithms = None
    cands = search.space(core, cvars, benches, algorithms) + given
    if not cands:
        raise CommscopeError(f"no setting to search for {impl.name} and "
                             f"{', '.join(benches)} (add your own with --candidates FILE)")
    policy = NoisePolicy(max_other_cores=r.noise_max_cores, retries=0)
    progress = Progress(0, enabled=not r.quiet and not r.apply)
    timeout = r.timeout_s or 3 * search.estimate_s(opts, benches) + 30
    outcomes = search.search(core, benches, opts, cands, store, rounds=r.rounds,
                           budget_s=r.budget_s, argv=r.argv, timeout_s=timeout, policy=policy,
                           progress=progress, extra_rounds=r.extra_rounds)
    w = search.best(outcomes)
    text = tune_text.settings_text(w, core) if w is not None else None
    choices = selection.choices(outcomes, cvars, impl.family)
    side = None  # the implementation's own file of per-size choices
    mv2 = False  # MVAPICH2's per-size ranges, in the settings themselves
    if choices and impl.family == "intel":
        text = tune_text.with_selection(w, selection.intel_adjust(choices),
                                        "Intel MPI's I_MPI_ADJUST syntax", core)
    elif choices and r.write and impl.family == "openmpi":
        # each algorithm over the sizes it won, in a file beside the
        # settings, instead of one forced everywhere
        side = Path(r.write).with_suffix(".rules")
        outputs.write_text(side, selection.openmpi_rules(choices, 2, core.impl.name))
        text = tune_text.with_rules(w, side, core)
    elif choices and r.write and mpich is not None:
        side = Path(r.write).with_suffix(".json")
        outputs.write_text(side, selection.mpich_json(choices, mpich, cvars))
        text = tune_text.with_selection(w, [(selection.MPICH_JSON_CVAR, str(side.resolve()))],
                                        str(side), core)
    elif choices and impl.variant == "mvapich2":
        lines, left = selection.mvapich2_tuning(outcomes, choices, w)
        for why in left:
            say(f"no per-size table for {why}")
        if lines:
            text = tune_text.with_selection(w, lines, "MVAPICH2's MV2_*_TUNING ranges (its "
                                            "indexed tables off for those collectives)", core)
            mv2 = True
    rc = 0
    if (side is not None or mv2) and text:
        # the file, as written, in a real job before it is handed over
        chk = search.check_settings(core, sorted({c.coll for c in choices}), opts,
                                  settings_mod.parse_text(text), store, argv=r.argv,
                                  timeout_s=timeout, policy=policy)
        if not chk.ok:
            what = side if side is not None else "its per-size tables"
            warn(f"commscope: {impl.name} did not take {what} in a check job ({chk.reason}); "
                 "the settings leave it out")
            side, mv2, rc = None, False, 1
            text = tune_text.settings_text(w, core) if w is not None else None
    # what the user is handed: the per-size file and the best winner besides
    handed = search.Candidate(settings_mod.parse_text(text) if text else (),
                            "the settings handed over")
    kind = {"openmpi": "Open MPI's rules file", "mpich": "MPICH's selection file"}.get(
        impl.family, "")
    if r.apply:
        if text:
            say("\n".join(x for x in text.splitlines() if x.startswith("export ")))
        if choices and not r.write and kind:
            say(f"# collective algorithms won per size range: add --write FILE for {kind}")
        return rc
    say(tune_text.report(core, outcomes, r.rounds, r.extra_rounds).removesuffix("\n"))
    if (side is not None or mv2) and text:
        # the per-size choices and the best winner besides were measured
        # apart: measure what is handed over, together
        say(tune_text.together_text(search.together(
            core, benches, opts, handed.settings, store, rounds=r.rounds,
            budget_s=r.budget_s - (time.monotonic() - started), argv=r.argv, timeout_s=timeout,
            policy=policy, progress=progress)).removesuffix("\n"))
    if not text and r.validate != "none":
        say(f"nothing to validate on {r.validate}: no candidate won")
    if text and r.validate != "none":
        # what the user is handed, not only the best single candidate
        say(f"validating {handed.label} against the default on {r.validate}")
        es = search.validate(core, handed, r.validate, r.validate_param, opts, store,
                           rounds=r.rounds, argv=r.argv, timeout_s=max(timeout, 300.0),
                           policy=policy, progress=progress)
        for e in es:
            verdict = ("faster" if e.wins else "slower" if e.loses
                       else "not told apart from the default")
            say(f"validated on {e.bench} {r.validate_param}: end-to-end time "
                f"default/tuned {e.ratio:.2f} [{e.lo:.2f}, {e.hi:.2f}] over {e.n} rounds: "
                f"{verdict}")
    if text and r.write:
        outputs.write_text(Path(r.write), text)
        say(f"settings written to {r.write} (commscope run --settings {r.write})")
        if side is not None:
            say(f"collective algorithms per size range in {side}, {kind} it names (taken in "
                "a check job)")
        elif mv2:
            say("collective algorithms per size range in its MV2_*_TUNING ranges (taken in a "
                "check job)")
    store.close()
    return rc
