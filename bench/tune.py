#!/usr/bin/env python3
"""The tuning advisor, the probe and the guidelines on this machine, in one run.

Prints, on an idle machine:
 (1) Open MPI 4 MiB bw: each single-copy candidate over the default
     (default time / candidate time), median over interleaved rounds with its
     between-round 95% interval, and the advisor's verdict;
 (2) the advisor's winner (if any) validated on matmul's end-to-end time,
     default/tuned, over interleaved rounds;
 (3) the probe's core-to-core floor next to each MPI's 1 B latency, taken
     alternately (probe, Open MPI, MPICH, probe, ...);
 (4) the number of guideline violations found with both MPIs (collectives
     at 2 ranks, --repeat 3);
 (5) binding: ranks left unbound (COMMSCOPE_BIND=none) against the default
     one core each, 8 B and 1 MiB latency, both MPIs, interleaved rounds.

    .venv/bin/python bench/tune.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.advise import search
from commscope.analysis import guidelines
from commscope.analysis.repeats import aggregate
from commscope.analysis.series import collect
from commscope.measure import build, discovery, probe
from commscope.measure.plan import CoreOptions
from commscope.measure.progress import Progress
from commscope.measure.runner import NoisePolicy
from commscope.store.db import Store

CLI = [sys.executable, "-m", "commscope.cli"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-tune-"))
    store = Store(tmp / "search.db")
    core = build.build(discovery.select(["openmpi"])[0])
    quiet = Progress(0, enabled=False)
    opts = CoreOptions(sizes="4M", time_cap_s=0.5)

    cv = search.read_cvars(core)
    cands = [c for c in search.space(core, cv, ["bw"]) if "single_copy" in c.label]
    outs = search.search(core, ["bw"], opts, cands, store, rounds=a.rounds, budget_s=1e9,
                       argv=sys.argv, timeout_s=120, policy=NoisePolicy(), progress=quiet)
    print(f"(1) Open MPI 4.1, bw 4 MiB, 2 ranks, {a.rounds} interleaved rounds "
          "(default time / candidate time):")
    for o in outs:
        if o.state == "broken":
            print(f"    {o.cand.label}: broken ({o.reason})")
            continue
        (e,) = o.effects
        verdict = "faster" if e.wins else "slower" if e.loses else "not told apart"
        print(f"    {o.cand.label}: {e.ratio:.2f} [{e.lo:.2f}, {e.hi:.2f}] -> {verdict}")
    w = search.best(outs)
    print(f"    advisor: {w.cand.label if w else 'keep the defaults'}")

    if w is not None:
        (e,) = search.validate(core, w.cand, "matmul", "N=1000", CoreOptions(), store,
                             rounds=a.rounds, argv=sys.argv, timeout_s=300,
                             policy=NoisePolicy(), progress=quiet)
        print(f"(2) matmul N=1000 end to end, default/tuned: {e.ratio:.2f} "
              f"[{e.lo:.2f}, {e.hi:.2f}] over {e.n} rounds")
    else:
        print("(2) no winner to validate on matmul")

    floors, lat = [], {"openmpi": [], "mpich": []}
    db = tmp / "lat.db"
    for _ in range(a.rounds):
        floors.append(probe.floor_ns(probe.run(pair_ms=20.0)))
        for name in lat:
            subprocess.run([*CLI, "run", "--db", str(db), "--mpi", name, "--bench", "latency",
                            "--sizes", "1", "--no-probe", "--quiet"], check=True)
            rows = Store(db, create=False).result_rows(latest=False)
            lat[name].append(1000 * [r for r in rows if r["mpi_name"] == name][-1]["median_us"])
    f = statistics.median(floors)
    print(f"(3) core-to-core floor (probe, one way) median {f:.0f} ns "
          f"(range {min(floors):.0f}-{max(floors):.0f}) over {a.rounds} probes:")
    for name, xs in lat.items():
        m = statistics.median(xs)
        print(f"    {name} 1 B latency median {m:.0f} ns (range {min(xs):.0f}-{max(xs):.0f}): "
              f"MPI adds {m - f:.0f} ns, {m / f:.1f}x the floor")

    gdb = tmp / "coll.db"
    subprocess.run([*CLI, "run", "--db", str(gdb), "--bench", "coll", "--repeat", "3",
                    "--sizes", "4:1M", "--factor", "4", "--no-probe", "--quiet"], check=True)
    res = guidelines.check(collect(aggregate(Store(gdb, create=False).result_rows(),
                                             mode="dominant")))
    print(f"(4) guideline violations, both MPIs, 2 ranks, --repeat 3: {len(res.violations)} "
          f"({res.checked} checks, {res.one_run} with a one-run point)")
    for v in res.violations:
        print(f"    {v.config.label()}: {v.guideline} {v.where()}, {v.ratio:.2f}x")

    print(f"(5) ranks unbound against one core each, latency, {a.rounds} interleaved rounds "
          "(default time / unbound time):")
    unbound = search.Candidate((("COMMSCOPE_BIND", "none"),), "unbound")
    for name in ("openmpi", "mpich"):
        c = build.build(discovery.select([name])[0])
        (o,) = search.search(c, ["latency"], CoreOptions(sizes="8:1M", factor=131072), [unbound],
                           store, rounds=a.rounds, budget_s=1e9, argv=sys.argv, timeout_s=120,
                           policy=NoisePolicy(), progress=quiet)
        for e in o.effects if o.state == "measured" else []:
            verdict = "faster" if e.wins else "slower" if e.loses else "not told apart"
            print(f"    {name} {e.size} B: {e.ratio:.2f} [{e.lo:.2f}, {e.hi:.2f}] -> {verdict}")
        if o.state != "measured":
            print(f"    {name}: {o.state} ({o.reason})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
