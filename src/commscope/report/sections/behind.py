"""What the page was made from: its points, records, runs and sweeps, said
once in its header."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...store.db import Store


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def _key(r: Mapping[str, object] | sqlite3.Row) -> tuple[object, ...]:
    """A point's key, as analysis/repeats.aggregate groups records."""
    cfg = r["config_key"] or r["mpi_name"]
    return (cfg, r["bench"], r["np"], r["size_bytes"])


def _measurement(r: Mapping[str, object] | sqlite3.Row) -> tuple[str, object]:
    """The measurement a record belongs to: its sweep, or its run alone."""
    return ("sweep", r["sweep_id"]) if r["sweep_id"] is not None else ("run", r["run_id"])


@dataclass(frozen=True)
class Behind:
    """What the page's points were made from, counted in the store: the
    records of the measurements (sweeps) behind them, those the points
    combine, and what else the store holds."""

    points: int
    reps: tuple[int, ...]  # how many repetitions the points combine (each count once)
    records: int  # the records of those measurements, before the machine mode's filter
    used: int  # those the points combine
    mode_dropped: int  # left out as measured in another machine mode
    run_ids: frozenset[int]
    sweeps: int
    outside: int  # runs of no sweep
    store_records: int
    store_runs: int
    again: int  # the store's records measured again at a common window, not shown
    noisy_left: int = 0  # in a point, but left out of its figure: a clean run exists

    def text(self) -> str:
        reps = self.reps
        if not self.points:  # a store of profiled programs alone
            return (f"No benchmark records ({self.store_records} in the store); the "
                    "programs profiled are below.")
        over = ("each from one run" if reps == (1,) else
                f"over {reps[0]} repetitions" if len(reps) == 1 else
                f"over {reps[0]} to {reps[-1]} repetitions")
        where = f" in {_n(self.sweeps, 'sweep')}" if self.sweeps else ""
        if self.sweeps and self.outside:
            where += f" and {self.outside} outside any sweep"
        out = (f"{_n(self.records, 'record')} from {_n(len(self.run_ids), 'run')}{where}, "
               f"combined into {_n(self.points, 'point')} (configuration × benchmark × size, "
               f"{over})")
        left = self.records - self.used
        if left and left == self.mode_dropped:
            out += f"; {left} of them, measured in another machine mode, are in no point"
        elif left:
            out += f"; {left} of the records are in no point"
        if self.noisy_left:
            out += (f"; {self.noisy_left} more, measured while other processes used the CPU, "
                    "are left out of their point's figure (a run measured without them "
                    "exists)")
        out += "."
        rest = self.store_records - self.records - self.again
        if self.store_records != self.records:
            parts = []
            if self.again:
                parts.append(f"{self.again} measured again at a common window (the newer "
                             "measurement is the one shown)")
            if rest > 0:
                parts.append(f"{rest} of other sweeps, configurations or benchmarks, not "
                             "shown here")
            out += (f" The store holds {_n(self.store_records, 'record')} from "
                    f"{_n(self.store_runs, 'run')}" + (": " + " and ".join(parts) if parts
                                                       else "") + ".")
        return out


def behind(store: Store, rows: Sequence[Mapping[str, object] | sqlite3.Row]) -> Behind:
    """The records and runs the points (rows: one per configuration,
    benchmark and size, over its repetitions) were made from, read from the
    store: the records the points combine, and the other records of the
    same points in the same measurements (those another machine mode left
    out)."""
    used: set[int] = set()
    for r in rows:
        ids = r["rep_ids"]
        if ids:  # a point over its repetitions
            used.update(int(i) for i in ids)  # type: ignore[union-attr]
        else:  # a record as stored
            used.add(int(r["id"]))  # type: ignore[call-overload]
    keys = {_key(r) for r in rows}
    stored = store.result_rows(latest=False, narrowed=True)
    meas: dict[tuple[object, ...], set[tuple[str, object]]] = {}
    for x in stored:
        if int(x["id"]) in used:
            meas.setdefault(_key(x)[:2], set()).add(_measurement(x))
    recs = [x for x in stored if int(x["id"]) in used or (
        x["narrowed_in"] is None and _key(x) in keys
        and _measurement(x) in meas.get(_key(x)[:2], ()))]
    runs = {int(x["run_id"]): x["sweep_id"] for x in recs}
    n_store, n_runs = store.counts()
    shown = {int(x["id"]) for x in recs}
    again = len(store.measured_again()[0] - shown)
    return Behind(
        points=len(rows),
        reps=tuple(sorted({int(r["n_reps"] or 1) for r in rows})),  # type: ignore[call-overload]
        records=len(recs), used=len(used & shown),
        mode_dropped=max((int(r["mode_dropped"]) for r in rows  # type: ignore[call-overload]
                          if r["mode_dropped"]), default=0),
        run_ids=frozenset(runs), sweeps=len({s for s in runs.values() if s is not None}),
        outside=sum(1 for s in runs.values() if s is None),
        store_records=int(n_store), store_runs=int(n_runs), again=again,
        noisy_left=sum(int(r["n_reps"]) - int(r["n_used"]) for r in rows  # type: ignore[call-overload]
                       if r["n_reps"] is not None and r["n_used"] is not None))


