"""A program commscope did not write, profiled: its MPI calls counted and
timed on every rank by a PMPI interposition library (core/profile/
cs_profile.c) preloaded through its implementation's own launcher.

The library is built once per implementation with that implementation's
wrapper and cached like the core.  Which implementation a program needs is
read from the binary (the MPI library the loader gives it); asking for
another is refused.  The program runs under the same bounds as a job (its
whole process group killed at the timeout), never through a shell, in the
folder the user ran commscope from; what each rank wrote is read back, a
rank that ended without MPI_Finalize marked so."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CommscopeError
from . import mpi as mpi_mod
from .build import compiled, core_dir, identity
from .build_cache import cache_dir
from .cluster import Cluster, Launch, Placement
from .mpi import MpiImpl, environ
from .procs import Outcome, run_bounded

MPI_SONAME = r"lib(?:mpi|mpich)"  # Open MPI and Intel MPI: libmpi; MPICH: libmpi or libmpich
TAIL = 4000  # characters of the program's output kept with the profile


def source() -> Path:
    return core_dir() / "profile" / "cs_profile.c"


def build(impl: MpiImpl, force: bool = False) -> Path:
    """The interposition library for `impl` (built with its wrapper, or
    reused where its source and the implementation are unchanged)."""
    src = source()
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:12]
    out_dir = cache_dir() / "build" / f"profile-{impl.name}-{identity(impl)[:12]}-{digest}"
    lib = out_dir / "libcsprofile.so"
    if lib.exists() and not force:
        return lib
    return compiled([impl.mpicc, "-O2", "-g", "-fPIC", "-shared", "-Wall", str(src)], lib,
                    f"building the profiler with {impl.name} ({impl.mpicc})",
                    env=environ(impl.env), timeout_s=120)


def mpi_library(exe: Path, env: dict[str, str]) -> Path | None:
    """The MPI library the loader gives `exe` (resolved), or None: not
    dynamically linked against one (a static link, or no MPI at all)."""
    try:
        p = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, timeout=20,
                           env=environ(env), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommscopeError(f"cannot ask the loader for {exe}'s libraries: {exc}") from exc
    m = re.search(rf"^\s*{MPI_SONAME}\.so[.\d]*\s+=>\s+(/\S+)", p.stdout, re.M)
    return Path(m.group(1)).resolve() if m else None


def program_path(program: str, cwd: Path) -> Path:
    """The program as the user named it: a path, or a name on PATH; one
    clear line where it is neither or cannot be run."""
    if "/" in program:
        path = (cwd / program) if not Path(program).is_absolute() else Path(program)
    else:
        found = shutil.which(program)
        if found is None:
            raise CommscopeError(f"no program {program!r} on PATH (give its path)")
        path = Path(found)
    if not path.exists():
        raise CommscopeError(f"no program at {path}")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise CommscopeError(f"{path} is not an executable program")
    return path.resolve()


def which_impl(exe: Path, impls: list[MpiImpl], asked: str | None) -> MpiImpl:
    """The implementation whose MPI library the program is linked against
    (each implementation's by its profiler library's own link); asking for
    another is refused, saying which one the program uses."""
    theirs: dict[str, Path | None] = {}
    for impl in impls:
        mine = mpi_library(build(impl), impl.env)
        prog = mpi_library(exe, impl.env)
        theirs[impl.name] = prog
        if mine is not None and prog is not None and mine == prog:
            if asked and asked != impl.name:
                raise CommscopeError(f"{exe.name} is linked against {impl.name}'s MPI "
                                     f"({prog}), not {asked}'s: run it with --mpi {impl.name}")
            return impl
    libs = {str(p) for p in theirs.values() if p is not None}
    if not libs and asked:
        # a script that starts the MPI program, or one that loads MPI itself
        # (mpi4py): the preload reaches it if it runs under this implementation
        return next(i for i in impls if i.name == asked)
    if not libs:
        raise CommscopeError(f"{exe.name} is not dynamically linked against an MPI library "
                             "(ldd finds none): a statically linked or non-MPI program cannot "
                             "be profiled; a script that runs one, or a program that loads MPI "
                             "itself, can be with --mpi NAME")
    raise CommscopeError(f"{exe.name} is linked against {', '.join(sorted(libs))}, which "
                         "belongs to no implementation commscope found (commscope mpi list; "
                         "commscope mpi add PATH/TO/mpicc adds one)")


# The Fortran bindings need nothing of their own: MPICH's call the C MPI_
# functions (mpif.h, `use mpi`; its `use mpi_f08` ones call PMPI_ where there
# is no buffer), Open MPI's call PMPI_ directly (ompi/mpi/fortran/mpif-h/*_f.c,
# and its mpi_f08 ones through them), and the profiler defines both names
# (core/profile/cs_profile.c, read twice).  Until 2026-11-28 it defined MPI_
# alone and said "its Fortran MPI calls are not counted" of Open MPI's.


def _tail(path: Path, limit: int = TAIL) -> str:
    """The last `limit` characters of a file however long it grew (a program
    may print gigabytes): read from its end, never whole."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4 * limit))
            data = f.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace")[-limit:]


