"""Parsing the core's JSON Lines into typed records."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import CommscopeError

SCHEMA_VERSION = 2
RESULT_FIELDS = ("median_us", "mean_us", "min_us", "max_us", "p5_us", "p95_us", "ci_lo_us",
                 "ci_hi_us", "ci_us", "mb_per_s", "rate_per_s", "busbw_mb_per_s",
                 "mean_rank_avg_us")


@dataclass(frozen=True)
class Header:
    schema: int
    commscope_version: str
    mpi_library: str
    np: int
    hosts: tuple[str, ...]
    options: dict[str, object] = field(hash=False)
    argv: tuple[str, ...] = ()
    clock_read_ns: float | None = None
    clock_quantum_ns: float | None = None
    floor_ns: float | None = None  # cache-line floor at the job's start
    # control variables read back through MPI_T after MPI_Init (None: no such variable)
    cvars: dict[str, object] | None = field(default=None, hash=False)
    compiler: str = ""  # the C compiler the core was built with ("gcc 12.2.0")
    cpus: tuple[str, ...] = ()  # each rank's allowed CPUs ("0-3,6"): its binding
    # a GPU path's: the device, the library's CUDA support, ranks on rank 0's node and GPUs
    path: dict[str, object] | None = field(default=None, hash=False)


def col(kind: str, *, key: str | None = None, column: str | bool | None = None,
        required: bool = False, combined: str | None = None, **kw: object) -> Any:
    """A record's field, declared once: how the core writes it (`key`, a
    dotted path into the result line; the field's name by default), what it
    is (`kind`: str, int, num, bool, primary, raw, json), its column in the
    store's results table (the name by default; False: not stored), and how
    a point's runs combine it (`combined`: "time" or "rate", by their
    median; None: the point's median run's, or combined apart).  Parsing,
    the store's INSERT, the store's columns (Store adds a declared one it
    lacks), the raw export's columns and the aggregation all read this."""
    return field(metadata={"kind": kind, "key": key, "column": column, "required": required,
                           "combined": combined}, **kw)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Result:
    bench: str = col("str", required=True)
    size_bytes: int = col("int", required=True)
    np: int = col("int", required=True)
    valid: bool = col("bool", required=True)
    n_samples: int = col("int", required=True)
    batch: int = col("int", required=True)
    n_iters: int = col("int", required=True)
    median_us: float | None = col("num")
    mean_us: float | None = col("num", combined="time")
    min_us: float | None = col("num", combined="time")
    max_us: float | None = col("num", combined="time")
    p5_us: float | None = col("num", combined="time")
    p95_us: float | None = col("num", combined="time")
    ci_lo_us: float | None = col("num")
    ci_hi_us: float | None = col("num")
    ci_us: float | None = col("num")
    mb_per_s: float | None = col("num", combined="rate")
    rate_per_s: float | None = col("num", combined="rate")
    converged: bool = col("bool")
    stop: str = col("str")
    error: str | None = col("text", default=None)
    other_cpu_s: float | None = col("num", key="noise.other_cpu_s", default=None)
    steal_s: float | None = col("num", key="noise.steal_s", default=None)
    wall_s: float | None = col("num", key="noise.wall_s", default=None)
    noise_valid: bool = col("bool", key="noise.valid", column=False, default=False)
    raw_us: tuple[float, ...] | None = col("raw", default=None)
    busbw_mb_per_s: float | None = col("num", combined="rate", default=None)
    mean_rank_avg_us: float | None = col("num", combined="time", default=None)
    root: int | None = col("opt_int", default=None)
    equiv_sends: int | None = col("opt_int", default=None)
    equiv_of: str | None = col("opt_str", default=None)
    # cache-line floor just before this record's samples
    floor_ns: float | None = col("num", default=None)
    resolution_us: float | None = col("num", default=None)  # what the clock resolves of one op
    validations: int | None = col("opt_int", default=None)  # untimed validation runs
    checked_msgs: int | None = col("opt_int", default=None)  # messages checked in them
    # bw, bibw: the window this size ran (narrowed on slow links)
    window: int | None = col("opt_int", default=None)
    # the figure a table shows (median_us, mb_per_s, rate_per_s)
    primary: str | None = col("primary", column="primary_figure", default=None)
    size_param: str | None = col("opt_str", default=None)  # applications: what size_bytes is
    params: str | None = col("opt_str", default=None)  # applications: K=V;K=V of every parameter
    phases: dict[str, dict[str, object]] | None = col("json", default=None, hash=False)
    # applications: each rank's copy, all copying (bytes/ns)
    copy_gbs: float | None = col("num", combined="rate", default=None)
    # the same, rank 0 copying alone
    copy1_gbs: float | None = col("num", combined="rate", default=None)


# What a result line carries that is kept in the record file only, not in
# the store (held against what the core writes by tests/e2e/test_core.py): the
# line's kind, the benchmark's group, figure and timing (the core's table
# has them: core_benches.json), its operations per repetition, the time the
# size took, the cold pool's layout and the bytes the evicted runs streamed
# (the configuration says buffers=cold or buffers=evicted).
NOT_STORED = frozenset({"type", "group", "metric", "timing", "ops_per_rep", "elapsed_s",
                        "pool", "evicted"})


