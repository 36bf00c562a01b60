"""commscope export: every stored record as a row of CSV or JSON, the raw
data a program reads (export --points, the figures with their provenance,
is points.py)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Sequence

EXPORT_COLUMNS = ("run_id", "bench", "mpi", "mpi_family", "mpi_version", "np", "cluster",
                  "size_bytes", "median_us", "mean_us", "min_us", "max_us", "p5_us", "p95_us",
                  "ci_lo_us", "ci_hi_us", "ci_us", "mb_per_s", "rate_per_s", "n_samples",
                  "batch", "n_iters", "valid", "converged", "stop", "flagged", "other_cpu_s",
                  "steal_s", "wall_s", "oversubscribed", "hostname", "started_at",
                  "busbw_mb_per_s", "mean_rank_avg_us", "root", "equiv_sends", "nodes",
                  "config_key", "repetition", "floor_ns", "resolution_us", "validations",
                  "checked_msgs", "window", "narrowed_in")


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
    for k in ("valid", "converged", "flagged", "oversubscribed"):
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
