"""GPU buffers against host buffers, call by call, and whether ranks shared a
GPU."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ...analysis import findings
from ..figures import Grid
from ..page import Item, Page, Para, items, table
from .common import COLLECTIVES, Tick, slug
from .reference import (
    RATIO_HEAD,
    YLABEL,
    against_reference,
    buffer_of,
    by_how_much,
    impl_of,
    same_impl,
)


def gpu_impls(rows: Sequence[sqlite3.Row]) -> list[str]:
    """The implementations measured with a GPU path."""
    return sorted({impl_of(r) for r in rows if buffer_of(r) != "host"})


APP_BENCHES = ("gpu_matmul", "gpu_jacobi")


def gpu_sharing(store, run_ids: set[int]) -> dict[str, int]:
    """Of the GPU applications' runs of more than one rank: how many put more
    ranks on a node than it has GPUs ("shared"), how many did not ("own"),
    and how many recorded neither (stored before the core said: "unknown")."""
    out = {"shared": 0, "own": 0, "unknown": 0}
    for r in store.runs():
        if r["id"] not in run_ids or r["bench"] not in APP_BENCHES or int(r["np"]) < 2:
            continue
        try:
            path = (json.loads(r["header"] or "{}").get("path") or {})
        except ValueError:
            path = {}
        if path.get("path") == "host":
            continue
        gpus, here = path.get("gpus"), path.get("ranks_on_node")
        out["unknown" if not gpus or not here else "shared" if here > gpus else "own"] += 1
    return out


SHARED_NOTE = ("Ranks shared one GPU in {n} of the applications' runs: their compute phases "
               "and weak scaling measure how the device is shared, not scaling (on an H200, "
               "gpu_jacobi's t(1)/t(2) was 0.11-0.14 without MPS and 0.51-0.54 with it in "
               "three leases; docs/gpu.md).")
UNKNOWN_NOTE = ("Whether the ranks of {n} of the applications' runs shared a GPU was not "
                "recorded (the core says so since 2026-11-27): where they did, compute and weak "
                "scaling measure how the device is shared, not scaling (docs/gpu.md).")


def gpu(page: Page, rows: Sequence[sqlite3.Row], found: Sequence[findings.Finding],
        tick: Tick, sharing: dict[str, int] | None = None) -> list[Item]:
    """The GPU users' paths side by side (the IIT Bombay study's figure 5:
    CUDA-aware against staged): for each implementation, a panel per
    benchmark with one line per path, host memory as the reference; then
    which path beats which over which sizes, from the separated findings."""
    out: list[Item] = []
    for impl in gpu_impls(rows):
        mine = [r for r in rows if impl_of(r) == impl]
        benches = [b for b in (*YLABEL, *COLLECTIVES)
                   if any(r["bench"] == b and buffer_of(r) != "host" for r in mine)]
        panels = against_reference(mine, benches, impl, "fig-gpu")
        # time and bandwidth panels side by side: each its own y axis
        out += items(page.grid(Grid(f"fig-gpu-{slug(impl)}", f"{impl}: every buffer path",
                                    panels, sharey=False),
                               f"{impl}: one line per path (host memory the reference), a "
                               "panel per benchmark; bands the 95% interval between runs."))
        tick(f"gpu {impl}")
    if not out:
        return []
    if sharing and sharing.get("shared"):
        out.append(Para(SHARED_NOTE.format(n=sharing["shared"])))
    if sharing and sharing.get("unknown"):
        out.append(Para(UNKNOWN_NOTE.format(n=sharing["unknown"])))
    pairs = [(w.implementation, ", ".join(f.benches or (f.bench,)), w.buffer, lo.buffer,
              *by_how_much(f)) for f, w, lo in same_impl(found) if w.buffer != lo.buffer]
    out.append(table(("implementation", "benchmark", "faster path", "than", *RATIO_HEAD), pairs)
               if pairs else
               Para("No path is told apart from another by the between-run statistics."))
    return out
