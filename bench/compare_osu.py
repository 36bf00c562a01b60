#!/usr/bin/env python3
"""commscope against the OSU micro-benchmarks, side by side in one run.

The OSU suite is not part of this repository: build it by hand, outside the
checkout, against each MPI you compare, and pass its install folders:

    bench/compare_osu.py --osu openmpi=/opt/osu-openmpi --osu mpich=/opt/osu-mpich

For each implementation, the two tools are alternated over several rounds
(A B, then B A, ...), because small-message latency on a VM jumps between two
modes for seconds at a time; the figures are medians over rounds.  Printed:
commscope latency 8 B / osu_latency 8 B, commscope bw 1 MiB / osu_bw 1 MiB,
and the spread (max/min) of commscope's 8 B latency median over 5 invocations.
With --collectives: allreduce, bcast and alltoall at 8 B and 64 KiB, commscope's
rank-averaged mean time per iteration (the figure OSU prints) over OSU's.
The machine's noise (CPU used by other processes) during the comparison is
printed too: figures taken on a busy machine say little.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from commscope.measure import build, discovery, mpi, noise, provenance
from commscope.store.records import Result, parse_file

TARGETS = {"latency": (0.97, 1.03), "bw": (0.95, 1.05), "spread": (1.0, 1.03),
           "coll": (0.95, 1.05)}


def find_exe(root: Path, name: str) -> Path:
    hits = sorted(p for p in root.rglob(name) if p.is_file() and os.access(p, os.X_OK))
    if not hits:
        sys.exit(f"compare_osu: no {name} under {root}")
    return hits[0]


def launch(impl: mpi.MpiImpl, exe: Path, args: list[str], timeout: float = 120) -> str:
    spec = mpi.LaunchSpec(np=2, cores=provenance.n_cores(), root=os.geteuid() == 0)
    argv = mpi.launch_argv(impl, spec, str(exe), args)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       env=mpi.environ(impl.env), check=False)
    if p.returncode != 0:
        sys.exit(f"compare_osu: {' '.join(argv)} failed:\n{p.stderr[-2000:]}")
    return p.stdout


def osu_value(out: str, size: int) -> float:
    for line in out.splitlines():
        m = re.match(rf"^\s*{size}\s+([0-9.]+)", line)
        if m:
            return float(m.group(1))
    raise SystemExit(f"compare_osu: no row for size {size} in OSU output:\n{out}")


def cs_record(core: build.Core, bench: str, size: int, tmp: Path,
              extra: Sequence[str] = ()) -> Result:
    """One validated commscope record of `bench` at `size`."""
    out = tmp / "r.jsonl"
    launch(core.impl, core.exe, ["--bench", bench, "--sizes", str(size), "--output", str(out),
                                 "--time-cap", "2", "--min-time", "0.2", *extra])
    rec = parse_file(out).results[0]
    if not rec.valid:
        sys.exit(f"compare_osu: commscope {bench} {size} failed validation: {rec.error}")
    return rec


def cs_value(core: build.Core, bench: str, size: int, tmp: Path) -> tuple[float, float]:
    """commscope's headline (from the median) and the same from the mean,
    which is the statistic OSU prints (total time / iterations)."""
    rec = cs_record(core, bench, size, tmp)
    assert rec.median_us and rec.mean_us
    if bench == "latency":
        return rec.median_us, rec.mean_us
    return size / rec.median_us, size / rec.mean_us


def compare(name: str, core: build.Core, osu_root: Path, rounds: int, tmp: Path) -> dict:
    lat_exe, bw_exe = find_exe(osu_root, "osu_latency"), find_exe(osu_root, "osu_bw")
    one_mib = 1 << 20
    got: dict[str, list[float]] = {k: [] for k in (
        "latency/cs", "latency/cs-mean", "latency/osu", "bw/cs", "bw/cs-mean", "bw/osu")}

    def one(bench: str, tool: str) -> None:
        if tool == "osu":
            exe, size = (lat_exe, 8) if bench == "latency" else (bw_exe, one_mib)
            got[f"{bench}/osu"].append(
                osu_value(launch(core.impl, exe, ["-m", f"{size}:{size}"]), size))
        else:
            med, mean = cs_value(core, bench, 8 if bench == "latency" else one_mib, tmp)
            got[f"{bench}/cs"].append(med)
            got[f"{bench}/cs-mean"].append(mean)

    for r in range(rounds):
        for bench in ("latency", "bw"):
            for tool in (("cs", "osu") if r % 2 == 0 else ("osu", "cs")):  # A B, B A, ...
                one(bench, tool)
    spread = [cs_value(core, "latency", 8, tmp)[0] for _ in range(5)]
    m = {k: statistics.median(v) for k, v in got.items()}
    return {
        "name": name, "m": m,
        "latency_ratio": m["latency/cs-mean"] / m["latency/osu"],
        "latency_ratio_median": m["latency/cs"] / m["latency/osu"],
        "bw_ratio": m["bw/cs-mean"] / m["bw/osu"],
        "bw_ratio_median": m["bw/cs"] / m["bw/osu"],
        "spread": max(spread) / min(spread), "spread_values": spread, "raw": got,
    }


COLLECTIVES = (("allreduce", 8), ("allreduce", 65536), ("bcast", 8), ("bcast", 65536),
               ("alltoall", 8), ("alltoall", 65536))



# OSU's default of 1000 iterations spans half a millisecond at 8 B: its
# average then lands wherever the host is for that half-millisecond (0.20 to
# 0.30 us for one 8 B alltoall, launch to launch, in one floor mode).  OSU is
# run for about as long as commscope samples a size instead.
OSU_ITERS = {8: 200000, 65536: 20000}
IMB_NAMES = {"alltoall": "Alltoall", "allreduce": "Allreduce", "bcast": "Bcast"}


def osu_takes(exe: Path, flag: bytes) -> bool:
    """Whether this OSU build knows an option (-T, the data type, came in
    OSU 7): its usage text is compiled into the binary."""
    return flag in exe.read_bytes()


def imb_value(out: str, size: int) -> float:
    """IMB's t_avg[usec] for `size`: the loop of calls timed whole, averaged
    over ranks."""
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] == str(size):
            return float(f[-1])
    raise SystemExit(f"compare_osu: no row for size {size} in IMB output:\n{out}")


def compare_collectives(core: build.Core, osu_root: Path, rounds: int, tmp: Path,
                        floor: Callable[[], float] = lambda: 0.0,
                        imb: Path | None = None) -> list:
    """Per (bench, size): every round's figures tagged with the machine's
    floor taken just before, tools alternated.  "cs": commscope's mean of
    rank averages (one call per sample, a barrier after it); "osu": OSU's
    average, the same statistic.  With `imb`, IMB-MPI1 (2019 and later)
    twice: "imb", its default (-sync 1: each call timed, a barrier after it,
    OSU's statistic again), and "imb0" (-sync 0: calls back to back, each
    timed) beside "csb", commscope batched (--sample-us 200: calls back to
    back, the batch timed whole, the mean per call averaged over ranks)."""
    rows = []
    for bench, size in COLLECTIVES:
        exe = find_exe(osu_root, f"osu_{bench}")
        # OSU 7 reduces MPI_CHAR unless told; commscope reduces int
        typ = ["-T", "mpi_int"] if bench == "allreduce" and osu_takes(exe, b"mpi_int") else []
        tools = ["cs", "osu"] + (["imb", "csb", "imb0"] if imb else [])
        got: dict[str, list[tuple[float, float]]] = {t: [] for t in tools}
        for r in range(rounds):
            for tool in (tools if r % 2 == 0 else tools[::-1]):
                f = floor()
                if tool == "osu":
                    n = OSU_ITERS[size]
                    v = osu_value(launch(core.impl, exe, ["-m", f"{size}:{size}", "-i", str(n),
                                                          "-x", str(n // 20), *typ]), size)
                elif tool in ("imb", "imb0"):
                    assert imb is not None
                    log2 = size.bit_length() - 1
                    v = imb_value(launch(core.impl, imb, [
                        IMB_NAMES[bench], "-msglog", f"{log2}:{log2}", "-npmin", "2", "-iter",
                        str(OSU_ITERS[size]), "-iter_policy", "off",
                        "-sync", "0" if tool == "imb0" else "1"]), size)
                else:
                    rec = cs_record(core, bench, size, tmp,
                                    ["--sample-us", "200"] if tool == "csb" else [])
                    v = rec.mean_rank_avg_us  # IMB's t_avg, OSU's average: over ranks
                    assert v
                got[tool].append((f, v))
        rows.append((bench, size, got))
    return rows


# The fidelity table (docs/fidelity.md): each row, commscope's statistic over
# the reference's, both at one size, alternated within every round.
#   key: (commscope bench, size, statistic, reference, its program, size)
TABLE = (
    ("allreduce 8 B, rank-average mean / osu_allreduce", "allreduce", 8, "rank-mean",
     "osu", "osu_allreduce"),
    ("bcast 64 KiB, rank-average mean / osu_bcast", "bcast", 65536, "rank-mean", "osu",
     "osu_bcast"),
    ("bw 1 MiB, from the mean / osu_bw", "bw", 1 << 20, "bw-mean", "osu", "osu_bw"),
    ("latency 8 B, per-iteration mean / osu_latency", "latency", 8, "mean", "osu",
     "osu_latency"),
    # IMB's t[usec] is a loop timed whole: the mean of commscope's batched samples
    # (each a loop timed whole) is the same statistic; its headline, a median of
    # them, is set beside it for context (below a mean wherever samples have a tail)
    ("latency 8 B, batched mean / IMB PingPong", "latency", 8, "batch-mean", "imb",
     "PingPong"),
    ("latency 8 B, headline (median) / IMB PingPong", "latency", 8, "median", "imb",
     "PingPong"),
)
# by row; the rest: TABLE_TARGET; None: context, not a like-for-like statistic
TABLE_TARGETS: dict[str, tuple[float, float] | None] = {
    "latency 8 B, per-iteration mean / osu_latency": (0.97, 1.03),
    "latency 8 B, headline (median) / IMB PingPong": None}
TABLE_TARGET = (0.95, 1.05)


def cs_figure(rec: Result, stat: str, size: int) -> float:
    """The commscope figure a row compares: time in us, or MB/s for bw."""
    if stat == "rank-mean":
        assert rec.mean_rank_avg_us
        return rec.mean_rank_avg_us
    if stat == "bw-mean":
        assert rec.mean_us
        return size / rec.mean_us
    v = rec.median_us if stat == "median" else rec.mean_us  # mean, batch-mean
    assert v
    return v


def ref_figure(core: build.Core, osu_root: Path, imb: Path | None, tool: str, prog: str,
               bench: str, size: int) -> float:
    if tool == "imb":
        assert imb is not None
        # PingPong's t[usec] is half the round trip of a loop timed whole: the
        # latency OSU and commscope print
        # (printed to 0.01 us: 2% of 0.5 us)
        log2 = max(size.bit_length() - 1, 0)
        out = launch(core.impl, imb, ["PingPong", "-msglog", f"{log2}:{log2}",
                                      "-iter", "100000", "-iter_policy", "off"])
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[0] == str(size):  # #bytes #repetitions t[usec] Mbytes/sec
                return float(f[2])
        raise SystemExit(f"compare_osu: no PingPong row for {size} B in IMB output:\n{out}")
    exe = find_exe(osu_root, prog)
    args = ["-m", f"{size}:{size}"]
    if bench in ("allreduce", "bcast"):  # run about as long as commscope samples a size
        n = OSU_ITERS[size]
        args += ["-i", str(n), "-x", str(n // 20)]
        if bench == "allreduce" and osu_takes(exe, b"mpi_int"):
            args += ["-T", "mpi_int"]
    return osu_value(launch(core.impl, exe, args), size)


def fidelity_table(core: build.Core, osu_root: Path, imb: Path | None, rounds: int,
                   tmp: Path) -> tuple[dict[str, list[tuple[float, float]]], list[float]]:
    """Every row of TABLE, `rounds` rounds, commscope and the reference
    alternated within each (A B, then B A): per row, (commscope, reference)
    per round; and the core-to-core floor each round's first record carried."""
    rows = [r for r in TABLE if r[4] == "osu" or imb is not None]
    got: dict[str, list[tuple[float, float]]] = {r[0]: [] for r in rows}
    floors: list[float] = []
    for k in range(rounds):
        first = True
        for label, bench, size, stat, tool, prog in rows:
            pair = {}
            for who in (("cs", "ref") if k % 2 == 0 else ("ref", "cs")):
                if who == "cs":
                    # OSU reads the clock around every iteration: commscope's
                    # per-iteration samples (--sample-us 0) for its mean
                    per_iter = ["--sample-us", "0"] if stat == "mean" else []
                    rec = cs_record(core, bench, size, tmp, per_iter)
                    pair["cs"] = cs_figure(rec, stat, size)
                    if first:
                        floors.append(rec.floor_ns or float("nan"))
                        first = False
                else:
                    pair["ref"] = ref_figure(core, osu_root, imb, tool, prog, bench, size)
            got[label].append((pair["cs"], pair["ref"]))
    return got, floors


