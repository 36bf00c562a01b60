"""commscope matrix on a 4-node emulated cluster (issue 40): three runs with
one node degraded to 100 Mbit/s and three with every node on Gigabit, each
run's matrix, verdict and time, then which nodes each run named.  Each run
measures the matrix one pair at a time and then with each round's pairs at
once (--at-once), alternating which goes first.  `--cases held` adds runs
with n2 held to a quarter of one CPU, measured with --stall-time 0.3 (its
stalls are what names it).  Needs root; run it on an idle machine (what
else runs shares the pairs' cores).

    bench/matrix.py [--runs 3] [--mpi openmpi] [--modes one,at-once]
                    [--cases degraded,healthy,held] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CS = [sys.executable, "-m", "commscope.cli"]


def sh(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def named(out: str, section: str) -> list[str]:
    """The nodes and links one section's verdict named."""
    part = out.split(section, 1)[1] if section in out else ""
    part = re.split(r"\n\n", part, maxsplit=1)[0]
    return [m.group(1) for m in re.finditer(r"^  (\S+): (?:every pair|this pair)", part, re.M)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--modes", default="one,at-once")
    ap.add_argument("--cases", default="degraded,healthy",
                    help="of degraded (n2 on 100 Mbit/s), healthy, held (n2 held to a "
                    "quarter of one CPU, with --stall-time 0.3)")
    ap.add_argument("--keep")
    a = ap.parse_args()
    cases = {"degraded": ("degraded n2:100mbit", ["--degrade", "n2:100mbit"], []),
             "healthy": ("healthy", [], []),
             "held": ("held n2:cpu", ["--degrade", "n2:cpu"], ["--stall-time", "0.3"])}
    if unknown := [c for c in a.cases.split(",") if c not in cases]:
        print(f"bench/matrix.py: unknown case(s) {', '.join(unknown)} (of "
              f"{', '.join(cases)})", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench/matrix.py: emulated clusters need root", file=sys.stderr)
        return 2
    where = Path(a.keep or tempfile.mkdtemp(prefix="cs-matrix-"))
    where.mkdir(parents=True, exist_ok=True)
    summary = []
    for case, degrade, extra in (cases[c] for c in a.cases.split(",")):
        name = f"bm{os.getpid() % 10000}"
        up = sh([*CS, "cluster", "up", "--nodes", "4", "--link", "1gbit", "--name", name,
                 *degrade])
        if up.returncode != 0:
            print(up.stderr, file=sys.stderr)
            return 1
        try:
            for r in range(1, a.runs + 1):
                modes = a.modes.split(",")
                for mode in modes if r % 2 else modes[::-1]:
                    t0 = time.monotonic()
                    p = sh([*CS, "matrix", "--cluster", f"emu:{name}", "--mpi", a.mpi,
                            "--quiet", *(["--at-once"] if mode == "at-once" else []), *extra,
                            "--db", str(where / f"{case.split()[0]}-{mode}{r}.db")])
                    took = time.monotonic() - t0
                    print(f"== {case}, {mode}, run {r} (exit {p.returncode}, {took:.0f} s)")
                    print(p.stdout + p.stderr)
                    bw = named(p.stdout, "message (bw)")
                    lat = named(p.stdout, "B (latency)")
                    stall = (f"; stalls named {named(p.stdout, 'longest stall at') or 'nothing'}"
                             if extra else "")
                    alone = re.findall(r"^  (\S+) alone: .*?\): (.*)$", p.stdout, re.M)
                    summary.append(f"{case}, {mode}, run {r}: bw named {bw or 'nothing'}; "
                                   f"latency named {lat or 'nothing'}{stall}; {took:.0f} s"
                                   + "".join(f"\n    {x} alone: {y}" for x, y in alone))
        finally:
            sh([*CS, "cluster", "down", name])
    print("\n".join(summary))
    print(f"stores in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
