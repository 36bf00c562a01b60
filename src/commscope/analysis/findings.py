"""What the data shows, in sentences, each with its numbers and the records
behind it.  No finding without a statistically separated difference: every
comparison needs non-overlapping 95% intervals (between runs, where the
sweep repeated its jobs), and where the runs' own figures are there, a
Welch test that survives the Benjamini-Hochberg correction for the number
of sizes and pairs compared.  Findings are ranked by what they would save
a user, and findings that say the same thing of several benchmarks are
merged."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..store.core_facts import bench as bench_facts
from ..store.sizes import human_bytes
from . import causes, crossover, guidelines, hockney
from .repeats import same_mode
from .series import Config, Point, Series, runs, separated
from .significance import MIN_FACTOR, bh_keep, welch_p

DROP_MIN = 0.10  # a drop smaller than 10% is not worth a sentence
# (nor is an implementation faster by less than MIN_FACTOR)


def moves_bandwidth(bench: str) -> bool:
    """A point-to-point benchmark whose operations move bytes (bw, bibw,
    and sendloop, whose figure is a time per send of one message): where
    bandwidth can drop between sizes."""
    b = bench_facts(bench)
    return b.group == "p2p" and b.bytes_per_op is not None


def _per_size(bench: str, np_: int) -> float:
    """Bytes one operation of a bandwidth benchmark moves per byte of size
    (bibw 2: both ways)."""
    return bench_facts(bench).per_size(np_) or 1.0


def model_input(bench: str) -> bool:
    """The LogGP trains: inputs of a model, not results to compare."""
    return bench_facts(bench).group == "loggp"


@dataclass(frozen=True)
class Finding:
    kind: str  # faster | drop | protocol | collective-slower | guideline
    text: str
    records: tuple[int, ...] = field(default=())
    bench: str = ""  # the benchmark whose figure shows it
    xrow: crossover.Row | None = None  # collective-slower: the comparison behind it
    gain: float = 0.0  # the fraction of time a user would save by acting on it
    key: tuple[object, ...] = ()  # findings with equal keys say the same thing
    ratio: float = 1.0  # the slower over the faster (median over the sizes it holds for)
    # the same from the edges of the intervals that separate them (the slower's
    # low over the faster's high; the lower median over the sizes): what the
    # next run should still show
    ratio_lo: float = 1.0  # the least the intervals' edges give over the whole range
    span: tuple[int, int] | None = None  # the first and last size it holds for
    # faster: (winner, loser); the others: the configuration it was seen under
    parties: tuple[Config, ...] = ()
    benches: tuple[str, ...] = ()  # merged: every benchmark it was seen in
    violation: guidelines.Violation | None = None  # guideline: the checks behind it
    # the mechanism that explains it, from what the run recorded (causes.py);
    # None where it was not asked (no store behind the series)
    cause: causes.Cause | None = None


def comparable(a: Config, b: Config, paths: bool = False) -> bool:
    """May a finding set a against b?  Not another library with its data
    held otherwise (two changes at once); cold against evicted is one.  Not
    two GPU paths, or a GPU path against host memory: where the data lives is
    the program's, not a choice of library ("prefer host memory to staged"
    read 180x on an H200).  paths: the GPU section's comparisons instead,
    one implementation's paths against each other (docs/gpu.md)."""
    if paths:
        return a.buffer != b.buffer and a.impl == b.impl and a.settings == b.settings
    if a.buffer != b.buffer:
        return False
    return causes.buffers_of(a) == causes.buffers_of(b) or causes.cold_pair(a, b)


