"""commscope analyze (crossover, findings, guidelines, predict) and fit."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from ..analysis import limits
from ..analysis.repeats import aggregate
from ..analysis.series import noisy_text
from ..errors import CommscopeError
from ..store import core_facts
from ..store.config import place
from ..store.db import Store
from . import screen
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
    wanted = {(r["config_key"], r["np"]) for r in picked}
    rows = [r for r in crossover.analyze(series)
            if (r.config.key, r.config.np) in wanted]
    noisy = noisy_text(picked)
    if not rows:
        raise CommscopeError(noisy or "no collective with a reference to compare: run bcast, "
                             "reduce, gather, scatter or alltoall together with latency or "
                             "their _sends versions (e.g. --bench coll,coll-sends,latency)")
    print(crossover.table(rows) + (f"\n{noisy}\n" if noisy else ""), end="")
    if not any(r.advises for r in rows):
        print("\nno advice: against the equivalent sends from latency a verdict is the "
              "collective's overhead, not a replacement; only the hand-written equivalents, "
              "which compute the same result, are advised (--bench coll,coll-sends)")
    return 0


@command("analyze findings")
def cmd_findings(a: argparse.Namespace) -> int:
    from ..analysis import conclude, findings, summary
    from ..analysis.series import collect

    store, rows = matching(a)
    diag = conclude.of_rows(store, rows)
    if a.brief:  # what `run` ended with, again
        print(screen.headline(store, rows).removeprefix("\n"), end="")
        if diag is not None:
            print("\n" + screen.conclusions(diag, screen.width()), end="")
        return 0
    series = collect(rows)
    floor = findings.dominant_floor(rows)
    found, fixes = findings.explained(store, series, sorted({int(r["run_id"]) for r in rows}),
                                      floor)
    if diag is not None:  # what the experiments established, and only that
        top = conclude.text(diag, limit=a.limit or None, details=a.details) + "\n"
    else:
        top = summary.text(summary.summarize(series, found, fixes=fixes))
        if top:
            top = top.replace("What matters most here:", "What the sweep screened (not "
                              "diagnosed: nothing measured again, no cause established; "
                              "commscope diagnose does both):", 1)
    if top and floor:
        # which of the host's modes the conclusions come from: a later
        # sweep in another mode may conclude otherwise
        dropped = max((int(r["mode_dropped"]) for r in rows if r["mode_dropped"]), default=0)
        jobs = limits.floor_spread(rows)
        top += ("Drawn from records taken at "
                + (limits.floor_words(jobs[0], jobs[1], None) if jobs else
                   f"core to core ~{floor:.0f} ns one way")
                + (f"; {dropped} record(s) taken in its other modes were left out (--mode all "
                   "keeps them)" if dropped else "") + "\n\n")
    noisy = noisy_text(rows)
    print(top + ("Every finding, those that save most first:\n" if top and found else "")
          + findings.text(found, limit=a.limit or None, verbose=a.verbose)
          + (f"\n{noisy}\n" if noisy else ""), end="")
    return 0


@command("analyze app")
def cmd_app(a: argparse.Namespace) -> int:
    """A profiled program's hot calls against the benchmarks (analysis/profile.py)."""
    from ..analysis import profile as prof
    from ..analysis.series import collect
    from .results import profile_row

    store = Store(a.db, create=False)
    row = profile_row(store, a.profile, a.db)
    data = json.loads(row["data"] or "{}")
    s = prof.summarize(data.get("ranks") or [])
    if not s.hot:
        raise CommscopeError(f"profile {row['id']} holds no MPI call to set against the "
                             f"benchmarks ({row['status']}"
                             + (f": {data['why']}" if data.get("why") else "") + ")")
    # records taken beside other work are kept and said so: a benchmark measured on a busy
    # machine is a figure, marked, not one that was never measured
    where = prof.Where.of(data)  # on a cluster: the benchmarks of its nodes
    series = collect(aggregate(store.result_rows(), mode="dominant"), keep_flagged=True)
    rows = prof.against(s, str(row["mpi_name"]), series, where)
    need = prof.measure_argv(rows[:a.top or None], str(row["mpi_name"]), a.db, where)
    if need and a.measure:  # the missing benchmarks measured now, then set against again
        from .common import COMMANDS
        from .parser import make_parser

        print(f"measuring what is missing: {shlex.join(need)}")
        if COMMANDS["run"](make_parser().parse_args([*need[1:], "--quiet"])) != 0:
            print("commscope: the run did not finish cleanly: what it measured is set "
                  "against the program below", file=sys.stderr)
        series = collect(aggregate(store.result_rows(), mode="dominant"), keep_flagged=True)
        rows = prof.against(s, str(row["mpi_name"]), series, where)
        need = prof.measure_argv(rows[:a.top or None], str(row["mpi_name"]), a.db, where)
    on = "" if where.cluster == "local" else f" on {where.place}"
    print(f"profile {row['id']}: {Path(row['program']).name} under {row['mpi_name']}, "
          f"{row['np']} processes{on} ({row['status']}); its hottest calls against the "
          "benchmarks" + (" measured there" if on else "") + ":")
    print(prof.against_text(rows, a.top or 1 << 30), end="")
    if need:  # the command alone on its line: a user copies it
        print(f"to measure what is missing: {shlex.join(need)}")
        if not a.measure:
            print("(or let analyze app --measure run it)")
    found = _established(store)
    mine = [e for e in found if e.mpi == row["mpi_name"]]
    hits = prof.touching(s.hot, str(row["mpi_name"]), mine)  # every call, not the top ones
    if hits:
        print(f"settings the diagnosis established for {row['mpi_name']} that may act on "
              "calls of the program (try each on it: commscope profile --verify FILE):")
        for e in dict.fromkeys(e for _, e in hits):
            mine_hits = [h for h, x in hits if x is e]
            calls = ", ".join(f"{h.call} of {h.sizes}" for h in mine_hits[:6]) + (
                f" and {len(mine_hits) - 6} more" if len(mine_hits) > 6 else "")
            part = prof.share(mine_hits, s)
            print(f"  {' '.join(f'{k}={v}' for k, v in e.settings)} ({e.said}): {calls}"
                  + (f"; {100 * part[0]:.1f}% of its time inside MPI, {100 * part[1]:.1f}% of "
                     "its time between MPI_Init and MPI_Finalize: the most it could save"
                     if part else ""))
    elif mine:
        print(f"none of the {len(mine)} setting(s) the diagnosis established for "
              f"{row['mpi_name']} acts on these calls at these messages ("
              + "; ".join(e.said for e in mine[:3]) + ")")
    else:
        print(f"no setting for {row['mpi_name']} established in {a.db} (a diagnosed sweep: "
              "commscope run, as make run does)")
    return 0


