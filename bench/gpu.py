#!/usr/bin/env python3
"""The GPU paths and applications side by side, on a lent GPU machine.

The suite is cut into phases that each fit one 10-minute call on a machine
that keeps nothing between calls.  A store folder (--store) holds the
results (gpu.db) and which phases are done (progress.json); a rerun with the
same folder goes on where the last call stopped: finished phases are not run
again, and a phase cut short resumes job by job (`commscope run --resume`).
--budget S ends a phase S seconds after the start (Ctrl-C: the job in flight
is killed and what it measured is kept) and starts none with under 90 s
left; --out DIR copies the store there after every phase (the device tool's
$OUT, so that the store comes back), and every 30 s while a phase runs.
A phase counts as done once it ends cleanly, or has ended twice (a job that
fails fails again).  --take CAME puts what a call sent back into --store,
writable, for the next call.

Phases, all with every record validated by the core (every message moved,
checked outside the timed region):
  paths     latency and bw, 1 B to 4 MiB, 2 ranks, on every path (host,
            staged, staged-pageable, staged-pipelined, cuda-aware, ipc, nccl;
            a path this machine cannot run is stored as skipped, with the
            reason), in 5 interleaved rounds
  matmul-2, matmul-4   gpu_matmul N = 4096, 8192, 16384 on 2 and 4 ranks,
            staged, staged-pipelined and cuda-aware, 2 rounds
  jacobi-2, jacobi-4   gpu_jacobi N = 4096, 8192, 16384 likewise
  weak      gpu_jacobi scale=weak, N = 4096 per rank, 1, 2 and 4 ranks, staged
            and cuda-aware
  cpu       the CPU matmul and Jacobi at N = 4096 on 2 and 4 ranks, host
            memory: what the GPU versions are held against

Then it prints, per path, the 1 B latency and the 4 MiB time per message
with their between-round intervals, each over the host path's with the
range both intervals allow, and the applications per path, size and rank
count.  `commscope report --db STORE/gpu.db` draws the GPU section.

Without a GPU it says why and measures nothing (exit 2).  With
COMMSCOPE_GPU_STANDIN=host and --small it runs every phase on host memory
standing in for the device at small sizes: a check of the script and of the
paths' logic, whose figures say nothing of a GPU.

    python3 bench/gpu.py --store DIR [--mpi openmpi-cuda] [--budget 480] [--out DIR]
    python3 bench/gpu.py --store DIR --take CAME   (here: what a call sent back)
    python3 bench/gpu.py --pack DIR     (here: the CUDA-aware Open MPI, to carry)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import site
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from commscope.analysis.repeats import aggregate
from commscope.measure import build, discovery
from commscope.measure.plan import gpu_standin
from commscope.store.db import Store

PATHS = ["host", "staged", "staged-pageable", "staged-pipelined", "cuda-aware", "ipc", "nccl"]
APP_PATHS = "staged,staged-pipelined,cuda-aware"


def phases(small: bool) -> list[tuple[str, float, list[str]]]:
    """(name, the seconds it may take at most on an H100 with 16 cores,
    commscope run's arguments); `small`: sizes a host loop does at once."""
    n = "N=48,96" if small else "N=4096,8192,16384"
    # gpu_jacobi at its default 20 sweeps a sample: each validation redoes them serially
    # on the CPU (at N = 16384, 5.4e9 point updates), so more would not fit a call
    app = ["--repeat", "2", "--min-samples", "3", "--time-cap", "0.05" if small else "5"]
    return [
        ("paths", 420, ["--path", "all", "--bench", "latency,bw", "--sizes",
                        "1:64K" if small else "1:4M", "--factor", "4", "--repeat",
                        "2" if small else "5", *(["--time-cap", "0.05"] if small else [])]),
        ("matmul-2", 420, ["--path", APP_PATHS, "--bench", "gpu_matmul", "--np", "2",
                           "--param", n, *app]),
        ("matmul-4", 480, ["--path", APP_PATHS, "--bench", "gpu_matmul", "--np", "4",
                           "--param", n, *app]),
        ("jacobi-2", 420, ["--path", APP_PATHS, "--bench", "gpu_jacobi", "--np", "2",
                           "--param", n, *app]),
        ("jacobi-4", 480, ["--path", APP_PATHS, "--bench", "gpu_jacobi", "--np", "4",
                           "--param", n, *app]),
        ("weak", 300, ["--path", "staged,cuda-aware", "--bench", "gpu_jacobi", "--np", "1,2,4",
                       "--param", ("N=24" if small else "N=4096") + ";scale=weak", *app]),
        ("cpu", 420, ["--path", "host", "--bench", "matmul,jacobi", "--np", "2,4", "--param",
                      "N=96" if small else "N=4096", *app[:4], "--time-cap",
                      "0.05" if small else "20"]),
    ]


MIN_PHASE_S = 90.0  # a phase is started only with this much of the budget left


SAVE_EVERY_S = 30.0  # while a phase runs, the store is copied out this often


def run_bounded(argv: list[str], limit_s: float, tick: Callable[[], None]) -> int | None:
    """Its exit status, or None where it was stopped at `limit_s`: Ctrl-C
    first (commscope run then kills its job and keeps what was measured),
    its whole process group killed if that takes over 45 s.  `tick` runs
    every SAVE_EVERY_S meanwhile (a call killed from outside still leaves
    what was stored by then)."""
    p = subprocess.Popen(argv, start_new_session=True)
    end = time.monotonic() + max(limit_s, 1.0)
    while True:
        try:
            return p.wait(timeout=max(min(SAVE_EVERY_S, end - time.monotonic()), 0.1))
        except subprocess.TimeoutExpired:
            if time.monotonic() < end:
                tick()
                continue
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(timeout=45)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        return None


def library_path() -> str:
    """Where NCCL and cuBLAS are on a machine that has them from pip or the
    CUDA toolkit, in front of what LD_LIBRARY_PATH had."""
    dirs = []
    for sp in [*site.getsitepackages(), site.getusersitepackages()]:
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    nvcc = build.nvcc()
    if nvcc:
        dirs.append(str(nvcc.resolve().parent.parent / "lib64"))
    old = os.environ.get("LD_LIBRARY_PATH", "")
    return os.pathsep.join([d for d in dirs if os.path.isdir(d)] + ([old] if old else []))


def pack(dest: Path) -> int:
    """Copy the CUDA-aware Open MPI (with its marker) into DEST/cache, where
    --cache DEST/cache finds it on the GPU machine."""
    src = discovery.root() / "openmpi-cuda"
    if not (src / discovery.MARKER).is_file():
        print("openmpi-cuda is not built here: run `commscope mpi install openmpi-cuda` first")
        return 2
    target = dest / "cache" / "mpi" / "openmpi-cuda"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(src, target, symlinks=True)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"packed {src} into {target} ({size / 2**20:.1f} MiB)")
    return 0