def _welch_family(groups: Mapping[tuple[int, str, str], Mapping[str, Series]],
                  cfgs: Mapping[tuple[int, str, str, str], Config],
                  paths: bool = False) -> set[object]:
    """Every (group, pair, size) whose runs' medians differ by Welch's test,
    corrected together for how many were tested (the pairs compared: those
    that may be); without repetitions on both sides a size is not tested
    here (its CIs still must separate)."""

    ps: dict[object, float] = {}
    for g, by_mpi in groups.items():
        mpis = sorted(by_mpi)
        for i, a in enumerate(mpis):
            for b in mpis[i + 1:]:
                if not comparable(cfgs[(*g, a)], cfgs[(*g, b)], paths):
                    continue
                for s in set(by_mpi[a]) & set(by_mpi[b]):
                    ra, rb = by_mpi[a][s].reps, by_mpi[b][s].reps
                    if len(ra) >= 2 and len(rb) >= 2:
                        ps[(g, a, b, s)] = welch_p(ra, rb)
    return bh_keep(ps) if ps else set()


SCREEN_FACTOR = 1.2  # the least ratio a screened size needs to be measured again


def screened(a: Point, b: Point) -> int:
    """+1 when a looks above b to a screen (the diagnosis measures every
    candidate again over interleaved rounds, which decide): a ratio of
    SCREEN_FACTOR or more, and every repetition of one above every
    repetition of the other (or their intervals apart)."""
    hi, lo = (a, b) if a.median >= b.median else (b, a)
    if hi.median < SCREEN_FACTOR * lo.median:
        return 0
    apart = (len(hi.reps) >= 2 and len(lo.reps) >= 2 and min(hi.reps) > max(lo.reps)) or \
        separated(hi, lo) != 0
    return 0 if not apart else (1 if hi is a else -1)


def faster_implementation(series: Mapping[tuple[Config, str], Series],
                          screen: bool = False, paths: bool = False) -> list[Finding]:
    """Configurations are compared by identity (their key, where they have
    one); their labels only name them, so two in one comparison that one
    label would name are an error, not one silently standing for both.

    screen: what the diagnosis measures again (analysis/gaps.py), not what
    is claimed: every size whose repetitions stand apart by SCREEN_FACTOR
    or more, with no correction for how many were looked at.  With three
    repetitions a corrected test keeps a 2x gap on one run and drops it on
    the next, and a gap not screened is never confirmed: the diagnosis's
    own rounds are the test."""
    from ..errors import CommscopeError

    out: list[Finding] = []
    by_cfg: dict[tuple[int, str, str], dict[Config, Series]] = {}
    for (cfg, bench), s in series.items():
        if not model_input(bench):
            by_cfg.setdefault((cfg.np, cfg.cluster, bench), {})[cfg] = s
    groups: dict[tuple[int, str, str], dict[str, Series]] = {}
    cfgs: dict[tuple[int, str, str, str], Config] = {}
    for (np_, cluster, bench), these in by_cfg.items():
        named = groups.setdefault((np_, cluster, bench), {})
        for cfg, s in these.items():
            # oversubscribed beside not: the same label, told apart as the label does
            name = cfg.mpi + (" (oversubscribed)" if cfg.oversubscribed and any(
                c.mpi == cfg.mpi and not c.oversubscribed for c in these) else "")
            if name in named:
                other = cfgs[(np_, cluster, bench, name)]
                raise CommscopeError(
                    f"{bench}, {np_} processes, {cluster}: two configurations are both "
                    f"labelled '{name}' ({other.key or 'no key'} and {cfg.key or 'no key'}): "
                    "no finding can say which of them is faster")
            named[name] = s
            cfgs[(np_, cluster, bench, name)] = cfg
    kept = set() if screen else _welch_family(groups, cfgs, paths)
    for (np_, cluster, bench), by_mpi in sorted(groups.items()):
        mpis = sorted(by_mpi)
        for i, a in enumerate(mpis):
            for b in mpis[i + 1:]:
                ca, cb = cfgs[(np_, cluster, bench, a)], cfgs[(np_, cluster, bench, b)]
                if not comparable(ca, cb, paths):
                    continue
                sa, sb = by_mpi[a], by_mpi[b]
                marks: list[tuple[int, str | None]] = []
                for s in sorted(set(sa) & set(sb)):
                    wa, wb = sa[s].window, sb[s].window
                    if wa and wb and wa != wb:
                        marks.append((s, None))  # not one benchmark: no claim at this size
                        continue
                    sign = separated(sa[s], sb[s])  # time: lower is faster
                    ratio = max(sa[s].median, sb[s].median) / min(sa[s].median, sb[s].median)
                    tested = len(sa[s].reps) >= 2 and len(sb[s].reps) >= 2
                    if screen:
                        sign = screened(sa[s], sb[s])
                    elif ratio < MIN_FACTOR or (tested and ((np_, cluster, bench), a, b, s)
                                                not in kept):
                        sign = 0
                    marks.append((s, a if sign < 0 else b if sign > 0 else None))
                one = bench_facts(bench).sizeless  # barrier: its one size is all there is
                for winner, sizes in runs(marks):
                    if winner is None or (len(sizes) < 2 and not one):
                        continue  # no claim, or one size alone: not a range
                    loser = b if winner == a else a
                    ratios = sorted(by_mpi[loser][s].median / by_mpi[winner][s].median
                                    for s in sizes)
                    med = statistics.median(ratios)  # two sizes: their mean, not the larger
                    lows = sorted(by_mpi[loser][s].lo / by_mpi[winner][s].hi for s in sizes)
                    recs = tuple(p.result_id for s in sizes for p in (sa[s], sb[s])
                                 if p.result_id is not None)
                    out.append(Finding(
                        "faster",
                        f"{bench}, {np_} processes, {cluster}: {winner} is faster than {loser} "
                        f"from {human_bytes(sizes[0])} to {human_bytes(sizes[-1])} "
                        f"(median ratio {med:.2f}x, up to {ratios[-1]:.2f}x)",
                        recs, bench, gain=1.0 - 1.0 / med,
                        key=("faster", np_, cluster, winner, loser, sizes[0], sizes[-1],
                             round(math.log(med) / math.log(1.15))),
                        ratio=med, ratio_lo=min(lows),
                        span=(sizes[0], sizes[-1]),
                        parties=(cfgs[(np_, cluster, bench, winner)],
                                 cfgs[(np_, cluster, bench, loser)])))
    return out


