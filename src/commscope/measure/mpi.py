"""Finding and describing MPI implementations, and how to launch them here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..errors import CommscopeError

FAMILIES = ("openmpi", "mpich", "intel")


@dataclass(frozen=True)
class MpiImpl:
    """One MPI implementation: its wrapper compiler and its launcher."""

    name: str
    family: str
    mpicc: str
    launcher: str
    source: str  # debian | pypi | user
    env: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    cc: str = ""  # the C compiler the wrapper is told to drive ('' for its own)
    # a library of the family known by its own name: "mvapich2" (MPICH's
    # launcher and ABI, its own channels and variables); '' for the family's own
    variant: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


# How each family's wrapper is told to drive another C compiler.
CC_VARIABLE = {"openmpi": "OMPI_CC", "mpich": "MPICH_CC", "intel": "I_MPI_CC"}


def with_compiler(impl: MpiImpl, cc: str) -> MpiImpl:
    """The same implementation, its wrapper driving `cc` (a name on PATH or
    a path): another build of the core, another configuration."""
    if not re.fullmatch(r"[A-Za-z0-9_./+-]+", cc):
        raise CommscopeError(f"--cc: not a compiler name or path: {cc!r}")
    if not shutil.which(cc):
        raise CommscopeError(f"--cc: compiler not found: {cc}")
    return replace(impl, env={**impl.env, CC_VARIABLE[impl.family]: cc}, cc=cc)


# Search paths an implementation puts its own folders in front of: the
# environment's entries stay behind them (NCCL and cuBLAS installed with
# pip are found through LD_LIBRARY_PATH too).
SEARCH_PATHS = ("LD_LIBRARY_PATH", "PATH")


def environ(*layers: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a program of an implementation runs in: `base` (the
    process's own), then each layer over it, except that a layer's search
    path goes in front of the one it finds rather than replacing it."""
    out = dict(os.environ if base is None else base)
    for layer in layers:
        for k, v in layer.items():
            old = out.get(k, "")
            if k in SEARCH_PATHS and old and v:
                kept = [d for d in old.split(os.pathsep) if d and d not in v.split(os.pathsep)]
                out[k] = os.pathsep.join([v, *kept])
            else:
                out[k] = v
    return out


def _run(argv: list[str], env: dict[str, str] | None = None,
         timeout: float = 20) -> tuple[int, str]:
    full_env = environ(env or {})
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=full_env,
                           check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return p.returncode, p.stdout + p.stderr


def detect_family(mpicc: str, env: dict[str, str] | None = None) -> str:
    """Ask the wrapper what it wraps: Open MPI knows --showme, MPICH-derived
    wrappers (MPICH, Intel MPI) answer -show and -v."""
    rc, out = _run([mpicc, "--showme:version"], env)
    if rc == 0 and "Open MPI" in out:
        return "openmpi"
    rc, out = _run([mpicc, "-v"], env)
    if "Intel(R) MPI" in out or "Intel MPI" in out:
        return "intel"
    if "MPICH" in out or "mpich" in out:
        return "mpich"
    rc, out = _run([mpicc, "-show"], env)
    if rc == 0 and re.search(r"-lmpich|mpich", out):
        return "mpich"
    if rc == 0 and "-lmpi" in out:
        return "mpich"  # MPICH ABI-compatible wrappers link plain -lmpi
    raise CommscopeError(f"cannot tell which MPI '{mpicc}' belongs to (it answers neither "
                         "--showme nor -show)")


def detect_variant(mpicc: str, family: str, env: dict[str, str] | None = None) -> str:
    """A library of the MPICH family known by its own name: MVAPICH2's
    wrapper says "mpicc for MVAPICH2 version 2.3.7-1" to -v."""
    if family != "mpich":
        return ""
    rc, out = _run([mpicc, "-v"], env)
    return "mvapich2" if "MVAPICH2" in out else ""


def find_launcher(mpicc: str, family: str) -> str:
    """The launcher that sits beside the wrapper, with the same suffix."""
    p = Path(mpicc)
    suffix = p.name[len("mpicc"):] if p.name.startswith("mpicc") else ""
    names = ["mpirun", "mpiexec"] if family == "openmpi" else ["mpiexec", "mpirun"]
    for n in names:
        cand = p.parent / f"{n}{suffix}"
        if cand.exists() and os.access(cand, os.X_OK):
            return str(cand)
    if (p.parent / "mpirun_rsh").exists():  # an MVAPICH2 built --with-pm=mpirun
        raise CommscopeError(f"only MVAPICH2's mpirun_rsh next to {mpicc}: commscope launches "
                             "with Hydra's mpiexec (MVAPICH2's default process manager: "
                             "configure --with-pm=mpirun:hydra or hydra)")
    raise CommscopeError(f"no mpiexec or mpirun next to {mpicc}")


