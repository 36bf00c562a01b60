"""An sbatch script for a sweep, for users who submit rather than run."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence

from ...errors import CommscopeError


def sbatch_script(*, nodes: int, ppn: int, time_min: int, run_args: Sequence[str],
                  db: str, partition: str | None = None, account: str | None = None,
                  job_name: str = "commscope", python: str | None = None) -> str:
    """The script runs `commscope run --cluster slurm` inside the allocation
    it asks for; every value is quoted for the shell that reads it."""
    if nodes < 1 or ppn < 1 or time_min < 1:
        raise CommscopeError("--nodes, --ppn and --time must be at least 1")
    for a in run_args:
        if a in ("--cluster", "--nodes", "--ppn", "--np", "--db") or a.startswith(
                ("--cluster=", "--nodes=", "--ppn=", "--np=", "--db=")):
            raise CommscopeError(f"'{a}' is set by the script itself; give it to "
                                 "`commscope slurm script` instead")
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        "# written by `commscope slurm script`: one sweep in one allocation",
        f"#SBATCH --job-name={q(job_name)}",
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --ntasks-per-node={ppn}",
        f"#SBATCH --time={time_min}",
        "#SBATCH --output=commscope-%j.out",
    ]
    if partition:
        lines.append(f"#SBATCH --partition={q(partition)}")
    if account:
        lines.append(f"#SBATCH --account={q(account)}")
    cmd = [python or sys.executable, "-m", "commscope.cli", "run", "--cluster", "slurm",
           "--nodes", str(nodes), "--ppn", str(ppn), "--db", db, *run_args]
    lines += ["set -eu", "exec " + " ".join(q(c) for c in cmd), ""]
    return "\n".join(lines)