def save(store: Path, out: Path | None) -> None:
    """The store, whole, into `out`: the database through SQLite's backup (so
    that rows still in its write-ahead log come along), then the progress."""
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    if (store / "gpu.db").exists():
        src, dst = sqlite3.connect(store / "gpu.db"), sqlite3.connect(out / "gpu.db.tmp")
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        os.replace(out / "gpu.db.tmp", out / "gpu.db")
    if (store / "progress.json").exists():
        shutil.copyfile(store / "progress.json", out / "progress.json")


def take(store: Path, came: Path) -> int:
    """The store that came back from a call (read-only files, perhaps) into
    `store`, writable, for the next call to go on from."""
    if not (came / "progress.json").is_file() or not (came / "gpu.db").is_file():
        print(f"{came} holds no gpu.db and progress.json of this script")
        return 2
    if store.exists() and any(store.iterdir()) and not (store / "progress.json").exists():
        print(f"{store} holds files but no progress.json: not a store of this script")
        return 2
    store.mkdir(parents=True, exist_ok=True)
    for name in ("gpu.db", "progress.json"):
        shutil.copyfile(came / name, store / name)  # contents only: the mode stays ours
        (store / name).chmod(0o644)
    for stale in ("gpu.db-wal", "gpu.db-shm"):
        (store / stale).unlink(missing_ok=True)
    done = json.loads((store / "progress.json").read_text())
    print(f"{store}: phases done: {', '.join(n for n, d in done.items() if d.get('done'))}")
    return 0