def _bw(p: Point, size: int, k: float) -> tuple[float, float, float]:
    """Bandwidth (median, low, high) from a per-op time and its CI."""
    return k * size / p.median, k * size / p.hi, k * size / p.lo


def bandwidth_drops(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    """The UMBC cluster report saw Open MPI's bandwidth fall between neighbouring sizes."""
    out: list[Finding] = []
    for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][1])):
        if not moves_bandwidth(bench):
            continue
        k = _per_size(bench, cfg.np)
        sizes = sorted(x for x in s if x > 0)
        for a, b in zip(sizes, sizes[1:], strict=False):
            ma, la, _ = _bw(s[a], a, k)
            mb, _, hb = _bw(s[b], b, k)
            if hb < la and mb < ma * (1 - DROP_MIN):
                out.append(Finding(
                    "drop",
                    f"{bench} under {cfg.label()}: bandwidth drops {100 * (1 - mb / ma):.0f}% "
                    f"from {human_bytes(a)} ({ma:.0f} MB/s) to {human_bytes(b)} ({mb:.0f} MB/s)",
                    tuple(x for x in (s[a].result_id, s[b].result_id) if x is not None),
                    bench, gain=0.5 * (1.0 - mb / ma), ratio=ma / mb, ratio_lo=la / hb,
                    span=(a, b),
                    parties=(cfg,)))
    return out


