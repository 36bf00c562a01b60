#!/usr/bin/env python3
"""Do commscope's numbers hold from one run to the next, and how fast does
it get there?  Side by side with the OSU micro-benchmarks, in one run, the
tools alternating (A B, then B A, ...), on an idle machine.

Prints:
 (1) commscope's 8 B latency (the headline median) over osu_latency's
     average and over a loop of 10^4 round trips timed as a whole
     (bench/loop_ref.c), both MPIs: target 0.97-1.03;
 (2) allreduce, bcast and alltoall at 8 B and 64 KiB, both MPIs: commscope's
     rank-averaged mean (the figure OSU prints) over OSU's, OSU run for about
     as long as commscope samples, by machine mode: target 0.95-1.05; with
     --imb, the same over IMB-MPI1's t_avg, and commscope's back-to-back
     (--sample-us) mean over IMB's -sync 0;
 (3) the spread (max/min) of the headline 8 B and 1 MiB latency over 5
     invocations of `commscope run --repeat 3`, next to OSU's spread over 5
     invocations, alternated; with the machine mode (cache-line floor) of
     every commscope run, the spread within each mode, and the spread of
     latency minus floor: target <= 1.05 where OSU's is > 1.5;
 (4) wall time of the default characterization (both MPIs, p2p and
     collectives, --repeat 3, and a single repetition) over OSU's single pass
     over latency, bw, bibw and the nine blocking collectives: targets <= 2.0
     and <= 1.0;
 (5) the window each implementation ran at 1 MiB in a mixed-size bw sweep,
     and, with a time cap that narrows them (--time-cap 0.02, 256 KiB to
     16 MiB), the windows each ran and the sizes measured again at a common
     window.

The OSU suite is not part of this repository: build it outside the checkout
against each MPI and pass its install folders:

    .venv/bin/python bench/integrity.py --osu openmpi=/tmp/osu/openmpi \\
        --osu mpich=/tmp/osu/mpich
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commscope.analysis.repeats import MODE_GAP, aggregate, detect_modes, mode_of
from commscope.measure import build, discovery, mpi, provenance
from commscope.store.db import Store
from commscope.store.records import parse_file
from compare_osu import NoiseWatch, compare_collectives, find_exe, launch, osu_value

HERE = Path(__file__).resolve().parent
COMMSCOPE = [sys.executable, "-m", "commscope.cli"]
OSU_PASS = ("osu_latency", "osu_bw", "osu_bibw", "osu_barrier", "osu_bcast", "osu_reduce",
            "osu_allreduce", "osu_gather", "osu_scatter", "osu_alltoall", "osu_allgather",
            "osu_reduce_scatter")


def spread(xs: list[float]) -> float:
    return max(xs) / min(xs) if xs and min(xs) > 0 else float("nan")


def loop_ref(impl: mpi.MpiImpl, tmp: Path) -> Path:
    exe = tmp / f"loop_ref-{impl.name}"
    subprocess.run([impl.mpicc, "-O2", str(HERE / "loop_ref.c"), "-o", str(exe)], check=True,
                   env=mpi.environ(impl.env))
    return exe


def floor_tool(tmp: Path) -> Path:
    exe = tmp / "floor"
    subprocess.run(["cc", "-O2", "-std=c11", str(HERE.parent / "channel" / "tools" / "floor.c"),
                    "-o", str(exe)], check=True)
    return exe


def floor_ns(exe: Path) -> float:
    """The cache-line floor between cores 0 and 1, where the launchers bind
    the two ranks: a few ms, taken right before each measurement."""
    out = subprocess.run([str(exe), "21", "200", "0", "1"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return float(json.loads(out)["one_way_us"]) * 1e3


def by_mode(tagged: dict[str, list[tuple[float, float]]]) -> list[tuple[str, dict]]:
    """Measurements (floor, value) per tool, grouped by the machine mode of
    their floor; modes where every tool has two or more, most populated
    first."""
    modes = detect_modes(f for v in tagged.values() for f, _ in v)
    out = []
    for m in sorted(modes, key=lambda m: -m.count):
        per = {k: [x for f, x in v if mode_of(f, modes) == m] for k, v in tagged.items()}
        if all(len(x) >= 2 for x in per.values()):
            out.append((m.label, per))
    return out


def fastest_cluster(xs: list[float]) -> list[float]:
    """The values of the lowest cluster (consecutive sorted values within
    the mode gap of each other)."""
    xs = sorted(xs)
    out = xs[:1]
    for x in xs[1:]:
        if x > out[-1] * MODE_GAP:
            break
        out.append(x)
    return out


def cs_latency8(core: build.Core, tmp: Path, per_iteration: bool = False) -> float:
    """The headline (median of batched samples), or with per_iteration the
    mean of per-iteration samples: OSU's statistic, clock reads included."""
    out = tmp / "lat.jsonl"
    extra = ["--sample-us", "0", "--min-time", "0.05"] if per_iteration else []
    launch(core.impl, core.exe, ["--bench", "latency", "--sizes", "8", "--output", str(out),
                                 *extra])
    parsed = parse_file(out)
    rec = parsed.results[0]
    if not rec.valid or not rec.median_us or not rec.mean_us:
        sys.exit(f"integrity: commscope latency failed: {rec.error}")
    CLOCK_READ_NS.append(parsed.header.clock_read_ns or 0.0)  # type: ignore[union-attr]
    if not per_iteration:
        BATCHED_MEAN.append(rec.mean_us)
    return rec.mean_us if per_iteration else rec.median_us


