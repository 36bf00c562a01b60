#!/usr/bin/env python3
"""The GPU paths side by side, on a machine with a GPU.

For 2 ranks (both on GPU 0 unless there are two), in interleaved rounds
(--repeat, each round in a new order), every path this machine can run:
host, staged, staged-pageable, cuda-aware (where the MPI says it supports
CUDA), ipc and nccl.  Prints, per path, the 8 B latency and the 4 MiB
bandwidth with their between-round intervals, each over the host path's;
then gpu_matmul and gpu_jacobi (4 ranks) per path, phase by phase.  Every
record must be valid (the core checks every message it moved, outside the
timed region); a path that was skipped prints its reason.

Without a GPU it says why and measures nothing (exit 2).

    .venv/bin/python bench/gpu.py [--mpi openmpi] [--repeat 3] [--np-apps 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope import build, mpi
from commscope.analysis.repeats import aggregate
from commscope.store import Store

PATHS = ["host", "staged", "staged-pageable", "cuda-aware", "ipc", "nccl"]


def commscope(*argv: str) -> int:
    return subprocess.run([sys.executable, "-m", "commscope", *argv], check=False).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--np-apps", type=int, default=4)
    ap.add_argument("--app-n", default="2048,4096")
    a = ap.parse_args()
    impls = mpi.select([a.mpi] if a.mpi else [])
    core = build.build(impls[0])
    info = build.gpu_info(core)
    if not info.get("devices"):
        print(f"no GPU here, nothing measured: {info.get('reason')}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "gpu.db")
        base = ["run", "--db", db, "--mpi", impls[0].name, "--path", "all", "--repeat",
                str(a.repeat), "--no-probe", "--quiet"]
        commscope(*base, "--bench", "latency,bw", "--sizes", "8:4M", "--factor", "8")
        commscope(*base, "--bench", "gpu_matmul,gpu_jacobi", "--np", str(a.np_apps),
                  "--param", f"N={a.app_n}")
        store = Store(db)
        runs = store.runs()
        bad = [r for r in runs if r["status"] not in ("ok", "skipped")]
        for r in runs:
            if r["status"] == "skipped":
                path = json.loads(r["config"])["buffer"]
                print(f"{path:<16} skipped: {r['stderr_tail'].strip().splitlines()[0]}")
        rows = aggregate(store.result_rows(latest=False))
        store.close()
    by = {(json.loads(str(g["config"]))["buffer"], g["bench"], g["size_bytes"]): g for g in rows}

    def span(g: dict, scale: float = 1.0) -> str:
        return (f"{float(g['median_us']) * scale:10.2f} "
                f"[{float(g['ci_lo_us']) * scale:.2f}, {float(g['ci_hi_us']) * scale:.2f}]")

    mib4 = 4 << 20
    hl, hb = by.get(("host", "latency", 8)), by.get(("host", "bw", mib4))
    print(f"{'path':<16} {'8 B latency us':>26} {'x host':>7} {'4 MiB us/msg':>26} "
          f"{'MB/s':>7} {'x host':>7}")
    for p in PATHS:
        lat, bw = by.get((p, "latency", 8)), by.get((p, "bw", mib4))
        if not lat or not bw or not lat["median_us"] or not bw["median_us"]:
            continue
        rl = float(lat["median_us"]) / float(hl["median_us"]) if hl else float("nan")
        rb = float(hb["median_us"]) / float(bw["median_us"]) if hb else float("nan")
        print(f"{p:<16} {span(lat)} {rl:7.2f} {span(bw)} "
              f"{mib4 / float(bw['median_us']):7.0f} {rb:7.2f}")
    for (p, bench, size), g in sorted(by.items()):
        if str(bench).startswith("gpu_") and g["median_us"]:
            print(f"{bench:<11} N={size:<6} {p:<16} ms {span(g, 1e-3)}")
    invalid = [g for g in rows if not g["valid"]]
    print(f"validation: {len(bad)} failed job(s), {len(invalid)} invalid record(s)")
    return 1 if bad or invalid else 0


if __name__ == "__main__":
    sys.exit(main())