def summary(db: Path) -> int:
    store = Store(str(db))
    runs = store.runs()
    rows = aggregate(store.result_rows(latest=False))
    store.close()
    bad = [r for r in runs if r["status"] not in ("ok", "skipped")]
    said = set()
    for r in runs:
        path = json.loads(r["config"])["buffer"] or "host"
        if r["status"] == "skipped" and (path, r["bench"]) not in said:
            said.add((path, r["bench"]))
            print(f"{path:<16} {r['bench']}: {r['stderr_tail'].strip().splitlines()[0]}")
    by = {(json.loads(str(g["config"]))["buffer"] or "host", g["bench"], g["np"],
           g["size_bytes"], g.get("params") or ""): g for g in rows}

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
        if min(f[1], g[1]) <= 0:  # an interval reaching 0: no upper bound to the ratio
            return f"{f[0] / g[0]:6.2f} [{max(f[1], 0) / g[2]:.2f}, unbounded]"
        return f"{f[0] / g[0]:6.2f} [{f[1] / g[2]:.2f}, {f[2] / g[1]:.2f}]"

    def one(path: str, bench: str, size: int) -> dict | None:
        got = [g for (p, b, n, s, _), g in by.items() if (p, b, n, s) == (path, bench, 2, size)]
        return got[0] if got and got[0]["median_us"] else None

    top = 4 << 20 if any(k[1] == "bw" and k[3] == 4 << 20 for k in by) else max(
        [k[3] for k in by if k[1] == "bw"], default=0)
    hl, hb = one("host", "latency", 1), one("host", "bw", top)
    if hl and hb:
        print(f"{'path':<16} {'1 B latency us':>26} {'over host':>20} "
              f"{f'{top >> 10} KiB us per message':>26} {'host over it':>20}")
    for p in PATHS if hl and hb else []:
        lat, bw = one(p, "latency", 1), one(p, "bw", top)
        if not lat or not bw:
            continue
        if p == "host":
            print(f"{p:<16} {span(lat)} {'(reference)':>20} {span(bw)} {'(reference)':>20}")
        else:
            print(f"{p:<16} {span(lat)} {ratio(lat, hl):>20} {span(bw)} {ratio(hb, bw):>20}")
    for (p, bench, np_, size, params), g in sorted(by.items()):
        if bench in ("gpu_matmul", "gpu_jacobi", "matmul", "jacobi") and g["median_us"]:
            weak = " weak" if "scale=weak" in str(params) else ""
            print(f"{bench:<11} N={size:<6}{weak:<5} np={np_} {p:<16} ms {span(g, 1e-3)}")
    invalid = [g for g in rows if not g["valid"]]
    print(f"validation: {len(rows)} record(s) from {len(runs)} job(s): {len(bad)} failed "
          f"job(s), {len(invalid)} invalid record(s)")
    if not rows:
        print("nothing was measured")
        return 1
    return 1 if bad or invalid else 0


