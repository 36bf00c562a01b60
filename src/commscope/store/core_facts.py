"""What the core says about its benchmarks and options: the one source of
those facts on the Python side.

core_benches.json, core_options.json and core_facts.json are copies of
`cs-core --list --json` (its benchmarks, its option table with the values
an option of a few words takes, and its exit statuses);
tests/unit/store/test_core_facts.py holds them against the core built without
MPI, tests/e2e/test_core.py every core built with one to that core.  Analysis
and report ask here which group a benchmark is in, which figure it plots,
which unit its table shows, how many bytes one operation moves and which
options change what it measures, instead of keeping lists of benchmark names
of their own."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_HERE = Path(__file__).parents[1]
TYPES = {"str": str, "int": int, "float": float, "flag": bool}  # an option's type


@dataclass(frozen=True)
class Bench:
    name: str
    group: str  # p2p | loggp | coll | coll-sends | apps ...; '' where unknown
    min_np: int
    primary: str  # the record's figure a table shows: median_us | mb_per_s | rate_per_s
    figure: str  # how a figure plots it: time | bandwidth | rate
    unit: str  # of the primary figure
    # bytes one operation moves, factors joined by "*" (a number, "np" or
    # "size"): mb_per_s = their product / median_us; None: it moves none we count
    bytes_per_op: str | None
    changed_by: tuple[str, ...]  # option fields that change what it measures
    sizeless: bool = False  # no message at all (barrier)
    known: bool = True  # False: the fallback for a benchmark the table does not know

    def per_size(self, np_: int = 2) -> float | None:
        """Bytes one operation moves per byte of message size at np_
        processes (bw 1, bibw 2, gather np); None where it moves none."""
        if self.bytes_per_op is None:
            return None
        k = 1.0
        for f in self.bytes_per_op.split("*"):
            f = f.strip()
            if f == "size":
                continue
            k *= float(np_) if f == "np" else float(f)
        return k


@cache
def _benches() -> dict[str, Bench]:
    data = json.loads((_HERE / "core_benches.json").read_text())
    return {str(b["name"]): Bench(str(b["name"]), str(b["group"]), int(b["min_np"]),
                                  str(b["primary"]), str(b["figure"]), str(b["unit"]),
                                  b["bytes_per_op"], tuple(b["changed_by"]),
                                  bool(b.get("sizeless")))
            for b in data}


def listing() -> str:
    """Every benchmark the core has, by group, with the figure it reports
    and what it times (`commscope run --bench list`)."""
    data = json.loads((_HERE / "core_benches.json").read_text())
    w = max(len(str(b["name"])) for b in data)
    out: list[str] = []
    for g in dict.fromkeys(str(b["group"]) for b in data):
        out.append(f"{g}:")
        for b in (x for x in data if x["group"] == g):
            gpu = ", GPU only" if b.get("gpu_only") else ""
            out.append(f"  {str(b['name']):<{w}}  {b['desc']} [{b['unit']}{gpu}]")
    groups = ", ".join(dict.fromkeys(str(b["group"]) for b in data))
    out.append(f"--bench takes names or groups ({groups}, all), comma-separated")
    return "\n".join(out) + "\n"


def bench(name: str) -> Bench:
    """The core's facts about a benchmark.  A benchmark the table does not
    know (a store written by an older or newer core, an application of
    another build) falls back on what every record has: a time (median_us,
    in us), in no group, moving no bytes we can count, and changed by no
    option the table names; so no finding or figure takes it for a
    bandwidth, a point-to-point benchmark or a LogGP input, and which
    parameters its label names the record itself says (config._applies)."""
    b = _benches().get(name)
    return b if b is not None else Bench(name, "", 1, "median_us", "time", "us", None, (),
                                         known=False)


def benches(group: str | None = None) -> tuple[Bench, ...]:
    """Every benchmark the core has (of one group), in the core's order."""
    return tuple(b for b in _benches().values() if group is None or b.group == group)


def names(group: str) -> tuple[str, ...]:
    return tuple(b.name for b in benches(group))


def unit_of(primary: str) -> str:
    """The unit of a primary figure (mb_per_s: MB/s), as the core's table
    gives it; the figure's own name where no benchmark has it."""
    return next((b.unit for b in benches() if b.primary == primary), primary)


# -- options -----------------------------------------------------------------------
@cache
def options() -> tuple[dict[str, object], ...]:
    """The core's option table, in its order."""
    return tuple(json.loads((_HERE / "core_options.json").read_text()))


def option(field: str) -> dict[str, object]:
    return next(o for o in options() if o["field"] == field)


def choices(field: str) -> tuple[str, ...]:
    """The values an option of a few words takes (--path: host, staged ...),
    in the core's order."""
    return tuple(str(x) for x in option(field)["choices"])  # type: ignore[union-attr]


@cache
def fields() -> tuple[dict[str, str], ...]:
    """The fields of a result line as the core declares them
    (core/harness/fields.h), in the order it writes them."""
    return tuple(json.loads((_HERE / "core_facts.json").read_text())["fields"])


@cache
def statuses() -> dict[str, int]:
    """The core's exit statuses by name (ok 0, usage 2, invalid 3, skip 7 ...)."""
    return {str(k): int(v) for k, v in
            json.loads((_HERE / "core_facts.json").read_text())["statuses"].items()}


def default(field: str) -> object:
    """An option's default, typed as the option is (loggp_delay_us 20.0)."""
    o = option(field)
    return TYPES[str(o["type"])](o["default"])


def defaults(fields: Iterable[str]) -> dict[str, object]:
    return {f: default(f) for f in fields}


def changing_options() -> frozenset[str]:
    """Every option field that changes what some benchmark measures."""
    return frozenset(f for b in benches() for f in b.changed_by)