def preload_value(lib: Path) -> str:
    """LD_PRELOAD for the ranks: the profiler first, the user's own kept."""
    return ":".join([str(lib), *([os.environ["LD_PRELOAD"]]
                                 if os.environ.get("LD_PRELOAD") else [])])


def preload_flags(impl: MpiImpl, lib: Path) -> list[str]:
    """How the launcher hands the library to the ranks (and only to them:
    not preloaded into the launcher itself)."""
    value = preload_value(lib)
    if impl.family == "openmpi":
        return ["-x", f"LD_PRELOAD={value}"]
    return ["-genv", "LD_PRELOAD", value]


@dataclass
class Profiled:
    """One profiled run: how it ended, what it printed, each rank's file."""

    status: str  # ok | failed | timeout | no-mpi-seen | no-profiles (a cluster's folder unseen)
    outcome: Outcome
    out: str
    err: str
    ranks: list[dict[str, object]] = field(default_factory=list)
    why: str = ""


def on_cluster(impl: MpiImpl, lib: Path, ln: Launch, exe: Path, args: list[str], into: Path,
               srun: bool, depth: int = 1) -> tuple[list[str], dict[str, str]]:
    """A cluster's launch of the program with the profiler on every rank:
    the library and the folder the ranks write to handed to the ranks of
    every node (mpirun -x, Hydra -genv: a remote rank does not inherit the
    launcher's environment); srun is given the library for its tasks
    alone (--export=ALL,LD_PRELOAD=...), not preloaded into itself."""
    argv = list(ln.argv)
    at = len(argv) - 1 - len(args)
    if argv[at] != str(exe):
        raise CommscopeError(f"cannot place the profiler in this launch: {shlex.join(argv)}")
    env = dict(ln.env)
    if srun:
        value = preload_value(lib)
        if "," not in value:  # to the tasks only, not into srun itself
            return [*argv[:at], f"--export=ALL,LD_PRELOAD={value}", *argv[at:]], env
        env["LD_PRELOAD"] = value  # --export cannot hold a comma: srun takes it too
        return argv, env
    given = {"COMMSCOPE_PROFILE_DIR": str(into)}
    if depth > 1:
        given["COMMSCOPE_PROFILE_DEPTH"] = str(depth)
    where = [x for k, v in given.items()
             for x in (["-x", k] if impl.family == "openmpi" else ["-genv", k, v])]
    return [*argv[:at], *preload_flags(impl, lib), *where, *argv[at:]], env


