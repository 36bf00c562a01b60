"""What programs read: the figures `show` prints, one point per
configuration, benchmark and size over its repetitions, with the interval,
the marks and the configuration, and for the JSON the provenance of every
point (docs/export.md; docs/export-points.schema.json)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..analysis import apps, limits
from ..measure import provenance
from ..measure.probe import floor_ns as probe_floor
from ..store.config import config_of, place
from ..store.core_facts import bench as bench_facts
from ..store.db import Store
from ..store.schema import SCHEMA_VERSION
from .export import version_line
from .tables import (
    MARKS,
    _config_window,
    _marks,
    _n_reps,
    figure_interval,
    n_used,
    names,
    primary,
    reading_order,
    where,
)

# The columns of a point, in order (CSV); the JSON's points have the same
# keys, with phases as an object.  docs/export.md says what each is.
COLUMNS = ("bench", "np", "size_bytes", "size_param", "label", "where", "config_key", "mpi",
           "mpi_version", "mpi_identity", "transport", "buffer", "params", "settings",
           "cluster", "nodes", "ppn", "figure", "unit", "value", "low", "high",
           "interval", "median_us", "ci_lo_us", "ci_hi_us", "runs", "runs_stored", "valid",
           "marks", "converged", "noisy_runs", "other_mode", "modes", "window", "windows",
           "window_narrowed", "busbw_mb_per_s", "mlups", "efficiency", "efficiency_low",
           "efficiency_high")


def points(rows: Sequence[sqlite3.Row]) -> list[dict[str, object]]:
    """One point per aggregated row (repeats.aggregate), in show's order."""
    name = names(rows)
    scaled = {p.record_id: p for sc in apps.scaling(rows, where) for p in sc.points}  # type: ignore[arg-type]
    out = []
    for r in sorted(rows, key=lambda r: (reading_order(r["bench"]), r["np"], name[id(r)][0],
                                         r["size_bytes"])):
        key, unit = primary([r])
        cfg = config_of(r)
        v = r[key]
        rng = figure_interval(r, v, key) if v is not None else None
        used = n_used(r)
        marks = "".join(m for m, on in _marks(r) if on)
        windowed = "window" in bench_facts(r["bench"]).changed_by
        narrowed = windowed and r["window"] is not None and _config_window(r) > r["window"]
        sp = scaled.get(int(r["id"]))
        p: dict[str, object] = {
            "bench": r["bench"], "np": r["np"], "size_bytes": r["size_bytes"],
            "size_param": r["size_param"],
            "label": name[id(r)][0], "where": place(r), "config_key": r["config_key"],
            "mpi": r["mpi_name"],
            "mpi_version": version_line(r["mpi_version"]),
            "mpi_identity": cfg.mpi_identity if cfg else None,
            "transport": cfg.transport if cfg else None,
            "buffer": cfg.buffer if cfg else None,
            "params": dict(cfg.params) if cfg else None,
            "settings": dict(cfg.settings) if cfg else None,
            "cluster": r["cluster"], "nodes": r["nodes"], "ppn": cfg.ppn if cfg else None,
            "figure": key, "unit": unit,
            "value": v if r["valid"] else None,
            "low": rng[0] if rng and r["valid"] else None,
            "high": rng[1] if rng and r["valid"] else None,
            "interval": ("between runs" if used > 2 else "pooled" if r["next_pooled"]
                         else "range of 2 runs" if used == 2 else "within one run")
                        if rng else None,
            "median_us": r["median_us"], "ci_lo_us": r["ci_lo_us"], "ci_hi_us": r["ci_hi_us"],
            "runs": used, "runs_stored": _n_reps(r), "valid": bool(r["valid"]),
            "marks": marks,
            "converged": not r["unconverged_reps"],
            "noisy_runs": int(r["noisy_reps"] or 0),
            "other_mode": bool(r["other_mode"]),
            "modes": list(r["modes"] or ()),
            "window": r["window"],
            "windows": list(r["windows"] or ()) if windowed else [],
            "window_narrowed": bool(narrowed),
            "busbw_mb_per_s": r["busbw_mb_per_s"],
            "mlups": sp.mlups if sp else None,
            "efficiency": sp.efficiency if sp else None,
            "efficiency_low": sp.eff_range[0] if sp and sp.eff_range else None,
            "efficiency_high": sp.eff_range[1] if sp and sp.eff_range else None,
        }
        if r["phases"] is not None:
            pb = apps.phase_bytes(r)
            p["phases"] = {n: {"ms": float(ph["max_us"]) / 1e3,  # type: ignore[arg-type]
                               "bytes_per_rank": list(pb.get(n, ()))}
                           for n, ph in apps.phases(r).items()}
        out.append(p)
    return out


