"""From a finding to verified advice, in the same run.

When a conclusion's cause is a setting (analysis/causes.py: an eager limit
the job read back), commscope measures the fix before it advises it: after
the sweep, a targeted search (tune.search, the tuning advisor's engine)
runs only the candidates the cause names, only over the sizes concerned
and their neighbours, on the cheapest benchmark that shows it, interleaved
in rounds against the configuration as it ran, within a budget.  The
verdict is stored with the cause (store.add_advice) and a fix that holds
is written as a settings file that `commscope run --settings` and a shell
both read.  A fix that does not verify, or that slows other sizes, is
stored as what it is: the conclusion says so."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from ..analysis import summary
from ..analysis.causes import Cause, Fix, cause_key
from ..analysis.findings import Finding
from ..errors import CommscopeError
from ..measure.build import Core
from ..measure.plan import CoreOptions
from ..store.db import Store
from ..store.sizes import expand_sizes, human_bytes
from . import tune, tune_text

ROUNDS = 5  # interleaved rounds against the default, where the budget holds them
MIN_ROUNDS = 3  # fewer cannot separate anything (tune.Effect.wins needs 3)
EXTRA_ROUNDS = 12  # more, for a candidate not yet told apart, within the budget
JOB_START_S = 1.0  # a 2-rank job's start and end here (0.3-0.7 s measured), besides its sizes
MAX_SIZES = 8  # sizes a collective's algorithms are measured at


@dataclass(frozen=True)
class Task:
    key: str
    cause: Cause
    bench: str
    sizes: str  # the core's --sizes: the cause's sizes and one neighbour each side
    gain: float  # what the findings it explains would save: the order of the work
    factor: int = 2  # between sizes: more where a collective's gap spans many


def _factor(lo: int, hi: int) -> int:
    """A power of two that keeps a range to MAX_SIZES sizes or fewer."""
    f = 2
    while lo * f ** (MAX_SIZES - 1) < hi:
        f *= 2
    return f


def tasks(found: Sequence[Finding]) -> list[Task]:
    """What to measure: each cause that is a setting and leads a conclusion
    on the first screen, once, those whose findings would save most first
    (a fix is written only for a conclusion a user reads).  An eager limit
    is measured on the cheapest benchmark that shows it, over its sizes and
    one neighbour each side; a collective's algorithm on that collective,
    over its sizes."""
    shown = {cause_key(c.cause) for c in summary.conclusions(found)
             if c.kind == "cause" and c.cause is not None}
    out = []
    for key, cause, fs in summary.causes_to_fix(found):
        if key not in shown:
            continue
        if cause.sizes is None or not (cause.candidates or cause.kind == "algorithm"):
            continue
        lo, hi = cause.sizes
        gain = max(f.gain for f in fs)
        if cause.kind == "algorithm":
            out.append(Task(key, cause, cause.coll, f"{lo}:{hi}", gain, _factor(lo, hi)))
            continue
        out.append(Task(key, cause, summary.measure_bench(fs), f"{max(1, lo // 2)}:{2 * hi}",
                        gain))
    return sorted(out, key=lambda t: -t.gain)


def job_s(opts: CoreOptions) -> float:
    """One 2-rank job of these sizes here: its start, then each size's
    sampling cap, warm-up and validation."""
    n = len(expand_sizes(opts.sizes, opts.factor))
    return JOB_START_S + n * (opts.time_cap_s + opts.warmup_s + 0.05)


def _rounds(opts: CoreOptions, n_cands: int, budget_s: float) -> int:
    """The rounds the budget holds."""
    return min(ROUNDS, int(budget_s // ((n_cands + 1) * job_s(opts))))


def _candidates(task: Task, core: Core | None) -> list[tune.Candidate]:
    """An eager limit's raises, from the cause; a collective's algorithms,
    asked of the implementation (a short job)."""
    c = task.cause
    if c.kind == "algorithm":
        return tune.algorithm_candidates(core, c.coll) if core is not None else []
    return [tune.Candidate(x, f"raises {c.limit.variable}")  # type: ignore[union-attr]
            for x in c.candidates]


def _mid(es: Sequence[tune.Effect]) -> tune.Effect:
    return sorted(es, key=lambda e: e.ratio)[len(es) // 2]


def judge(task: Task, outcomes: Sequence[tune.Outcome]) -> Fix:
    """The verdict on a cause's candidates: verified where one is faster
    from the first size the cause concerns on (a range of sizes that
    neighbours confirm, tune.Outcome.ranges) and slower at no size; mixed
    where it is faster there and slower elsewhere; no-gain, or broken."""
    lo, hi = task.cause.sizes or (0, 0)
    first = task.cause.boundary or lo
    ok = [o for o in outcomes if o.state != "broken"]
    if not ok:
        reason = outcomes[0].reason if outcomes else "no candidate"
        return Fix(task.key, outcomes[0].cand.settings if outcomes else (), "broken",
                   task.bench, reason=reason[:300])

    def won(o: tune.Outcome) -> list[tune.Effect]:
        """An eager limit's fix must win from the first size it concerns on;
        an algorithm wherever in the cause's sizes it wins most."""
        runs = [es for b, a, z, es in o.ranges("wins") if b == task.bench]
        if task.cause.kind == "limit":
            return next((es for es in runs if es[0].size <= first <= es[-1].size), [])
        inside = [es for es in runs if lo <= es[-1].size and es[0].size <= hi]
        return max(inside, key=lambda es: sum(math.log(e.ratio) for e in es), default=[])

    paired = max((e.n for o in ok for e in o.effects if e.bench == task.bench
                  and lo <= e.size <= hi), default=0)
    if paired < MIN_ROUNDS:
        # not "no gain": too few rounds were taken in the sweep's machine mode
        # to tell (the host spent the others in another mode)
        return Fix(task.key, ok[0].cand.settings, "skipped", task.bench, reason=(
            f"only {paired} round(s) were taken in the sweep's host mode, "
            f"{MIN_ROUNDS} are needed; the host spent the others in another mode"))
    best = max(ok, key=lambda o: (bool(won(o)), not o.ranges("loses"), o.gain))
    measured = tuple((e.size, e.ratio, e.lo, e.hi) for e in sorted(
        (e for e in best.effects if e.bench == task.bench), key=lambda e: e.size))
    es = won(best)
    if not es:
        there = [e for e in best.effects if e.bench == task.bench and lo <= e.size <= hi]
        if not there:
            return Fix(task.key, best.cand.settings, "no-gain", task.bench,
                       reason="no size measured")
        mid = _mid(there)
        return Fix(task.key, best.cand.settings, "no-gain", task.bench, (lo, hi), mid.ratio,
                   mid.lo, mid.hi, mid.n, effects=measured)
    mid = _mid(es)
    loses = best.ranges("loses")
    slower = _slower(loses)
    return Fix(task.key, best.cand.settings, "mixed" if loses else "verified", task.bench,
               (es[0].size, es[-1].size), mid.ratio, mid.lo, mid.hi, mid.n, slower=slower,
               effects=measured)


