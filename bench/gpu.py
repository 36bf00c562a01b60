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

With --seeds it runs instead the studies' own figures in one call that ends
within --budget (480 s by default) on one H100 or H200: a preflight printed
first (the device, its compute mode and persistence, the kernel, nvcc, the C
compiler, the carried MPI and its CUDA support, the device's own copy
bandwidths), a smoke job (cuda-aware latency and bw at 1 B, 1 KiB, 1 MiB;
once more without smcuda's CUDA IPC where it fails), then (a)+(b) host,
staged and cuda-aware latency and bw 1 B to 4 MiB in 3 rounds, (c)
gpu_matmul staged and cuda-aware on 4 processes N = 2000 to 10000 (largest
last) and (d) gpu_jacobi weak scaling, 4096^2 a process, on 1, 2 and 4
processes; each phase under its own cap, never the whole remaining budget,
without the diagnosis, at a fixed window.  What time is left runs the other
paths.  Each phase's store, figures and log go into --out as it ends.

    python3 bench/gpu.py --store DIR [--mpi openmpi-cuda] [--budget 480] [--out DIR]
    python3 bench/gpu.py --seeds --store DIR --out DIR   (one call: the studies' figures)
    python3 bench/gpu.py --store DIR --take CAME   (here: what a call sent back)
    python3 bench/gpu.py --pack DIR     (here: the CUDA-aware Open MPI, to carry)
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import math
import os
import platform
import shutil
import signal
import site
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from commscope.analysis import apps
from commscope.analysis.repeats import aggregate
from commscope.errors import CommscopeError
from commscope.measure import build, discovery, plan
from commscope.measure.mpi import MpiImpl
from commscope.measure.plan import gpu_standin
from commscope.report.sections import gpu_sharing
from commscope.store.config import config_of
from commscope.store.db import Store

PATHS = list(plan.PATHS)  # the core's own list (core_options.json)
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


def seeds_plan(small: bool, cuda_aware: bool = True) -> list[tuple[str, float, list[str]]]:
    """--seeds: (name, its own cap in seconds, commscope run's arguments), in
    order; "rest" has no cap of its own (what the budget leaves); the smoke's
    cap is shared by its two tries.  No
    diagnosis, a fixed window of 64 (OSU's) with a time cap that holds it at
    4 MiB down to 2.7 GB/s (so no path's window narrows and nothing is
    relaunched at another), a timeout per job."""
    common = ["--no-advise", "--window", "64"]
    paths = "host,staged" + (",cuda-aware" if cuda_aware else "")
    app_paths = "staged" + (",cuda-aware" if cuda_aware else "")
    app = ["--repeat", "2", "--min-samples", "3", "--time-cap", "0.05" if small else "2"]
    return [
        ("smoke", 80, ["--path", "cuda-aware", "--bench", "latency,bw", "--sizes", "1:1M",
                       "--factor", "1024", "--repeat", "1", "--time-cap", "0.1", "--timeout",
                       "40", *common]),
        ("paths", 160, ["--path", paths, "--bench", "latency,bw", "--sizes",
                        "1:64K" if small else "1:4M", "--factor", "4", "--repeat", "3",
                        "--time-cap", "0.05" if small else "0.5", "--timeout", "60", *common]),
        ("matmul", 100, ["--path", app_paths, "--bench", "gpu_matmul", "--np", "4", "--param",
                         "N=32,64" if small else "N=2000,4000,6000,8000,10000", *app,
                         "--timeout", "90", *common]),
        ("weak", 80, ["--path", app_paths, "--bench", "gpu_jacobi", "--np", "1,2,4", "--param",
                      ("N=24" if small else "N=4096") + ";scale=weak", *app, "--timeout", "60",
                      *common]),
        ("rest", 0, ["--path", "staged-pageable,staged-pipelined,ipc", "--bench", "latency,bw",
                     "--sizes", "1:64K" if small else "1:4M", "--factor", "4", "--repeat", "2",
                     "--time-cap", "0.05" if small else "0.5", "--timeout", "60", *common]),
    ]


SEEDS_SMI_FIELDS = ("name", "compute_mode", "persistence_mode", "memory.total", "driver_version")


def parse_smi(text: str) -> list[dict[str, str]]:
    """`nvidia-smi --query-gpu=<SEEDS_SMI_FIELDS> --format=csv,noheader`, one
    dict a device; a line that is not one device's fields is left out."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(SEEDS_SMI_FIELDS) and cells[0]:
            out.append(dict(zip(SEEDS_SMI_FIELDS, cells, strict=True)))
    return out


def smi_verdicts(gpus: list[dict[str, str]]) -> list[str]:
    """What the devices' settings mean for the jobs, a line each."""
    said = []
    for i, g in enumerate(gpus):
        if g["compute_mode"].lower().startswith("exclusive"):
            said.append(f"GPU {i} is in {g['compute_mode']} compute mode: a job of more than "
                        "one rank on it fails (each rank opens a context)")
        if g["persistence_mode"].lower() == "disabled":
            said.append(f"GPU {i}: persistence mode is off, so each launch may initialise the "
                        "device again (1-3 s a job, outside the timed region)")
    return said


# the device's own copies, through the image's PyTorch: 256 MiB each way, the median of
# ten timed by CUDA events after one untimed; the copies checked equal afterwards
COPY_PROBE = """
import json, torch
n = 256 << 20
d = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
e = torch.empty_like(d)
h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
def t(f):
    f(); torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        s, x = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); x.record(); x.synchronize(); ts.append(s.elapsed_time(x))
    return sorted(ts)[5]
r = {"d2d_gbs": n / t(lambda: e.copy_(d)) / 1e6}
ok = torch.equal(e, d)
r["d2h_gbs"] = n / t(lambda: h.copy_(d, non_blocking=True)) / 1e6
ok = ok and torch.equal(h.cuda(), d)
h.random_(0, 255)
r["h2d_gbs"] = n / t(lambda: e.copy_(h, non_blocking=True)) / 1e6
ok = ok and torch.equal(e.cpu(), h)
r["valid"] = bool(ok)
r["device"] = torch.cuda.get_device_name(0)
print(json.dumps(r))
"""


def device_copies() -> dict[str, object]:
    """The device's own copy bandwidths (GB/s of bytes copied, one way), or
    why not."""
    try:
        p = subprocess.run([sys.executable, "-c", COPY_PROBE], capture_output=True, text=True,
                           timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"why": f"the copy probe did not end: {exc}"}
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"why": f"the copy probe failed: {tail[:200]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def preflight(impl: MpiImpl, core: build.Core, info: dict, built_s: float) -> list[str]:
    """What the machine is, printed before anything is measured."""
    lines = [f"kernel: {platform.release()}"]
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            text = subprocess.run([smi, f"--query-gpu={','.join(SEEDS_SMI_FIELDS)}",
                                   "--format=csv,noheader"], capture_output=True, text=True,
                                  timeout=30, check=False).stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            text = ""
            lines.append(f"nvidia-smi: {exc}")
        gpus = parse_smi(text)
        lines += [f"GPU {i}: {', '.join(f'{k} {v}' for k, v in g.items())}"
                  for i, g in enumerate(gpus)] or ["nvidia-smi: no device listed"]
        lines += smi_verdicts(gpus)
    else:
        lines.append("nvidia-smi: not on the PATH")
    nv = build.nvcc()
    lines.append(f"nvcc: {nv} ({build.cuda_version(nv) if nv else 'none'})")
    lines.append(f"C compiler: {core.info.get('compiler') or '?'} (COMMSCOPE_WERROR="
                 f"{os.environ.get('COMMSCOPE_WERROR', '1')}); core built in {built_s:.0f} s")
    prefix = impl.env.get("OPAL_PREFIX", "")
    lines.append(f"MPI: {impl.name} "
                 f"{(core.mpi_version or '?').splitlines()[0]} {prefix}")
    lines.append(f"MPI CUDA support (compile time, run time): {info.get('mpi_cuda_support')}")
    lines.append(f"core: CUDA runtime {info.get('cuda_runtime')}, devices {info.get('devices')}"
                 f"{', ' + str(info.get('reason')) if info.get('reason') else ''}; NCCL "
                 f"{info.get('nccl') or 'found'}; cuBLAS {info.get('cublas') or 'found'}")
    return lines


def last_run(db: Path) -> int:
    """The newest run's id in the store (0: none yet)."""
    if not db.exists():
        return 0
    st = Store(str(db))
    try:
        return max((int(r["id"]) for r in st.runs()), default=0)
    finally:
        st.close()


def judge(db: Path, after: int = 0) -> str:
    """"" where every job stored after run `after` (one phase's) ran and every
    record of them checked, else why not.  (Over the whole store, the MPS
    lease's weak and rest phases each said "1 of N job(s) failed": the matmul
    job cut at its cap, counted again.)"""
    if not db.exists():
        return "nothing was stored"
    st = Store(str(db))
    try:
        runs = [r for r in st.runs() if int(r["id"]) > after]
        rows = [r for r in st.result_rows(latest=False) if int(r["run_id"]) > after]
    finally:
        st.close()
    bad = [r for r in runs if r["status"] != "ok"]
    if bad:
        tail = (bad[0]["stderr_tail"] or "").strip().splitlines()
        return (f"{len(bad)} of {len(runs)} job(s) {bad[0]['status']}: "
                f"{tail[-1][:200] if tail else 'no reason stored'}")
    if not rows or not all(r["valid"] for r in rows):
        return "a record did not check" if rows else "no record"
    return ""


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
    for name in ("gpu.db", "smoke.db"):
        if (store / name).exists():
            src, dst = sqlite3.connect(store / name), sqlite3.connect(out / f"{name}.tmp")
            try:
                src.backup(dst)
            finally:
                dst.close()
                src.close()
            os.replace(out / f"{name}.tmp", out / name)
    for name in ("progress.json", "seeds.txt"):
        if (store / name).exists():
            shutil.copyfile(store / name, out / name)


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


def path_of(row) -> str:
    """Where a stored row's buffers lived: host, or a GPU path."""
    cfg = config_of(row)
    return cfg.buffer if cfg else "host"


def summary(db: Path) -> int:
    store = Store(str(db))
    runs = store.runs()
    rows = aggregate(store.result_rows(latest=False))
    store.close()
    bad = [r for r in runs if r["status"] not in ("ok", "skipped")]
    said = set()
    for r in runs:
        path = path_of(r)
        if r["status"] == "skipped" and (path, r["bench"]) not in said:
            said.add((path, r["bench"]))
            print(f"{path:<16} {r['bench']}: {r['stderr_tail'].strip().splitlines()[0]}")
    by = {(path_of(g), g["bench"], g["np"],
           g["size_bytes"], g["params"] or ""): g for g in rows}

    def span(g, scale: float = 1.0) -> str:
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


def seeds_figures(db: Path, copies: dict[str, object]) -> list[str]:
    """The studies' figures beyond summary()'s: each path's peak bandwidth
    against the device's own copies, cuda-aware over staged at 4 MiB (the IIT
    Bombay study's about 10x), gpu_matmul's phases against N, gpu_jacobi's
    weak scaling; ranks sharing one GPU said beside the applications."""
    store = Store(str(db))
    try:
        raw = store.result_rows(latest=False)
        sharing = gpu_sharing(store, {int(r["run_id"]) for r in raw})
    finally:
        store.close()
    rows = aggregate(raw)
    out = []

    bw = {(path_of(g), int(g["size_bytes"])): g for g in rows
          if g["bench"] == "bw" and g["np"] == 2 and g["median_us"]}
    ref = {k: copies.get(k) for k in ("d2d_gbs", "h2d_gbs", "d2h_gbs")}
    if copies.get("why"):
        out.append(f"device copies: not measured ({copies['why']})")
    elif ref["d2d_gbs"]:
        out.append(f"device copies (GB/s copied, 256 MiB, median of 10, checked "
                   f"{'equal' if copies.get('valid') else 'NOT equal'}): device to device "
                   f"{ref['d2d_gbs']:.0f}, device to pinned host {ref['d2h_gbs']:.1f}, "
                   f"pinned host to device {ref['h2d_gbs']:.1f}")
    for p in PATHS:
        mine = {s: g for (q, s), g in bw.items() if q == p}
        if not mine:
            continue
        size, g = max(mine.items(), key=lambda kv: kv[0] / float(kv[1]["median_us"]))
        gbs = size / float(g["median_us"]) / 1e3
        lo = size / float(g["ci_hi_us"]) / 1e3
        hi = f"{size / float(g['ci_lo_us']) / 1e3:.2f}" if float(g["ci_lo_us"]) > 0 else "unbounded"
        against = ""
        if ref["d2d_gbs"] and p in ("cuda-aware", "ipc"):
            # on an H200 flat from 64 KiB: a per-message cost, not a bandwidth
            against = (f" ({float(g['median_us']):.1f} us a message; the device copies it in "
                       f"{size / float(ref['d2d_gbs']) / 1e3:.1f} us)")
        elif ref["d2h_gbs"] and p.startswith("staged"):
            against = f" = {gbs / float(ref['d2h_gbs']):.2f} x one device-to-host copy"
        out.append(f"peak bw {p:<16} {gbs:8.2f} GB/s [{lo:.2f}, {hi}] at {size >> 10} KiB"
                   f"{against}")
    top = max((s for (_, s) in bw), default=0)
    ca, st = bw.get(("cuda-aware", top)), bw.get(("staged", top))
    if ca and st:
        r = float(st["median_us"]) / float(ca["median_us"])
        lo = max(float(st["ci_lo_us"]), 0.0) / float(ca["ci_hi_us"])
        hi = (f"{float(st['ci_hi_us']) / float(ca['ci_lo_us']):.2f}"
              if float(ca["ci_lo_us"]) > 0 else "unbounded")
        out.append(f"cuda-aware over staged at {top >> 10} KiB (bw, time per message): "
                   f"{r:.2f} x [{lo:.2f}, {hi}] (the IIT Bombay study: about 10x at 4 MB)")
    mm: dict[tuple[str, int, int], list] = {}
    for r in raw:
        if r["bench"] == "gpu_matmul" and r["valid"] and r["median_us"]:
            mm.setdefault((path_of(r), int(r["np"]), int(r["size_bytes"])), []).append(r)
    for (p, n, size), rs in sorted(mm.items()):
        # each phase's time on its slowest rank (max_us), the median over the rounds
        ph = [apps.phases(r) for r in rs]
        parts = ", ".join(
            f"{k} {statistics.median(float(x[k]['max_us']) for x in ph if k in x) / 1e3:.2f}"
            for k in ph[0])
        total = statistics.median(float(r["median_us"]) for r in rs) / 1e3
        out.append(f"gpu_matmul N={size} np={n} {p}: {total:.2f} ms a product, {len(rs)} "
                   f"round(s) (slowest rank's phases: {parts} ms)")
    weak = {(path_of(g), int(g["np"])): g for g in rows
            if g["bench"] == "gpu_jacobi" and "scale=weak" in str(g["params"] or "")
            and g["median_us"]}
    for p in sorted({p for p, _ in weak}):
        one = weak.get((p, 1))
        line = []
        for n in sorted(n for q, n in weak if q == p):
            t = float(weak[(p, n)]["median_us"]) / 1e3
            eff = f" ({float(one['median_us']) / float(weak[(p, n)]['median_us']):.2f})" \
                if one and n > 1 else ""
            line.append(f"np={n} {t:.1f} ms{eff}")
        out.append(f"gpu_jacobi weak {p}: {', '.join(line)} (in brackets: t(1)/t(np))")
    if sharing["shared"] or sharing["unknown"]:
        out.append(f"note: ranks share one GPU in {sharing['shared']} application run(s), "
                   f"{sharing['unknown']} did not record it: there compute and weak scaling "
                   "measure how the device is shared, not scaling")
    return out


def seeds(a: argparse.Namespace, store: Path, impls: list, core: build.Core, info: dict,
          built_s: float, t0: float) -> int:
    """--seeds: the preflight, then each phase under its own cap; the store,
    the figures and their text go to --out as each phase ends."""
    text = store / "seeds.txt"
    text.write_text("")
    (store / "progress.json").write_text("{}\n")  # a store of this script from the start

    def say(*lines: str) -> None:
        with text.open("a") as f:
            for line in lines:
                print(line, flush=True)
                f.write(line + "\n")

    say(*preflight(impls[0], core, info, built_s))
    copies = device_copies() if not gpu_standin() else {"why": "the stand-in has no device"}
    say(f"device copies: {json.dumps(copies)}")
    save(store, a.out)
    support = info.get("mpi_cuda_support")
    cuda_aware = gpu_standin() or (isinstance(support, dict) and bool(support.get("compile_time")))
    without = {n: v for n, _, v in seeds_plan(a.small, False)}  # no cuda-aware path
    done: dict[str, dict] = {}
    for name, cap, argv in seeds_plan(a.small, True):
        left = a.budget - (time.monotonic() - t0) - 15  # the figures' seconds
        if name == "smoke" and not cuda_aware:
            say("smoke: skipped, the MPI answers no CUDA support; the phases run host and "
                "staged only")
            continue
        if not cuda_aware:
            argv = without[name]
        limit = min(cap, left) if cap else left
        if limit < 20:
            say(f"phase {name}: not started, {left:.0f} s left of --budget")
            continue
        db = store / ("smoke.db" if name == "smoke" else "gpu.db")
        tries = [{}] + ([{"OMPI_MCA_btl_smcuda_use_cuda_ipc": "0"}] if name == "smoke" else [])
        for extra in tries:
            os.environ.update(extra)
            also = f", {extra}" if extra else ""
            say(f"phase {name} (cap {limit / len(tries):.0f} s{also}): commscope run "
                f"{' '.join(argv)}")
            t, before = time.monotonic(), last_run(db)
            rc = run_bounded([sys.executable, "-m", "commscope.cli", "run", "--db", str(db),
                              "--mpi", impls[0].name, "--no-probe", "--quiet", *argv],
                             limit / len(tries), lambda: save(store, a.out))
            if rc is None:
                why = "cut at its cap"
            elif rc == 0 or name == "smoke":  # the smoke's failure says the library's reason
                why = judge(db, before) or ("" if rc == 0 else f"exit {rc}")
            else:
                why = f"exit {rc}"
            took = time.monotonic() - t
            done[name] = {"done": rc == 0, "exit": rc, "seconds": round(took, 1), "why": why,
                          "env": extra, "device": info.get("devices"),
                          "standin": gpu_standin()}
            (store / "progress.json").write_text(json.dumps(done, indent=1) + "\n")
            say(f"phase {name}: {'ok' if not why else why} in {took:.0f} s")
            if not why or name != "smoke":
                break
            if extra:  # the second try failed too
                say("cuda-aware fails with and without smcuda's CUDA IPC: the phases run host "
                    "and staged only")
                cuda_aware = False
                for k in extra:
                    os.environ.pop(k, None)
            else:
                shutil.move(str(db), str(store / "smoke-first.db"))
                for stale in ("-wal", "-shm"):
                    Path(str(db) + stale).unlink(missing_ok=True)
        if name == "smoke" and cuda_aware and done["smoke"]["env"]:
            say("the phases run with OMPI_MCA_btl_smcuda_use_cuda_ipc=0 (recorded with each run)")
        save(store, a.out)
    say(f"seeds: {time.monotonic() - t0:.0f} s in all")
    rc = 1
    if (store / "gpu.db").exists():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = summary(store / "gpu.db")
        say(*buf.getvalue().splitlines(), *seeds_figures(store / "gpu.db", copies))
    save(store, a.out)
    return rc


def seconds(v: str) -> float:
    """A time budget: a positive, finite number of seconds."""
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a number of seconds") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"{v} is no budget: a positive number of seconds")
    return x


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
    ap.add_argument("--budget", type=seconds, default=480.0,
                    help="seconds: start no phase that might not end within them")
    ap.add_argument("--out", type=folder, help="copy the store here after every phase")
    ap.add_argument("--only", help="phases to run, comma-separated (default: every one)")
    ap.add_argument("--small", action="store_true", help="small sizes (the stand-in)")
    ap.add_argument("--seeds", action="store_true", help="the studies' figures in one call "
                    "within --budget (a store folder of its own)")
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
    if a.seeds and store.exists() and any(store.iterdir()):
        print(f"{store} is not empty: --seeds takes a store folder of its own")
        return 2
    store.mkdir(parents=True, exist_ok=True)
    done = json.loads(progress.read_text()) if progress.exists() else {}
    os.environ["LD_LIBRARY_PATH"] = library_path()
    if a.seeds:  # a newer compiler's new warning must not cost the lease
        os.environ.setdefault("COMMSCOPE_WERROR", "0")
    names_installed = {m.name for m in discovery.discover()}
    mpi = a.mpi or ("openmpi-cuda" if "openmpi-cuda" in names_installed else None)
    t_build = time.monotonic()
    try:
        impls = discovery.select([mpi] if mpi else [])
        core = build.build(impls[0])
        info = build.gpu_info(core)
    except CommscopeError as exc:
        print(f"the core does not build or run here: {exc}")
        if a.out:
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / "seeds.txt").write_text(f"the core does not build or run here: {exc}\n")
        return 2
    built_s = time.monotonic() - t_build
    if gpu_standin():
        print("COMMSCOPE_GPU_STANDIN=host: host memory stands in for the device; this checks "
              "the script, the figures say nothing of a GPU")
    elif not info.get("devices"):
        print(f"no GPU here, nothing measured: {info.get('reason')}")
        return 2
    print(f"{impls[0].name}: {core.mpi_version.splitlines()[0] if core.mpi_version else '?'}; "
          f"GPU: {info}")
    if a.seeds:
        return seeds(a, store, impls, core, info, built_s, t0)
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