def stored_columns() -> list[tuple[str, str, str]]:
    """(field, column, kind) of every stored field of a Result."""
    return [(f.name, str(f.metadata["column"] or f.name), f.metadata["kind"])
            for f in fields(Result) if f.metadata["column"] is not False]


SQL_TYPES = {"num": "REAL", "int": "INTEGER", "opt_int": "INTEGER", "bool": "INTEGER"}  # else TEXT


def column_type(kind: str) -> str:
    """The SQL type of a field's column."""
    return SQL_TYPES.get(kind, "TEXT")


def combined(how: str) -> tuple[str, ...]:
    """The fields a point's runs combine by their median, as `how` says
    ("time" or "rate"), in the order they are declared."""
    return tuple(f.name for f in fields(Result) if f.metadata["combined"] == how)


def exported_columns() -> tuple[str, ...]:
    """The stored columns the raw export writes: every one but the samples
    and the phases (JSON of their own: `export --points` has the phases)."""
    return tuple(c for _, c, kind in stored_columns() if kind not in ("raw", "json"))


def flag_columns() -> tuple[str, ...]:
    """The stored columns that hold a yes or no."""
    return tuple(c for _, c, kind in stored_columns() if kind == "bool")


def core_keys() -> set[str]:
    """The top-level keys of a result line this parser reads."""
    return {(f.metadata["key"] or f.name).split(".")[0] for f in fields(Result)}


def sql_value(v: object, kind: str) -> object:
    """A field's value as its column holds it."""
    if v is None:
        return None
    if kind == "bool":
        return int(bool(v))
    if kind == "raw":
        return json.dumps(list(v))  # type: ignore[call-overload]
    if kind == "json":
        return json.dumps(v)
    return v


@dataclass
class Parsed:
    header: Header | None = None
    results: list[Result] = field(default_factory=list)
    footer: dict[str, object] | None = None
    bad_lines: int = 0


def _num(v: object) -> float | None:
    if v is None:
        return None
    f = float(v)  # type: ignore[arg-type]
    return f if math.isfinite(f) else None


def parse_header(d: dict[str, object]) -> Header:
    schema = int(d["schema"])  # type: ignore[arg-type]
    if schema > SCHEMA_VERSION:
        raise CommscopeError(f"core record schema {schema} is newer than this commscope "
                             f"understands ({SCHEMA_VERSION})")
    return Header(schema=schema, commscope_version=str(d.get("commscope_version", "")),
                  mpi_library=str(d.get("mpi_library", "")), np=int(d["np"]),  # type: ignore[arg-type]
                  hosts=tuple(d.get("hosts", ())),  # type: ignore[arg-type]
                  options=dict(d.get("options", {})),  # type: ignore[arg-type]
                  argv=tuple(d.get("argv", ())),  # type: ignore[arg-type]
                  clock_read_ns=_num(d.get("clock_overhead_ns")),
                  clock_quantum_ns=_num(d.get("clock_quantum_ns")),
                  floor_ns=_num(d.get("floor_ns")),
                  cvars=dict(d["cvars"]) if isinstance(d.get("cvars"), dict) else None,  # type: ignore[arg-type]
                  compiler=str(d.get("compiler") or ""),
                  cpus=tuple(str(c) for c in d.get("cpus") or ()),  # type: ignore[attr-defined]
                  path=dict(d["path"]) if isinstance(d.get("path"), dict) else None)  # type: ignore[arg-type]


def parse_result(d: dict[str, object]) -> Result:
    """A result line as its fields declare (col): a required field missing
    or of the wrong type makes the line bad (KeyError, TypeError,
    ValueError); any other takes None, or False for a flag."""
    values: dict[str, object] = {}
    for f in fields(Result):
        key = f.metadata["key"] or f.name
        v: object = d
        for part in key.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if v is None and f.metadata["required"]:
            raise KeyError(key)
        values[f.name] = _typed(v, f.metadata["kind"])
    return Result(**values)  # type: ignore[arg-type]


def _typed(v: object, kind: str) -> object:
    if kind == "str":
        return str(v) if v is not None else ""
    if kind == "int":
        return int(v)  # type: ignore[call-overload]
    if kind == "bool":
        return bool(v)
    if kind == "num":
        return _num(v)
    if kind == "opt_int":
        return _int(v)
    if kind == "opt_str":
        return str(v) if v else None
    if kind == "text":
        return v if isinstance(v, str) else None
    if kind == "primary":
        return str(v) if v in RESULT_FIELDS else None
    if kind == "raw":
        return tuple(float(x) for x in v) if isinstance(v, list) else None
    if kind == "json":
        return dict(v) if isinstance(v, dict) else None
    raise ValueError(f"unknown field kind {kind}")


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, int | float) else None


def parse_lines(lines: list[str]) -> Parsed:
    """Parse what a (possibly interrupted) core wrote: a truncated last line
    is counted as bad and skipped; everything complete is kept."""
    out = Parsed()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            d = json.loads(line)
            kind = d.get("type")
            if kind == "header":
                out.header = parse_header(d)
            elif kind == "result":
                out.results.append(parse_result(d))
            elif kind == "footer":
                out.footer = d
            else:
                out.bad_lines += 1
        except (ValueError, KeyError, TypeError, AttributeError):
            out.bad_lines += 1
    return out


def parse_file(path: Path) -> Parsed:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return Parsed()
    return parse_lines(text.splitlines())