BATCHED_MEAN: list[float] = []


CLOCK_READ_NS: list[float] = []


def figure1(cores: dict[str, build.Core], osu: dict[str, Path], rounds: int, tmp: Path) -> None:
    print("\n(1) 8 B latency: commscope's headline median over OSU's average and over a "
          "loop of 10^4 round trips timed whole, compared within one machine mode (the "
          "cache-line floor measured before each run) (target 0.97-1.03)")
    fl = floor_tool(tmp)
    for name, core in cores.items():
        ref = loop_ref(core.impl, tmp)
        lat_exe = find_exe(osu[name], "osu_latency")
        got: dict[str, list[tuple[float, float]]] = {"cs": [], "cs0": [], "osu": [], "loop": []}
        BATCHED_MEAN.clear()
        for r in range(rounds):
            order = ("cs", "osu", "loop", "cs0") if r % 2 == 0 else ("cs0", "loop", "osu", "cs")
            for tool in order:
                f = floor_ns(fl)
                if tool in ("cs", "cs0"):
                    got[tool].append((f, cs_latency8(core, tmp, tool == "cs0")))
                elif tool == "osu":
                    got["osu"].append((f, osu_value(launch(core.impl, lat_exe, ["-m", "8:8"]),
                                                    8)))
                else:
                    out = launch(core.impl, ref, ["8", "21"])
                    got["loop"].append((f, json.loads(out.strip().splitlines()[-1])
                                        ["median_us"]))
        # A floor taken outside a job does not always tell the mode the job
        # then ran in (seen: 0.37-0.41 us runs right after 55 ns floors), so
        # the modes are also read off the values: each tool's fastest cluster
        # of runs (values within MODE_GAP of each other), the mode every tool
        # reaches.
        got["cs-mean"] = [(f, m) for (f, _), m in zip(got["cs"], BATCHED_MEAN, strict=True)]
        groups = by_mode(got)
        fastest = {k: fastest_cluster([x for _, x in v]) for k, v in got.items()}
        groups.append(("fastest cluster of each tool", fastest))
        for label, per in groups:
            med = {k: statistics.median(v) for k, v in per.items()}
            r_osu, r_loop = med["cs"] / med["osu"], med["cs"] / med["loop"]
            r_osu0 = med["cs0"] / med["osu"]
            n = "/".join(str(len(v)) for v in per.values())
            print(f"  [{name}] {label} ({n} runs): commscope {med['cs']:.4f} us "
                  f"(per-iteration mean {med['cs0']:.4f}), osu {med['osu']:.4f} us, loop "
                  f"{med['loop']:.4f} us")
            print(f"      commscope/loop {r_loop:.3f}  {ok(r_loop, 0.97, 1.03)}   (its mean "
                  f"{med['cs-mean']:.4f} us: mean/loop {med['cs-mean'] / med['loop']:.3f}, the "
                  "loop's figure being a mean too)")
            print(f"      commscope/osu  {r_osu:.3f}  {ok(r_osu, 0.97, 1.03)}")
            print(f"      commscope per-iteration mean/osu {r_osu0:.3f}  "
                  f"{ok(r_osu0, 0.97, 1.03)}   (OSU times every round trip with two "
                  f"MPI_Wtime calls; one read costs {statistics.median(CLOCK_READ_NS):.0f} ns "
                  f"here, osu - loop = {1e3 * (med['osu'] - med['loop']):.0f} ns)")
        for k, v in got.items():
            print(f"        {k:<5} " + " ".join(f"{x:.4f}@{f:.0f}ns" for f, x in v))


