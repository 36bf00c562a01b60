"""A point: one configuration's figure at one benchmark, process count and
size, combined over its runs (analysis/repeats.aggregate), as analysis and
the report read it.

Its fields are the stored record's, every one of them (store/db.row_keys:
the record's declared fields, core/harness/fields.h, with its run's and the
store's marks), and what combining the runs adds (AGGREGATED, declared
here once).  Every field is always there, None where it does not apply, so
a reader asks for a value, never whether a key exists.  A point is frozen:
an analysis derives what it needs, it does not write into what it read.

A reader indexes it by name (`p["median_us"]`), as it indexed the store's
rows, or by attribute.  (A series, analysis/series.py, holds less of it per
size: its figure and interval, series.Point.)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields, make_dataclass
from typing import Any

from ..store.db import RUN_FIELDS, STORE_MARKS, row_keys
from ..store.records import column_type, stored_columns

# What combining a point's runs adds to the record it was built from: name,
# type, what it holds.
AGGREGATED: tuple[tuple[str, object, str], ...] = (
    ("n_reps", int, "runs of the point"),
    ("n_used", int, "of them, those the figure combines (a noisy run left out where a clean "
                    "one exists)"),
    ("far_reps", int, "runs left out as taken far from the others' core-to-core floor"),
    ("windows", tuple, "the windows the used runs were measured at, where narrowed"),
    ("noisy_reps", int, "valid runs taken while other processes used the CPU"),
    ("unconverged_reps", int, "used runs that stopped before their interval reached the "
                              "target"),
    ("rep_ids", tuple, "the records combined, by id"),
    ("floors_ns", tuple, "each run's core-to-core floor"),
    ("modes", tuple, "the machine modes its runs were taken in"),
    ("other_mode", bool, "measured only in another mode than the one kept"),
    ("mode_dropped", int, "records of the whole set left out as taken in another mode"),
    ("within_ci_us", float, "the used runs' median own interval"),
    ("rep_medians_us", tuple, "each used run's median"),
    ("spread", float, "the between-run spread"),
    ("next_lo_us", float, "where a next run's figure is expected: low end"),
    ("next_hi_us", float, "... and high end"),
    ("next_pooled", bool, "that interval pooled from the configuration's neighbouring sizes"),
    ("other_state_us", tuple, "figures of its runs taken in another state of the host"),
)
_SQL = {"REAL": float, "INTEGER": int, "TEXT": str}
_RUN_TYPES = {"nodes": int, "repetition": int, "sweep_id": int, "oversubscribed": int}


def _store_fields() -> list[tuple[str, object, Any]]:
    kinds = {c: column_type(kind) for _, c, kind in stored_columns()}
    run = dict(RUN_FIELDS)
    out = []
    for k in row_keys():
        if k in kinds:
            t: object = _SQL[kinds[k]] | None
        elif k in ("id", "run_id"):
            t = int
        elif k in run:
            t = _RUN_TYPES.get(k, str) | None
        else:  # the store's marks
            assert k in STORE_MARKS, k
            t = int | None
        out.append((k, t, field(default=None)))
    return out


def _getitem(self: object, k: str) -> object:
    try:
        return getattr(self, k)
    except AttributeError:
        raise KeyError(k) from None


def _contains(self: object, k: object) -> bool:
    raise TypeError(f"a point holds every field ({k!r} among them, None where it does not "
                    "apply): ask for its value, not whether it has it")


Point = make_dataclass(
    "Point", [*_store_fields(), *((n, t | None, field(default=None))  # type: ignore[operator]
                                  for n, t, _ in AGGREGATED)],
    frozen=True, kw_only=True, namespace={"__getitem__": _getitem,
                                                        "__contains__": _contains})
Point.__module__ = __name__
Point.__doc__ = __doc__.split("\n\n")[0]
NAMES = frozenset(f.name for f in fields(Point))
AGGREGATED_NAMES = tuple(n for n, _, _ in AGGREGATED)


def point(d: Mapping[str, object]) -> Any:
    """A point from what aggregation made of a record (every key a field:
    a key no field declares is an error here, not a value lost)."""
    extra = set(d.keys()) - NAMES
    if extra:
        raise TypeError(f"a point has no field {sorted(extra)}: declare it in AGGREGATED")
    return Point(**d)
