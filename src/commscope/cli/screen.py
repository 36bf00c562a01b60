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


def _probe(store: Store, rows: list) -> dict | None:
    """The probe of these records' machine (of their sweep, else the latest)."""
    ids = sorted({int(r["run_id"]) for r in rows})
    prow = store.probe_for(ids) if ids else None
    return json.loads(prow["data"]) if prow is not None else None


def table(store: Store, agg: list) -> str | None:
    """The headline table of these aggregated records against the probe of
    their machine; None without a two-rank latency among them."""
    probe = _probe(store, agg)
    head = limits.headline(agg, probe, probe_mod.floor_ns(probe) if probe else None)
    return limits.text(head) if head is not None else None


def beside(store: Store, rows: list) -> list[str]:
    """Each implementation's smallest-message latency against the floor
    (analysis/limits.beside_latency), with the probe of these records."""
    probe = _probe(store, rows)
    return [] if probe is None else limits.beside_latency(rows, probe_mod.floor_ns(probe))


def headline(store: Store, agg: list) -> str:
    """What `run` prints after its sweep: a blank line and the headline
    table, or where there is none, the latency lines against the floor."""
    t = table(store, agg)
    return "\n" + t if t is not None else "".join(f"{line}\n" for line in beside(store, agg))


def conclusions(d: Diagnosis, cols: int) -> str:
    """What the diagnosis established, for a person at a terminal of `cols`."""
    return conclude.terminal(d, cols).rstrip("\n") + "\n" + MORE + "\n"