def ok(v: float, lo: float, hi: float) -> str:
    return "ok" if lo <= v <= hi else f"MISS (target {lo}-{hi})"


def figure2(cores: dict[str, build.Core], osu: dict[str, Path], rounds: int, tmp: Path,
            imb: dict[str, Path]) -> None:
    print("\n(2) collectives at 8 B and 64 KiB: commscope's mean of rank averages over OSU's "
          "average, OSU run for about as long as commscope samples (target 0.95-1.05); with "
          "--imb, over IMB-MPI1's t_avg (-sync 1, its default: each call timed, a barrier "
          "after it, OSU's statistic), and commscope batched (--sample-us 200, calls back to "
          "back, timed whole) over IMB -sync 0 (back to back, each call timed); by machine "
          "mode (the floor taken before each run)")
    fl = floor_tool(tmp)
    for name, core in cores.items():
        for bench, size, got in compare_collectives(core, osu[name], rounds, tmp,
                                                    lambda: floor_ns(fl), imb.get(name)):
            groups = [("all rounds", {k: [x for _, x in v] for k, v in got.items()}),
                      *by_mode(got)]
            for label, per in groups:
                med = {k: statistics.median(v) for k, v in per.items()}
                r = med["cs"] / med["osu"]
                line = (f"  [{name}] {bench:<9} {size:>6} B {label} ({len(per['cs'])} rounds): "
                        f"commscope {med['cs']:.4f} us, osu {med['osu']:.4f} us, ratio {r:.3f}")
                if "imb" in med:
                    line += (f"; imb {med['imb']:.4f} us, ratio {med['cs'] / med['imb']:.3f}; "
                             f"back to back: batched {med['csb']:.4f} us, imb -sync 0 "
                             f"{med['imb0']:.4f} us, ratio {med['csb'] / med['imb0']:.3f}")
                print(line + ("" if label != "all rounds" else f"  {ok(r, 0.95, 1.05)}"))
            for k, v in got.items():
                print(f"        {k:<4} " + " ".join(f"{x:.4f}@{f:.0f}ns" for f, x in v))


