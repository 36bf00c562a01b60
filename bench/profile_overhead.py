#!/usr/bin/env python3
"""What `commscope profile` costs a program, and whether it sees what the
program does, in one run (idle machine):

 (1) overhead: the core's latency benchmark at 8 B, 2 ranks, run with and
     without the profiler preloaded, alternating which goes first, over
     --rounds rounds (medians): the latency ratio (the profiler's two clock
     reads and table update on every call, set against the cheapest call
     there is) and the launch's wall-time ratio (what a program's user
     sees);
 (2) agreement: the core's matmul (N = 2000) run under the profiler: the
     time the core's own phases say it spent in bcast_B against the time
     the profiler counted in MPI_Bcast, rank by rank.

    .venv/bin/python bench/profile_overhead.py [--mpi openmpi,mpich] [--rounds 6]
                                               [--stack N]

--stack N: the profiler unwinds N frames a call site (profile --stack), in (1)
only: the latency ratio then carries the unwinding too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from commscope.measure import build, discovery, provenance  # noqa: E402
from commscope.measure import mpi as mpi_mod  # noqa: E402
from commscope.measure import profile as prof  # noqa: E402
from commscope.measure.procs import run_bounded  # noqa: E402
from commscope.store.records import parse_file  # noqa: E402


def launch(core, lib: Path | None, args: list[str], tmp: Path, profile_dir: Path | None = None,
           stack: int = 1) -> tuple[float, list]:
    impl = core.impl
    spec = mpi_mod.LaunchSpec(np=2, cores=provenance.n_cores(), root=os.geteuid() == 0)
    out = tmp / "records.jsonl"
    out.unlink(missing_ok=True)
    argv = mpi_mod.launch_argv(impl, spec, str(core.exe), [*args, "--output", str(out)],
                               prof.preload_flags(impl, lib) if lib else ())
    given = {"COMMSCOPE_PROFILE_DIR": str(profile_dir)} if profile_dir else {}
    if profile_dir and stack > 1:
        given["COMMSCOPE_PROFILE_DEPTH"] = str(stack)
    env = mpi_mod.environ(impl.env, given)
    t0 = time.monotonic()
    ended = run_bounded(argv, timeout_s=120, env=env, cwd=str(tmp), stdout_path=tmp / "o",
                        stderr_path=tmp / "e")
    wall = time.monotonic() - t0
    if ended.exit_code != 0:
        raise SystemExit(f"{impl.name}: {argv} failed: {(tmp / 'e').read_text()[-400:]}")
    return wall, parse_file(out).results


def overhead(core, lib: Path, rounds: int, tmp: Path, stack: int = 1) -> None:
    args = ["--bench", "latency", "--sizes", "8", "--min-samples", "2000", "--time-cap", "1"]
    lat = {True: [], False: []}
    wall = {True: [], False: []}
    for r in range(rounds):
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            w, res = launch(core, lib if on else None, args, tmp,
                            tmp / "pd" if on else None, stack)
            (x,) = [q for q in res if q.size_bytes == 8]
            assert x.valid, x
            lat[on].append(x.median_us)
            wall[on].append(w)
    rl = [a / b for a, b in zip(lat[True], lat[False], strict=True)]
    rw = [a / b for a, b in zip(wall[True], wall[False], strict=True)]
    on, off = statistics.median(lat[True]), statistics.median(lat[False])
    deep = f" (--stack {stack})" if stack > 1 else ""
    print(f"{core.impl.name}: latency 8 B with/without the profiler{deep}, {rounds} alternating "
          f"rounds: median ratio {statistics.median(rl):.3f} (rounds {min(rl):.3f}-"
          f"{max(rl):.3f}; {on:.3f} against {off:.3f} us, {1000 * (on - off):.0f} ns a "
          f"one-way message); the launch's wall time: median ratio {statistics.median(rw):.3f} "
          f"({statistics.median(wall[True]):.2f} against {statistics.median(wall[False]):.2f} s)")


def agreement(core, lib: Path, tmp: Path) -> None:
    pd = tmp / "agree"
    pd.mkdir(exist_ok=True)
    for f in pd.glob("*.json"):
        f.unlink()
    _, res = launch(core, lib, ["--bench", "matmul", "--sizes", "2000", "--min-samples", "3",
                                "--time-cap", "5"], tmp, pd)
    (r,) = res
    ranks = {int(j["rank"]): j for j in (json.loads(f.read_text()) for f in pd.glob("*.json"))}
    ph = (r.phases or {}).get("bcast_B") or {}
    core_us = [float(x) for x in ph.get("ranks_us") or []]
    sizes = [int(x) for x in ph.get("bytes_ranks") or []]
    parts = []
    for k, v in sorted(ranks.items()):
        # matmul's own broadcasts of B only: the bucket of its message (the core's
        # harness broadcasts a few bytes of its own besides)
        want = sizes[k] if k < len(sizes) else 0
        mine = [c for c in v["calls"] if c["call"] == "MPI_Bcast" and c["n"]
                and round(c["bytes"] / c["n"]) == want]
        n = sum(c["n"] for c in mine)
        tot = sum(c["total_s"] for c in mine)
        per = 1e6 * tot / n if n else float("nan")
        # the slowest call (the first, cold: its buffers' pages and the path set up) left
        # out, as the core's warm-up leaves it out of its median
        warm = 1e6 * (tot - max(c["max_s"] for c in mine)) / (n - 1) if n > 1 else per
        theirs = core_us[k] if k < len(core_us) else float("nan")
        parts.append(f"rank {k}: the profiler {per:.1f} us a call ({n} calls of {want} B), "
                     f"{warm:.1f} without its slowest; the core's bcast_B {theirs:.1f} us (its "
                     f"median iteration): ratio {per / theirs:.2f}, {warm / theirs:.2f} without")
    print(f"{core.impl.name}: matmul N=2000 under the profiler, MPI_Bcast against the core's "
          "own phase: " + "; ".join(parts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", default="openmpi,mpich")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--no-agreement", action="store_true")
    ap.add_argument("--stack", type=int, default=1, choices=range(1, 9), metavar="N")
    a = ap.parse_args()
    impls = discovery.select([m for m in a.mpi.split(",") if m])
    with tempfile.TemporaryDirectory(prefix="cs-profile-bench-") as t:
        tmp = Path(t)
        (tmp / "pd").mkdir()
        for impl in impls:
            core, lib = build.build(impl), prof.build(impl)
            overhead(core, lib, a.rounds, tmp, a.stack)
            if not a.no_agreement:
                agreement(core, lib, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
