#!/usr/bin/env python3
"""The applications measured against what the machine can do, in one run.

Prints, on an idle machine:
 (1) matmul's compute phase in GFLOP/s per rank over a one-rank DGEMM of the
     same BLAS at the same block size (bench/dgemm_ref.c), 2 ranks, N = 2000
     (target >= 0.9);
 (2) jacobi's compute phase in bytes per second (16 B per point and sweep:
     one read of u, one write of u_new, as the core counts them) over the copy
     bandwidth measured in the same job (64 MiB per rank, every rank copying,
     plain stores as the stencil's) (target >= 0.6); and, for reference, over
     numpy's one-core memcpy (non-temporal stores);
 (3) matmul at N = 2000 and 4000 on this machine against emulated Gigabit
     and 100Base-T nodes (root), phase by phase: the IIT Bombay study's
     comparison of shared memory against Ethernet;
 (4) predicted over measured for each communication phase of matmul,
     summa and jacobi, 2 ranks, from what `run --for` measures (the series
     each phase reads, cold where the data comes from memory), N = 2000 and
     4000 on this machine (--n) and N = 2000 across 2 emulated Gigabit nodes
     (--emu-n; root) (target 0.80-1.25 for at least 75% of the phases);
 (5) cold and evicted over hot buffers (--buffers cold: pools twice the
     last-level cache, IMB's off-cache way; evicted: each operation timed
     after every rank has streamed over twice the last-level cache; hot: one
     buffer, OSU's), latency and bw at 4 KiB, 64 KiB and 1 MiB, 2 ranks:
     rounds that rotate which kind runs first, each pair of runs compared
     only where their cache-line floors share a machine mode.

    .venv/bin/python bench/apps.py [--mpi openmpi] [--no-clusters]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from commscope.analysis import apps
from commscope.analysis.repeats import aggregate
from commscope.measure import build
from commscope.store.db import Store
from compare_osu import NoiseWatch

HERE = Path(__file__).resolve().parent
COMMSCOPE = [sys.executable, "-m", "commscope.cli"]


def run(db: Path, *args: str) -> None:
    subprocess.run([*COMMSCOPE, "run", "--db", str(db), "--quiet", *args], check=True)


def phases(db: Path, bench: str) -> list:
    """Each configuration and size over its repetitions (the median run's
    phases), one machine mode."""
    rows = aggregate([r for r in Store(db).result_rows() if r["bench"] == bench],
                     mode="dominant")
    return [(r, json.loads(r["phases"])) for r in rows if r["valid"]]


def dgemm_gflops(m: int, n: int, k: int, tmp: Path) -> float:
    exe = tmp / "dgemm_ref"
    if not exe.exists():
        flags, libs = build.blas_flags()
        subprocess.run(["cc", "-O2", *flags[1:], str(HERE / "dgemm_ref.c"), "-o", str(exe),
                        *libs], check=True)
    out = subprocess.run([str(exe), str(m), str(n), str(k), "5"], capture_output=True,
                         text=True, check=True).stdout
    return float(json.loads(out)["gflops_median"])


def copy_bandwidth(mib: int = 256, reps: int = 7) -> float:
    """Bytes read plus bytes written per second by one core's copy."""
    src = np.ones(mib << 17)  # float64: 8 B each
    dst = np.empty_like(src)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return 2 * src.nbytes / statistics.median(times)


def figure1(mpi: str, tmp: Path) -> None:
    n, np_ = 2000, 2
    db = tmp / "mm.db"
    run(db, "--bench", "matmul", "--np", str(np_), "--mpi", mpi, "--param", f"N={n}",
        "--repeat", "3")
    ((r, ph),) = [(r, ph) for r, ph in phases(db, "matmul") if r["size_bytes"] == n]
    rows = n // np_
    per_rank = [2.0 * rows * n * n / (t * 1e-6) / 1e9 for t in ph["compute"]["ranks_us"]]
    ref = dgemm_gflops(rows, n, n, tmp)
    ratio = statistics.median(per_rank) / ref
    print(f"\n(1) matmul N={n}, {np_} ranks ({mpi}): compute phase "
          f"{statistics.median(per_rank):.1f} GFLOP/s per rank (ranks: "
          f"{', '.join(f'{g:.1f}' for g in per_rank)}), one-rank DGEMM {rows}x{n}x{n}: "
          f"{ref:.1f} GFLOP/s -> {ratio:.2f} {'ok' if ratio >= 0.9 else 'MISS (target >= 0.9)'}")
    print("    phases (slowest rank, ms): " + ", ".join(
        f"{k} {v['max_us'] / 1e3:.2f}" for k, v in ph.items())
        + f"; total {r['median_us'] / 1e3:.2f}")