def launch(impl: MpiImpl, lib: Path, exe: Path, args: list[str], np_: int, cores: int,
           cwd: Path, timeout_s: float, settings: dict[str, str],
           cluster: Cluster | None = None, nodes: int = 1, depth: int = 1
           ) -> tuple[list[str], Profiled]:
    """Run the program once, profiled; its launch argv and what it gave
    (`depth`: the frames a call site holds, COMMSCOPE_PROFILE_DEPTH).
    On a cluster, the ranks write their profiles into a folder under the
    program's own (a hostfile's nodes see it where that folder is shared;
    an emulated cluster's and this machine's Slurm share this machine's)."""
    spec = mpi_mod.LaunchSpec(np=np_, cores=cores, root=os.geteuid() == 0)
    local = cluster is None or cluster.kind == "local"
    try:
        # the program's output stays on this machine's temporary space; only the
        # ranks' files (and a hostfile) go where every node sees them
        logs = tempfile.TemporaryDirectory(prefix="commscope-profile-")
        folder = contextlib.nullcontext(None) if local else tempfile.TemporaryDirectory(
            prefix=".commscope-profile-", dir=cwd, ignore_cleanup_errors=True)
    except OSError as exc:
        raise CommscopeError(f"cannot make the folder the ranks write their profiles in, under "
                             f"{cwd if not local else tempfile.gettempdir()}: "
                             f"{exc.strerror or exc}") from None
    with logs as log_dir, folder as shared:
        tmp = shared or log_dir
        into = Path(tmp) / "ranks"
        into.mkdir()
        extra: dict[str, str] = {}
        if cluster is None or local:
            argv = mpi_mod.launch_argv(impl, spec, str(exe), args, preload_flags(impl, lib))
        else:
            ln = cluster.launch(impl, Placement(nodes, np_ // nodes), str(exe), args,
                                Path(tmp), cores, spec.root)
            for name, text in ln.files.items():
                (Path(tmp) / name).write_text(text)
            argv, extra = on_cluster(impl, lib, ln, exe, args, into,
                                     getattr(cluster, "mode", "") == "srun", depth)
        deep = {"COMMSCOPE_PROFILE_DEPTH": str(depth)} if depth > 1 else {}
        env = environ(impl.env, settings, {**extra, **deep, "COMMSCOPE_PROFILE_DIR": str(into)})
        try:
            ended = run_bounded(argv, timeout_s=timeout_s, env=env, cwd=str(cwd),
                                stdout_path=Path(log_dir) / "out",
                                stderr_path=Path(log_dir) / "err")
        except OSError as exc:  # the launcher itself missing (no srun here)
            raise CommscopeError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        out, err = _tail(Path(log_dir) / "out"), _tail(Path(log_dir) / "err")
        ranks = []
        for f in sorted(into.glob("rank-*.json")):
            try:
                ranks.append(json.loads(f.read_text(errors="replace")))
            except ValueError:
                ranks.append({"file": f.name, "unreadable": True})
    if ended.timed_out:
        status, why = "timeout", f"killed after {timeout_s:g} s (its whole process group)"
    elif ended.exit_code != 0:
        status = "failed"
        why = (f"exited with {ended.exit_code}" if ended.exit_code is not None else
               f"killed by signal {ended.signal}")
    elif not local and not ranks:
        status, why = "no-profiles", (f"no rank's profile came back: the nodes do not see "
                                      f"{cwd} (run from a folder every node shares)")
    elif not any(r.get("calls") for r in ranks):
        status, why = "no-mpi-seen", ("it made no MPI call the profiler saw: a static "
                                      "link, or no MPI at all")
    else:
        status, why = "ok", ""
    return argv, Profiled(status, ended, out, err, ranks, why)


def link_address(obj: str, off: int) -> int | None:
    """The link-time address of a file offset of an ELF object (what
    addr2line reads): through the loadable segment that holds it, so that a
    program linked at 0x400000 (no PIE) or by a linker that sets addresses
    apart from offsets resolves as a PIE does; None where the file is no
    64-bit ELF or no segment holds the offset."""
    try:
        with open(obj, "rb") as f:
            head = f.read(64)
            if head[:5] != b"\x7fELF\x02" or len(head) < 64:
                return None
            end = "<" if head[5] == 1 else ">"
            phoff, = struct.unpack_from(end + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return None
    for i in range(phnum):
        kind, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            end + "IIQQQQ", table, i * phentsize)
        if kind == 1 and p_offset <= off < p_offset + p_filesz:  # PT_LOAD
            return off - p_offset + p_vaddr
    return None


def resolve_sites(where: list[tuple[str, int]], timeout_s: float = 30.0
                  ) -> dict[tuple[str, int], str]:
    """(object, offset) -> "function (file:line)" as addr2line reads the
    object's debugging information (at the link-time address of the call:
    the return address less one); an object without it, replaced since
    (" (deleted)"), gone, or no addr2line: left out (the caller shows the
    object and the offset)."""
    tool = shutil.which("addr2line")
    out: dict[tuple[str, int], str] = {}
    if tool is None:
        return out
    by: dict[str, list[int]] = {}
    for obj, off in where:
        by.setdefault(obj, []).append(off)
    for obj, offs in by.items():
        if not Path(obj).is_file():
            continue
        at = {o: link_address(obj, max(o - 1, 0)) for o in offs}
        offs = [o for o in offs if at[o] is not None]
        if not offs:
            continue
        try:
            p = subprocess.run([tool, "-f", "-C", "-e", obj, *(f"{at[o]:#x}" for o in offs)],
                               capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        got = p.stdout.splitlines()
        if p.returncode != 0 or len(got) != 2 * len(offs):
            continue
        for k, off in enumerate(offs):
            fn, loc = got[2 * k], got[2 * k + 1].split(" (discriminator")[0]
            if loc.startswith("??"):
                continue
            out[(obj, off)] = (f"{fn} ({Path(loc).name})" if fn != "??" else Path(loc).name)
    return out