def figure3(cores: dict[str, build.Core], osu: dict[str, Path], n: int, tmp: Path) -> None:
    fl = floor_tool(tmp)
    print(f"\n(3) spread (max/min) of the headline over {n} invocations, alternated with OSU "
          "(target: commscope <= 1.05 where OSU > 1.5)")
    for name, core in cores.items():
        lat_exe = find_exe(osu[name], "osu_latency")
        cs: dict[int, list[float]] = {8: [], 1 << 20: []}
        osu_v: dict[int, list[float]] = {8: [], 1 << 20: []}
        osu_f: dict[int, list[float]] = {8: [], 1 << 20: []}
        reps: list[dict] = []
        for i in range(n):
            for tool in (("cs", "osu") if i % 2 == 0 else ("osu", "cs")):
                if tool == "osu":
                    f = floor_ns(fl)
                    out = launch(core.impl, lat_exe, ["-m", f"8:{1 << 20}"])
                    for s in cs:
                        osu_v[s].append(osu_value(out, s))
                        osu_f[s].append(f)
                    continue
                db = tmp / f"spread-{name}-{i}.db"
                subprocess.run([*COMMSCOPE, "run", "--db", str(db), "--quiet", "--mpi", name,
                                "--bench", "latency", "--sizes", "8:1M", "--factor", "2",
                                "--repeat", "3"], check=True)
                rows = Store(db).result_rows()
                for r in aggregate(rows):
                    if r["size_bytes"] in cs:
                        cs[r["size_bytes"]].append(float(r["median_us"]))
                reps.extend({"inv": i, "size": r["size_bytes"], "t": r["median_us"],
                             "floor": r["floor_ns"]} for r in rows if r["size_bytes"] in cs)
        modes = detect_modes([*(x["floor"] for x in reps), *osu_f[8]])
        for s, label in ((8, "8 B"), (1 << 20, "1 MiB")):
            c, o = spread(cs[s]), spread(osu_v[s])
            target = "ok" if c <= 1.05 else ("MISS" if o > 1.5 else "MISS (OSU too is "
                                                                     f"within {o:.2f})")
            print(f"  [{name}] {label:>5}: commscope {c:.3f} ({fmt(cs[s])}), osu {o:.3f} "
                  f"({fmt(osu_v[s])})  {target}")
            for m in modes:
                one = [x["t"] for x in reps if x["size"] == s and mode_of(x["floor"], modes) == m]
                o_m = [v for v, f in zip(osu_v[s], osu_f[s], strict=True)
                       if mode_of(f, modes) == m]
                if len(o_m) >= 2:
                    print(f"      {m.label}: osu ({len(o_m)} invocations) spread {spread(o_m):.3f}")
                if len(one) >= 2:
                    over = [x["t"] * 1e3 - x["floor"] for x in reps
                            if x["size"] == s and mode_of(x["floor"], modes) == m]
                    line = (f"      {m.label} ({len(one)} runs): spread {spread(one):.3f}")
                    if s == 8:
                        line += (f"; latency minus floor {statistics.median(over):.0f} ns, "
                                 f"spread {spread(over):.3f}")
                    print(line)
        allo = [x["t"] * 1e3 - x["floor"] for x in reps if x["size"] == 8]
        allt = [x["t"] for x in reps if x["size"] == 8]
        print(f"      every run at 8 B ({len(allt)} runs, {len(modes)} mode(s)): latency "
              f"spread {spread(allt):.3f}, latency minus floor spread {spread(allo):.3f}")


def fmt(xs: list[float]) -> str:
    return " ".join(f"{x:.4g}" for x in xs)


def figure4(cores: dict[str, build.Core], osu: dict[str, Path], tmp: Path) -> None:
    print("\n(4) wall time of the default characterization (both MPIs, p2p + collectives) "
          "over OSU's single pass (latency, bw, bibw, 9 collectives)")
    mpis = [x for m in cores for x in ("--mpi", m)]
    times: dict[str, float] = {}
    for tool in ("osu", "cs3", "cs1"):
        t0 = time.monotonic()
        if tool == "osu":
            for name, core in cores.items():
                for exe in OSU_PASS:
                    launch(core.impl, find_exe(osu[name], exe), [], timeout=600)
        else:
            rep = "3" if tool == "cs3" else "1"
            subprocess.run([*COMMSCOPE, "run", "--db", str(tmp / f"wall-{tool}.db"), "--quiet",
                            "--bench", "p2p,coll", "--repeat", rep, *mpis], check=True)
        times[tool] = time.monotonic() - t0
    r3, r1 = times["cs3"] / times["osu"], times["cs1"] / times["osu"]
    print(f"  OSU {times['osu']:.1f} s; commscope --repeat 3 {times['cs3']:.1f} s -> {r3:.2f} "
          f"{ok(r3, 0, 2.0)}; one repetition {times['cs1']:.1f} s -> {r1:.2f} {ok(r1, 0, 1.0)}")


