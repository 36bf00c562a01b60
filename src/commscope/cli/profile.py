"""commscope profile: a program commscope did not write, run under its
implementation's launcher with the PMPI profiler preloaded on every rank;
where its MPI time goes, stored beside the benchmarks' records.  With
--verify, settings files are run on the program in interleaved rounds
against its defaults, and a setting is "faster for this program" only
where the rounds' interval says so (and the user's --check passed)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..analysis import profile as prof
from ..errors import CommscopeError
from ..measure import cluster as cluster_mod
from ..measure import discovery, provenance
from ..measure import profile as measure
from ..measure import settings as settings_mod
from ..measure.cluster import Cluster, Placement
from ..measure.mpi import MpiImpl, environ
from ..measure.procs import run_captured
from ..store import outputs
from ..store.db import Store
from .common import command, listed

CHECK_TIMEOUT_S = 120.0


@dataclass
class Setup:
    store: Store
    impl: MpiImpl
    lib: Path
    exe: Path
    args: list[str]
    cwd: Path
    np: int
    timeout: float
    check: list[str]
    fresh: list[Path]
    cluster: Cluster | None = None  # None: this machine
    nodes: int = 1
    depth: int = 1  # the frames a call site holds (--stack)


def _one(s: Setup, settings: dict[str, str], batch: int | None = None,
         round_: int | None = None) -> tuple[int, measure.Profiled, bool | str | None]:
    """The program run once, profiled and stored (running first, so that a
    hang or an interrupt is recorded; whole before the user's check runs,
    so that an interrupted check loses nothing of it)."""
    for f in s.fresh:
        f.unlink(missing_ok=True)
    pid = s.store.begin_profile({
        "program": prof.printable(str(s.exe)), "argv": json.dumps(s.args),
        "cwd": prof.printable(str(s.cwd)),
        "mpi_name": s.impl.name, "mpi_family": s.impl.family, "np": s.np,
        "launch_argv": "[]", "settings": json.dumps(settings),
        "hostname": socket.gethostname(), "commscope_version": __version__,
        "batch": batch, "round": round_})
    try:
        argv, got = measure.launch(s.impl, s.lib, s.exe, s.args, s.np, provenance.n_cores(),
                                   s.cwd, s.timeout, settings, s.cluster, s.nodes, s.depth)
    except BaseException:
        s.store.finish_profile(pid, "interrupted", exit_code=None, signal=None, wall_s=0.0,
                               stdout_tail="", stderr_tail="", data=json.dumps({"ranks": []}),
                               launch_argv="[]")
        raise
    s.store.finish_profile(pid, got.status, exit_code=got.outcome.exit_code,
                           signal=got.outcome.signal, wall_s=got.outcome.wall_s,
                           stdout_tail=got.out, stderr_tail=got.err,
                           data=json.dumps({"ranks": got.ranks, "why": got.why,
                                            **_where(s)}),
                           launch_argv=json.dumps(argv))
    checked: bool | str | None = None
    if s.check and got.status == "ok":
        c = run_captured(s.check, timeout_s=s.timeout, env=environ(), cwd=str(s.cwd))
        checked = "timeout" if c.outcome.timed_out else c.outcome.exit_code == 0
        s.store.set_checked(pid, checked is True)
    return pid, got, checked


def _on(label: str, nodes: int) -> str:
    """Where a profile's ranks ran, as its first line says it."""
    return f" on {label} ({nodes} node{'s' if nodes > 1 else ''})"