def _slower(loses) -> str:
    """Where a setting lost: each range with how much longer it took."""
    return ", ".join(f"{b} {human_bytes(a)}" + (f" to {human_bytes(z)}" if z != a else "")
                     + f" ({1 / _mid(x).ratio:.2f}x as long)" for b, a, z, x in loses)


COARSE = 8  # the factor between the sizes a winning setting is checked at across the sweep


def _check_range(fix: Fix, core: Core, o: CoreOptions, sweep: CoreOptions, store: Store,
                 left: float, *, search, argv, policy, progress, base, mode_ns) -> Fix:
    """A setting changes every size, not only those it was measured at: the
    winner against the default once more, over the sweep's whole range
    every COARSE times, where the budget left holds MIN_ROUNDS rounds of
    it.  A size it slows (with a neighbour that agrees) makes the fix
    mixed; where the check cannot run, the fix says what was measured."""
    sizes = expand_sizes(sweep.sizes, sweep.factor)
    c = replace(o, sizes=f"{sizes[0]}:{sizes[-1]}", factor=COARSE)
    if len(sizes) < 3 or MIN_ROUNDS * 2 * job_s(c) > left:
        return fix
    cand = tune.Candidate(fix.settings, "the winner, across the sweep's range")
    try:
        (out,) = search(core, [fix.bench], c, [cand], store, rounds=MIN_ROUNDS, extra_rounds=0,
                        budget_s=left, argv=argv, timeout_s=30 + 3 * tune.estimate_s(
                            c, [fix.bench]), policy=policy, progress=progress, seed=4,
                        purpose="advise", base=base, job_s=job_s(c), mode_ns=mode_ns)
    except CommscopeError:
        return fix
    if out.state == "broken":
        return replace(fix, verdict="broken", reason=f"across the sweep's range: {out.reason}")
    loses = out.ranges("loses")
    slower = ", ".join(filter(None, [fix.slower, _slower(loses)]))
    return replace(fix, verdict="mixed" if loses or fix.slower else "verified", slower=slower,
                   checked=(sizes[0], sizes[-1]))