def protocol_switches(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    out: list[Finding] = []
    for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][1])):
        if bench != "latency" or len(s) < 2 * hockney.MIN_POINTS:
            continue
        sizes = sorted(x for x in s if x > 0)
        f = hockney.fit(sizes, [s[x].median for x in sizes])
        if f.breakpoint is None:
            continue
        left, right = f.pieces
        if not step_separated(s, left.last_size, right.first_size):
            continue  # a bend the model prefers, not a switch the data shows
        out.append(Finding(
            "protocol",
            f"latency under {cfg.label()}: the protocol changes between "
            f"{human_bytes(left.last_size)} and {human_bytes(right.first_size)} "
            f"(alpha {left.alpha_us:.2f} -> {right.alpha_us:.2f} us, "
            f"beta {left.beta_gb_per_s:.1f} -> {right.beta_gb_per_s:.1f} GB/s)",
            tuple(p.result_id for p in s.values() if p.result_id is not None), bench,
            gain=0.01, span=(left.last_size, right.first_size), parties=(cfg,)))
    return out


def step_separated(s: Series, lo: int, hi: int, min_excess: float = 1.10) -> bool:
    """A protocol switch is a step: the growth from size lo to size hi must
    exceed the growth over each neighbouring step by 10% or more, with the
    intervals of the growths apart (the low end of the step's growth above
    the high end of each neighbour's)."""
    sizes = sorted(x for x in s if x > 0)
    if lo not in sizes or hi not in sizes:
        return False
    i = sizes.index(lo)

    def growth(a: int, b: int) -> tuple[float, float, float]:
        pa, pb = s[a], s[b]
        return pb.median / pa.median, pb.lo / pa.hi, pb.hi / pa.lo

    g, g_lo, _ = growth(lo, hi)
    neighbours = []
    if i > 0:
        neighbours.append(growth(sizes[i - 1], lo))
    if i + 2 < len(sizes):
        neighbours.append(growth(hi, sizes[i + 2]))
    if not neighbours:
        return False
    return all(g >= min_excess * n and g_lo > n_hi for n, _, n_hi in neighbours)