def provenance_of(store: Store, raw: Sequence[sqlite3.Row]) -> dict[str, object]:
    """Where the points come from: this commscope, the store, the machines
    and their probe, the implementations with versions and identities, the
    sweeps with their options and dates (raw: every record behind them)."""
    run_ids = sorted({int(r["run_id"]) for r in raw})
    runs = store.rows_of("runs", run_ids)
    sweep_ids = sorted({int(r["sweep_id"]) for r in runs if r["sweep_id"] is not None})
    sweeps = store.rows_of("sweeps", sweep_ids)
    probes = store.rows_of("probes", sweep_ids, by="sweep_id")
    impls: dict[tuple[str, str], dict[str, object]] = {}
    for r in runs:
        impls.setdefault((r["mpi_name"], r["mpi_identity"] or ""), {
            "name": r["mpi_name"], "family": r["mpi_family"],
            "version": version_line(r["mpi_version"]),
            "version_text": r["mpi_version"], "identity": r["mpi_identity"]})
    machines = {(r["hostname"], r["cpu_model"], r["n_cores"], r["kernel"]) for r in runs}
    return {
        # the commscope that wrote this export; measured_by: those that ran the jobs
        "commscope": {"version": __version__, "revision": provenance.git_rev()},
        "measured_by": _distinct({"version": r["commscope_version"], "revision": r["git_rev"]}
                                 for r in runs),
        "store": {"path": str(Path(store.path).resolve()), "schema": SCHEMA_VERSION,
                  "runs": len(run_ids), "records": len(raw)},
        "machines": [{"hostname": h, "cpu_model": c, "n_cores": n, "kernel": k}
                     for h, c, n, k in sorted(machines, key=lambda m: tuple(map(str, m)))],
        "probes": [{"sweep": p["sweep_id"], "taken_at": p["taken_at"],
                    "hostname": p["hostname"], "data": json.loads(p["data"])} for p in probes],
        "implementations": sorted(impls.values(), key=lambda i: (str(i["name"]),
                                                                 str(i["identity"]))),
        "sweeps": [{"id": w["id"], "started_at": w["started_at"],
                    "finished_at": w["finished_at"], "argv": _json(w["argv"]),
                    "purpose": w["purpose"],
                    "options": _distinct(_json(r["options"]) for r in runs
                                         if r["sweep_id"] == w["id"])} for w in sweeps],
        "marks": {m: text for m, text in MARKS},
    }


def headline_of(store: Store, rows: Sequence[sqlite3.Row]) -> dict[str, object] | None:
    """The headline figures against the machine's limits (analysis/limits.py),
    as the terminal and the report give them; the limit a figure is set
    against says what it is ("x the core-to-core floor" is a ratio, the
    others a share)."""
    prow = store.probe_for(int(r["run_id"]) for r in rows)
    probe = json.loads(prow["data"]) if prow is not None else None
    h = limits.headline(rows, probe, probe_floor(probe) if probe else None)
    if h is None:
        return None

    def one(label: str, f: limits.Figure | None) -> dict[str, object] | None:
        if f is None:
            return None
        lim = "x the core-to-core floor" if label.startswith("latency") else f.against
        return {"median": f.value, "lo": f.lo, "hi": f.hi, "size_bytes": f.size,
                "share_of_limit": f.times, "limit": lim if f.times else "", "tied": f.tied,
                "busy": f.busy}

    return {"implementations": list(h.names),
            "figures": [{"figure": label, "unit": unit, "values": [one(label, f) for f in figs]}
                        for label, unit, figs in h.rows],
            "floor_ns": h.floor_ns, "process_vm_readv_gbs": h.cma_gbs,
            "copy": [{"where": w, "gbs": g} for w, g in h.copy]}


def export_points(store: Store, raw: Sequence[sqlite3.Row], rows: Sequence[sqlite3.Row],
                  fmt: str) -> str:
    pts = points(rows)
    if fmt == "json":
        return json.dumps({"provenance": provenance_of(store, raw), "points": pts,
                           "headline": headline_of(store, rows)}, indent=1) + "\n"
    phases = sorted({n for p in pts for n in p.get("phases", {})})  # type: ignore[union-attr]
    cols = [*COLUMNS, *(f"{n}_{k}" for n in phases for k in ("ms", "bytes_per_rank"))]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for p in pts:
        flat = {k: _csv(p.get(k)) for k in COLUMNS}
        for n, ph in p.get("phases", {}).items():  # type: ignore[union-attr]
            flat[f"{n}_ms"] = ph["ms"]
            flat[f"{n}_bytes_per_rank"] = " ".join(f"{b:.0f}" for b in ph["bytes_per_rank"])
        w.writerow(flat)
    return buf.getvalue()


def _csv(v: object) -> object:
    if isinstance(v, dict):
        return ";".join(f"{k}={x}" for k, x in sorted(v.items()))
    if isinstance(v, list):
        return " ".join(map(str, v))
    return v


def _json(text: object) -> object:
    try:
        return json.loads(str(text)) if text is not None else None
    except ValueError:
        return text


def _distinct(items) -> list[object]:  # type: ignore[no-untyped-def]
    out: list[object] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out