def settings_file(impl: str, where: str, fixes: Sequence[tuple[Fix, Cause]],
                  base: Sequence[tuple[str, str]]) -> str:
    """The file a user is handed: the configuration's own settings and each
    verified fix, with what was measured; values quoted for a shell."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# commscope: settings for {impl} ({where}), measured {when}",
             "# read by `commscope run --settings FILE`, or sourced by a shell"]
    if len(fixes) > 1:
        lines.append("# each fix below was measured alone against the default, not together")
    merged = dict(base)
    for fix, cause in fixes:
        lines.append(f"# cause: {cause.text}")
        lines.append(f"# measured: {fix.bench} {human_bytes(fix.sizes[0])} to "  # type: ignore[index]
                     f"{human_bytes(fix.sizes[1])} {fix.ratio:.2f}x faster "  # type: ignore[index]
                     f"[{fix.lo:.2f}, {fix.hi:.2f}] over {fix.rounds} rounds"
                     + (f"; slower at {fix.slower}" if fix.slower else
                        ", no measured size slower"))
        merged.update(dict(fix.settings))
    lines += [tune_text.export_line(k, v) for k, v in sorted(merged.items())]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Written beside the store, never over one (an SQLite file)."""
    if path.is_dir():
        raise CommscopeError(f"{path} is a folder: the advice is not written over it")
    if path.exists():
        with path.open("rb") as f:  # the header alone, whatever the file's size
            if f.read(16) == b"SQLite format 3\0":
                raise CommscopeError(f"{path} is a store: the advice is not written over it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def advise(found: Sequence[Finding], cores: Mapping[str, Core], opts: CoreOptions,
           store: Store, *, sweep_id: int | None, budget_s: float, out_dir: Path,
           argv: Sequence[str], policy, progress, say: Callable[[str], None] = print,
           search: Callable[..., list[tune.Outcome]] = tune.search,
           mode_ns: float | None = None) -> list[Fix]:
    """Measure the fix of every cause that is a setting, within budget_s;
    store each verdict and write the verified fixes' settings files.
    `mode_ns`: the machine mode (core-to-core floor) the conclusions were
    drawn in; a fix is judged on rounds taken in it (the host's other modes
    can reverse an effect: eager copies at 8 KiB ran 1.4x slower than the
    single-copy rendezvous when the floor was 250 ns, 2x faster at 60 ns)."""
    import time

    t0 = time.monotonic()
    fixes: list[tuple[Fix, Task, int | None]] = []
    todo = tasks(found)
    for i, task in enumerate(todo):
        cfg = task.cause.config
        assert cfg is not None
        core = cores.get(cfg.implementation)
        o = replace(opts, sizes=task.sizes, factor=task.factor,
                    time_cap_s=min(opts.time_cap_s, 0.1), param="")
        fix: Fix | None = None
        skip = partial(Fix, task.key, (), "skipped", task.bench)
        cands: list[tune.Candidate] = []
        if core is None:
            fix = skip(reason=f"{cfg.implementation}'s core is not in this run")
        elif cfg.cluster != "local":
            fix = skip(reason="fixes are measured on this machine, not on a cluster")
        else:
            try:
                cands = _candidates(task, core)
            except CommscopeError as exc:
                fix = skip(reason=f"its candidates could not be read: {str(exc)[:200]}")
            else:
                if not cands:
                    fix = skip(reason=f"{cfg.implementation} offers no {task.bench} setting "
                                      "commscope can search")
        left = budget_s - (time.monotonic() - t0)
        rounds = _rounds(o, len(cands), left)
        while (fix is None and rounds < MIN_ROUNDS and task.cause.kind == "algorithm"
               and len(expand_sizes(o.sizes, o.factor)) > 3):
            # fewer sizes across the same range rather than no measurement
            o = replace(o, factor=o.factor * 2)
            rounds = _rounds(o, len(cands), left)
        if fix is None and rounds < MIN_ROUNDS and task.cause.kind == "limit":
            cands = cands[:1]  # the smallest raise that covers the sizes, alone
            rounds = _rounds(o, 1, left)
        if fix is None and rounds < MIN_ROUNDS:
            fix = skip(reason=f"{len(cands)} candidate(s) and the default need {MIN_ROUNDS} "
                              f"rounds of about {(len(cands) + 1) * job_s(o):.0f} s each, more "
                              f"than the advise budget left ({max(left, 0):.0f} s); raise "
                              "--advise-budget")
        # each cause its share of what is left for rounds beyond its first
        # ones: extra rounds of one never starve the next
        rounds = min(rounds, max(MIN_ROUNDS, _rounds(o, len(cands), left / (len(todo) - i))))
        share = max(left / (len(todo) - i), (len(cands) + 1) * rounds * job_s(o))
        search_sweep = None
        if fix is None:
            say(f"advise: measuring {len(cands)} candidate(s) for {cfg.mpi}: "
                f"{'; '.join(c.label for c in cands[:3])}{' ...' if len(cands) > 3 else ''} "
                f"({task.bench} {task.sizes}, {rounds} rounds)")
            try:
                # rounds taken across machine modes pair nothing (tune.effects):
                # an undecided candidate runs on with the default while the
                # budget lasts
                outs = search(core, [task.bench], o, cands, store, rounds=rounds,
                              extra_rounds=EXTRA_ROUNDS, budget_s=share, argv=argv,
                              timeout_s=30 + 3 * tune.estimate_s(o, [task.bench]),
                              policy=policy, progress=progress, seed=3, purpose="advise",
                              base=cfg.settings, job_s=job_s(o), mode_ns=mode_ns)
            except CommscopeError as exc:  # the configuration itself failed this time
                fix = Fix(task.key, cands[0].settings, "broken", task.bench,
                          reason=str(exc)[:300])
            else:
                fix = replace(judge(task, outs), tried=len(cands), mode_ns=mode_ns)
                if fix.verdict in ("verified", "mixed"):
                    fix = _check_range(fix, core, o, opts, store, budget_s - (
                        time.monotonic() - t0), search=search, argv=argv, policy=policy,
                        progress=progress, base=cfg.settings, mode_ns=mode_ns)
                ids = [i for x in outs for i in x.run_ids]
                row = store.db.execute("SELECT sweep_id FROM runs WHERE id=?",
                                       (ids[0],)).fetchone() if ids else None
                search_sweep = row[0] if row else None
        fixes.append((fix, task, search_sweep))
    out = _hand_over([(f, t) for f, t, _ in fixes], out_dir)
    for fix, (_, task, search_sweep) in zip(out, fixes, strict=True):
        store.add_advice(task.key, fix.to_json(), sweep_id, search_sweep)
    return out