def print_table(name: str, got: dict[str, list[tuple[float, float]]],
                floors: list[float]) -> None:
    print(f"\n[{name}] {len(floors)} rounds, alternated; floor at each round's start (ns): "
          + " ".join(f"{f:.0f}" for f in floors))
    print("| figure | commscope | reference | ratio of medians | per-round ratios (min-max) |"
          " target |")
    print("|---|---|---|---|---|---|")
    for label, pairs in got.items():
        cs = statistics.median(c for c, _ in pairs)
        ref = statistics.median(r for _, r in pairs)
        per = [c / r for c, r in pairs]
        target = TABLE_TARGETS.get(label, TABLE_TARGET)
        ratio = cs / ref
        said = "context" if target is None else (
            f"{target[0]}-{target[1]} " + ("ok" if target[0] <= ratio <= target[1] else "MISS"))
        print(f"| {label} | {cs:.4g} | {ref:.4g} | {ratio:.3f} | {min(per):.3f}-{max(per):.3f} "
              f"| {said} |")


class NoiseWatch:
    """CPU used by other processes while a bench ran: figures taken on a
    busy machine say little, so every bench prints it."""

    def __init__(self) -> None:
        self.mark0, self.t0, self.wall0 = noise.mark(), os.times(), time.monotonic()

    def line(self) -> str:
        t1 = os.times()
        children = ((t1.children_user - self.t0.children_user)
                    + (t1.children_system - self.t0.children_system))
        n = noise.job_noise(self.mark0, noise.mark(), children, time.monotonic() - self.wall0)
        if not n.get("valid"):
            return "noise: /proc/stat unreadable"
        return (f"noise: other processes used {n['other_cpu_s']} s of CPU over {n['wall_s']} s "
                f"({n['other_cores']} cores on average), steal {n['steal_s']} s")


