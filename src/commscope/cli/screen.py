"""The first screen: what `run` ends with (the headline figures against the
machine's limits, then what the diagnosis established, each conclusion in
two lines at most), and what `analyze findings --brief` prints again from
the store, so that the two cannot drift apart."""

from __future__ import annotations

import json
import shutil
import sys

from ..analysis import conclude, limits
from ..analysis.diagnosis import Diagnosis
from ..measure import probe as probe_mod
from ..store.db import Store

MORE = "  (each whole, with what established it: commscope analyze findings --details)"


def width() -> int:
    """The terminal's width; 100 under a pipe (and never under 60)."""
    return max(shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100, 60)


def headline(store: Store, agg: list) -> str:
    """The headline table of these aggregated records against the probe of
    their machine, or where there is none, the probe's own lines."""
    ids = sorted({int(r["run_id"]) for r in agg})
    prow = store.probe_for(ids) if ids else None
    probe = json.loads(prow["data"]) if prow is not None else None
    head = limits.headline(agg, probe, probe_mod.floor_ns(probe) if probe else None)
    if head is not None:
        return limits.text(head)
    return "".join(f"{line}\n" for line in beside(store, agg))


def beside(store: Store, rows: list) -> list[str]:
    """Each implementation's smallest-message latency against the floor
    (analysis/limits.beside_latency), with the probe of these records."""
    ids = sorted({int(r["run_id"]) for r in rows})
    prow = store.probe_for(ids) if ids else None
    probe = json.loads(prow["data"]) if prow is not None else None
    if probe is None:
        return []
    return limits.beside_latency(rows, probe_mod.floor_ns(probe))


def conclusions(d: Diagnosis, cols: int) -> str:
    """What the diagnosis established, for a person at a terminal of `cols`."""
    return conclude.terminal(d, cols).rstrip("\n") + "\n" + MORE + "\n"