def _established(store: Store) -> list:
    """Every setting a stored diagnosis established (closed or narrowed a
    gap in its own rounds), for the implementation it was given to."""
    from ..analysis import conclude
    from ..analysis import profile as prof
    from ..analysis.diagnosis import latest, runs_text

    out = []
    for sid in store.diagnosed_sweeps():
        d = latest(store, [sid])
        if d is None:
            continue
        for c in conclude.conclusions(d, None):
            t = c.outcome.best_setting()
            if (t is None or t.verdict not in ("closes", "helps") or t.hypothesis.side != "slow"
                    or not t.hypothesis.settings):
                continue
            g = c.outcome.gap
            label = d.labels.get(g.slow_arm, g.slow_arm)
            out.append(prof.Established(
                label.split()[0], g.call, tuple(t.sizes), t.hypothesis.settings,
                f"{g.call} {t.speed()[0]:.2g}x faster {runs_text([list(t.sizes)])}, sweep {sid}"))
    return out


@command("analyze guidelines")
def cmd_guidelines(a: argparse.Namespace) -> int:
    from ..analysis import guidelines
    from ..analysis.series import collect

    rows = matching(a)[1]
    res = guidelines.check(collect(rows))
    noisy = noisy_text(rows)
    if not res.checked:
        raise CommscopeError(noisy or "no guideline can be checked: it needs a collective and "
                             "the collectives it is composed of at matching sizes, or two "
                             "sizes of one benchmark (e.g. --bench coll --repeat 3)")
    print(guidelines.table(res) + (f"\n{noisy}\n" if noisy else ""), end="")
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
    rows = aggregate(store.result_rows(), mode=mode)
    # a phase's model from records taken on a busy machine, marked, rather than none
    series = collect(rows, keep_flagged=True)
    print(predict.table(predict.predict(apps, series, predict.llc_in(store, apps))),
          end="")
    return 0


@command("fit")
def cmd_fit(a: argparse.Namespace) -> int:
    from ..analysis import fitting
    from ..analysis.series import collect

    store, rows = matching(a)
    series = collect(rows)
    run_of = {(r["config_key"], r["np"], place(r), r["bench"]): r["run_id"]
              for r in rows}

    def run_id(cfg, bench: str) -> int:
        return run_of[(cfg.key, cfg.np, cfg.cluster, bench)]

    fits = []
    if a.model in ("hockney", "all"):
        # a benchmark no table knows is an application when its records
        # carry one's fields (the swept parameter, the parameters, the phases)
        app_like = {r["bench"] for r in rows
                    if any(r[k] for k in ("size_param", "params", "phases"))}
        fits.append(fitting.hockney_fits(series, _groups(), app_like))
    if a.model in ("loggp", "all"):
        fits.append(fitting.loggp_fits(series, lambda cfg: json.loads(
            store.run_options(run_id(cfg, "loggp_nd")) or "{}")))
    done = 0
    for f in (f for group in fits for f in group):
        if f.params is not None:
            store.save_fit(run_id(f.config, f.bench), f.model, f.params)
        print(f.text)
        done += f.counts
    noisy = noisy_text(rows)
    if not done:
        raise CommscopeError(noisy or "nothing to fit: store latency or other series "
                             "(hockney) or the loggp trains (--bench loggp)")
    if noisy:
        print(noisy)
    return 0


def _groups() -> dict[str, str]:
    """Which benchmarks are of a message size: the core's own table (its
    group); a benchmark the table does not know has none."""
    return {b.name: b.group for b in core_facts.benches()}