def _where(s: Setup) -> dict[str, object]:
    """Where the ranks ran, stored with the profile (nothing for this machine)."""
    if s.cluster is None:
        return {}
    return {"cluster": s.cluster.label, "nodes": s.nodes, "ppn": s.np // s.nodes}


def missing_note(ranks: list[dict[str, object]], np_: int, cwd: Path) -> str:
    """On a cluster, ranks whose profile did not come back: a node that
    does not see the folder the program ran in (a hostfile's machines
    without a shared home) writes its ranks' files where nobody reads them."""
    if len(ranks) >= np_:  # a file each (one unreadable is said where it is summed)
        return ""
    return (f"note: {np_ - len(ranks)} of {np_} ranks wrote no profile: their node does not "
            f"see {cwd} (run from a folder every node shares); the figures are of the others")


def _placed(spec: str, nodes: int | None, np_: int, impl: MpiImpl, cwd: Path
            ) -> tuple[Cluster | None, int]:
    """--cluster and --nodes, judged before the program runs."""
    c = cluster_mod.parse(spec)
    if c.kind == "local":
        if nodes not in (None, 1):
            raise CommscopeError("--nodes goes with --cluster (this machine is one node)")
        return None, 1
    if getattr(c, "mode", "") == "srun" and shutil.which("srun") is None:
        raise CommscopeError("--cluster slurm: no srun on this machine's PATH")
    n = nodes or min(c.default_nodes(np_), np_)
    if np_ % n:
        raise CommscopeError(f"--np {np_} does not spread evenly over {n} node(s)")
    if why := c.cannot_launch(impl):
        raise CommscopeError(f"--cluster {c.label}: {why}")
    c.check(impl, Placement(n, np_ // n))
    if not os.access(cwd, os.W_OK | os.X_OK):
        raise CommscopeError(f"--cluster {c.label}: the ranks write their profiles under the "
                             f"folder the program runs in, and {cwd} cannot be written")
    return c, n


@command("profile")
def cmd_profile(a: argparse.Namespace) -> int:
    args = list(a.program)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        raise CommscopeError("commscope profile: name the program after --, e.g. "
                             "commscope profile --np 2 -- ./my_mpi_program ARGS")
    cwd = Path.cwd()
    cluster_mod.parse(a.cluster)  # a typo said before anything is built
    exe = measure.program_path(args[0], cwd)
    check = _check_argv(a.check, cwd)
    fresh = _fresh(a.fresh or [], cwd, a.db)
    if a.rounds is not None and not a.verify:
        raise CommscopeError("--rounds goes with --verify (the rounds of settings against the "
                             "defaults)")
    files: dict[str, dict[str, str]] = {}
    for f in a.verify or []:
        if any(Path(f).resolve() == Path(g).resolve() for g in files):
            raise CommscopeError(f"--verify {f} is given twice")
        files[f] = dict(settings_mod.parse_file(f))
    names = listed(a.mpi)
    if a.mpi and len(names) != 1:
        raise CommscopeError("--mpi names one implementation: the one the program is linked "
                             "against (commscope mpi list)")
    impls = discovery.discover()
    if names:
        discovery.select(names)  # an unknown name is refused, naming it
    impl = measure.which_impl(exe, impls, names[0] if names else None)
    settings = dict(settings_mod.parse_file(a.settings)) if a.settings else {}
    cluster, nodes = _placed(a.cluster, a.nodes, a.np, impl, cwd)
    s = Setup(Store(a.db), impl, measure.build(impl), exe, args[1:], cwd, a.np, a.timeout,
              check, fresh, cluster, nodes, a.stack)
    if n := s.store.abandon_profiles():
        print(f"note: {n} earlier profile(s) left running by a commscope that was killed "
              "are marked interrupted")
    if files:
        return _verify(s, settings, files, a.rounds or 5)
    pid, got, checked = _one(s, settings)
    on = _on(cluster.label, nodes) if cluster else ""
    print(f"profile {pid}: {prof.printable(exe.name)} under {impl.name}, {a.np} processes{on}: "
          f"{got.status}" + (f" ({got.why})" if got.why else "")
          + f", {got.outcome.wall_s:.1f} s"
          + ("" if checked is None else "; its check " + checked_text(checked)))
    if cluster is not None and got.status == "ok" and (note := missing_note(got.ranks, a.np,
                                                                            cwd)):
        print(note)
    tail = [x for x in got.out.strip().splitlines() if x.strip()][-5:]
    if tail:
        print("  its output ended: " + " | ".join(prof.printable(x) for x in tail)[:400])
    if got.status in ("failed", "timeout") and got.err.strip():
        print("  its last error lines: "
              + " | ".join(prof.printable(x) for x in got.err.strip().splitlines()[-3:])[:300])
    summary = prof.summarize(got.ranks)
    print(prof.text(summary, a.top or 1 << 30), end="")
    print(_sites(got.ranks, summary, a.top or 1 << 30), end="")
    return 0 if got.status == "ok" and checked is not False else 1


def _sites(ranks, summary: prof.Summary, top: int) -> str:
    """The hottest call sites, resolved to file:line where the objects are
    still there and were built with -g; '' where the ranks recorded none."""
    places = measure.resolve_sites(prof.all_frames(ranks))
    found = prof.sites(ranks, places)
    if not found:
        return ""
    lost = sum(int(r.get("sites_lost") or 0) for r in ranks)
    unmapped = sum(int(r.get("sites_unmapped") or 0) for r in ranks)
    return ("where the program made them (call sites, summed over ranks; a file:line where "
            "the program was built with -g):\n"
            + prof.sites_text(found, places, summary.total_s, top, lost, unmapped))


def checked_text(checked: bool | str) -> str:
    return "passed" if checked is True else "timed out" if checked == "timeout" else "FAILED"


def _check_argv(check: str | None, cwd: Path) -> list[str]:
    """--check as a list (never given to a shell), refused in one line
    before anything runs where it cannot be run."""
    if check is None:
        return []
    try:
        argv = shlex.split(check)
    except ValueError as exc:
        raise CommscopeError(f"--check {check!r}: {exc} (quote it as a shell would)") from None
    if not argv:
        raise CommscopeError("--check was given no command")
    prog = argv[0]
    path = (cwd / prog) if "/" in prog else None
    found = str(path) if path is not None else shutil.which(prog)
    if found is None or not Path(found).is_file() or not os.access(found, os.X_OK):
        raise CommscopeError(f"--check: {prog!r} is no program that can be run here (give "
                             "its path, or a command on PATH)")
    return argv


def _fresh(paths: list[str], cwd: Path, db: str) -> list[Path]:
    """Files a program appends to (hpcc's hpccoutf.txt), removed before each
    run so that --check reads this run's: inside the working folder, never a
    folder, never a database."""
    out = []
    for f in paths:
        p = (cwd / f).resolve()
        if cwd.resolve() not in p.parents:
            raise CommscopeError(f"--fresh {f}: only files inside the folder the program runs "
                                 f"in ({cwd}) are removed")
        if p.is_dir():
            raise CommscopeError(f"--fresh {f} is a folder")
        if p == Path(db).resolve() or (p.is_file() and outputs.is_store(p)):
            raise CommscopeError(f"--fresh {f} is a database: commscope never removes one")
        out.append(p)
    return out


def _verify(s: Setup, base: dict[str, str], files: dict[str, dict[str, str]],
            rounds: int) -> int:
    """The defaults and each settings file, in rounds whose order rotates;
    each file's paired ratios against the defaults of its own round."""
    arms = [("", base), *((f, {**base, **v}) for f, v in files.items())]
    batch: int | None = None
    got: dict[tuple[int, str], tuple[measure.Profiled, bool | None]] = {}
    for r in range(rounds):
        k = r % len(arms)
        for name, env in arms[k:] + arms[:k]:
            pid, g, checked = _one(s, env, batch, r)
            if batch is None:
                batch = pid
                s.store.set_batch(pid, pid)
            got[(r, name)] = (g, checked)
            print(f"round {r + 1}/{rounds}: {name or 'the defaults'}: {g.status}, "
                  f"{g.outcome.wall_s:.2f} s" + ("" if checked is None else
                                                  ", check " + checked_text(checked)))
            if s.cluster is not None and g.status == "ok" and (
                    note := missing_note(g.ranks, s.np, s.cwd)):
                print("  " + note)
    if any(g.status != "ok" or c not in (None, True) for (_, n), (g, c) in got.items()
           if not n):
        raise CommscopeError(f"the program did not run cleanly with its defaults (batch "
                             f"{batch}: commscope show --profile list): nothing to set a "
                             "setting against")

    def run(r: int, name: str) -> prof.Run:
        g, c = got[(r, name)]
        return g.status, None if c is None else c is True, g.ranks, g.outcome.wall_s

    out = [prof.verified(f, [(run(r, f), run(r, "")) for r in range(rounds)]) for f in files]
    print(f"verify batch {batch}: {s.exe.name} under {s.impl.name}, {s.np} processes")
    print(prof.verify_text(out, rounds), end="")
    return 0


def stored_text(row) -> str:
    """A stored profile, as `show --profile` prints it."""
    data = json.loads(row["data"] or "{}")
    on = _on(data["cluster"], data.get("nodes") or 1) if data.get("cluster") else ""
    head = (f"profile {row['id']}: {prof.named(row)} under {row['mpi_name']}, "
            f"{row['np']} processes{on}, {row['started_at']}: {row['status']}"
            + (f" ({data['why']})" if data.get("why") else ""))
    ranks = data.get("ranks") or []
    summary = prof.summarize(ranks)
    return head.rstrip() + "\n" + prof.text(summary, 1 << 30) + _sites(ranks, summary, 20)
