"""commscope profile: a program commscope did not write, run under its
implementation's launcher with the PMPI profiler preloaded on every rank;
where its MPI time goes, stored beside the benchmarks' records.  With
--verify, settings files are run on the program in interleaved rounds
against its defaults, and a setting is "faster for this program" only
where the rounds' interval says so (and the user's --check passed)."""

from __future__ import annotations

import argparse
import json
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..analysis import profile as prof
from ..errors import CommscopeError
from ..measure import discovery, provenance
from ..measure import profile as measure
from ..measure import settings as settings_mod
from ..measure.mpi import MpiImpl, environ
from ..measure.procs import run_captured
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


def _one(s: Setup, settings: dict[str, str], batch: int | None = None,
         round_: int | None = None) -> tuple[int, measure.Profiled, bool | None]:
    """The program run once, profiled and stored (running first, so that a
    hang or an interrupt is recorded); the user's check run after it."""
    pid = s.store.begin_profile({
        "program": str(s.exe), "argv": json.dumps(s.args), "cwd": str(s.cwd),
        "mpi_name": s.impl.name, "mpi_family": s.impl.family, "np": s.np,
        "launch_argv": "[]", "settings": json.dumps(settings),
        "hostname": socket.gethostname(), "commscope_version": __version__,
        "batch": batch, "round": round_})
    try:
        argv, got = measure.launch(s.impl, s.lib, s.exe, s.args, s.np, provenance.n_cores(),
                                   s.cwd, s.timeout, settings)
    except BaseException:
        s.store.finish_profile(pid, "interrupted", exit_code=None, signal=None, wall_s=0.0,
                               stdout_tail="", stderr_tail="", data=json.dumps({"ranks": []}),
                               launch_argv="[]")
        raise
    checked = None
    if s.check and got.status == "ok":
        c = run_captured(s.check, timeout_s=CHECK_TIMEOUT_S, env=environ(), cwd=str(s.cwd))
        checked = c.outcome.exit_code == 0
    s.store.finish_profile(pid, got.status, exit_code=got.outcome.exit_code,
                           signal=got.outcome.signal, wall_s=got.outcome.wall_s,
                           stdout_tail=got.out, stderr_tail=got.err,
                           data=json.dumps({"ranks": got.ranks, "why": got.why}),
                           launch_argv=json.dumps(argv), checked=checked)
    return pid, got, checked


@command("profile")
def cmd_profile(a: argparse.Namespace) -> int:
    args = list(a.program)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        raise CommscopeError("commscope profile: name the program after --, e.g. "
                             "commscope profile --np 2 -- ./my_mpi_program ARGS")
    cwd = Path.cwd()
    exe = measure.program_path(args[0], cwd)
    check = shlex.split(a.check) if a.check else []  # run as a list, never by a shell
    if a.check and not check:
        raise CommscopeError("--check was given no command")
    files = {f: dict(settings_mod.parse_file(f)) for f in a.verify or []}
    impls = discovery.discover()
    if a.mpi:
        discovery.select(listed(a.mpi))  # an unknown name is refused, naming it
    impl = measure.which_impl(exe, impls, listed(a.mpi)[0] if a.mpi else None)
    settings = dict(settings_mod.parse_file(a.settings)) if a.settings else {}
    s = Setup(Store(a.db), impl, measure.build(impl), exe, args[1:], cwd, a.np, a.timeout,
              check)
    if files:
        return _verify(s, settings, files, a.rounds)
    pid, got, checked = _one(s, settings)
    print(f"profile {pid}: {exe.name} under {impl.name}, {a.np} processes: {got.status}"
          + (f" ({got.why})" if got.why else "") + f", {got.outcome.wall_s:.1f} s"
          + ("" if checked is None else "; its check " + ("passed" if checked else "FAILED")))
    if got.status in ("failed", "timeout") and got.err.strip():
        print("  its last error lines: " + " | ".join(got.err.strip().splitlines()[-3:])[:300])
    print(prof.text(prof.summarize(got.ranks), a.top or 1 << 30), end="")
    return 0 if got.status == "ok" and checked is not False else 1


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
                s.store.db.execute("UPDATE profiles SET batch=? WHERE id=?", (pid, pid))
                s.store.db.commit()
            got[(r, name)] = (g, checked)
            print(f"round {r + 1}/{rounds}: {name or 'the defaults'}: {g.status}, "
                  f"{g.outcome.wall_s:.2f} s" + ("" if checked is None else
                                                  ", check " + ("passed" if checked else
                                                                "FAILED")))
    if any(g.status != "ok" or c is False for (_, n), (g, c) in got.items() if not n):
        raise CommscopeError(f"the program did not run cleanly with its defaults (batch "
                             f"{batch}: commscope show --profile list): nothing to set a "
                             "setting against")

    def mpi_s(g: measure.Profiled) -> float:
        return sum(float(x.get("mpi_s") or 0.0) for x in g.ranks)  # type: ignore[arg-type]

    out = []
    for f in files:
        wall, mpi, failed, broke = [], [], 0, 0
        for r in range(rounds):
            (g, c), (d, _) = got[(r, f)], got[(r, "")]
            if g.status != "ok":
                failed += 1
                continue
            broke += c is False
            wall.append(g.outcome.wall_s / d.outcome.wall_s)
            if mpi_s(g) > 0 and mpi_s(d) > 0:
                mpi.append(mpi_s(g) / mpi_s(d))
        out.append(prof.Verified(f, tuple(wall), tuple(mpi), failed, broke))
    print(f"verify batch {batch}: {s.exe.name} under {s.impl.name}, {s.np} processes")
    print(prof.verify_text(out, rounds), end="")
    return 0


def stored_text(row) -> str:
    """A stored profile, as `show --profile` prints it."""
    data = json.loads(row["data"] or "{}")
    named = shlex.join([Path(row["program"]).name, *json.loads(row["argv"] or "[]")])
    head = (f"profile {row['id']}: {named} under {row['mpi_name']}, "
            f"{row['np']} processes, {row['started_at']}: {row['status']}"
            + (f" ({data['why']})" if data.get("why") else ""))
    return head.rstrip() + "\n" + prof.text(prof.summarize(data.get("ranks") or []), 1 << 30)
