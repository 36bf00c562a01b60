"""The report's section on programs commscope did not write (`commscope
profile`): for each program profiled, where its MPI time goes, its hot calls
against the benchmarks of the same configuration, and the settings verified
on it (--verify)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..analysis import profile as prof
from ..measure.profile import resolve_sites
from ..store.db import Store
from .page import Table, table


def section(store: Store, series: Mapping) -> list[dict[str, object]]:
    """One entry a profiled run (the last of each program, arguments,
    implementation and process count; a --verify batch by its rounds)."""
    rows = store.profiles()
    last: dict[tuple, object] = {}
    batches: dict[int, list] = {}
    for r in rows:
        if r["batch"] is not None:
            batches.setdefault(int(r["batch"]), []).append(r)
            continue
        last[(r["program"], r["argv"], r["mpi_name"], r["np"])] = r
    out = []
    for r in last.values():
        out.append(_one(r, series))  # type: ignore[arg-type]
    for b, rs in sorted(batches.items()):
        out.append(_batch(b, rs))
    return out


def _one(r, series: Mapping) -> dict[str, object]:
    data = json.loads(r["data"] or "{}")
    s = prof.summarize(data.get("ranks") or [])
    share = s.mpi_share
    said = (f"profile {r['id']}, {r['started_at']}: {r['status']}"
            + (f" ({data['why']})" if data.get("why") else "")
            + (f"; {100 * share:.1f}% of the time between MPI_Init and MPI_Finalize inside MPI"
               if share is not None else "")
            + (f"; rank(s) {', '.join(map(str, s.unfinished))} ended without MPI_Finalize"
               if s.unfinished else ""))
    hot: Table | None = None
    versus: Table | None = None
    if s.hot:
        total = s.total_s
        hot = table(("call", "ranks", "communicator", "message", "calls", "total ms", "mean us",
                     "of MPI"),
                    [(h.call, h.ranks, h.comm_size or "-", h.sizes, h.calls,
                      f"{1e3 * h.total_s:.3f}", f"{h.mean_us:.2f}",
                      f"{100 * h.total_s / total:.1f}%" if total else "") for h in s.hot[:12]],
                    (1, 2, 4, 5, 6, 7))
        ag = prof.against(s, str(r["mpi_name"]), series, prof.Where.of(data))
        versus = table(("call", "message", "calls a rank", "program us", "benchmark us", "ratio",
                        "verdict"),
                       [(a.hot.call, a.hot.sizes, f"{a.per_rank:.0f}", f"{a.measured_us:.2f}",
                         f"{a.bench_us:.2f}" if a.bench_us else "-",
                         prof.ratio_text(a.ratio) if a.ratio else "-",
                         f"{a.verdict} ({a.bench}, {a.config}"
                         + (", measured beside other work" if a.busy else "") + ")"
                         + (f": {a.evidence}" if a.evidence else "") if a.bench_us else a.missing)
                        for a in ag[:12]], (2, 3, 4, 5))
    return {"title": f"{prof.named(r)} under {r['mpi_name']}, {r['np']} processes", "said": said,
            "hot": hot, "versus": versus, "sites": _sites(data.get("ranks") or [], s),
            "verify": None}


def _sites(ranks, s: prof.Summary) -> Table | None:
    """The hottest call sites: where the program made its calls (file:line
    where it was built with -g, else the object and offset)."""
    places = resolve_sites(prof.all_frames(ranks))
    found = prof.sites(ranks, places)[:12]
    if not found:
        return None
    total = s.total_s
    return table(("call site", "call", "ranks", "calls", "total ms", "of MPI"),
                 [(prof.printable(prof.site_where(x, places)), x.call, x.ranks,
                   x.calls, f"{1e3 * x.total_s:.3f}",
                   f"{100 * x.total_s / total:.1f}%" if total else "") for x in found],
                 (2, 3, 4, 5))


def _batch(b: int, rs: list) -> dict[str, object]:
    """A --verify batch: each settings file's rounds against the defaults'."""
    by: dict[str, dict[int, object]] = {}
    for r in rs:
        key = " ".join(f"{k}={v}" for k, v in sorted(json.loads(r["settings"] or "{}").items()))
        by.setdefault(key, {})[int(r["round"])] = r
    base_key = min(by, key=len)  # the defaults: the fewest settings
    base = by[base_key]

    def run(r) -> prof.Run:
        return (r["status"], None if r["checked"] is None else bool(r["checked"]),
                json.loads(r["data"] or "{}").get("ranks") or [], float(r["wall_s"] or 0.0))

    vs = [prof.verified(key, [(run(r), run(base[k])) for k, r in sorted(runs.items())
                              if k in base])
          for key, runs in by.items() if key != base_key]
    r0 = rs[0]
    return {"title": f"{prof.named(r0)} under {r0['mpi_name']}, {r0['np']} processes: settings "
                     f"verified (batch {b})",
            "said": prof.verify_text(vs, len(base)).strip(), "hot": None, "versus": None,
            "verify": None}
