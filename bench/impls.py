#!/usr/bin/env python3
"""Every MPI implementation found here, side by side in one run.

The 8 B latency and the 1 MiB bandwidth (bw, window 64) of each
implementation commscope finds (Debian's, those `commscope mpi install`
put in their own prefixes, those added by path), 2 ranks on this machine,
in interleaved rounds (--repeat: every implementation once per round, in a
new order each round).  Per implementation: the median over rounds with its
95% between-round interval, and its figure against the best one's, with
the range both intervals allow: latency over the lowest latency, the highest
bandwidth over its bandwidth (so 1.00 is the best, and a range that holds
1.00 means it cannot be told from the best here).  Every record must be
valid (the core checks every message outside the timed region).

    .venv/bin/python bench/impls.py [--repeat 5] [--mpi NAME ...]

Install the PyPI builds first to compare them too:
    .venv/bin/commscope mpi install openmpi5   (and mpich5, impi)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.analysis.repeats import aggregate
from commscope.measure import discovery
from commscope.store.db import Store

LAT, BW = 8, 1 << 20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", action="append", help="implementations (default: every one found)")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    impls = discovery.select(a.mpi or [])
    if len(impls) < 2:
        print(f"only {len(impls)} implementation(s) found: nothing to compare "
              "(commscope mpi install openmpi5 adds one)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "impls.db")
        argv = [sys.executable, "-m", "commscope.cli", "run", "--db", db, "--quiet",
                "--bench", "latency,bw", "--sizes", f"{LAT}:{BW}", "--factor", str(BW // LAT),
                "--repeat", str(a.repeat), "--np", "2"]
        for m in impls:
            argv += ["--mpi", m.name]
        rc = subprocess.run(argv, check=False).returncode
        store = Store(db)
        runs = store.runs()
        rows = aggregate(store.result_rows(latest=False))
        store.close()
    bad = [r for r in runs if r["status"] != "ok"]
    invalid = [g for g in rows if not g["valid"]]
    versions = {r["mpi_name"]: str(r["mpi_version"]).splitlines()[0] for r in runs}
    by = {(g["mpi_name"], g["bench"], g["size_bytes"]): g for g in rows if g["median_us"]}
    lat = {m.name: by.get((m.name, "latency", LAT)) for m in impls}
    bw = {m.name: by.get((m.name, "bw", BW)) for m in impls}
    lat = {k: v for k, v in lat.items() if v}
    bw = {k: v for k, v in bw.items() if v}
    if not lat or not bw:
        print(f"nothing measured (run exit {rc}, {len(bad)} failed job(s))")
        return 1

    def fig(g: dict) -> tuple[float, float, float]:
        return float(g["median_us"]), float(g["ci_lo_us"]), float(g["ci_hi_us"])

    def ratio(num: tuple[float, float, float], den: tuple[float, float, float]
              ) -> tuple[float, float, float]:
        """num over den, and the range the two between-round intervals allow."""
        return num[0] / den[0], num[1] / den[2], num[2] / den[1]

    def over(num: tuple[float, float, float], den: tuple[float, float, float]) -> str:
        r = ratio(num, den)
        return f"{r[0]:5.2f} [{r[1]:.2f}, {r[2]:.2f}]"

    def best_of(figs: dict[str, dict], best: str) -> str:
        """The best, and those the intervals cannot tell from it: no winner
        is named where the next run may order them otherwise."""
        tied = [k for k in figs if k != best and ratio(fig(figs[k]), fig(figs[best]))[1] <= 1.0]
        return best + (f", not separated from {', '.join(tied)}" if tied
                       else ", separated from every other")

    best_lat = min(lat, key=lambda k: fig(lat[k])[0])
    best_bw = min(bw, key=lambda k: fig(bw[k])[0])  # least time per 1 MiB message
    print(f"{a.repeat} interleaved rounds, 2 ranks, this machine; [95% between-round interval]")
    print(f"{'implementation':<14} {'8 B latency us':>24} {'over best':>18} "
          f"{'1 MiB bw GB/s':>28} {'best over it':>18}  version")
    for m in impls:
        lg, bg = lat.get(m.name), bw.get(m.name)
        cells = []
        if lg:
            f = fig(lg)
            cells.append(f"{f[0]:8.3f} [{f[1]:.3f}, {f[2]:.3f}]".rjust(24))
            cells.append(over(f, fig(lat[best_lat])).rjust(18))
        else:
            cells += [f"{'-':>24}", f"{'-':>18}"]
        if bg:
            f = fig(bg)  # microseconds per message
            gbs = [BW / 1e3 / x for x in f]  # bytes per us is MB/s; three figures
            cells.append(f"{gbs[0]:7.3g} [{gbs[2]:.3g}, {gbs[1]:.3g}]".rjust(28))
            cells.append(over(f, fig(bw[best_bw])).rjust(18))
        else:
            cells += [f"{'-':>28}", f"{'-':>18}"]
        print(f"{m.name:<14} {' '.join(cells)}  {versions.get(m.name, '?')[:60]}")
    print(f"lowest 8 B latency: {best_of(lat, best_lat)}")
    print(f"highest 1 MiB bandwidth: {best_of(bw, best_bw)}")
    print(f"validation: {len(rows)} record(s) from {len(runs)} job(s): {len(bad)} failed "
          f"job(s), {len(invalid)} invalid record(s)")
    for r in bad:
        tail = (r["stderr_tail"] or "").strip().splitlines()
        print(f"  failed: {r['mpi_name']} {r['bench']}: {r['status']} "
              f"{tail[-1] if tail else ''}")
    return 1 if bad or invalid else 0


if __name__ == "__main__":
    sys.exit(main())
