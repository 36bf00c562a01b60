"""commscope export: every stored record as a row of CSV or JSON, the raw
data a program reads (export --points, the figures with their provenance,
is points.py)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Sequence

from ..store.records import exported_columns, flag_columns

# a record's run: which implementation, where and when, of which configuration (first),
# then the record's own stored fields as the core declares them (records.Result), then the store's
# marks on it (measured while other processes used the CPU; measured again at a window)
RUN_COLUMNS = ("run_id", "mpi", "mpi_family", "mpi_version", "cluster", "hostname",
               "started_at", "nodes", "config_key", "repetition", "oversubscribed")
EXPORT_COLUMNS = (*RUN_COLUMNS, *exported_columns(), "flagged", "narrowed_in")
FLAGS = (*flag_columns(), "flagged", "oversubscribed")  # written true or false


def version_line(text: object) -> str:
    """An implementation's version on one line: its first, with runs of
    white space (MPICH writes tabs) as one space."""
    lines = str(text or "").splitlines()
    return " ".join(lines[0].split()) if lines else ""


def export_row(r: sqlite3.Row) -> dict[str, object]:
    d = dict(r)
    out = {k: d.get(k) for k in EXPORT_COLUMNS}
    out["mpi"] = d["mpi_name"]
    out["mpi_version"] = version_line(d.get("mpi_version"))
    for k in FLAGS:
        out[k] = bool(d.get(k))
    return out


def export(rows: Sequence[sqlite3.Row], fmt: str) -> str:
    data = [export_row(r) for r in rows]
    if fmt == "json":
        return json.dumps(data, indent=1) + "\n"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(EXPORT_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(data)
    return buf.getvalue()
