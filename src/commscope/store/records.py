"""Parsing the core's JSON Lines into typed records."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any

from ..errors import CommscopeError
from . import core_facts

SCHEMA_VERSION = 2


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


# What a field of each kind holds in Python.
KIND_TYPES: dict[str, object] = {
    "str": str, "text": str | None, "opt_str": str | None, "primary": str | None, "int": int,
    "opt_int": int | None, "num": float | None, "bool": bool,
    "raw": tuple[float, ...] | None, "json": dict[str, dict[str, object]] | None}
KIND_DEFAULTS: dict[str, object] = {"str": "", "bool": False}  # others: None


def _field(d: dict[str, str]) -> tuple[str, object, Any]:
    """A Result field from the core's declaration of it (core/harness/fields.h:
    name, key, kind and how the store takes it), as make_dataclass takes it:
    the declaration is the field's metadata (`key`, a dotted path into the
    result line; `column`, its store column, False where it is not stored;
    `required`; `combined`, "time" or "rate" where a point's runs combine it
    by their median)."""
    words = dict(w.partition("=")[::2] for w in d["how"].split())
    column = words.get("column")
    meta = {"kind": d["kind"], "key": d["key"] if d["key"] != d["name"] else None,
            "column": False if column == "-" else column,
            "required": "required" in words,
            "combined": next((w for w in ("time", "rate") if w in words), None)}
    kw: dict[str, object] = {"metadata": meta}
    if not meta["required"]:
        kw["default"] = KIND_DEFAULTS.get(d["kind"])
    if d["kind"] == "json":
        kw["hash"] = False
    return d["name"], KIND_TYPES[d["kind"]], field(**kw)  # type: ignore[call-overload]


# A result line, typed: one field per field the core writes, declared once
# in core/harness/fields.h.  Parsing, the store's INSERT, the store's
# columns (Store adds a declared one it lacks), the raw export's columns and
# the aggregation all read these fields and their metadata.
Result = make_dataclass("Result", [_field(d) for d in core_facts.fields()], frozen=True,
                        kw_only=True)
Result.__module__ = __name__  # pickled by this name (make_dataclass takes module= from 3.12)
# the figures a record's primary may name: its numbers
RESULT_FIELDS = tuple(f.name for f in fields(Result) if f.metadata["kind"] == "num")


# What a result line carries besides its fields: the line's kind.  A key
# the core writes that is neither is a field it forgot to declare
# (tests/e2e/test_core.py).
NOT_STORED = frozenset({"type"})


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
