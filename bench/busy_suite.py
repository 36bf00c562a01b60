#!/usr/bin/env python3
"""The test suite beside other work, as a user's laptop or a shared CI
runner has it: from a clean clone of this repository, `make test` runs
N times in a row while a load keeps one core busy throughout and both cores
busy for two minutes of each run (from --both-at seconds in).  Prints each
run's time and result, and the slowest tests of the last run.

The load is two busy loops in their own process group, started and stopped
here (killed whatever happens); nothing else on the machine is touched.

    bench/busy_suite.py [--runs 3] [--both-at 60] [--both-for 120] [--keep DIR] [--workers N]

--workers N runs make test with TEST_WORKERS=N (pytest-xdist, N tests at once).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def busy() -> subprocess.Popen:
    """One core busy until killed (its own process group)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop(p: subprocess.Popen | None) -> None:
    if p is not None and p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def one_run(clone: Path, log: Path, both_at: float, both_for: float,
            workers: int | None = None) -> tuple[int, float, str]:
    """make test in the clone beside the load: (exit status, seconds, summary line)."""
    first = busy()
    second = None
    t0 = time.monotonic()
    try:
        with open(log, "w") as f:
            args = ["make", "test", "PYTEST_ARGS=--durations=15"]
            if workers is not None:
                args.append(f"TEST_WORKERS={workers}")
            p = subprocess.Popen(args, cwd=clone,
                                 stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                while p.poll() is None:
                    now = time.monotonic() - t0
                    if second is None and both_at <= now < both_at + both_for:
                        second = busy()
                    elif second is not None and now >= both_at + both_for:
                        stop(second)
                    time.sleep(0.5)
            except BaseException:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                raise
        secs = time.monotonic() - t0
    finally:
        stop(second)
        stop(first)
    text = log.read_text(errors="replace")
    m = re.findall(r"^=+ (.*(?:passed|failed|error).*) =+$", text, re.M)
    return p.returncode, secs, (m[-1] if m else "no pytest summary (see the log)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--both-at", type=float, default=60.0,
                    help="seconds into each run when the second core turns busy")
    ap.add_argument("--both-for", type=float, default=120.0)
    ap.add_argument("--keep", type=Path, help="the clone and the logs go here")
    ap.add_argument("--workers", type=int, help="tests at once (make test's TEST_WORKERS)")
    a = ap.parse_args()
    if a.runs < 1 or a.both_at < 0 or a.both_for < 0 or (a.workers is not None
                                                         and a.workers < 0):
        ap.error("--runs is 1 or more; --both-at and --both-for are seconds, 0 or more; "
                 "--workers 0 or more")
    work = a.keep or Path(tempfile.mkdtemp(prefix="commscope-busy-"))
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "clone"
    if not clone.exists():
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    # what make test installs first (Debian packages, the virtual environment) is
    # not the suite's time: installed here, before the first timed run
    subprocess.run(["make", "install", "deps", "APT_PKGS=chromium slurm-wlm munge"], cwd=clone,
                   check=True, stdout=subprocess.DEVNULL)
    print(f"clean clone of {ROOT} at {clone}; one core busy throughout, both from "
          f"{a.both_at:.0f} s for {a.both_for:.0f} s of each run", flush=True)
    results = []
    for i in range(1, a.runs + 1):
        log = work / f"run{i}.log"
        rc, secs, summary = one_run(clone, log, a.both_at, a.both_for, a.workers)
        results.append(rc)
        print(f"run {i}: exit {rc}, {secs / 60:.1f} min: {summary}  ({log})", flush=True)
    text = (work / f"run{a.runs}.log").read_text(errors="replace")
    slow = re.search(r"=+ slowest 15 durations =+\n(.*?)\n\n", text, re.S)
    if slow:
        print("slowest tests of the last run:\n" + slow.group(1))
    return 0 if all(r == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
