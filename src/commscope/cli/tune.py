"""commscope tune: settings searched over interleaved rounds, the winner
written as a selection file (advise/tune_workflow.py does it)."""

from __future__ import annotations

import argparse
import sys

from ..measure.plan import CoreOptions, run_options
from .common import command, listed


@command("tune")
def cmd_tune(a: argparse.Namespace) -> int:
    from ..advise import tune_workflow

    opts = CoreOptions(**{str(o["field"]): getattr(a, str(o["field"])) for o in run_options()})
    ask = tune_workflow.Request(
        mpi=a.mpi, benches=listed(a.bench), opts=opts, db=a.db, rounds=a.rounds,
        extra_rounds=a.extra_rounds, budget_s=a.budget, timeout_s=a.timeout,
        noise_max_cores=a.noise_max_cores, validate=a.validate,
        validate_param=a.validate_param, write=a.write, candidates=listed(a.candidates),
        quiet=a.quiet, apply=a.apply, argv=sys.argv)
    return tune_workflow.workflow(ask, say=print, warn=lambda line: print(line, file=sys.stderr))
