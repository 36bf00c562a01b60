"""Facts about the machine and the code that go with every run."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path

from .. import __version__
from ..store.config import NOT_SETTINGS

# Environment variables that change how an MPI behaves; recorded per run.
ENV_PREFIXES = ("OMPI_", "PMIX_", "PRTE_", "MPICH_", "MPIR_", "HYDRA_", "UCX_", "I_MPI_", "FI_",
                "SLURM_", "CUDA_VISIBLE")
ENV_HIDE = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
# Of those, the ones a user sets to change behaviour: part of a run's
# configuration (a job id or a launcher's private variable is not).
SETTING_PREFIXES = ("OMPI_MCA_", "UCX_", "MPIR_CVAR_", "MPICH_", "MV2_", "I_MPI_", "FI_", "NCCL_",
                    "COMMSCOPE_BIND")


def settings(env: dict[str, str] | None = None) -> dict[str, str]:
    """The behaviour-changing settings in an environment (the user's own)."""
    env = dict(os.environ) if env is None else env
    return {k: v for k, v in sorted(env.items())
            if k.startswith(SETTING_PREFIXES) and k not in ENV_HIDE and k not in NOT_SETTINGS}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def n_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def git_rev() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    rev = out.stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, timeout=5, check=False,
    )
    return rev + ("+dirty" if dirty.stdout.strip() else "")


def relevant_env(env: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items())
            if k.startswith(ENV_PREFIXES) and k not in ENV_HIDE}


def machine() -> dict[str, object]:
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "n_cores": n_cores(),
        "kernel": platform.release(),
        "commscope_version": __version__,
        "git_rev": git_rev(),
    }