def figure2(mpi: str, tmp: Path, rounds: int = 5) -> None:
    """Rounds alternate a Jacobi job (which measures its own copy first) and
    numpy's memcpy: the machine's memory bandwidth moves 2x between runs
    here, so each ratio pairs measurements taken together, and the median
    and range over rounds are what is claimed."""
    n, np_, iters = 2048, 2, 20
    db = tmp / "jac.db"
    per_run, per_memcpy, lups = [], [], []
    for _ in range(rounds):
        run(db, "--bench", "jacobi", "--np", str(np_), "--mpi", mpi, "--param",
            f"N={n};iters={iters}")
        memcpy = copy_bandwidth() / 1e9
        r = max(Store(db).result_rows(latest=False), key=lambda x: x["run_id"])
        rate = apps.memory_rate(r)
        assert rate is not None and rate.copy_gbs, "the record carries no bytes or copy"
        per_run.append((rate.gbs, rate.copy_gbs, rate.ratio))
        per_memcpy.append(rate.gbs / memcpy)
        lups.append(n * n * iters / (r["median_us"] * 1e-6) / 1e6)
    ratios = [x[2] for x in per_run]
    med = statistics.median(ratios)
    print(f"\n(2) jacobi {n}x{n}, {np_} ranks ({mpi}), {iters} sweeps, {rounds} rounds: compute "
          "phase per rank (the core's byte count: 16 B per point and sweep) over the copy "
          "measured in the same job (both ranks copying, plain stores): median "
          f"{med:.2f}, range {min(ratios):.2f}-{max(ratios):.2f} "
          f"{'ok' if med >= 0.6 else 'MISS (target >= 0.6)'}")
    print("    rounds (compute GB/s / copy GB/s): " + ", ".join(
        f"{g:.1f}/{c:.1f}" for g, c, _ in per_run))
    print("    against numpy's one-core memcpy after each job (non-temporal stores, no read "
          f"for ownership): median {statistics.median(per_memcpy):.2f}, range "
          f"{min(per_memcpy):.2f}-{max(per_memcpy):.2f}")
    print(f"    lattice updates: median {statistics.median(lups):.0f} M/s in all")


def figure3(mpi: str, tmp: Path) -> None:
    if os.geteuid() != 0:
        print("\n(3) skipped: emulated clusters need root")
        return
    names = {"1gbit": "bgiga", "100mbit": "bfast"}
    try:
        for link, name in names.items():
            subprocess.run([*COMMSCOPE, "cluster", "up", "--nodes", "2", "--link", link,
                            "--name", name], check=True, capture_output=True)
        db = tmp / "clusters.db"
        run(db, "--bench", "matmul", "--np", "2", "--mpi", mpi, "--param", "N=2000,4000",
            "--cluster", "local", "--cluster", "emu:bgiga", "--cluster", "emu:bfast",
            "--timeout", "1200")
        print(f"\n(3) matmul, 2 ranks ({mpi}): this machine against 2 emulated nodes (ms, "
              "slowest rank per phase)")
        for r, ph in sorted(phases(db, "matmul"), key=lambda x: (x[0]["size_bytes"],
                                                                 x[0]["cluster"])):
            print(f"    N={r['size_bytes']:<5} {r['cluster']:<10} total "
                  f"{r['median_us'] / 1e3:9.1f}  " + "  ".join(
                      f"{k} {v['max_us'] / 1e3:8.1f}" for k, v in ph.items()))
    finally:
        for name in names.values():
            subprocess.run([*COMMSCOPE, "cluster", "down", name], capture_output=True)


