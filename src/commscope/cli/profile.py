"""commscope profile: a program commscope did not write, run under its
implementation's launcher with the PMPI profiler preloaded on every rank;
where its MPI time goes, stored beside the benchmarks' records."""

from __future__ import annotations

import argparse
import json
import shlex
import socket
from pathlib import Path

from .. import __version__
from ..analysis import profile as prof
from ..errors import CommscopeError
from ..measure import discovery, provenance
from ..measure import profile as measure
from ..measure import settings as settings_mod
from ..store.db import Store
from .common import command, listed


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
    impls = discovery.select(listed(a.mpi)) if a.mpi else discovery.discover()
    if not impls:
        raise CommscopeError("no MPI implementation found (commscope mpi list)")
    impl = measure.which_impl(exe, impls if not a.mpi else discovery.discover(),
                              listed(a.mpi)[0] if a.mpi else None)
    settings = dict(settings_mod.parse_file(a.settings)) if a.settings else {}
    lib = measure.build(impl)
    store = Store(a.db)
    cores = provenance.n_cores()
    argv_preview = [impl.launcher, "-n", str(a.np), "...", str(exe), *args[1:]]
    pid = store.begin_profile({
        "program": str(exe), "argv": json.dumps(args[1:]), "cwd": str(cwd),
        "mpi_name": impl.name, "mpi_family": impl.family, "np": a.np,
        "launch_argv": json.dumps(argv_preview), "settings": json.dumps(settings),
        "hostname": socket.gethostname(), "commscope_version": __version__})
    try:
        argv, got = measure.launch(impl, lib, exe, args[1:], a.np, cores, cwd, a.timeout,
                                   settings)
    except BaseException:
        store.finish_profile(pid, "interrupted", exit_code=None, signal=None, wall_s=0.0,
                             stdout_tail="", stderr_tail="", data=json.dumps({"ranks": []}))
        raise
    store.db.execute("UPDATE profiles SET launch_argv=? WHERE id=?", (json.dumps(argv), pid))
    store.db.commit()
    store.finish_profile(pid, got.status, exit_code=got.outcome.exit_code,
                         signal=got.outcome.signal, wall_s=got.outcome.wall_s,
                         stdout_tail=got.out, stderr_tail=got.err,
                         data=json.dumps({"ranks": got.ranks, "why": got.why}))
    s = prof.summarize(got.ranks)
    print(f"profile {pid}: {exe.name} under {impl.name}, {a.np} processes: {got.status}"
          + (f" ({got.why})" if got.why else "") + f", {got.outcome.wall_s:.1f} s")
    if got.status in ("failed", "timeout") and got.err.strip():
        print("  its last error lines: " + " | ".join(got.err.strip().splitlines()[-3:])[:300])
    print(prof.text(s, a.top or 1 << 30), end="")
    return 0 if got.status == "ok" else 1


def stored_text(row) -> str:
    """A stored profile, as `show --profile` prints it."""
    data = json.loads(row["data"] or "{}")
    named = shlex.join([Path(row["program"]).name, *json.loads(row["argv"] or "[]")])
    head = (f"profile {row['id']}: {named} under {row['mpi_name']}, "
            f"{row['np']} processes, {row['started_at']}: {row['status']}"
            + (f" ({data['why']})" if data.get("why") else ""))
    return head.rstrip() + "\n" + prof.text(prof.summarize(data.get("ranks") or []), 1 << 30)