def folder(v: str) -> Path:
    """A folder argument: never empty (the current folder by accident), never a file."""
    if not v:
        raise argparse.ArgumentTypeError("an empty value")
    if Path(v).exists() and not Path(v).is_dir():
        raise argparse.ArgumentTypeError(f"{v} is not a folder")
    return Path(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=folder, help="folder of the results and progress (kept; a "
                    "rerun resumes)")
    ap.add_argument("--pack", type=folder, help="copy the CUDA-aware Open MPI into DIR/cache")
    ap.add_argument("--cache", type=folder, help="commscope's cache (COMMSCOPE_CACHE): where "
                    "--pack put the MPI")
    ap.add_argument("--mpi", default=None, help="default: openmpi-cuda where installed")
    ap.add_argument("--take", type=folder, help="put the store that came back from a call "
                    "(its gpu.db and progress.json) into --store, writable")
    ap.add_argument("--budget", type=float, default=480.0,
                    help="seconds: start no phase that might not end within them")
    ap.add_argument("--out", type=folder, help="copy the store here after every phase")
    ap.add_argument("--only", help="phases to run, comma-separated (default: every one)")
    ap.add_argument("--small", action="store_true", help="small sizes (the stand-in)")
    a = ap.parse_args()
    t0 = time.monotonic()
    if a.cache:
        os.environ["COMMSCOPE_CACHE"] = str(a.cache.resolve())
    if a.pack:
        return pack(a.pack)
    if not a.store:
        ap.error("--store DIR is needed (or --pack DIR)")
    if a.take:
        return take(a.store, a.take)
    plan = phases(a.small)
    names = [p[0] for p in plan]
    only = a.only.split(",") if a.only else names
    if unknown := [n for n in only if n not in names]:
        ap.error(f"unknown phase(s) {', '.join(unknown)} (phases: {', '.join(names)})")
    store, db = a.store, a.store / "gpu.db"
    progress = store / "progress.json"
    if store.exists() and any(store.iterdir()) and not progress.exists():
        print(f"{store} holds files but no progress.json: not a store of this script; "
              "choose another folder")
        return 2
    store.mkdir(parents=True, exist_ok=True)
    done = json.loads(progress.read_text()) if progress.exists() else {}
    os.environ["LD_LIBRARY_PATH"] = library_path()
    names_installed = {m.name for m in discovery.discover()}
    mpi = a.mpi or ("openmpi-cuda" if "openmpi-cuda" in names_installed else None)
    impls = discovery.select([mpi] if mpi else [])
    core = build.build(impls[0])
    info = build.gpu_info(core)
    if gpu_standin():
        print("COMMSCOPE_GPU_STANDIN=host: host memory stands in for the device; this checks "
              "the script, the figures say nothing of a GPU")
    elif not info.get("devices"):
        print(f"no GPU here, nothing measured: {info.get('reason')}")
        return 2
    print(f"{impls[0].name}: {core.mpi_version.splitlines()[0] if core.mpi_version else '?'}; "
          f"GPU: {info}")
    support = info.get("mpi_cuda_support")
    if isinstance(support, dict) and not support.get("compile_time") and not gpu_standin():
        print(f"{impls[0].name} was built without CUDA: the applications run without the "
              "cuda-aware path (commscope mpi install openmpi-cuda makes one)")
        plan = [(n, w, [x.replace(",cuda-aware", "") for x in argv]) for n, w, argv in plan]
    if not build.blas_flags()[0]:
        print("no OpenBLAS to build the core with (libopenblas-dev): the CPU matmul is left "
              "out, the CPU Jacobi stays")
        plan = [(n, w, ["jacobi" if x == "matmul,jacobi" else x for x in argv])
                for n, w, argv in plan]
    for name, worst_s, argv in plan:
        if name not in only or done.get(name, {}).get("done"):
            continue
        left = a.budget - (time.monotonic() - t0)
        if left < MIN_PHASE_S:
            print(f"{left:.0f} s are left of --budget: stopping before phase {name} (run "
                  "again with the same --store to go on)")
            break
        print(f"phase {name} (at most about {worst_s:.0f} s; {left:.0f} s left): commscope "
              f"run {' '.join(argv)}", flush=True)
        t = time.monotonic()
        rc = run_bounded([sys.executable, "-m", "commscope.cli", "run", "--db", str(db),
                          "--mpi", impls[0].name, "--no-probe", "--quiet", "--resume", *argv],
                         left, lambda: save(store, a.out))
        took = time.monotonic() - t
        tries = int(done.get(name, {}).get("tries", 0)) + (rc is not None)
        # done: it ended cleanly, or ended twice (a job that fails fails again); a phase cut
        # at the budget goes on at the next call, job by job (--resume)
        done[name] = {"done": rc == 0 or tries >= 2, "exit": rc, "tries": tries,
                      "seconds": round(took, 1), "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      "device": info.get("devices"), "standin": gpu_standin()}
        progress.write_text(json.dumps(done, indent=1) + "\n")
        save(store, a.out)
        said = "cut at the budget" if rc is None else f"exit {rc}"
        print(f"phase {name}: {said} in {took:.0f} s", flush=True)
        if rc is None:
            break
    left = [n for n in only if not done.get(n, {}).get("done")]
    print(f"phases done: {', '.join(n for n in names if done.get(n, {}).get('done')) or 'none'}"
          f"; left: {', '.join(left) or 'none'}")
    if not db.exists():
        return 1
    rc = summary(db)
    return rc if not left else 3


if __name__ == "__main__":
    sys.exit(main())