def figure4(mpi: str, tmp: Path, clusters_too: bool = True, ns: str = "2000,4000",
            emu_ns: str = "2000") -> None:
    from commscope.analysis import predict
    from commscope.analysis.series import collect

    places = [("local", ns)] + ([("emu:bpred", emu_ns)] if os.geteuid() == 0 and clusters_too
                                else [])
    try:
        if len(places) > 1:
            subprocess.run([*COMMSCOPE, "cluster", "up", "--nodes", "2", "--link", "1gbit",
                            "--name", "bpred"], check=True, capture_output=True)
        db = tmp / "pred.db"
        for where, n in places:  # what each prediction reads, at the phases' own sizes
            run(db, *(x for app in ("matmul", "summa", "jacobi")
                      for x in ("--for", f"{app},N={n}")),
                "--np", "2", "--mpi", mpi, "--repeat", "3", "--timeout", "1800", "--no-advise",
                "--cluster", where)
        store = Store(db)
        rows = aggregate(store.result_rows(), mode="dominant")
        preds = predict.predict([r for r in rows if r["phases"]], collect(rows),
                                predict.llc_in(store, rows))
        print(f"\n(4) predicted / measured per communication phase, 2 ranks ({mpi}), "
              + ", ".join(f"{w} N={n}" for w, n in places)
              + ", from run --for (target 0.80-1.25 for at least 75% of the phases)")
        print(predict.table(preds), end="")
        for where, _ in [("all", ""), *places]:
            these = [p for p in preds
                     if where == "all" or where.split(":")[-1] in p.config.cluster]
            ok = sum(p.verdict == "ok" for p in these)
            strict = sum(p.ratio is not None and 0.8 <= p.ratio <= 1.25 for p in these)
            print(f"  {where}: within the models' uncertainty {ok}/{len(these)}; within 25% "
                  f"(0.80-1.25) {strict}/{len(these)} = {strict / max(1, len(these)):.2f} "
                  "(target >= 0.75)")
    finally:
        if len(places) > 1:
            subprocess.run([*COMMSCOPE, "cluster", "down", "bpred"], capture_output=True)


def figure5(mpi: str, tmp: Path, rounds: int = 6) -> None:
    from commscope.analysis.repeats import MODE_GAP

    print("\n(5) cold and evicted over hot buffers, median time per message over paired rounds "
          "(same machine mode), latency and bw, 2 ranks")
    kinds = ("hot", "cold", "evicted")
    ratios: dict[tuple[str, int, str], list[float]] = {}  # bench, size, buffers
    for k in range(rounds):
        got: dict[str, dict[tuple[str, int], tuple[float, float]]] = {}
        for buf in kinds[k % 3:] + kinds[:k % 3]:  # each kind first in turn
            db = tmp / f"buf-{buf}-{k}.db"
            run(db, "--mpi", mpi, "--bench", "latency,bw", "--sizes", "4K:1M", "--factor", "16",
                "--buffers", buf, "--no-advise", "--no-probe")
            got[buf] = {(r["bench"], r["size_bytes"]): (r["median_us"], r["floor_ns"])
                        for r in Store(db).result_rows() if r["valid"]}
        for key, (hot, fh) in got["hot"].items():
            for buf in kinds[1:]:
                t, f = got[buf].get(key, (None, None))
                if t and fh and f and max(fh, f) <= MODE_GAP * min(fh, f):
                    ratios.setdefault((*key, buf), []).append(t / hot)
    for (bench, size, buf), rs in sorted(ratios.items()):
        print(f"  {bench:8s} {size:>8d} B  {buf:>7s}/hot {statistics.median(rs):.2f} "
              f"(range {min(rs):.2f}-{max(rs):.2f}, {len(rs)} paired rounds of {rounds})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--no-clusters", action="store_true")
    ap.add_argument("--only", type=int, help="run one figure (1-5)")
    ap.add_argument("--n", default="2000,4000", help="(4): the N of the local runs")
    ap.add_argument("--emu-n", default="2000", help="(4): the N across the emulated nodes")
    ap.add_argument("--keep", help="keep the stores in this folder (default: a temporary one)")
    a = ap.parse_args()
    if a.keep is not None and (not a.keep or (Path(a.keep).exists()
                                              and not Path(a.keep).is_dir())):
        sys.exit(f"apps.py: --keep {a.keep!r} is not a folder")
    if a.keep and Path(a.keep).exists() and any(Path(a.keep).iterdir()):
        sys.exit(f"apps.py: --keep {a.keep} is not empty: its stores would mix two runs")
    watch = NoiseWatch()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(a.keep or d)
        tmp.mkdir(parents=True, exist_ok=True)
        figures = {1: figure1, 2: figure2, 3: figure3, 4: figure4, 5: figure5}
        for n, fig in figures.items():
            if (a.only is None or a.only == n) and not (n == 3 and a.no_clusters):
                if n == 4:
                    figure4(a.mpi, tmp, not a.no_clusters, a.n, a.emu_n)
                else:
                    fig(a.mpi, tmp)
    print(f"\n{watch.line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
