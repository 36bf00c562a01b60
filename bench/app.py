#!/usr/bin/env python3
"""A real program nobody here wrote, profiled as a user would (issue 39's
figures), in one run on an idle machine:

 (1) hpcc (HPC Challenge, Debian's build, linked against Open MPI) at N =
     600 on a 1 x 2 grid under `commscope profile`: its hottest calls;
 (2) `commscope analyze app --measure`: each hot call against the benchmark
     of the same implementation, communicator size and message (measured
     here for what is missing), the ratio of the program's mean time to the
     benchmark's median;
 (3) `commscope profile --verify` with each settings file given (default:
     the Open MPI setting the diagnosis establishes on this machine, the
     shared-memory eager limit raised to 16 KiB, docs/diagnosis.md), in
     --rounds interleaved rounds against the defaults (the default file is
     written here with that one setting, not read from a diagnosis: give
     --settings advice/openmpi.env for this machine's): the program's wall
     time and time in MPI, with the rounds' interval;
 (4) the profiler's cost and its agreement with the core's own phases:
     bench/profile_overhead.py, run here.

    .venv/bin/python bench/app.py [--rounds 5] [--settings FILE ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.errors import CommscopeError
from commscope.measure import settings as settings_mod

HERE = Path(__file__).resolve().parent
EXAMPLE = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt")
ESTABLISHED = "OMPI_MCA_btl_vader_eager_limit=16384\n"


def commscope(*argv: str, cwd: Path, ok: tuple[int, ...] = (0,)) -> str:
    """A commscope command as a user types it; its output, or the reason it
    failed (`ok`: the exit statuses that are not a failure)."""
    p = subprocess.run([sys.executable, "-m", "commscope.cli", *argv], cwd=cwd,
                       capture_output=True, text=True, timeout=1800, check=False)
    if p.returncode not in ok:
        sys.exit(f"app: commscope {' '.join(argv)} exited {p.returncode}:\n"
                 f"{(p.stderr or p.stdout)[-2000:]}")
    return p.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds of each --verify (default 5)")
    ap.add_argument("--settings", action="append", default=[],
                    help="a settings file to verify on hpcc (repeatable; default: the eager "
                         "limit at 16 KiB)")
    ap.add_argument("--keep", help="a folder for the store and hpcc's files (default: a "
                                   "temporary one)")
    a = ap.parse_args()
    if shutil.which("hpcc") is None or not EXAMPLE.is_file():
        sys.exit("app: needs Debian's hpcc (apt install hpcc; make test installs it)")
    files = [Path(f).resolve() for f in a.settings]
    for f in files:
        if not f.is_file():
            sys.exit(f"app: no settings file {f}")
        try:  # read as commscope reads it, before minutes of hpcc
            settings_mod.parse_file(str(f))
        except CommscopeError as exc:
            sys.exit(f"app: {exc}")
    if a.rounds < 1:
        sys.exit(f"app: --rounds must be 1 or more, got {a.rounds}")
    tmp = tempfile.TemporaryDirectory(prefix="commscope-app-")
    where = Path(a.keep or tmp.name).resolve()
    if where.exists() and not where.is_dir():
        sys.exit(f"app: --keep {where} is not a folder")
    where.mkdir(parents=True, exist_ok=True)
    db = where / "app.db"
    if db.exists():
        sys.exit(f"app: {db} exists: give an empty --keep folder")
    lines = EXAMPLE.read_text().splitlines()
    lines[5], lines[10] = "600          Ns", "1            Ps"
    (where / "hpccinf.txt").write_text("\n".join(lines) + "\n")
    if not files:
        files = [where / "eager-16k.env"]
        files[0].write_text(ESTABLISHED)

    print("== (1) hpcc N=600, 1 x 2, under the profiler")
    print(commscope("profile", "--db", str(db), "--np", "2", "--timeout", "600", "--", "hpcc",
                    cwd=where), end="")
    print("== (2) its hot calls against the benchmarks (analyze app --measure)")
    print(commscope("analyze", "app", "--db", str(db), "--measure", cwd=where), end="")
    print(f"== (3) settings verified on hpcc, {a.rounds} interleaved rounds each")
    for f in files:
        print(f"-- {f.name}: {' '.join(f'{k}={v}' for k, v in settings_mod.parse_file(str(f)))}")
        # 1: a setting under which the program failed, said in the output
        print(commscope("profile", "--db", str(db), "--np", "2", "--timeout", "600",
                        "--verify", str(f), "--rounds", str(a.rounds), "--", "hpcc",
                        cwd=where, ok=(0, 1)), end="")
    print("== (4) the profiler's cost and agreement (bench/profile_overhead.py)")
    p = subprocess.run([sys.executable, str(HERE / "profile_overhead.py"), "--rounds", "8"],
                       capture_output=True, text=True, timeout=1800, check=False)
    print(p.stdout, end="" if p.stdout.endswith("\n") else "\n")
    if p.returncode:
        print(f"profile_overhead.py exited {p.returncode}: {p.stderr[-1000:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
