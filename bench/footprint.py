#!/usr/bin/env python3
"""Memory against the process count: commscope's channel (seed 002's
design: small rings per ordered pair and one pool per process) beside each
MPI library's own shared-memory footprint, 2 to 64 processes on this
machine (oversubscribed: memory only, no timing).

For each library and count, bench/footprint_prog.c is launched, every rank
talks to every other once (an alltoall, checked), and while the ranks sleep
outside MPI the script reads:
- the shared memory the ranks map (each file, memfd or System V segment
  once, read through /proc/PID/map_files: a library that unlinked its file
  is seen too), its allocated bytes (what the pages cost) and its size (what
  was mapped);
- the ranks' resident memory: private (RssAnon) and shared (RssShmem) summed
  over the ranks (a shared page counts once for each rank that touched it).
The channel's figures come from channel/tools/footprint.c (its segment,
opened for real by up to 64 processes).

    bench/footprint.py [--mpi NAME ...] [--np 2,4,8,16,32,64]

MVAPICH2 is measured where `commscope mpi add` knows it (docs/mvapich2.md)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commscope.measure import discovery
from commscope.measure.mpi import LaunchSpec, environ, launch_argv
from commscope.measure.provenance import n_cores

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def shared_segments(pids: list[int]) -> dict[tuple[int, int], tuple[int, int, str]]:
    """Every shared mapping of these processes backed by a file (a /dev/shm
    file, deleted or not, a memfd, System V memory), once each:
    (device, inode) -> (allocated bytes, size, name).  Read through
    /proc/PID/map_files, which reaches a file its library already unlinked
    (MPICH and MVAPICH2 unlink theirs once every rank has mapped it)."""
    out: dict[tuple[int, int], tuple[int, int, str]] = {}
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split(None, 5)
            if len(parts) < 5 or "s" not in parts[1] or parts[4] == "0":
                continue
            name = parts[5] if len(parts) > 5 else ""
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            try:  # map_files names carry no leading zeros
                st = os.stat(f"/proc/{pid}/map_files/{lo:x}-{hi:x}")
            except PermissionError:
                sys.exit("footprint: /proc/PID/map_files needs root (CAP_SYS_ADMIN): run as "
                         "root, or no shared segment is seen")
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key not in out:
                out[key] = (st.st_blocks * 512, st.st_size, name)
    return out


def pids_of(exe: Path) -> list[int]:
    out, want = [], str(exe.resolve())
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.readlink(d / "exe") == want:
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def rss(pids: list[int]) -> tuple[int, int, int]:
    """(ranks, RssAnon bytes, RssShmem bytes) of these processes."""
    n = anon = shmem = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        n += 1
        for line in status.splitlines():
            k, _, v = line.partition(":")
            if k in ("RssAnon", "RssShmem"):
                kb = int(v.split()[0]) * 1024
                anon += kb if k == "RssAnon" else 0
                shmem += kb if k == "RssShmem" else 0
    return n, anon, shmem


def one(impl, exe: Path, np_: int, timeout_s: float = 240.0) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="commscope-footprint-") as tmp:
        ready, stop = Path(tmp) / "ready", Path(tmp) / "stop"
        spec = LaunchSpec(np=np_, cores=n_cores(), root=os.geteuid() == 0, bind="none")
        argv = launch_argv(impl, spec, str(exe), [str(ready), str(stop)])
        p = subprocess.Popen(argv, env=environ(impl.env), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        t0 = time.monotonic()
        while not ready.exists() and p.poll() is None and time.monotonic() - t0 < timeout_s:
            time.sleep(0.05)
        row: dict[str, object] = {"mpi": impl.name, "np": np_}
        if ready.exists():
            time.sleep(0.5)  # the ranks asleep, outside MPI
            pids = pids_of(exe)
            segs = shared_segments(pids)
            ranks, anon, shmem = rss(pids)
            head, _, version = ready.read_text().partition("\n")
            size, bad = head.split()
            row["version"] = " ".join(version.split())
            row.update(ok=bad == "0" and int(size) == np_ and ranks == np_ and bool(segs),
                       segments=len(segs),
                       shm_alloc=sum(a for a, _, _ in segs.values()),
                       shm_size=sum(s for _, s, _ in segs.values()), ranks_seen=ranks,
                       rss_anon=anon, rss_shmem=shmem,
                       names=sorted({n.split("/")[-1][:40] for _, _, n in segs.values()})[:6])
        stop.touch()
        try:
            out, _ = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            out, _ = p.communicate()
            row["killed"] = True
        except BaseException:  # Ctrl-C: the ranks go with it
            os.killpg(p.pid, 9)
            raise
        row["exit"] = p.returncode
        if p.returncode or not ready.exists():
            row["said"] = out[-300:]
        return row


def channel() -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="commscope-footprint-") as tmp:
        exe = Path(tmp) / "footprint"
        subprocess.run([shutil.which("gcc") or "cc", "-O2", "-std=c11", "-D_GNU_SOURCE",
                        f"-I{ROOT / 'channel'}", str(ROOT / "channel" / "cs_chan.c"),
                        str(ROOT / "channel" / "tools" / "footprint.c"), "-o", str(exe)],
                       check=True)
        out = subprocess.run([str(exe), "--measure", "64"], capture_output=True, text=True,
                             check=True, timeout=300).stdout
    return [json.loads(x) for x in out.splitlines()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", action="append", help="an implementation (default: every one)")
    ap.add_argument("--np", default="2,4,8,16,32,64")
    a = ap.parse_args()
    nps = [int(x) for x in a.np.split(",")]
    impls = [m for m in discovery.discover() if not a.mpi or m.name in a.mpi]
    chan = {r["procs"]: r for r in channel()}
    print("channel (commscope's, seed 002's design): segment bytes, measured by opening it")
    for n in nps:
        r = chan.get(n)
        if r:
            print(f"  np {n:>3}: {r['channel_bytes'] / MIB:8.1f} MiB (measured "
                  f"{r['measured_bytes'] / MIB:.1f}); one large buffer per pair "
                  f"{r['per_pair_bytes'] / MIB:.1f} MiB")
    rows = []
    with tempfile.TemporaryDirectory(prefix="commscope-footprint-") as tmp:
        for impl in impls:
            exe = Path(tmp) / f"prog-{impl.name}"
            subprocess.run([impl.mpicc, "-O2", "-o", str(exe),
                            str(ROOT / "bench" / "footprint_prog.c")], check=True,
                           env=environ(impl.env))
            for n in nps:
                row = one(impl, exe, n)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("| np | channel (MiB) | " + " | ".join(
        f"{m.name} shm allocated / mapped (MiB) | {m.name} private RSS (MiB)" for m in impls)
        + " |")
    print("|---:|---:|" + "---:|---:|" * len(impls))
    for n in nps:
        cells = [f"{chan[n]['channel_bytes'] / MIB:.1f}" if n in chan else "-"]
        for m in impls:
            r = next((x for x in rows if x["mpi"] == m.name and x["np"] == n), {})
            if "shm_alloc" in r:
                cells += [f"{r['shm_alloc'] / MIB:.1f} / {r['shm_size'] / MIB:.1f}"
                          + ("" if r.get("ok") else " (check failed)"),
                          f"{r['rss_anon'] / MIB:.1f}"]
            else:
                cells += ["failed", "-"]
        print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