def _hand_over(fixes: list[tuple[Fix, Task]], out_dir: Path) -> list[Fix]:
    """One settings file per configuration with a fix that holds (verified,
    or mixed: the file says where it is slower), and each fix told where
    its file is."""
    by_cfg: dict[object, list[tuple[Fix, Task]]] = {}
    for fix, task in fixes:
        if fix.verdict in ("verified", "mixed"):
            by_cfg.setdefault(task.cause.config, []).append((fix, task))
    named: dict[str, str] = {}
    failed: dict[str, str] = {}
    taken: set[Path] = set()
    for items in by_cfg.values():
        c = items[0][1].cause.config
        assert c is not None
        name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in c.implementation)
        path, n = out_dir / f"{name}.env", 1
        while path in taken:  # the same implementation set otherwise, or at another np
            n += 1
            path = out_dir / f"{name}-{n}.env"
        taken.add(path)
        try:
            _write(path, settings_file(c.implementation, f"{c.np} processes, {c.cluster}",
                                       [(f, t.cause) for f, t in items], c.settings))
        except (CommscopeError, OSError) as exc:
            # the measurement stands and is stored; only the file is missing
            why = str(exc) if isinstance(exc, CommscopeError) else f"{path}: {exc.strerror}"
            failed.update((t.key, why) for _, t in items)
            continue
        named.update((t.key, str(path)) for _, t in items)
    return [replace(fix, file=named[task.key]) if task.key in named else
            replace(fix, reason=f"settings file not written: {failed[task.key]}")
            if task.key in failed else fix for fix, task in fixes]
