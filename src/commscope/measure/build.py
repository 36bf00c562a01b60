"""Compiling the C core with one implementation's own mpicc, cached by the
implementation's identity and the core's source hash."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import CommscopeError
from .build_cache import cache_dir
from .mpi import CC_VARIABLE, MpiImpl, environ

CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror"]


def cflags() -> list[str]:
    """CFLAGS, less -Werror where COMMSCOPE_WERROR=0: a lent machine's
    compiler, newer than the ones the core is checked with here, may warn
    where they do not, and a warning must not cost a lease."""
    if os.environ.get("COMMSCOPE_WERROR", "") == "0":
        return [f for f in CFLAGS if f != "-Werror"]
    return list(CFLAGS)


# Debian's OpenBLAS (libopenblas-dev): the applications' compute.  Without it
# the core still builds, and matmul's impl=blas refuses with the reason.
OPENBLAS_INC = Path("/usr/include/x86_64-linux-gnu/openblas-pthread")
OPENBLAS_LIB = Path("/usr/lib/x86_64-linux-gnu/libopenblas.so")


def blas_flags() -> tuple[list[str], list[str]]:
    """(compile flags, link flags) for OpenBLAS, or nothing."""
    if (OPENBLAS_INC / "cblas.h").exists() and OPENBLAS_LIB.exists():
        return ["-DCS_HAVE_OPENBLAS", f"-I{OPENBLAS_INC}"], ["-lopenblas"]
    return [], []


# CUDA: the GPU paths' code (core/gpu/gpu.cu) is compiled with nvcc when
# one is found, for Hopper (sm_90) and as PTX for any later device
# (compute_75, the oldest CUDA 13 supports); otherwise core/gpu/gpu_none.c
# stands in and every GPU path says why it cannot run.  No fused multiply-add,
# so that the GPU Jacobi equals the CPU's bit for bit.  COMMSCOPE_CUDA=0
# builds without CUDA where nvcc exists.
NVCC_FLAGS = ["-O2", "--fmad=false", "-Xcompiler", "-fPIC,-Wall",
              "-gencode", "arch=compute_90,code=sm_90",
              "-gencode", "arch=compute_75,code=compute_75"]


def nvcc() -> Path | None:
    """The CUDA compiler to build with, or None (none found, or COMMSCOPE_CUDA=0)."""
    if os.environ.get("COMMSCOPE_CUDA", "") == "0":
        return None
    found = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    return Path(found) if os.access(found, os.X_OK) else None


def cudart_dir(compiler: Path) -> Path:
    """The folder of libcudart_static.a for `compiler`: the toolkit's lib64
    or lib, its targets/ folder, CUDA_HOME's, or a pip toolkit's
    (site-packages/nvidia/cuda_runtime/lib, nvidia/cu13/lib).  Raises with
    every place looked where none holds it."""
    root = compiler.resolve().parent.parent
    homes = [root] + [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH")
                      if os.environ.get(v)]
    tried = []
    for home in homes:
        tried += [home / "lib64", home / "lib", home / "targets" / "x86_64-linux" / "lib"]
    for sp in [root.parent, root.parent.parent, *map(Path, site.getsitepackages())]:
        tried += sorted(sp.glob("nvidia/cuda_runtime/lib")) + sorted(sp.glob("nvidia/cu*/lib"))
    for d in tried:
        if (d / "libcudart_static.a").is_file():
            return d
    raise CommscopeError(f"no libcudart_static.a for {compiler}: looked in "
                         + ", ".join(str(d) for d in dict.fromkeys(tried)))


def cuda_version(compiler: Path) -> str:
    """'13.0' from `nvcc --version`'s "release 13.0," line."""
    try:
        p = subprocess.run([str(compiler), "--version"], capture_output=True, text=True,
                           timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommscopeError(f"{compiler} does not run: {exc}") from exc
    m = re.search(r"\brelease (\d+\.\d+)", p.stdout)
    if m:
        return m.group(1)
    raise CommscopeError(f"{compiler} --version says no release: {p.stdout.strip()[-200:]}")


def core_dir() -> Path:
    env = os.environ.get("COMMSCOPE_CORE")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "core" / "harness" / "cs.h"
        if cand.exists():
            return cand.parent.parent
    raise CommscopeError("cannot find the C core (core/harness/cs.h); set COMMSCOPE_CORE")


def channel_dir(core: Path | None = None) -> Path:
    """Chai, Hartono and Panda's channel library, compiled into the core as a transport."""
    return (core or core_dir()).parent / "channel"


def core_sources(core: Path | None = None) -> list[Path]:
    core = core or core_dir()
    chan = channel_dir(core)
    return sorted([*core.glob("harness/*.[ch]"), *core.glob("bench/*.[ch]"),
                   *core.glob("gpu/*.[ch]"), *core.glob("gpu/*.cu"), *chan.glob("cs_chan.[ch]")])


def source_hash(core: Path | None = None, cuda: str = "") -> str:
    """The sources, flags and version, and the CUDA the core is built with
    ('' for none): a build with CUDA is another build."""
    h = hashlib.sha256()
    core = core or core_dir()
    for p in core_sources(core):
        h.update(str(p.relative_to(core.parent)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
    h.update(" ".join(CFLAGS + blas_flags()[0]).encode())
    h.update(f"cuda={cuda} {' '.join(NVCC_FLAGS) if cuda else ''}".encode())
    h.update(__version__.encode())
    return h.hexdigest()


def _wrapper_show(impl: MpiImpl) -> str:
    flag = "--showme" if impl.family == "openmpi" else "-show"
    env = environ(impl.env)
    out = []
    for argv in ([impl.mpicc, flag], [impl.mpicc, "--version"]):
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=env,
                               check=False)
            out.append(p.stdout + p.stderr)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CommscopeError(f"{impl.mpicc} does not run: {exc}") from exc
    return "\n".join(out)


def identity(impl: MpiImpl) -> str:
    """What makes two builds interchangeable: the wrapper's real path, what it
    expands to, and the compiler it drives."""
    if not os.access(impl.mpicc, os.X_OK):
        raise CommscopeError(f"mpicc of {impl.name} is missing or not executable: {impl.mpicc}")
    h = hashlib.sha256()
    h.update(os.path.realpath(impl.mpicc).encode())
    h.update(f"cc={impl.cc}".encode())
    h.update(_wrapper_show(impl).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Core:
    """A built core for one implementation."""

    impl: MpiImpl
    exe: Path
    identity: str
    info: dict[str, object]
    benches: tuple[dict[str, object], ...]
    options: tuple[dict[str, object], ...] = ()  # the core's option table
    statuses: tuple[tuple[str, int], ...] = ()  # its exit statuses: (name, code)

    @property
    def mpi_version(self) -> str:
        return str(self.info.get("mpi_library", "")).strip()

    def bench_names(self) -> list[str]:
        return [str(b["name"]) for b in self.benches]

    def bench(self, name: str) -> dict[str, object]:
        for b in self.benches:
            if b["name"] == name:
                return b
        raise KeyError(name)


def loaded_library(exe: Path, env: dict[str, str], soname: str) -> Path | None:
    """The file the loader would give `exe` for a library whose name starts
    with `soname` (a regular expression, e.g. r"libucp"), or None."""
    try:
        out = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, timeout=20,
                             env=environ(env), check=False).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommscopeError(f"cannot ask the loader for {exe}'s libraries: {exc}") from exc
    m = re.search(rf"^\s*{soname}\.so[.\d]*\s+=>\s+(/\S+)", out, re.M)
    return Path(m.group(1)) if m else None


def _query(exe: Path, impl: MpiImpl, flag: list[str]) -> object:
    env = environ(impl.env)
    try:
        p = subprocess.run([str(exe), *flag], capture_output=True, text=True, timeout=60,
                           env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommscopeError(f"core built for {impl.name} does not run: {exc}") from exc
    if p.returncode != 0:
        raise CommscopeError(f"core built for {impl.name} fails: {p.stderr.strip()[-300:]}")
    try:
        return json.loads(p.stdout)
    except ValueError as exc:
        raise CommscopeError(f"core built for {impl.name} printed bad JSON for {flag}") from exc


# The NCCL and cuBLAS headers are needed only to compile their calls: gpu.cu
# finds them with __has_include and, where one is missing, builds without
# that library's calls (the nccl path and gpu_matmul then say why).  A
# build may also be asked to do without them, as a machine lacking them
# would build: without=("nccl", "cublas").
WITHOUT_HEADERS = {"nccl": "-DCS_NO_NCCL_H", "cublas": "-DCS_NO_CUBLAS_H"}


HEADERS = {"nccl": "nccl.h", "cublas": "cublas_v2.h"}


def _nvcc_dirs(compiler: Path) -> list[Path]:
    """Where nvcc finds headers by itself: its toolkit's, the system's."""
    root = compiler.resolve().parent.parent
    return [root / "include", *sorted(root.glob("targets/*/include")),
            Path("/usr/local/include"), Path("/usr/include")]


def _header_dirs(compiler: Path) -> list[Path]:
    """nvcc's own folders, then where pip puts NVIDIA's headers
    (nvidia-nccl-cu12, nvidia-cublas-cu12 ...)."""
    dirs = _nvcc_dirs(compiler)
    for sp in sorted({*site.getsitepackages(), site.getusersitepackages()}):
        dirs += sorted(Path(sp).glob("nvidia/*/include"))
    return dirs


def cuda_headers(compiler: Path, without: tuple[str, ...] = ()) -> tuple[list[str], str]:
    """(nvcc flags, what the build's key must hold): the folder of each of
    NCCL's and cuBLAS's headers that is found, and the header itself, so that
    a header installed later (or changed) makes another gpu.o."""
    flags, key = [], []
    defaults = set(_nvcc_dirs(compiler))
    for lib, name in HEADERS.items():
        found = next((d for d in _header_dirs(compiler) if (d / name).is_file()), None)
        if lib in without or found is None:
            key.append(f"{lib}=none")
            continue
        if found not in defaults:
            flags.append(f"-I{found}")
        key.append(f"{lib}={found}:{hashlib.sha256((found / name).read_bytes()).hexdigest()}")
    return flags, " ".join(key)


def _without_flags(without: tuple[str, ...]) -> list[str]:
    unknown = [w for w in without if w not in WITHOUT_HEADERS]
    if unknown:
        raise CommscopeError(f"no header to build without: {', '.join(unknown)}")
    return [WITHOUT_HEADERS[w] for w in sorted(set(without))]


def _compile_cuda(compiler: Path, core: Path, cuda: str, without: tuple[str, ...] = ()) -> Path:
    """gpu.o, compiled once per source, flags and CUDA release and shared by
    every build (it has no MPI in it): nvcc takes longer than the rest of
    the core together."""
    found, headers = cuda_headers(compiler, without)
    flags = [*NVCC_FLAGS, *_without_flags(without), *found]
    h = hashlib.sha256(f"{cuda} {' '.join(flags)} {headers}".encode())
    for p in sorted((core / "gpu").glob("*")):
        if p.suffix in (".cu", ".h"):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    obj = cache_dir() / "build" / f"gpu-{h.hexdigest()[:16]}.o"
    if obj.exists():
        return obj
    return compiled([str(compiler), "-c", *flags, f"-I{core / 'gpu'}",
                     str(core / "gpu" / "gpu.cu")], obj, f"compiling core/gpu/gpu.cu with "
                    f"{compiler}", timeout_s=600)


def compiled(argv: list[str], out: Path, what: str, env: dict[str, str] | None = None,
             timeout_s: float = 300) -> Path:
    """argv (a compiler's, without its -o) writing `out` whole or not at all:
    into a temporary file beside it, moved into place once it succeeded
    (builds side by side share it).  A failure is raised with the
    compiler's own message."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=out.suffix, dir=out.parent)
    os.close(fd)
    try:
        p = subprocess.run([*argv, "-o", tmp], capture_output=True, text=True,
                           timeout=timeout_s, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        os.unlink(tmp)
        raise CommscopeError(f"cannot run {argv[0]}: {exc}") from exc
    if p.returncode != 0:
        os.unlink(tmp)
        raise CommscopeError(f"{what} failed:\n{(p.stderr or p.stdout).strip()}")
    os.replace(tmp, out)
    return out


def _check_compiler(impl: MpiImpl, built_by: str, exe: Path) -> None:
    """A wrapper that ignored --cc built another configuration than the one
    asked for: refuse it rather than store it under the wrong name."""
    name = Path(impl.cc).name
    want = "clang" if "clang" in name else "gcc" if "gcc" in name else ""
    if want and not built_by.startswith(want):
        exe.unlink(missing_ok=True)
        raise CommscopeError(f"{impl.name}'s wrapper ignored --cc {impl.cc} "
                             f"({CC_VARIABLE[impl.family]}): the core was built by "
                             f"{built_by or 'an unknown compiler'}")


def build(impl: MpiImpl, force: bool = False, without: tuple[str, ...] = ()) -> Core:
    """Build (or reuse) the core for `impl`, with CUDA where nvcc is found
    (`without`: as if NCCL's or cuBLAS's header were missing).  A compile
    error is raised with the compiler's own message."""
    ident = identity(impl)
    compiler = nvcc()
    cuda = cuda_version(compiler) if compiler else ""
    # the headers found are part of the key: one installed later makes another core
    src = source_hash(cuda=f"{cuda} {cuda_headers(compiler, without)[1]}" if compiler else "")
    tag = f"-cuda{cuda}" if cuda else ""
    if compiler and without:
        tag += "-without-" + "-".join(sorted(set(without)))
    variant = f"+{Path(impl.cc).name}" if impl.cc else ""
    out_dir = cache_dir() / "build" / f"{impl.name}{variant}-{ident[:12]}-{src[:12]}{tag}"
    exe = out_dir / "cs-core"
    meta = out_dir / "meta.json"
    if not force and exe.exists() and meta.exists():
        data = json.loads(meta.read_text())
        return Core(impl, exe, ident, data["info"], tuple(data["benches"]),
                    tuple(data.get("options", ())),
                    tuple(data.get("statuses", {}).items()))
    out_dir.mkdir(parents=True, exist_ok=True)
    core = core_dir()
    fd, tmp = tempfile.mkstemp(prefix="cs-core.", dir=out_dir)
    os.close(fd)
    blas_c, blas_l = blas_flags()
    if compiler:
        try:
            gpu = [str(_compile_cuda(compiler, core, cuda, without))]
        except CommscopeError:
            os.unlink(tmp)
            raise
        libdir = cudart_dir(compiler)
        gpu_l = [f"-L{libdir}", "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-lstdc++"]
    else:
        gpu, gpu_l = [], []
    sources = [str(p) for p in core_sources(core)
               if p.suffix == ".c" and not (compiler and p.name == "gpu_none.c")]
    argv = [impl.mpicc, *cflags(), *blas_c, f'-DCS_VERSION="{__version__}"',
            f"-I{core / 'harness'}", f"-I{core / 'gpu'}", f"-I{channel_dir(core)}",
            *sources, *gpu, "-o", tmp, *blas_l, *gpu_l, "-lm"]
    env = environ(impl.env)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env,
                           check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        os.unlink(tmp)
        raise CommscopeError(f"cannot run {impl.mpicc}: {exc}") from exc
    if p.returncode != 0:
        os.unlink(tmp)
        msg = (p.stderr or p.stdout).strip()
        raise CommscopeError(f"building the core with {impl.name} ({impl.mpicc}) failed:\n{msg}")
    os.replace(tmp, exe)
    info = _query(exe, impl, ["--info"])
    assert isinstance(info, dict)
    _check_compiler(impl, str(info.get("compiler") or ""), exe)
    table = _query(exe, impl, ["--list", "--json"])
    assert isinstance(info, dict) and isinstance(table, dict)
    benches, options, statuses = table["benchmarks"], table["options"], table["statuses"]
    meta.write_text(json.dumps({"info": info, "benches": benches, "options": options,
                                "statuses": statuses, "identity": ident, "source_hash": src,
                                "argv": argv, "cuda": cuda}, indent=1))
    return Core(impl, exe, ident, info, tuple(benches), tuple(options),
                tuple(statuses.items()))


def gpu_info(core: Core) -> dict[str, object]:
    """Whether the core has CUDA and the GPUs it sees here, or the driver's
    reason for none (`cs-core --gpu-info`, no MPI, no context)."""
    info = _query(core.exe, core.impl, ["--gpu-info"])
    assert isinstance(info, dict)
    return info


def check_options(core: Core, argv: list[str]) -> None:
    """The core judges its own options (one parser, one set of rules):
    parsed, then --info prints and exits before MPI starts, so bad input is
    one line and exit 2 before anything is launched."""
    try:
        # a user's bytes come back in the core's message: shown escaped, not decoded
        p = subprocess.run([str(core.exe), *argv, "--info"], capture_output=True, text=True,
                           errors="backslashreplace", timeout=60,
                           env=environ(core.impl.env), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommscopeError(f"core built for {core.impl.name} does not run: {exc}") from exc
    if p.returncode == 2:
        raise CommscopeError(p.stderr.strip().removeprefix("cs-core: ").splitlines()[0])
    if p.returncode != 0:
        raise CommscopeError(f"core built for {core.impl.name} fails: {p.stderr.strip()[-300:]}")
