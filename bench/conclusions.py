#!/usr/bin/env python3
"""Do the conclusions hold?  Measured on an idle machine, in one go:

1. two default runs (`make run`'s sweep and its diagnosis) into one fresh
   store: each first screen in full, how much of it the other run shares
   (each line's calls, implementations and causes), each conclusion's cause
   with the experiment that established it, and each run's time (the
   sweep, the diagnosis);
2. `compare --a sweep=1 --b sweep=2` on those two runs (an A/A comparison:
   nothing changed between them): the share of pairs it calls different;
3. interval coverage: four `--repeat 3` runs of latency at 8 B and 1 MiB
   under each implementation; for every ordered pair of runs, whether the
   first run's printed interval (where a next run's figure is expected)
   holds the second run's figure.

With --runs 3 (or more), each next run set against the one before it too:
the first run of a store has no earlier diagnosis to measure again, every
later one has (docs/diagnosis.md), so pair (1, 2) is the first run's and
(2, 3) what a user's runs after it are.

    bench/conclusions.py [--keep DIR] [--budget 70] [--runs 2] [--skip-coverage]
    bench/conclusions.py --judge DIR/coverage.db   (a kept store, judged again)
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from commscope import cli
from commscope.analysis import compare as cmp
from commscope.analysis import conclude
from commscope.analysis import diagnosis as dg
from commscope.analysis.repeats import aggregate
from commscope.analysis.significance import MIN_FACTOR
from commscope.cli.compare import sides
from commscope.errors import CommscopeError
from commscope.report.tables import figure_interval
from commscope.store.db import Store

SWEEP = ["--bench", "p2p,coll,coll-sends", "--repeat", "3"]  # make run's


def run(argv: list[str]) -> float:
    t0 = time.monotonic()
    rc = cli.main(argv)
    if rc not in (0, 1):
        sys.exit(f"conclusions: commscope {' '.join(argv)} exited {rc}")
    return time.monotonic() - t0


def screen(store: Store, sweep: int) -> tuple[dg.Diagnosis, list[conclude.Conclusion]]:
    d = dg.latest(store, [sweep])
    if d is None:
        sys.exit(f"conclusions: sweep {sweep} has no diagnosis")
    return d, conclude.conclusions(d)


def overlap(a: set, b: set) -> tuple[float, float]:
    """(shared / union, shared / the smaller): the first is the strict figure."""
    if not a and not b:
        return 1.0, 1.0
    return len(a & b) / len(a | b), len(a & b) / max(1, min(len(a), len(b)))


def coverage(db: Path, mpis: list[str]) -> tuple[int, int, int, int, list[str]]:
    """Four --repeat 3 runs of latency at 8 B and 1 MiB, then judged."""
    for _ in range(4):
        run(["run", "--db", str(db), "--bench", "latency", "--sizes", "8", "--repeat", "3",
             "--quiet", "--no-advise", "--no-probe", *sum((["--mpi", m] for m in mpis), [])])
        run(["run", "--db", str(db), "--bench", "latency", "--sizes", "1M", "--repeat", "3",
             "--quiet", "--no-advise", "--no-probe", *sum((["--mpi", m] for m in mpis), [])])
    return judge(db)


def judge(db: Path) -> tuple[int, int, int, int, list[str]]:
    """For each ordered pair of sweeps (i, j) of each point: does the
    interval `show` prints for run i (tables.figure_interval: where a next
    run's figure is expected) hold run j's figure?  Every ordered pair, and
    the forward ones (j after i: the next run proper) apart."""
    store = Store(db, create=False)  # a kept store, never a new one
    sweeps = [r[0] for r in store.db.execute("SELECT id FROM sweeps ORDER BY id")]
    figs: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    for s in sweeps:
        for r in aggregate(store.selection(f"sweep={s}"), mode="dominant"):
            rng = figure_interval(r, float(r["median_us"]))
            if rng is not None:
                figs.setdefault((str(r["mpi_name"]), int(r["size_bytes"])), []).append(
                    (float(r["median_us"]), *rng))
    held = total = fwd_held = fwd_total = 0
    lines = []
    for (m, size), xs in sorted(figs.items()):
        ok = [(i < j, lo <= x <= hi) for i, (_, lo, hi) in enumerate(xs)
              for j, (x, _, _) in enumerate(xs) if i != j]
        held += sum(h for _, h in ok)
        total += len(ok)
        fwd_held += sum(h for f, h in ok if f)
        fwd_total += sum(1 for f, _ in ok if f)
        lines.append(f"  {m:>8} {size:>8} B: {sum(h for _, h in ok)}/{len(ok)} held; figures "
                     + ", ".join(f"{x:.3f} [{lo:.3f}, {hi:.3f}]" for x, lo, hi in xs))
    return held, total, fwd_held, fwd_total, lines


def print_coverage(held: int, total: int, fwd_held: int, fwd_total: int,
                   lines: list[str]) -> None:
    print(f"interval coverage: {held} of {total} ordered pairs ({held / max(1, total):.0%}; "
          f"target: 80%); the next run (j after i): {fwd_held} of {fwd_total} "
          f"({fwd_held / max(1, fwd_total):.0%})")
    print("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="a folder for the stores (default: a temporary one)")
    ap.add_argument("--budget", default="70", help="--advise-budget of each run")
    ap.add_argument("--runs", type=int, default=2, help="default runs into the one store "
                    "(at least 2): each set against the one before it")
    ap.add_argument("--skip-coverage", action="store_true")
    ap.add_argument("--judge", metavar="DB", help="only judge the coverage of a kept "
                    "coverage.db (its sweeps as stored) under this code, measuring nothing")
    a = ap.parse_args()
    if a.judge:
        try:
            print_coverage(*judge(Path(a.judge)))
        except (CommscopeError, sqlite3.DatabaseError) as exc:
            sys.exit(f"conclusions: --judge {a.judge}: {exc}")
        return 0
    tmp = tempfile.TemporaryDirectory(prefix="commscope-conclusions-")
    where = Path(a.keep or tmp.name)
    where.mkdir(parents=True, exist_ok=True)
    db = where / "two.db"
    if db.exists():
        sys.exit(f"conclusions: {db} exists: give an empty --keep folder")
    if a.runs < 2:
        sys.exit("conclusions: --runs must be at least 2")
    times = [run(["run", "--db", str(db), *SWEEP, "--quiet", "--advise-budget", a.budget])
             for _ in range(a.runs)]
    store = Store(db)
    sweeps = [r[0] for r in store.db.execute(
        "SELECT id FROM sweeps WHERE purpose IS NULL ORDER BY id")]
    screens = [screen(store, s) for s in sweeps]
    for k, (d, cs) in enumerate(screens, 1):
        print(f"== run {k} (sweep {sweeps[k - 1]}): {times[k - 1]:.0f} s, the diagnosis "
              f"{d.spent_s:.0f} s of {d.budget_s:.0f} ({d.status}), "
              f"{len(d.rounds.run_ids)} runs in {d.rounds.last_round} rounds")
        print(conclude.text(d))
        for i, c in enumerate(cs, 1):
            # a line that groups gaps repeats what one setting did for each: once here
            for x in dict.fromkeys(y.strip() for y in c.details):
                if x.startswith(("the cause:", "measured:")):
                    print(f"  [{i}] {x}")
        print()
    ids_all = [conclude.identities(cs) for _, cs in screens]
    said_all = [conclude.named(cs) for _, cs in screens]
    for k in range(1, len(screens)):
        if len(screens) > 2:
            print(f"-- runs {k} and {k + 1}")
        ids, said = ids_all[k - 1:k + 1], said_all[k - 1:k + 1]
        strict, loose = overlap(*ids)
        print(f"first screens: {len(ids[0])} and {len(ids[1])} conclusions (call, slow, fast, "
              f"cause); shared {len(ids[0] & ids[1])}: {strict:.0%} of their union, {loose:.0%} "
              "of the smaller (target: 80%)")
        calls = [{x[:3] for x in i} for i in ids]
        c_strict, c_loose = overlap(*calls)
        print(f"  without the causes (call, slow, fast): {c_strict:.0%} of the union, "
              f"{c_loose:.0%} of the smaller")
        n_strict, n_loose = overlap(*said)
        print(f"  as the screens name them (each call a line names, with the setting or cause it "
              f"names, or that it says use, code or rule): {len(said[0])} and {len(said[1])}, "
              f"shared {len(said[0] & said[1])}: {n_strict:.0%} of the union, {n_loose:.0%} of the "
              "smaller")
        for x in sorted(said[0] ^ said[1]):
            print(f"    named only in run {k if x in said[0] else k + 1}: {' | '.join(x)}")
        for x in sorted(ids[0] ^ ids[1]):
            print(f"  only in run {k if x in ids[0] else k + 1}: {' | '.join(x)}")
    # as `commscope compare` pairs them: both sides from one machine mode
    comps = cmp.compare_rows(*sides(store.selection(f"sweep={sweeps[0]}"),
                                    store.selection(f"sweep={sweeps[1]}")), MIN_FACTOR)
    apart = [c for c in comps if c.verdict in ("slower", "faster")]
    unsaid = sum(1 for c in comps if c.verdict == "no claim")
    print(f"A/A: compare --a sweep={sweeps[0]} --b sweep={sweeps[1]}: {len(apart)} of "
          f"{len(comps)} pairs called different ({len(apart) / max(1, len(comps)):.1%}; "
          f"target: at most 5%); {unsaid} not compared (no claim: the sides' runs of that "
          "point were taken in different machine modes)")
    if not a.skip_coverage:
        mpis = sorted({str(r["mpi_name"]) for r in store.result_rows()})
        print_coverage(*coverage(where / "coverage.db", mpis))
    return 0


if __name__ == "__main__":
    sys.exit(main())