def verdict(key: str, value: float) -> str:
    lo, hi = TARGETS[key]
    return "ok" if lo <= value <= hi else f"MISS (target {lo}-{hi})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--osu", action="append", required=True, metavar="MPI=DIR",
                    help="an MPI name (see commscope mpi list) and its OSU install folder")
    ap.add_argument("--rounds", type=int, default=6, help="alternation rounds (default 6)")
    ap.add_argument("--collectives", action="store_true",
                    help="compare allreduce, bcast and alltoall instead of point-to-point")
    ap.add_argument("--table", action="store_true",
                    help="the fidelity table (docs/fidelity.md): allreduce 8 B, bcast 64 KiB, "
                         "bw 1 MiB, latency 8 B against OSU, and against IMB's PingPong "
                         "with --imb, in one run, with the floor of each round")
    ap.add_argument("--imb", action="append", default=[], metavar="MPI=IMB-MPI1",
                    help="an MPI name and its IMB-MPI1 (with --table)")
    a = ap.parse_args()
    imbs = {}
    for item in a.imb:
        name, _, exe = item.partition("=")
        if not exe or not Path(exe).is_file():
            sys.exit(f"compare_osu: bad --imb '{item}' (MPI=path of IMB-MPI1)")
        imbs[name] = Path(exe)
    impls = {m.name: m for m in discovery.discover()}
    pairs = []
    for item in a.osu:
        name, _, folder = item.partition("=")
        if name not in impls or not folder:
            sys.exit(f"compare_osu: bad --osu '{item}' (MPIs found: {', '.join(impls)})")
        pairs.append((name, Path(folder)))
    watch = NoiseWatch()
    rows = []
    coll_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if a.table:
            print(f"commscope against OSU and IMB, {a.rounds} alternating rounds, medians; "
                  f"machine: {provenance.cpu_model()}, {provenance.n_cores()} cores, 2 ranks")
            for name, folder in pairs:
                core = build.build(impls[name])
                got, floors = fidelity_table(core, folder, imbs.get(name), a.rounds, Path(tmp))
                print_table(name, got, floors)
            print(f"\n{watch.line()}")
            return 0
        for name, folder in pairs:
            core = build.build(impls[name])
            if a.collectives:
                coll_rows.append((name, compare_collectives(core, folder, a.rounds, Path(tmp))))
            else:
                rows.append(compare(name, core, folder, a.rounds, Path(tmp)))
    print(f"commscope vs OSU micro-benchmarks, {a.rounds} alternating rounds, medians")
    print(f"machine: {provenance.cpu_model()}, {provenance.n_cores()} cores, 2 ranks")
    for name, crow in coll_rows:
        print(f"\n[{name}] collectives: commscope mean of rank averages / OSU avg latency "
              "(OSU run for about as long as commscope samples)")
        for bench, size, got in crow:
            m = {k: statistics.median(x for _, x in v) for k, v in got.items()}
            ratio = m["cs"] / m["osu"]
            print(f"  {bench:<10} {size:>6} B: commscope {m['cs']:9.4f} us, osu "
                  f"{m['osu']:9.4f} us, ratio {ratio:.3f}  {verdict('coll', ratio)}")
    if rows:
        print("ratios compare the same statistic: OSU prints means (total time / iterations),")
        print("so commscope's mean is set against them; its headline median is shown beside.")
    for r in rows:
        m = r["m"]
        print(f"\n[{r['name']}]")
        print(f"  latency 8 B : commscope mean {m['latency/cs-mean']:.4f} us "
              f"(median {m['latency/cs']:.4f}), osu {m['latency/osu']:.4f} us")
        lr = r["latency_ratio"]
        print(f"                ratio {lr:.3f}  {verdict('latency', lr)}"
              f"   (median/osu {r['latency_ratio_median']:.3f})")
        print(f"  bw 1 MiB    : commscope from mean {m['bw/cs-mean']:.0f} MB/s "
              f"(from median {m['bw/cs']:.0f}), osu {m['bw/osu']:.0f} MB/s")
        print(f"                ratio {r['bw_ratio']:.3f}  {verdict('bw', r['bw_ratio'])}"
              f"   (median-based/osu {r['bw_ratio_median']:.3f})")
        print(f"  spread of commscope 8 B latency median over 5 invocations: {r['spread']:.3f}  "
              f"{verdict('spread', r['spread'])}  "
              f"({', '.join(f'{v:.4f}' for v in r['spread_values'])} us)")
        for k, vs in r["raw"].items():
            print(f"    {k:<16} " + " ".join(f"{v:.4g}" for v in vs))
    print(f"\n{watch.line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
