"""A CUDA-aware Open MPI, built from Debian's source package.

No registry MPI is built with CUDA (docs/gpu.md says why a CUDA-enabled UCX
does not make one so), so the GPU studies' central comparison, staged
through host memory against CUDA-aware MPI, needs an MPI compiled here:
`commscope mpi install openmpi-cuda`.

- **Source.** Debian's `openmpi` source package (Open MPI 4.1.4 on Debian 12),
  fetched by `apt-get source --download-only` with a sources list of its own
  (a deb-src line beside the machine's Debian one), so that the machine's apt
  configuration is left as it was; or a tarball given with `--source`.
- **Build.** `configure --with-cuda=<the CUDA of the nvcc found>` into the
  prefix CACHE/mpi/openmpi-cuda, with its own hwloc, libevent and PMIx and
  without Fortran, OpenSHMEM, ROMIO, UCX, verbs or libfabric. It then needs
  only the C library and zlib: about 10 MiB that can be carried to a GPU
  machine, where OPAL_PREFIX relocates it.
- **Check.** `ompi_info` must say `mpi_built_with_cuda_support` is true, and
  the core built with it must read MPIX_CUDA_AWARE_SUPPORT at compile time
  (and, before MPI_Init, MPIX_Query_cuda_support: Open MPI 4.1 answers how it
  was built).
  Open MPI 4.1 loads libcuda when a job starts, so the build needs no driver.
  Whether device pointers really move is known only on a GPU, in a
  validated `--path cuda-aware` run.

Everything happens in a scratch folder under the cache, and the prefix counts
as installed only once its marker is written, after every check passed
(installs.py's rule)."""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CommscopeError
from . import build as build_mod
from .build_cache import file_sha256
from .procs import run_captured

DEBIAN_SOURCES = ("deb-src http://deb.debian.org/debian bookworm main\n")
FETCH_TIMEOUT_S = 300.0
CONFIGURE_TIMEOUT_S = 1200.0
MAKE_TIMEOUT_S = 3600.0

# Open MPI's configure: CUDA, and nothing that would tie the prefix to this
# machine's libraries or take build time for what commscope never uses.
CONFIGURE_FLAGS = (
    "--disable-mpi-fortran", "--disable-oshmem", "--disable-mpi-java", "--disable-io-romio",
    "--with-hwloc=internal", "--with-libevent=internal", "--with-pmix=internal",
    "--without-ucx", "--without-verbs", "--without-ofi", "--without-psm2",
    "--enable-mca-no-build=reachable-netlink",
)


@dataclass(frozen=True)
class SourceBuild:
    """What `commscope mpi install NAME` builds from source."""

    family: str
    package: str  # the Debian source package
    title: str


SOURCE_BUILDS: dict[str, SourceBuild] = {
    "openmpi-cuda": SourceBuild("openmpi", "openmpi",
                                "Open MPI from Debian's source package, built with CUDA"),
}


def cuda_root() -> Path:
    """The CUDA that the core's nvcc belongs to: Open MPI is built against
    the same."""
    compiler = build_mod.nvcc()
    if compiler is None:
        raise CommscopeError("openmpi-cuda is built against CUDA, and no nvcc was found "
                             "(install the CUDA toolkit, or unset COMMSCOPE_CUDA=0)")
    root = compiler.resolve().parent.parent
    if not (root / "include" / "cuda.h").exists():
        raise CommscopeError(f"{compiler} has no include/cuda.h beside it ({root}): not a "
                             "CUDA toolkit Open MPI can be built against")
    return root


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^(E:|error|configure: error|make.*Error|.*: error:)", ln, re.I):
            return ln[:300]
    return (lines[-1] if lines else "no output")[:300]


def _step(argv: list[str], what: str, timeout_s: float, log: Path, cwd: Path,
          env: dict[str, str] | None = None) -> str:
    """One step of the build, bounded; its output appended to the log."""
    got = run_captured(argv, timeout_s=timeout_s, env=env or dict(os.environ), cwd=str(cwd))
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(argv)}\n{got.out}{got.err}\n")
    if got.outcome.timed_out:
        raise CommscopeError(f"{what}: did not finish in {timeout_s:.0f} s (killed); see {log}")
    if got.outcome.exit_code != 0:
        raise CommscopeError(f"{what} failed: {_last_error(got.out + got.err)} (see {log})")
    return got.out


def fetch_debian_source(package: str, into: Path, log: Path) -> Path:
    """The upstream tarball of Debian's source package `package`, downloaded
    with apt's own client and a sources list of commscope's (the machine's
    apt configuration is not touched)."""
    if not shutil.which("apt-get"):
        raise CommscopeError("fetching Debian's source package needs apt-get; give a tarball "
                             "with --source instead")
    state = into / "apt"
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text(DEBIAN_SOURCES)
    opts = ["-o", f"Dir::Etc::SourceList={state / 'sources.list'}",
            "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root"]
    _step(["apt-get", *opts, "update", "-qq"], "apt-get update (Debian's source lists)",
          FETCH_TIMEOUT_S, log, into)
    _step(["apt-get", *opts, "source", "--download-only", package],
          f"apt-get source {package}", FETCH_TIMEOUT_S, log, into)
    found = sorted(into.glob(f"{package}_*.orig.tar.*"))
    if not found:
        raise CommscopeError(f"apt-get source {package} left no upstream tarball in {into}")
    return found[-1]


