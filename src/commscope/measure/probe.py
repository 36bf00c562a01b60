"""The machine probe: what this machine allows before any MPI adds its cost
(core/probe/probe.c, no MPI), built once into the cache, run bounded, its
JSON checked and stored.  `commscope probe` runs it alone; every sweep runs
it once at its start and stores it with the sweep."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import CommscopeError
from ..store.sizes import human_bytes
from .build import core_dir
from .build_cache import cache_dir
from .procs import run_captured

CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]
TIMEOUT_S = 120.0


def source() -> Path:
    return core_dir() / "probe" / "probe.c"


def header() -> Path:
    """The cache sizes' reader, shared with the core."""
    return core_dir() / "harness" / "cache.h"


def build(force: bool = False) -> Path:
    """The probe's binary, built with the system's C compiler."""
    src = source()
    key = hashlib.sha256(src.read_bytes() + header().read_bytes()
                         + " ".join(CFLAGS).encode()).hexdigest()[:16]
    out = cache_dir() / "probe" / key / "cs-probe"
    if out.exists() and not force:
        return out
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise CommscopeError("commscope probe: no C compiler (cc) found")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="cs-probe.", dir=out.parent)
    os.close(fd)
    p = subprocess.run([cc, *CFLAGS, str(src), "-o", tmp], capture_output=True, text=True,
                       timeout=120, check=False)
    if p.returncode != 0:
        os.unlink(tmp)
        raise CommscopeError(f"building the probe failed:\n{(p.stderr or p.stdout).strip()}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    return out


def run(cpus: str | None = None, pair_ms: float | None = None,
        mem_mib: float | None = None) -> dict[str, object]:
    """Run the probe on this machine; its figures as a dict."""
    argv = [str(build())]
    if cpus:
        argv += ["--cpus", cpus]
    if pair_ms is not None:
        argv += ["--pair-ms", repr(pair_ms)]
    if mem_mib is not None:
        argv += ["--mem-mib", repr(mem_mib)]
    got = run_captured(argv, timeout_s=TIMEOUT_S, env=dict(os.environ))
    out, text, err = got.outcome, got.out, got.err.strip()
    if out.timed_out:
        raise CommscopeError(f"the probe did not finish within {TIMEOUT_S:.0f}s: killed")
    if out.exit_code != 0:
        raise CommscopeError(err or f"the probe failed (exit {out.exit_code}, "
                                    f"signal {out.signal})")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommscopeError(f"the probe wrote no valid JSON: {exc}") from exc
    return data


def l3_bytes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int | None:
    """This machine's level-3 cache, as the probe reads it (sysfs; None
    where there is none): what `run --for` plans with before any probe
    has run."""
    for idx in sorted(root.glob("index*")):
        try:
            if (idx / "level").read_text().strip() != "3":
                continue
            text = (idx / "size").read_text().strip()
        except OSError:
            continue
        unit = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit() and int(digits) > 0:
            return int(digits) * unit
    return None


def floor_ns(data: Mapping[str, object]) -> float | None:
    """The one-way cache-line time between the first two cores the probe
    ran on: where a 2-rank job on this machine puts its ranks (bound to
    cores in order), so the floor under its intra-node latency."""
    cpus = data.get("cpus") or []
    if len(cpus) < 2:  # type: ignore[arg-type]
        return None
    pair = {cpus[0], cpus[1]}  # type: ignore[index]
    return next((float(p["one_way_ns"]) for p in data.get("core_to_core", []) or []  # type: ignore[union-attr]
                 if isinstance(p, dict) and {p["a"], p["b"]} == pair
                 and p.get("one_way_ns") is not None), None)


def _b(n: object) -> str:
    return human_bytes(int(n)) if isinstance(n, (int, float)) and n > 0 else "?"  # type: ignore[arg-type]


def text(data: Mapping[str, object]) -> str:
    """The probe as a person reads it."""
    out = []
    pairs = [p for p in data.get("core_to_core", []) or [] if isinstance(p, dict)]  # type: ignore[union-attr]
    if len(pairs) == 1:
        p = pairs[0]
        v = p.get("one_way_ns")
        out.append(f"core to core     cpu {p['a']} <-> cpu {p['b']}: "
                   + (f"{v:.0f} ns one way (one cache line, median)" if v is not None
                      else f"not measured ({p.get('error')})"))
    elif pairs:
        cpus = sorted({int(p["a"]) for p in pairs} | {int(p["b"]) for p in pairs})
        cell = {(int(p["a"]), int(p["b"])): p.get("one_way_ns") for p in pairs}
        out.append("core to core     one way, ns (one cache line, median)")
        out.append("        " + "".join(f"{c:>6}" for c in cpus))
        for x in cpus:
            row = []
            for y in cpus:
                v = cell.get((min(x, y), max(x, y)))
                row.append("     -" if x == y else (f"{v:6.0f}" if v is not None else "     ?"))
            out.append(f"  {x:>5} " + "".join(row))
    for c in data.get("copy", []) or []:  # type: ignore[union-attr]
        g = c.get("gbs")
        out.append(f"copy, one core   {_b(c.get('bytes')):>9} ({c.get('where')}): "
                   + (f"{g:.1f} GB/s (read + written)" if g is not None
                      else f"not measured ({c.get('error')})"))
    cma = data.get("process_vm_readv") or {}
    if isinstance(cma, dict):
        if cma.get("call_8b_ns") is not None:
            out.append(f"process_vm_readv 8 B call {cma['call_8b_ns']:.0f} ns, 4 MiB at "
                       f"{cma['gbs_4mib']:.1f} GB/s (the single-copy path within a node)")
        else:
            out.append(f"process_vm_readv unavailable: {cma.get('error')} (MPI falls back to "
                       f"copies through shared memory)")
    out.append(f"pages            {_b(data.get('page_bytes'))}; transparent huge pages: "
               f"{data.get('thp') or 'unknown'}")
    numa = data.get("numa") or []
    out.append("NUMA             " + ("; ".join(f"node {n['node']}: cpus {n['cpus']}"
                                                for n in numa) if numa else "no NUMA nodes listed"))  # type: ignore[union-attr]
    clk = data.get("clock") or {}
    if isinstance(clk, dict) and clk:
        out.append(f"clock            resolution {clk.get('resolution_ns')} ns, observed step "
                   f"{clk.get('step_ns')} ns, one read {clk.get('read_ns')} ns")
    return "\n".join(out) + "\n"
