#!/usr/bin/env python3
"""The GPU paths side by side, on a machine with a GPU.

For 2 ranks (both on GPU 0 unless there are two), in interleaved rounds
(--repeat, each round in a new order), every path this machine can run:
host, staged, staged-pageable, staged-pipelined, cuda-aware (where the MPI
says it supports CUDA), ipc and nccl.  Prints, per path, the 1 B latency and the 4 MiB
time per message with their between-round intervals, and each against the
host path's with the range both intervals allow (bandwidth: host's time
over the path's);
then gpu_matmul and gpu_jacobi (4 ranks) per path, phase by phase.  Every
record must be valid (the core checks every message it moved, outside the
timed region); a path that was skipped prints its reason.

Without a GPU it says why and measures nothing (exit 2); with
COMMSCOPE_GPU_STANDIN=host it runs on host memory standing in for the device
(a check of the script itself: those figures say nothing of a GPU).

    .venv/bin/python bench/gpu.py [--mpi openmpi] [--repeat 3] [--np-apps 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.analysis.repeats import aggregate
from commscope.measure import build, discovery
from commscope.measure.plan import gpu_standin
from commscope.store.db import Store

PATHS = ["host", "staged", "staged-pageable", "staged-pipelined", "cuda-aware", "ipc", "nccl"]


def commscope(*argv: str) -> int:
    return subprocess.run([sys.executable, "-m", "commscope.cli", *argv],
                          check=False).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--np-apps", type=int, default=4)
    ap.add_argument("--app-n", default="2048,4096")
    a = ap.parse_args()
    impls = discovery.select([a.mpi] if a.mpi else [])
    core = build.build(impls[0])
    info = build.gpu_info(core)
    if gpu_standin():
        print("COMMSCOPE_GPU_STANDIN=host: host memory stands in for the device; this checks "
              "the script, the figures say nothing of a GPU")
    elif not info.get("devices"):
        print(f"no GPU here, nothing measured: {info.get('reason')}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "gpu.db")
        base = ["run", "--db", db, "--mpi", impls[0].name, "--path", "all", "--repeat",
                str(a.repeat), "--no-probe", "--quiet"]
        commscope(*base, "--bench", "latency,bw", "--sizes", "1:4M", "--factor", "4")
        if not gpu_standin():  # the applications' kernels need a real device
            commscope(*base, "--bench", "gpu_matmul,gpu_jacobi", "--np", str(a.np_apps),
                      "--param", f"N={a.app_n}")
        store = Store(db)
        runs = store.runs()
        bad = [r for r in runs if r["status"] not in ("ok", "skipped")]
        said = set()
        for r in runs:
            path = json.loads(r["config"])["buffer"]
            if r["status"] == "skipped" and (path, r["bench"]) not in said:
                said.add((path, r["bench"]))
                print(f"{path:<16} {r['bench']}: {r['stderr_tail'].strip().splitlines()[0]}")
        rows = aggregate(store.result_rows(latest=False))
        store.close()
    by = {(json.loads(str(g["config"]))["buffer"], g["bench"], g["size_bytes"]): g for g in rows}

    def span(g: dict, scale: float = 1.0) -> str:
        return (f"{float(g['median_us']) * scale:10.2f} "
                f"[{float(g['ci_lo_us']) * scale:.2f}, {float(g['ci_hi_us']) * scale:.2f}]")

    def ratio(num: dict | None, den: dict | None) -> str:
        """num over den, with the range their between-round intervals allow
        (unpaired: as wide as the two intervals together)."""
        if not num or not den:
            return f"{'-':>20}"
        f = [float(num[k]) for k in ("median_us", "ci_lo_us", "ci_hi_us")]
        g = [float(den[k]) for k in ("median_us", "ci_lo_us", "ci_hi_us")]
        return f"{f[0] / g[0]:6.2f} [{f[1] / g[2]:.2f}, {f[2] / g[1]:.2f}]"

    mib4 = 4 << 20
    hl, hb = by.get(("host", "latency", 1)), by.get(("host", "bw", mib4))
    print(f"{'path':<16} {'1 B latency us':>26} {'over host':>20} {'4 MiB us per message':>26} "
          f"{'host over it':>20}")
    for p in PATHS:
        lat, bw = by.get((p, "latency", 1)), by.get((p, "bw", mib4))
        if not lat or not bw or not lat["median_us"] or not bw["median_us"]:
            continue
        if p == "host":
            print(f"{p:<16} {span(lat)} {'(reference)':>20} {span(bw)} {'(reference)':>20}")
        else:
            print(f"{p:<16} {span(lat)} {ratio(lat, hl):>20} {span(bw)} {ratio(hb, bw):>20}")
    for (p, bench, size), g in sorted(by.items()):
        if str(bench).startswith("gpu_") and g["median_us"]:
            print(f"{bench:<11} N={size:<6} {p:<16} ms {span(g, 1e-3)}")
    invalid = [g for g in rows if not g["valid"]]
    print(f"validation: {len(rows)} record(s) from {len(runs)} job(s): {len(bad)} failed "
          f"job(s), {len(invalid)} invalid record(s)")
    if not rows or not hl or not hb:
        print("nothing was measured on the host path: no comparison")
        return 1
    return 1 if bad or invalid else 0


if __name__ == "__main__":
    sys.exit(main())