def figure5(cores: dict[str, build.Core], tmp: Path) -> None:
    print("\n(5) the window each implementation ran in a mixed-size bw sweep (8 B and 1 MiB, "
          "--factor 131072, one run): equal at one size unless the time bound narrows it")
    db = tmp / "windows.db"
    subprocess.run([*COMMSCOPE, "run", "--db", str(db), "--quiet", "--no-advise", "--bench",
                    "bw", "--sizes", "8:1M", "--factor", "131072",
                    *(x for n in cores for x in ("--mpi", n))], check=True)
    for r in sorted(Store(db).result_rows(), key=lambda r: (r["size_bytes"], r["mpi_name"])):
        print(f"  {r['mpi_name']:<10} {r['size_bytes']:>8} B: window {r['window']}, "
              f"{r['mb_per_s']:.0f} MB/s")
    print("  narrowed by the time bound (--time-cap 0.02, 256 KiB to 16 MiB, --factor 4):")
    db = tmp / "narrowed.db"
    subprocess.run([*COMMSCOPE, "run", "--db", str(db), "--quiet", "--no-advise", "--bench",
                    "bw", "--sizes", "256K:16M", "--factor", "4", "--time-cap", "0.02",
                    *(x for n in cores for x in ("--mpi", n))], check=True)
    store = Store(db)
    first = {(r["mpi_name"], r["size_bytes"]): r["window"]
             for r in store.result_rows(narrowed=True) if r["narrowed_in"] is not None}
    for r in sorted(store.result_rows(), key=lambda r: (r["size_bytes"], r["mpi_name"])):
        again = first.get((r["mpi_name"], r["size_bytes"]))
        print(f"  {r['mpi_name']:<10} {r['size_bytes']:>8} B: window {r['window']}"
              + (f" (ran {again} first, measured again)" if again else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--osu", action="append", required=True, metavar="MPI=DIR")
    ap.add_argument("--rounds", type=int, default=6, help="alternation rounds of (1), (2)")
    ap.add_argument("--invocations", type=int, default=5, help="invocations of (3)")
    ap.add_argument("--imb", action="append", default=[], metavar="MPI=EXE",
                    help="an MPI name and an IMB-MPI1 built against it: (2) adds the "
                         "loop-timed comparison")
    ap.add_argument("--only", default="12345", help="which figures (default 12345)")
    a = ap.parse_args()
    impls = {m.name: m for m in discovery.discover()}
    osu: dict[str, Path] = {}
    for item in a.osu:
        name, _, folder = item.partition("=")
        if name not in impls or not folder:
            sys.exit(f"integrity: bad --osu '{item}' (MPIs found: {', '.join(impls)})")
        osu[name] = Path(folder)
    imb = {n: Path(p) for n, _, p in (x.partition("=") for x in a.imb)}
    cores = {n: build.build(impls[n]) for n in osu}
    watch = NoiseWatch()
    print(f"commscope integrity bench: {provenance.cpu_model()}, {provenance.n_cores()} cores, "
          f"2 ranks; MPIs: {', '.join(cores)}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "1" in a.only:
            figure1(cores, osu, a.rounds, tmp)
        if "2" in a.only:
            figure2(cores, osu, a.rounds, tmp, imb)
        if "3" in a.only:
            figure3(cores, osu, a.invocations, tmp)
        if "4" in a.only:
            figure4(cores, osu, tmp)
        if "5" in a.only:
            figure5(cores, tmp)
    print(f"\n{watch.line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
