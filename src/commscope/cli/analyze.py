"""commscope analyze (crossover, findings, guidelines, predict) and fit."""

from __future__ import annotations

import argparse
import json

from ..analysis.repeats import aggregate
from ..errors import CommscopeError
from ..measure.cache import cache_dir
from ..store.config import place, what
from ..store.db import Store
from .common import command
from .results import filtered


def matching(a: argparse.Namespace) -> tuple[Store, list]:
    """The store and the results the filters pick; none is an error.  The
    analyses compare configurations, so they keep one machine mode (the
    dominant one) unless --mode says otherwise: a comparison across modes
    would measure the host, not the MPI."""
    store = Store(a.db, create=False)
    rows = filtered(a, store)
    if not rows:
        raise CommscopeError(f"no stored results match in {a.db}")
    return store, rows


@command("analyze crossover")
def cmd_crossover(a: argparse.Namespace) -> int:
    from ..analysis import crossover
    from ..analysis.series import collect

    store, picked = matching(a)
    # The equivalent sends come from latency records, whatever --np says.
    mpis = {r["mpi_name"] for r in picked}
    lat = aggregate([r for r in store.result_rows()
                     if r["bench"] == "latency" and r["mpi_name"] in mpis],
                    mode=None if a.mode == "all" else (a.mode or "dominant"))
    have = {(r["config_key"], r["bench"]) for r in picked}
    series = collect([*picked, *(r for r in lat if (r["config_key"], r["bench"]) not in have)])
    wanted = {(r["config_key"] or what(r), r["np"]) for r in picked}
    rows = [r for r in crossover.analyze(series)
            if (r.config.key or r.config.mpi, r.config.np) in wanted]
    if not rows:
        raise CommscopeError("no collective with a reference to compare: run bcast, reduce, "
                             "gather, scatter or alltoall together with latency or their "
                             "_sends versions (e.g. --bench coll,coll-sends,latency)")
    print(crossover.table(rows), end="")
    if not any(r.advises for r in rows):
        print("\nno advice: against the equivalent sends from latency a verdict is the "
              "collective's overhead, not a replacement; only the hand-written equivalents, "
              "which compute the same result, are advised (--bench coll,coll-sends)")
    return 0


@command("analyze findings")
def cmd_findings(a: argparse.Namespace) -> int:
    from ..analysis import findings, summary
    from ..analysis.series import collect

    store, rows = matching(a)
    series = collect(rows)
    floor = findings.dominant_floor(rows)
    found, fixes = findings.explained(store, series, sorted({int(r["run_id"]) for r in rows}),
                                      floor)
    top = summary.text(summary.summarize(series, found, fixes=fixes))
    if top and floor:
        # which of the host's modes the conclusions come from: a later
        # sweep in another mode may conclude otherwise
        dropped = max((int(r["mode_dropped"]) for r in rows if "mode_dropped" in r.keys()
                       and r["mode_dropped"]), default=0)
        top += (f"Drawn from records taken with the host's core-to-core time at ~{floor:.0f} ns"
                + (f"; {dropped} record(s) taken in its other modes were left out (--mode all "
                   "keeps them)" if dropped else "") + "\n\n")
    print(top + ("Every finding, those that save most first:\n" if top and found else "")
          + findings.text(found, limit=a.limit or None), end="")
    return 0


@command("analyze guidelines")
def cmd_guidelines(a: argparse.Namespace) -> int:
    from ..analysis import guidelines
    from ..analysis.series import collect

    res = guidelines.check(collect(matching(a)[1]))
    if not res.checked:
        raise CommscopeError("no guideline can be checked: it needs a collective and the "
                             "collectives it is composed of at matching sizes, or two sizes "
                             "of one benchmark (e.g. --bench coll --repeat 3)")
    print(guidelines.table(res), end="")
    return 0


@command("analyze predict")
def cmd_predict(a: argparse.Namespace) -> int:
    from ..analysis import predict
    from ..analysis.series import collect

    store, picked = matching(a)
    apps = [r for r in picked if r["phases"]]
    if not apps:
        raise CommscopeError("no application records (matmul, jacobi) match: run them, and "
                             "the collectives and latency of the same configuration, first "
                             "(e.g. --bench matmul,jacobi,latency,coll)")
    mode = None if a.mode == "all" else (a.mode or "dominant")
    models = collect(aggregate(store.result_rows(), mode=mode))
    print(predict.table(predict.predict(apps, models, predict.llc_in(store, apps))), end="")
    return 0