def _unpack(tarball: Path, into: Path) -> Path:
    """The tarball's one top folder, unpacked under `into` (members that
    would land outside it are refused)."""
    try:
        with tarfile.open(tarball) as tf:
            try:
                tf.extractall(into, filter="data")
            except TypeError:  # a Python before tarfile's filters (3.10.11, 3.11.3)
                root = into.resolve()
                for m in tf.getmembers():
                    where = (into / m.name).resolve()
                    if not (m.isfile() or m.isdir() or m.issym()) or (
                            root not in where.parents and where != root):
                        raise CommscopeError(f"{tarball}: {m.name} would land outside the "
                                             "build folder, or is not a file") from None
                tf.extractall(into)
    except (tarfile.TarError, OSError) as exc:  # tarfile's reason may run over lines
        why = " ".join(str(exc).split())
        raise CommscopeError(f"cannot unpack {tarball}: {why}") from exc
    tops = [d for d in into.iterdir() if d.is_dir() and (d / "configure").exists()]
    if len(tops) != 1:
        raise CommscopeError(f"{tarball} holds no Open MPI source tree (no configure script)")
    return tops[0]


def built_with_cuda(ompi_info_parsable: str) -> bool:
    """`ompi_info --parsable --all`'s answer: was this Open MPI built with
    CUDA support?"""
    m = re.search(r"^mca:(?:mpi|opal):base:param:(?:mpi|opal)_built_with_cuda_support:value:"
                  r"(\w+)$", ompi_info_parsable, re.M)
    return bool(m) and m.group(1) == "true"


def ompi_version(ompi_info_parsable: str) -> str:
    m = re.search(r"^ompi:version:full:(\S+)$", ompi_info_parsable, re.M)
    return m.group(1) if m else ""


def check_prefix(prefix: Path) -> dict[str, object]:
    """What the prefix's own ompi_info says: its version and CUDA support.
    Raised where it says no CUDA."""
    from .discovery import prefix_env  # discovery imports this module's table
    from .mpi import environ

    info = prefix / "bin" / "ompi_info"
    if not os.access(info, os.X_OK):
        raise CommscopeError(f"{info} is missing: not an Open MPI prefix")
    got = run_captured([str(info), "--parsable", "--all"], timeout_s=120,
                       env=environ(prefix_env(prefix, "openmpi", relocated=True)))
    if got.outcome.exit_code != 0:
        raise CommscopeError(f"{info} fails: {_last_error(got.out + got.err)}")
    if not built_with_cuda(got.out):
        raise CommscopeError(f"{info} says mpi_built_with_cuda_support is not true: "
                             "this Open MPI is not CUDA-aware")
    return {"ompi_version": ompi_version(got.out), "built_with_cuda": True}


def _size(prefix: Path) -> int:
    return sum(p.stat().st_size for p in prefix.rglob("*") if p.is_file() and not p.is_symlink())


def build_prefix(name: str, prefix: Path, source: Path | None = None,
                 jobs: int | None = None) -> dict[str, object]:
    """Fetch (or take `source`), configure, compile and install SOURCE_BUILDS
    [name] into `prefix`; what the marker records of it.  The scratch folder
    goes whatever happens; the log of the build stays beside the prefix."""
    spec = SOURCE_BUILDS[name]
    cuda = cuda_root()
    if source is not None and not source.is_file():
        raise CommscopeError(f"--source: no such file: {source}")
    log = prefix.parent / f"{name}.build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{name}-build-", dir=prefix.parent) as tmp:
        scratch = Path(tmp)
        tarball = source or fetch_debian_source(spec.package, scratch, log)
        fetched_s = time.monotonic() - t0
        tree = _unpack(tarball, scratch / "src")
        flags = [f"--prefix={prefix}", f"--with-cuda={cuda}", *CONFIGURE_FLAGS]
        t1 = time.monotonic()
        _step(["./configure", *flags], "configuring Open MPI", CONFIGURE_TIMEOUT_S, log, tree)
        t2 = time.monotonic()
        n = jobs or max(1, os.cpu_count() or 1)
        _step(["make", f"-j{n}"], "compiling Open MPI", MAKE_TIMEOUT_S, log, tree)
        _step(["make", "install"], "installing Open MPI", MAKE_TIMEOUT_S, log, tree)
        t3 = time.monotonic()
        detail: dict[str, object] = {
            "source": str(source) if source else f"Debian source package {spec.package}",
            "tarball": tarball.name, "tarball_sha256": file_sha256(tarball),
            "configure": flags, "cuda_root": str(cuda),
            "cuda": build_mod.cuda_version(build_mod.nvcc() or Path("nvcc")),
            "fetch_s": round(fetched_s, 1), "configure_s": round(t2 - t1, 1),
            "make_s": round(t3 - t2, 1), "log": str(log)}
    shutil.rmtree(prefix / "share" / "doc", ignore_errors=True)
    shutil.rmtree(prefix / "share" / "man", ignore_errors=True)
    detail.update(check_prefix(prefix))
    detail["prefix_bytes"] = _size(prefix)
    return detail