def collectives_vs_sends(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    """A collective surely slower than its hand-written equivalent (the
    *_sends benchmarks: the same result, validated like the collective),
    where to use that instead.  Against the commodity-cluster study's count
    of bare sends (from latency) nothing is advised: those sends do not do
    the collective's job (a reduce combines data, a send does not), so that
    comparison stays in the crossover table as the collective's overhead."""
    out: list[Finding] = []
    for row in crossover.analyze(series):
        v = row.verdict
        if not row.advises or v.scenario not in (1, 3, 4):
            continue
        sizes = [s for s, m in v.marks if m == "H"]
        coll = row.coll
        recs = tuple(coll[s].result_id for s in sizes if coll[s].result_id is not None)
        h_runs = [(lo, hi) for m, lo, hi in v.runs() if m == "H"]
        if len(v.runs()) == 1:
            where = "at every measured size"
        else:
            where = ", ".join(f"at {human_bytes(lo)}" if lo == hi else
                              f"from {human_bytes(lo)} to {human_bytes(hi)}" for lo, hi in h_runs)
        ratios = sorted(coll[s].median / row.ref[s].median for s in sizes if s in row.ref)
        lows = sorted(coll[s].lo / row.ref[s].hi for s in sizes if s in row.ref)
        gain = 1.0 - 1.0 / statistics.median(ratios) if ratios else 0.0
        out.append(Finding(
            "collective-slower",
            f"{crossover.mpi_name(row.collective)} under {row.config.label()} is slower than "
            f"its hand-written equivalent ({row.reference}) {where}: {row.text()}",
            recs, row.collective, row, gain=gain,
            ratio=statistics.median(ratios) if ratios else 1.0,
            ratio_lo=min(lows) if lows else 1.0,
            span=(sizes[0], sizes[-1]) if sizes else None, parties=(row.config,)))
    return out


def guideline_violations(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    out: list[Finding] = []
    for v in guidelines.check(series).violations:
        out.append(Finding(
            "guideline",
            f"under {v.config.label()}, {v.guideline} does not hold {v.where()} "
            f"({v.ratio:.2f}x): {v.advice}",
            v.records(), v.lhs, gain=1.0 - 1.0 / v.ratio, ratio=v.ratio,
            ratio_lo=min(c.lhs.lo / c.rhs_hi for c in v.checks),
            span=(v.checks[0].size, v.checks[-1].size), parties=(v.config,), violation=v))
    return out


def merged(found: list[Finding]) -> list[Finding]:
    """Findings that say the same thing of several benchmarks (one
    implementation faster over the same sizes in latency and roundtrip, say)
    become one, naming them all; then the list is ranked by gain."""
    out: list[Finding] = []
    by_key: dict[tuple[object, ...], int] = {}
    for f in found:
        if f.key and f.key in by_key:
            i = by_key[f.key]
            g = out[i]
            first = g.text.split(",", 1)
            out[i] = replace(g, text=f"{first[0]}, {f.bench},{first[1]}",
                             records=g.records + f.records, gain=max(g.gain, f.gain),
                             benches=(*(g.benches or (g.bench,)), f.bench))
            continue
        if f.key:
            by_key[f.key] = len(out)
        out.append(f)
    return sorted(out, key=lambda f: -f.gain)


def all_findings(series: Mapping[tuple[Config, str], Series],
                 screen: bool = False) -> list[Finding]:
    """Oversubscribed series (more ranks than cores) measure the scheduler,
    not the communication: no finding is drawn from them.  screen: the
    candidates of a diagnosis (faster_implementation)."""
    series = {k: s for k, s in series.items() if not k[0].oversubscribed}
    return merged(faster_implementation(series, screen) + bandwidth_drops(series)
                  + protocol_switches(series) + collectives_vs_sends(series)
                  + guideline_violations(series))


def path_differences(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    """One implementation's GPU paths (and host memory) against each other,
    for the GPU section: where the data lives is fixed by the program, so
    these are never a recommendation of the findings."""
    series = {k: s for k, s in series.items() if not k[0].oversubscribed}
    return merged(faster_implementation(series, paths=True))


def attribute(found: Sequence[Finding], series: Mapping[tuple[Config, str], Series],
              facts: Mapping[Config, causes.Facts], machine: causes.Machine) -> list[Finding]:
    """Each implementation difference and each bandwidth drop with the
    mechanism that explains it (causes.py), said in its text."""
    out = []
    # where each configuration's latency steps (protocol findings): a switch
    # measured, for the differences no variable read explains
    breaks = {f.parties[0]: f.span for f in found if f.kind == "protocol" and f.span}
    for f in found:
        cause = None
        if f.kind == "faster" and len(f.parties) == 2 and f.span:
            w, lo = f.parties
            sizes = sorted(series.get((lo, f.bench), {}))
            cause = causes.of_faster(w, lo, f.span, sizes, facts, f.benches or (f.bench,),
                                     breaks)
        elif f.kind == "drop" and f.span and (s := series.get((f.parties[0], f.bench))):
            a, b = f.span
            k = _per_size(f.bench, f.parties[0].np)
            cause = causes.of_drop(f.parties[0], f.bench, a, b, k * a / s[a].median, s, facts,
                                   machine, breaks, streams=k)
        if cause is None:
            out.append(f)
            continue
        # the screening names a mechanism to test, not a cause: the diagnosis
        # establishes one only where its setting closes the gap
        said = ("to test" if cause.kind in ("limit", "algorithm", "break") else
                "not explained" if cause.kind == "unexplained" else "cause")
        out.append(replace(f, cause=cause, text=f"{f.text}; {said}: {cause.text}"))
    return out


def explained(store, series: Mapping[tuple[Config, str], Series],
              run_ids: Sequence[int], mode_ns: float | None = None, screen: bool = False
              ) -> tuple[list[Finding], dict[str, causes.Fix]]:
    """Every finding with its cause, from what the store recorded about the
    jobs (their control variables) and the machine (the probe taken with
    them), and the fixes measured for those causes.  `mode_ns`: the machine
    mode the series come from; a fix measured in another mode is not
    carried over (the host's modes can reverse an effect)."""
    prow = store.probe_for(run_ids)
    probe = json.loads(prow["data"]) if prow is not None else None
    found = attribute(all_findings(series, screen), series, causes.facts_of(store, series),
                      causes.machine_of(probe))
    fixes = {}
    for k, text in store.advice().items():
        try:
            fix = causes.Fix.from_json(text)
        except (ValueError, TypeError, KeyError):
            continue  # written by another version: the cause is said unmeasured
        if fix.mode_ns and mode_ns and not same_mode(fix.mode_ns, mode_ns):
            fix = replace(fix, verdict="skipped", reason=(
                f"in this host mode: the fix was measured with {fix.mode_ns:.0f} ns between "
                f"cores, these records with {mode_ns:.0f} ns"))
        fixes[k] = fix
    return found, fixes


def settings_of(c: Config) -> set[tuple[str, str]]:
    return set(c.settings)


def kind_of(f: Finding) -> str | None:
    """Which conclusion a finding can lead to; None: information only (a
    drop at a cache boundary or at the sweep's first size carries no
    claim)."""
    if f.cause is not None and f.cause.key:
        return "cause"
    if f.cause is not None and not f.cause.claims:
        return None
    if f.kind == "faster" and len(f.parties) == 2 and causes.cold_pair(*f.parties):
        return "buffers"  # how the data was held, whichever side won: never a choice
    if f.kind == "faster" and len(f.parties) == 2:
        w, lo = f.parties
        if all(b.endswith("_sends") for b in (f.benches or (f.bench,))):
            return None  # commscope's own reference patterns: no call a user makes
        if w.implementation != lo.implementation:
            return "implementation"
        return "setting" if settings_of(w) != settings_of(lo) else "variant"
    if f.kind == "collective-slower":
        return "collective"
    if f.kind in ("drop", "guideline"):
        return "anomaly"
    return None


def saving(f: Finding) -> str:
    """The time per call a finding's other side takes less, where that side
    is a measured choice (another library, setting or variant, both sides
    measured: kind_of, as the summary reads it): not between hot, cold and
    evicted buffers (how the data was held), not where a cause names a
    setting that was not measured (the gap is not what the setting would
    save), not for commscope's own reference patterns."""
    choice = f.kind == "collective-slower" or (  # the hand-written call, measured beside it
        kind_of(f) in ("implementation", "setting", "variant"))
    return less_per_call(f.gain) if choice else ""


def less_per_call(gain: float) -> str:
    """A measured saving in words; under 2%, nothing."""
    return f"~{100 * gain:.0f}% less per call" if gain >= 0.02 else ""


def text(findings: list[Finding], limit: int | None = 10, verbose: bool = False) -> str:
    """The findings, those that save most first; past `limit`, a count;
    `verbose`: each with the ids of its records (commscope export finds them)."""
    if not findings:
        return "no statistically separated difference to report\n"
    lines = []
    shown = findings if limit is None else findings[:limit]
    for i, f in enumerate(shown, 1):
        recs = ",".join(str(r) for r in f.records[:12]) + ("..." if len(f.records) > 12 else "")
        save = f" ({s})" if (s := saving(f)) else ""
        lines.append(f"{i:>3}. [{f.kind}]{save} {f.text}"
                     + (f"\n     records: {recs}" if verbose else ""))
    if len(findings) > len(shown):
        lines.append(f"... and {len(findings) - len(shown)} more, each saving less "
                     "(commscope analyze findings --limit 0 lists them all)")
    return "\n".join(lines) + "\n"


def dominant_floor(rows: Sequence[Mapping[str, object]]) -> float | None:
    """The core-to-core floor of the machine mode the records were taken
    in: the only one, or the one that holds more than half of them (the
    rule aggregate keeps records by, repeats.pick_mode); None where no mode
    does, and the records of every mode were kept."""
    from .repeats import detect_modes, pick_mode

    floors = [float(r["floor_ns"]) for r in rows  # type: ignore[arg-type]
              if r["floor_ns"]]
    modes = detect_modes(floors)
    if len(modes) == 1:
        return modes[0].center_ns
    label = pick_mode(modes, "dominant")
    return next((m.center_ns for m in modes if m.label == label), None)
