"""commscope diagnose: the experiments `run` makes after a sweep, on a
stored sweep (analysis/diagnosis.py, advise/diagnose.py)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import CommscopeError
from ..store.db import Store
from .common import command


def diagnose_sweep(store: Store, sweeps: list[int], *, budget_s: float, out_dir: Path,
                   policy, quiet: bool, impls=None):
    """Diagnose stored sweeps: their records as the conclusions read them
    (the dominant machine mode), the cores of their implementations."""
    from ..advise import diagnose
    from ..analysis import findings
    from ..analysis.repeats import aggregate
    from ..analysis.series import collect
    from ..measure import build as build_mod
    from ..measure import discovery
    from ..measure.progress import Progress

    ids = store.clean_local_runs(sweeps)
    if not ids:
        raise CommscopeError(f"sweep {', '.join(map(str, sweeps))} has no run on this machine "
                             "that ended cleanly")
    rows = aggregate(store.result_rows(run_ids=ids), mode="dominant")
    series = collect(rows)
    found, _ = findings.explained(store, series, ids, screen=True)
    names = sorted({str(r["mpi_name"]) for r in rows})
    if impls is None:
        impls = discovery.select(names)
    cores = {m.name: build_mod.build(m) for m in impls if m.name in names}
    say = (lambda _: None) if quiet else print
    return diagnose.diagnose(store, sweeps, found, series, cores, budget_s=budget_s,
                             out_dir=out_dir, policy=policy,
                             progress=Progress(0, enabled=not quiet and sys.stderr.isatty()),
                             say=say)


@command("diagnose")
def cmd_diagnose(a: argparse.Namespace) -> int:
    from ..analysis import conclude
    from ..measure.runner import NoisePolicy

    store = Store(a.db, create=False)
    if a.sweep is None:
        last = store.last_local_sweep()
        if last is None:
            raise CommscopeError(f"no sweep in {a.db} ran on this machine: nothing to diagnose")
        sweeps = [last]
    else:
        sweeps = sorted(set(a.sweep))
        for s in sweeps:
            if not store.has_sweep(s):
                raise CommscopeError(f"no sweep {s} in {a.db}")
    t0 = time.monotonic()
    d = diagnose_sweep(store, sweeps, budget_s=a.budget,
                       out_dir=Path(a.db).resolve().parent / "advice",
                       policy=NoisePolicy(max_other_cores=a.noise_max_cores), quiet=a.quiet)
    if not a.quiet:
        print(f"diagnosis of sweep {', '.join(map(str, sweeps))}: {d.status} in "
              f"{time.monotonic() - t0:.0f} s\n")
    print(conclude.text(d, limit=None if a.details else conclude.LIMIT, details=a.details),
          end="")
    return 0
