#!/usr/bin/env python3
"""Chai, Hartono and Panda's channel against the best MPI implementation here, in one run.

Prints, from medians over alternating rounds (the tools take turns, since
latency on a VM jumps between two modes for seconds at a time):
  channel 8 B latency / best MPI 8 B latency          (target <= 1.0)
  channel 4 MiB bandwidth / best MPI 4 MiB bandwidth   (target >= 1.0)
  channel 8 B latency / bare cache-line ping-pong floor (target <= 1.5)
"best" is chosen per figure among the implementations measured in the
same run.  The floor is two processes pinned to two cores bouncing one
cache line (channel/tools/floor.c), measured in the same rounds.

    .venv/bin/python bench/compare_chan.py --rounds 6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.measure import build, discovery, mpi, noise, provenance
from commscope.store.records import parse_file

ROOT = Path(__file__).resolve().parent.parent


def launch(core: build.Core, args: list[str], out: Path) -> dict[str, float]:
    spec = mpi.LaunchSpec(np=2, cores=provenance.n_cores(), root=os.geteuid() == 0)
    argv = mpi.launch_argv(core.impl, spec, str(core.exe),
                           [*args, "--bench", "latency,bw", "--sizes", "8:4M", "--factor",
                            str(1 << 19), "--min-time", "0.2", "--time-cap", "2",
                            "--output", str(out)])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                       env=mpi.environ(core.impl.env), check=False)
    if p.returncode != 0:
        sys.exit(f"compare_chan: {' '.join(argv)} failed:\n{p.stderr[-2000:]}")
    got = {}
    for r in parse_file(out).results:
        if not r.valid:
            sys.exit(f"compare_chan: {r.bench} {r.size_bytes} failed validation: {r.error}")
        if r.bench == "latency" and r.size_bytes == 8:
            got["lat8"] = r.median_us
        if r.bench == "bw" and r.size_bytes == 4 << 20:
            got["bw4m"] = r.mb_per_s
    return got


def floor_us(exe: Path) -> float:
    out = subprocess.run([str(exe), "200", "2000"], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    return float(json.loads(out)["one_way_us"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--mpi", action="append",
                    help="implementations by name (default: Debian's), e.g. --mpi mvapich2")
    a = ap.parse_args()
    found = discovery.discover()
    impls = ([m for m in found if m.name in a.mpi] if a.mpi else
             [m for m in found if m.source == "debian"] or found)
    if a.mpi and len(impls) < len(set(a.mpi)):
        missing = sorted(set(a.mpi) - {m.name for m in impls})
        sys.exit(f"compare_chan: not found: {', '.join(missing)} (found: "
                 f"{', '.join(m.name for m in found)})")
    cores = {m.name: build.build(m) for m in impls}
    boot = cores.get("openmpi") or next(iter(cores.values()))
    mark0, t0 = noise.mark(), os.times()
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp) / "floor"
        subprocess.run(["cc", "-std=c11", "-O2", str(ROOT / "channel/tools/floor.c"), "-o",
                        str(floor)], check=True)
        tools = {name: (core, []) for name, core in cores.items()}
        tools["channel"] = (boot, ["--transport", "chan"])
        rows: dict[str, dict[str, list[float]]] = {k: {"lat8": [], "bw4m": []} for k in tools}
        floors: list[float] = []
        order = list(tools)
        for r in range(a.rounds):
            for name in (order if r % 2 == 0 else order[::-1]):
                core, extra = tools[name]
                for k, v in launch(core, extra, Path(tmp) / "r.jsonl").items():
                    rows[name][k].append(v)
            floors.append(floor_us(floor))
    t1 = os.times()
    children = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    med = {n: {k: statistics.median(v) for k, v in d.items()} for n, d in rows.items()}
    mpis = [n for n in med if n != "channel"]
    best_lat = min(mpis, key=lambda n: med[n]["lat8"])
    best_bw = max(mpis, key=lambda n: med[n]["bw4m"])
    ch, fl = med["channel"], statistics.median(floors)
    r_lat, r_bw, r_floor = ch["lat8"] / med[best_lat]["lat8"], ch["bw4m"] / med[best_bw]["bw4m"], \
        ch["lat8"] / fl

    def ok(cond: bool) -> str:
        return "ok" if cond else "MISS"

    print(f"the intra-node channel (Chai, Hartono and Panda) vs MPI, {a.rounds} alternating "
          "rounds, medians, 2 processes")
    for m in impls:
        version = cores[m.name].mpi_version
        print(f"  {m.name}: {version.splitlines()[0] if version else m.family}")
    print(f"machine: {provenance.cpu_model()}, {provenance.n_cores()} cores")
    for n in order:
        print(f"  {n:<10} 8 B latency {med[n]['lat8']:.4f} us   4 MiB bw {med[n]['bw4m']:.0f} MB/s"
              f"   rounds: {' '.join(f'{v:.3f}' for v in rows[n]['lat8'])}")
    print(f"  floor      8 B one-way {fl:.4f} us   rounds: {' '.join(f'{v:.3f}' for v in floors)}")
    print(f"channel 8 B latency / best MPI ({best_lat}): {r_lat:.3f}  {ok(r_lat <= 1.0)} "
          "(target <= 1.0)")
    print(f"channel 4 MiB bw / best MPI ({best_bw}):      {r_bw:.3f}  {ok(r_bw >= 1.0)} "
          "(target >= 1.0)")
    print(f"channel 8 B latency / cache-line floor:   {r_floor:.3f}  {ok(r_floor <= 1.5)} "
          "(target <= 1.5)")
    n = noise.job_noise(mark0, noise.mark(), children, 1.0)
    if n.get("valid"):
        print(f"noise: other processes used {n['other_cpu_s']} s of CPU, steal {n['steal_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
