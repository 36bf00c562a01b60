"""Shared fixtures: an isolated build cache and config, the MPIs found, and
their built cores (built once per session)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from commscope.measure import build, discovery, mpi, procs
from commscope.measure.build_cache import cache_dir

ROOT = Path(__file__).resolve().parent.parent
# The user's own cache, before the session swaps in one of its own: where an
# install of minutes (openmpi-cuda) is found, never made, by the tests.
USER_CACHE = cache_dir()


@pytest.fixture(scope="session", autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory):
    cache = tmp_path_factory.mktemp("cache")
    old = {k: os.environ.get(k) for k in ("COMMSCOPE_CACHE", "COMMSCOPE_CONFIG")}
    os.environ["COMMSCOPE_CACHE"] = str(cache)
    os.environ["COMMSCOPE_CONFIG"] = str(cache / "mpi.json")
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def impls() -> dict[str, mpi.MpiImpl]:
    found = {m.name: m for m in discovery.discover() if m.source == "debian"}
    if not found:
        pytest.skip("no Debian MPI installed (run `make install`)")
    return found


@pytest.fixture(scope="session")
def cores(impls: dict[str, mpi.MpiImpl]) -> dict[str, build.Core]:
    return {name: build.build(m) for name, m in impls.items()}


@pytest.fixture(scope="session")
def bare_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The core built without MPI (tests/helpers.core_without_mpi), once."""
    from tests.helpers import core_without_mpi

    return core_without_mpi(tmp_path_factory.mktemp("bare-core"))


def _ours(pid: int) -> bool:
    """Whether a process was started by this test session: its environment
    holds the session's own cache (every launcher passes the environment on:
    mpirun and Hydra to their ranks, srun to its steps, the emulated nodes'
    agent to theirs); a zombie, whose environment reads empty, where it is
    this process's child.  Another session's jobs (a second pytest worker, a
    user's sweep beside the tests) are not this one's leftovers, even where
    this process, a subreaper, adopted them."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
        with open(f"/proc/{pid}/stat", "rb") as f:
            ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    if not env:
        return ppid == os.getpid()
    mine = f"COMMSCOPE_CACHE={os.environ.get('COMMSCOPE_CACHE', '')}".encode()
    return mine in env.split(b"\0")


def shm_left(before: set[str]) -> set[str]:
    """Files in /dev/shm made since `before` that no live process maps: a
    job's shared memory left behind (a running job of another session, a
    second pytest worker's, maps its own)."""
    new = set(os.listdir("/dev/shm")) - before
    if not new:
        return set()
    mapped: set[str] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as f:
                mapped.update(line.rsplit("/dev/shm/", 1)[1].split(" ")[0].strip()
                              for line in f if "/dev/shm/" in line)
        except OSError:
            continue
    return {n for n in new if n not in mapped and os.path.exists(f"/dev/shm/{n}")}


def mpi_processes() -> list[str]:
    """Processes an MPI job of this session could leave behind.  A process
    that ended after its parent (a killed launcher, under load) is adopted
    by this one, the tests' subreaper, as a zombie: it is dead, and
    collected here first."""
    procs.reap_adopted()
    out = subprocess.run(["ps", "-eo", "pid,comm,stat,ppid"], capture_output=True,
                         text=True).stdout
    names = ("cs-core", "orted", "mpirun", "mpiexec", "hydra_pmi_proxy", "prterun")
    # state and parent in the line, so that a failure tells a dying or unreaped
    # process from a live one
    return [" ".join(line.split()) for line in out.splitlines()[1:]
            if any(line.split()[1].startswith(n) for n in names)
            and _ours(int(line.split()[0]))]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the MPIs or their built cores builds and launches
    for real: marked `mpi` with those that say so, so that `pytest -m "not
    mpi"` is the fast set (fixed data, golden outputs, errors) of a minute."""
    for item in items:
        if {"impls", "cores"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.mpi)
