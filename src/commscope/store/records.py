"""Parsing the core's JSON Lines into typed records."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(frozen=True)
class Result:
    bench: str
    size_bytes: int
    np: int
    valid: bool
    n_samples: int
    batch: int
    n_iters: int
    median_us: float | None
    mean_us: float | None
    min_us: float | None
    max_us: float | None
    p5_us: float | None
    p95_us: float | None
    ci_lo_us: float | None
    ci_hi_us: float | None
    ci_us: float | None
    mb_per_s: float | None
    rate_per_s: float | None
    converged: bool
    stop: str
    error: str | None = None
    other_cpu_s: float | None = None
    steal_s: float | None = None
    wall_s: float | None = None
    noise_valid: bool = False
    raw_us: tuple[float, ...] | None = None
    busbw_mb_per_s: float | None = None
    mean_rank_avg_us: float | None = None
    root: int | None = None
    equiv_sends: int | None = None
    equiv_of: str | None = None
    floor_ns: float | None = None  # cache-line floor just before this record's samples
    resolution_us: float | None = None  # what the clock resolves of one op's time
    validations: int | None = None  # untimed validation runs
    checked_msgs: int | None = None  # messages checked in them
    window: int | None = None  # bw, bibw: the window this size ran (narrowed on slow links)
    primary: str | None = None  # the figure a table shows (median_us, mb_per_s, rate_per_s)
    size_param: str | None = None  # applications: what size_bytes is (matmul: N)
    params: str | None = None  # applications: every parameter's value, K=V;K=V
    phases: dict[str, dict[str, object]] | None = field(default=None, hash=False)
    copy_gbs: float | None = None  # applications: each rank's copy, all copying (bytes/ns)
    copy1_gbs: float | None = None  # the same, rank 0 copying alone (a root's copies)


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
                  cpus=tuple(str(c) for c in d.get("cpus") or ()))  # type: ignore[attr-defined]


def parse_result(d: dict[str, object]) -> Result:
    noise = d.get("noise") or {}
    assert isinstance(noise, dict)
    raw = d.get("raw_us")
    return Result(
        bench=str(d["bench"]), size_bytes=int(d["size_bytes"]), np=int(d["np"]),  # type: ignore[arg-type]
        valid=bool(d["valid"]), n_samples=int(d["n_samples"]),  # type: ignore[arg-type]
        batch=int(d["batch"]), n_iters=int(d["n_iters"]),  # type: ignore[arg-type]
        **{k: _num(d.get(k)) for k in RESULT_FIELDS},  # type: ignore[arg-type]
        converged=bool(d.get("converged", False)), stop=str(d.get("stop", "")),
        error=d.get("error") if isinstance(d.get("error"), str) else None,  # type: ignore[arg-type]
        other_cpu_s=_num(noise.get("other_cpu_s")), steal_s=_num(noise.get("steal_s")),
        wall_s=_num(noise.get("wall_s")), noise_valid=bool(noise.get("valid", False)),
        raw_us=tuple(float(x) for x in raw) if isinstance(raw, list) else None,
        root=int(d["root"]) if d.get("root") is not None else None,  # type: ignore[arg-type]
        equiv_sends=int(d["equiv_sends"]) if d.get("equiv_sends") is not None else None,  # type: ignore[arg-type]
        equiv_of=str(d["equiv_of"]) if d.get("equiv_of") else None,
        floor_ns=_num(d.get("floor_ns")), resolution_us=_num(d.get("resolution_us")),
        validations=_int(d.get("validations")), checked_msgs=_int(d.get("checked_msgs")),
        window=_int(d.get("window")),
        primary=str(d["primary"]) if d.get("primary") in RESULT_FIELDS else None,
        size_param=str(d["size_param"]) if d.get("size_param") else None,
        params=str(d["params"]) if d.get("params") else None,
        phases=dict(d["phases"]) if isinstance(d.get("phases"), dict) else None,  # type: ignore[arg-type]
        copy_gbs=_num(d.get("copy_gbs")),
        copy1_gbs=_num(d.get("copy1_gbs")),
    )


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
