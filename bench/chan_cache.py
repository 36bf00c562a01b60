#!/usr/bin/env python3
"""Cache behaviour of Chai, Hartono and Panda's channel against an MPI implementation, as
their study measured it with Valgrind.

Runs the latency (8 B) and bandwidth (64 KiB) benchmarks under Valgrind's
callgrind with its cache simulator, counting only inside the benchmark loop
(--toggle-collect=cs_run_bench, so MPI_Init and set-up do not dilute the
rates), for the channel and for Open MPI, and prints per rank the L1 data
and last-level (LL) data miss rates.  Simulated caches: numbers are
comparable between the two transports, not a hardware measurement.

    .venv/bin/python bench/chan_cache.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.measure import build, discovery, mpi, provenance

RUNS = (("latency", "8", "2000"), ("bw", "64K", "20"))


def parse(path: Path) -> dict[str, int]:
    events: list[str] = []
    totals: list[int] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(x) for x in line.split()[1:]]
    return dict(zip(events, totals, strict=False))


def main() -> int:
    if not shutil.which("valgrind"):
        sys.exit("chan_cache: valgrind is not installed (apt-get install valgrind)")
    impl = {m.name: m for m in discovery.discover()}.get("openmpi")
    if not impl:
        sys.exit("chan_cache: needs Debian's Open MPI to bootstrap and compare")
    core = build.build(impl)
    spec = mpi.LaunchSpec(np=2, cores=provenance.n_cores(), root=os.geteuid() == 0)
    print("transport  bench     size  rank   D refs      D1 miss%   LL miss%")
    with tempfile.TemporaryDirectory() as tmp:
        for transport in ("mpi", "chan"):
            for bench, size, samples in RUNS:
                out = Path(tmp) / f"{transport}-{bench}"
                out.mkdir()
                argv = mpi.launch_argv(impl, spec, "valgrind", [
                    "--tool=callgrind", "--cache-sim=yes", "--toggle-collect=cs_run_bench",
                    f"--callgrind-out-file={out}/cg.%p", str(core.exe),
                    "--transport", transport, "--bench", bench, "--sizes", size,
                    "--min-samples", samples, "--max-samples", samples, "--min-time", "0",
                    "--warmup", "10", "--warmup-time", "0", "--time-cap", "60",
                    "--output", os.devnull])
                p = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                                   check=False)
                if p.returncode != 0:
                    sys.exit(f"chan_cache: {transport} {bench} failed:\n{p.stderr[-1500:]}")
                for rank, f in enumerate(sorted(out.glob("cg.*"))):
                    e = parse(f)
                    refs = e.get("Dr", 0) + e.get("Dw", 0)
                    d1 = e.get("D1mr", 0) + e.get("D1mw", 0)
                    ll = e.get("DLmr", 0) + e.get("DLmw", 0)
                    print(f"{transport:<10} {bench:<8} {size:>5}  {rank:>4}  {refs:>10}  "
                          f"{100 * d1 / max(refs, 1):9.3f}  {100 * ll / max(refs, 1):9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
