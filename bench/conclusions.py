#!/usr/bin/env python3
"""What commscope concludes from the default characterization, and whether
its comparisons hold, in one run on an idle machine.

Prints:
 (1) the conclusions of the default characterization (every point-to-point
     benchmark and collective with its hand-written equivalent, both Debian
     MPIs, 2 ranks, --repeat 3), each with its cause and, where the cause is
     a setting, the fix's effect as the advise step measured it;
 (2) the time the advise step added to that run;
 (3) the share of sizes `compare` calls different for two sweeps of
     identical configurations run back to back: with --repeat 3, and with
     single runs (target: 0.05 or less, both);
 (4) the number of findings and of conclusions.

    .venv/bin/python bench/conclusions.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "commscope.cli"]
DEFAULT = ["--bench", "p2p,coll,coll-sends", "--np", "2", "--mpi", "openmpi,mpich"]


def run(args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([*CLI, *args], capture_output=True, text=True, check=False)
    if check and p.returncode not in (0, 1):
        sys.exit(f"commscope {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def sweep_ids(db: Path) -> list[int]:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT id FROM sweeps WHERE purpose IS NULL "
                                          "ORDER BY id")]
    finally:
        con.close()


def false_alarms(db: Path, a: int, b: int) -> tuple[int, int, str]:
    """(sizes called different, sizes compared, the rule compare used)."""
    p = run(["compare", "--db", str(db), "--a", f"sweep={a}", "--b", f"sweep={b}",
             "--format", "json"], check=False)
    if p.returncode not in (0, 1):
        return 0, 0, f"refused: {p.stderr.strip()}"
    doc = json.loads(p.stdout)
    # pairs measured in different host modes are not compared at all
    rows = [r for r in doc["rows"] if r["verdict"] != "no claim"]
    called = sum(1 for r in rows if r["verdict"] != "same")
    rules = sorted({str(r.get("rule", "")) for r in rows})
    return called, len(rows), ", ".join(rules)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="a folder to keep the stores in (default: a new one in /tmp)")
    a = ap.parse_args()
    tmp = Path(a.keep or tempfile.mkdtemp(prefix="bench-conclusions-"))
    tmp.mkdir(parents=True, exist_ok=True)
    db = tmp / "default.db"

    t0 = time.monotonic()
    p = run(["run", "--db", str(db), *DEFAULT, "--repeat", "3"])
    wall = time.monotonic() - t0
    m = re.search(r"advise: (\d+) cause\(s\) measured in ([\d.]+) s", p.stdout)
    advise_s = float(m.group(2)) if m else 0.0
    found = run(["analyze", "findings", "--db", str(db), "--limit", "0"]).stdout
    head, _, rest = found.partition("Every finding")
    print("(1) the default characterization's conclusions (both Debian MPIs, 2 ranks, "
          "--repeat 3):")
    print("    " + head.strip().replace("\n", "\n    "))
    verdicts = [x for x in p.stdout.splitlines()
                if re.match(r"advise: .*: (verified|mixed|no-gain|broken|skipped)", x)]
    print(f"\n(2) the advise step: {advise_s:.1f} s of the run's {wall:.0f} s "
          f"({len(verdicts)} cause(s))")
    for line in verdicts:
        print(f"    {line}")

    # a second characterization, the same configurations, for compare
    run(["run", "--db", str(db), *DEFAULT, "--repeat", "3", "--no-advise", "--quiet"])
    single = tmp / "single.db"
    for _ in range(2):
        run(["run", "--db", str(single), *DEFAULT, "--no-advise", "--quiet"])
    print("\n(3) compare, two sweeps of identical configurations back to back "
          "(share of sizes called different; target <= 0.05):")
    for label, store in (("--repeat 3", db), ("single runs", single)):
        ids = sweep_ids(store)
        called, n, rule = false_alarms(store, ids[-2], ids[-1])
        share = (f"{called / n:.3f} ({called} of {n} compared in one host mode)" if n
                 else "- (no pair measured in one host mode: run again)")
        print(f"    {label:<12} {share}  [{rule}]")

    n_find = len(re.findall(r"^\s+\d+\. \[", rest, re.M))
    n_conc = len(re.findall(r"^\s+\d+\. ", head, re.M))
    print(f"\n(4) findings: {n_find}; conclusions on the first screen: {n_conc}")
    print(f"\nstores in {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