@command("fit")
def cmd_fit(a: argparse.Namespace) -> int:
    from ..analysis import hockney, loggp
    from ..analysis.series import collect

    store, rows = matching(a)
    series = collect(rows)
    run_of = {(r["config_key"] or what(r), r["np"], place(r), r["bench"]): r["run_id"]
              for r in rows}
    done = 0
    if a.model in ("hockney", "all"):
        # Which benchmarks are of a message size: the core's own table (its
        # group), as every core built here wrote it (read, never built: the
        # store may hold an implementation no longer installed); a benchmark
        # no table knows is an application when its records carry one's
        # fields (the swept parameter, the parameters, the phases).
        groups: dict[str, str] = {}
        metas = sorted((cache_dir() / "build").glob("*/meta.json"),
                       key=lambda p: p.stat().st_mtime, reverse=True)
        for meta in metas:
            try:
                for b in json.loads(meta.read_text()).get("benches", ()):
                    groups.setdefault(str(b["name"]), str(b["group"]))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
        app_like = {r["bench"] for r in rows
                    if any(k in r.keys() and r[k] for k in ("size_param", "params", "phases"))}
        print(f"{'configuration':<34} {'bench':<15} {'alpha_us':>9} {'beta_GB/s':>10} "
              f"{'break_B':>9} {'alpha2_us':>9} {'beta2_GB/s':>10} {'rms_err':>8}")
        apps: list[str] = []
        for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][1])):
            why = hockney.skipped(bench, groups.get(bench), bench in app_like)
            if why:
                if why.startswith("an application") and bench not in apps:
                    apps.append(bench)
                continue
            sizes = sorted(x for x in s if x > 0)
            if len(sizes) < 2:
                print(f"{cfg.label():<34} {bench:<15} not stored: {len(sizes)} size(s), "
                      "a line needs more")
                continue
            f = hockney.fit(sizes, [s[x].median for x in sizes])
            bad = hockney.implausible(f, sizes)
            if bad:
                print(f"{cfg.label():<34} {bench:<15} not stored: {bad}")
                done += 1  # fitted and refused: said, not an empty result
                continue
            store.save_fit(run_of[(cfg.key or cfg.mpi, cfg.np, cfg.cluster, bench)], "hockney",
                           f.to_json())
            p1 = f.pieces[0]
            p2 = f.pieces[1] if len(f.pieces) > 1 else None
            print(f"{cfg.label():<34} {bench:<15} {p1.alpha_us:>9.3f} {p1.beta_gb_per_s:>10.2f} "
                  f"{f.breakpoint or '-':>9} "
                  f"{(f'{p2.alpha_us:.3f}' if p2 else '-'):>9} "
                  f"{(f'{p2.beta_gb_per_s:.2f}' if p2 else '-'):>10} {f.rms_rel_error:>8.3f}")
            done += 1
        if apps:
            print(f"not fitted: {', '.join(apps)} (applications: their size is a problem "
                  "size, not a message; Hockney's model is of messages)")
    if a.model in ("loggp", "all"):
        configs = {cfg for (cfg, bench) in series if bench == "loggp_1"}
        for cfg in sorted(configs, key=lambda c: (c.mpi, c.np)):
            trains = {b: series.get((cfg, b)) for b in ("loggp_1", "loggp_n", "loggp_nd",
                                                        "loggp_ndr")}
            if not all(trains.values()):
                continue
            rid = run_of[(cfg.key or cfg.mpi, cfg.np, cfg.cluster, "loggp_nd")]
            opts = json.loads(store.db.execute("SELECT options FROM runs WHERE id=?",
                                               (rid,)).fetchone()[0])
            med = {b: {s: p.median for s, p in t.items()} for b, t in trains.items() if t}
            p = loggp.extract(med["loggp_1"], med["loggp_n"], med["loggp_nd"], med["loggp_ndr"],
                              int(opts["loggp_n"]), float(opts["loggp_delay_us"]))
            store.save_fit(rid, "loggp", p.to_json())
            print(f"LogGP {cfg.label()}: L={p.L_us:.3f} us  o_s={p.o_s_us:.3f} us  "
                  f"o_r={p.o_r_us:.3f} us  g={p.g_us:.3f} us  G={p.G_us_per_byte * 1e3:.4f} ns/B"
                  f" ({p.G_gb_per_s:.2f} GB/s)"
                  + ("  [L < 0: the overheads account for the whole small-message time]"
                     if p.L_us < 0 else ""))
            done += 1
    if not done:
        raise CommscopeError("nothing to fit: store latency or other series (hockney) or the "
                             "loggp trains (--bench loggp)")
    return 0
