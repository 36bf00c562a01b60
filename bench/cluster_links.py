#!/usr/bin/env python3
"""Do the emulated links deliver what their profiles promise?  (root)

Brings up one 2-node emulated cluster per profile (1gbit, 100mbit), then, in
alternating rounds (each implementation and cluster takes its turn, since
this VM's timing drifts for seconds at a time), measures with commscope:
  bw 4 MiB between the two nodes, as goodput over the profile's reference
    (1gbit: the 1000 Mbit/s rate; 100mbit: the ~94 Mbit/s TCP goodput of a
    real 100Base-T link: 1448 payload bytes per 1538 bytes on the wire)
    target 0.90 to 1.02
  latency 8 B inside one node (shared memory) and across the two nodes;
  then one 4 MiB bw size over 100 Mbit/s with the default options, its job's
  wall time against its default timeout (the window from a measured message).
Medians over rounds; the CPU other processes used while measuring is
printed with the figures.  The clusters are removed at the end, also on
error or Ctrl-C.

    sudo .venv/bin/python bench/cluster_links.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from commscope import cli
from commscope.measure.cluster import emu
from commscope.measure.plan import CoreOptions
from commscope.measure.runner import default_timeout
from commscope.store.db import Store

PROFILES = ("1gbit", "100mbit")
# TCP payload per Ethernet frame over the wire bytes of that frame: MSS 1448
# (1500 MTU - 20 IP - 20 TCP - 12 timestamps) over 1500 + 14 MAC + 4 FCS +
# 8 preamble + 12 inter-frame gap.
TCP_EFFICIENCY = 1448 / 1538
WINDOW = {"1gbit": 16, "100mbit": 4}  # messages in flight: about a second per sample


def run(db: Path, args: list[str]) -> None:
    rc = cli.main(["run", "--db", str(db), "--quiet", "--timeout", "300", *args])
    if rc != 0:
        sys.exit(f"cluster_links: commscope run {' '.join(args)} failed (see {db})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mpi", action="append", help="implementations (default: all found)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cluster_links: needs root (it builds emulated clusters)")
    mpis = [x for m in (a.mpi or []) for x in ("--mpi", m)]
    tag = f"b{os.getpid() % 100000}"
    names = {p: f"{tag}{p[:2]}" for p in PROFILES}
    made: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="cluster-links-"))
    db = tmp / "links.db"
    try:
        for p in PROFILES:
            emu.up(names[p], 2, p)
            made.append(names[p])
        for rnd in range(a.rounds):
            for p in PROFILES:
                print(f"round {rnd + 1}/{a.rounds}: {p}", file=sys.stderr)
                run(db, ["--cluster", f"emu:{names[p]}", "--np", "2", "--bench", "bw",
                         "--sizes", "4M", "--window", str(WINDOW[p]), "--min-samples", "5",
                         "--warmup", "1", "--time-cap", "10", *mpis])
            run(db, ["--cluster", f"emu:{names['1gbit']}", "--nodes", "1,2", "--np", "2",
                     "--bench", "latency", "--sizes", "8", "--time-cap", "1", *mpis])
        # one 4 MiB bw size over 100 Mbit/s with the default options: the window
        # chosen from a message measured at that size keeps it within seconds
        single = []
        for m in sorted({r["mpi_name"] for r in Store(db).runs()}):
            t0 = time.monotonic()
            run(tmp / "single.db", ["--cluster", f"emu:{names['100mbit']}", "--np", "2",
                                    "--bench", "bw", "--sizes", "4M", "--mpi", m])
            single.append((m, time.monotonic() - t0))
        store = Store(db)
        rows = store.result_rows(latest=False)
        runs = {r["id"]: r for r in store.runs()}
    finally:
        for n in made:
            emu.down(n)

    bad = [r for r in runs.values() if r["status"] != "ok"]
    if bad:
        sys.exit(f"cluster_links: {len(bad)} job(s) did not finish cleanly (see {db})")

    def med(vals: list[float]) -> float:
        return statistics.median(vals) if vals else float("nan")

    impls = sorted({r["mpi_name"] for r in rows})
    others = sum(r["other_cpu_s"] or 0 for r in rows)
    wall = sum(r["wall_s"] or 0 for r in rows)
    print(f"\nmedians over {a.rounds} alternating round(s); other processes used "
          f"{others:.2f} s of CPU over {wall:.1f} s measured\n")
    print(f"{'':<10}{'link':>8}{'bw 4 MiB':>14}{'rate':>11}{'reference':>13}"
          f"{'goodput/ref':>13}  target")
    fails = 0
    for p in PROFILES:
        rate = emu.PROFILES[p].rate_bps / 1e6
        ref = rate * TCP_EFFICIENCY if p == "100mbit" else rate
        for m in impls:
            mbit = med([r["mb_per_s"] * 8 for r in rows if r["bench"] == "bw"
                        and r["cluster"] == f"emu:{names[p]}" and r["mpi_name"] == m])
            ratio = mbit / ref
            ok = 0.90 <= ratio <= 1.02
            fails += not ok
            print(f"{m:<10}{p:>8}{mbit:>9.1f} Mb/s{rate:>6.0f} Mb/s{ref:>8.1f} Mb/s"
                  f"{ratio:>13.3f}  {'ok' if ok else 'MISS'} (0.90-1.02)")
    print(f"\n{'':<10}{'latency 8 B inside a node':>28}{'across nodes (1gbit)':>24}")
    for m in impls:
        lat = {n: med([r["median_us"] for r in rows if r["bench"] == "latency"
                       and r["mpi_name"] == m and r["nodes"] == n]) for n in (1, 2)}
        print(f"{m:<10}{lat[1]:>25.3f} us{lat[2]:>21.3f} us")
    limit = default_timeout(CoreOptions(sizes="4M"), 1)
    srows = {r["mpi_name"]: r for r in Store(tmp / "single.db").result_rows()}
    print(f"\none bw 4 MiB size over 100 Mbit/s, default options (timeout {limit:.0f} s, "
          f"--time-cap {CoreOptions().time_cap_s:g} s):")
    for m, wall_s in single:
        r = srows.get(m)
        got = (f"window {r['window']}, {r['n_samples']} samples, {r['mb_per_s'] * 8:.1f} Mb/s"
               if r else "no record")
        fails += wall_s > limit
        print(f"{m:<10}{wall_s:>8.1f} s of the job ({got})")
    print(f"\nrecords: {db}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