def _lib_env(mpicc: Path) -> dict[str, str]:
    lib = mpicc.parent.parent / "lib"
    if not lib.is_dir():
        return {}
    return {"LD_LIBRARY_PATH": str(lib)}  # in front of the environment's (environ)


def describe_path(mpicc: str, name: str | None = None, source: str = "user") -> MpiImpl:
    """Build an MpiImpl from the path of an mpicc, checking it is usable."""
    if name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}", name):
        raise CommscopeError(f"--name '{name}': a name is letters, digits and . _ + - (it "
                             "names a build folder), starting with a letter or digit")
    path = shutil.which(mpicc) if os.sep not in mpicc else mpicc
    if not path or not Path(path).exists():
        raise CommscopeError(f"mpicc not found: {mpicc}")
    if not os.access(path, os.X_OK):
        raise CommscopeError(f"mpicc is not executable: {mpicc}")
    path = os.path.abspath(path)
    env = _lib_env(Path(path)) if source == "pypi" else {}
    family = detect_family(path, env)
    variant = detect_variant(path, family, env)
    launcher = find_launcher(path, family)
    return MpiImpl(name=name or f"{variant or family}-{source}", family=family, mpicc=path,
                   launcher=launcher, source=source, env=env, variant=variant)


@dataclass(frozen=True)
class LaunchSpec:
    """Where and how many: the local placement of one job."""

    np: int
    cores: int
    root: bool
    bind: str = "core"  # core | hwthread | none: how the launcher binds each rank

    @property
    def oversubscribed(self) -> bool:
        return self.np > self.cores


BIND = ("core", "hwthread", "none")


def bind_flags(family: str, bind: str) -> list[str]:
    """How each launcher is told to bind a rank (not oversubscribed): to a
    core (the default here), a hardware thread, or not at all.  Intel MPI
    pins each rank to one logical CPU by its processor list (added by
    launcher_flags), or not at all."""
    if bind not in BIND:
        raise CommscopeError(f"COMMSCOPE_BIND must be one of {', '.join(BIND)}, not {bind!r}")
    if family == "openmpi":
        return ["--bind-to", bind, "--map-by", "hwthread" if bind == "hwthread" else "core"]
    if family == "mpich":
        return [] if bind == "none" else ["-bind-to", bind]
    return ["-genv", "I_MPI_PIN", "0"] if bind == "none" else []


def launcher_flags(impl: MpiImpl, spec: LaunchSpec) -> list[str]:
    """The flags this implementation needs here: running as root, binding
    one rank per core (or as spec.bind says), and oversubscription beyond
    the core count."""
    flags: list[str] = []
    if impl.family == "openmpi":
        if spec.root:
            flags.append("--allow-run-as-root")
        if spec.oversubscribed:
            # Open MPI yields the core when oversubscribed; binding would
            # stack ranks on the same cores.
            flags += ["--oversubscribe", "--bind-to", "none"]
        else:
            flags += bind_flags("openmpi", spec.bind)
    elif impl.family == "mpich":
        if impl.variant == "mvapich2":
            # MVAPICH2 pins each rank itself by default (MV2_ENABLE_AFFINITY=1), over
            # what Hydra bound: off, so that Hydra's binding is the one, as for MPICH
            flags += ["-genv", "MV2_ENABLE_AFFINITY", "0"]
        if not spec.oversubscribed:
            flags += bind_flags("mpich", spec.bind)
    elif impl.family == "intel":
        # one node: shared memory alone, so no network provider is probed
        flags += ["-genv", "I_MPI_FABRICS", "shm"]
        if spec.oversubscribed or spec.bind == "none":
            flags += ["-genv", "I_MPI_PIN", "0"]
        else:
            flags += ["-genv", "I_MPI_PIN_PROCESSOR_LIST", f"0-{spec.cores - 1}"]
    return flags


def launch_argv(impl: MpiImpl, spec: LaunchSpec, exe: str, args: list[str],
                extra: Sequence[str] = ()) -> list[str]:
    """The whole command line, as a list: never a shell string.  `extra`:
    launcher flags of the caller's (the profiler's preload)."""
    return [impl.launcher, "-n", str(spec.np), *launcher_flags(impl, spec), *extra, exe, *args]
