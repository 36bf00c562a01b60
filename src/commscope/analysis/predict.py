"""Each communication phase of an application predicted from the models of
the same configuration: Hockney fits (piecewise, extrapolated with their
last piece) of the collective or point-to-point series that the phase is
made of, set against the phase as measured.

matmul (N, p ranks, blocks of r = ceil(N/p) rows):
  bcast_B  = T_bcast(8 N^2)          send_A  = T_scatter(8 r N)
  gather_C = T_gather(8 r N)         (Scatterv/Gatherv taken as their plain kin)
summa (a pr x pc grid, blocks of mr x mc = ceil(N/pr) x ceil(N/pc), panels nb):
  send_AB  = 2 (p-1) T_p2p(8 mr mc)  (rank 0 sends both blocks to each rank in turn)
             + 2 p T_copy(8 mr mc)   (and first copies each block, its own too, out
                                      of the whole matrix)
  bcast_A  = P T_bcast,pc(8 mr nb)    (P: the panels, nb at a time, none
  bcast_B  = P (T_bcast,pr(8 nb mc)    crossing an owner's block)
                + T_copy(8 nb mc))
                                     (the owner copies the panel out of its block
                                      while the others wait in the broadcast)
  gather_C = (p-1) T_p2p(8 mr mc)    (T_bcast,q: the bcast measured at q ranks)
             + p T_copy(8 mr mc)     (each block copied into the whole C)
  T_copy(m) = 2 m / the copy bandwidth the core measured in the same job
  (rank 0 copying alone, as the root does while the others wait; bytes read
  + written).
jacobi (a rank's block lx x ly, `iters` sweeps, a reduction every K):
  exchange = iters x (T_p2p(8 ly) [rows, when the grid has >1 process row]
                      + T_p2p(8 lx) [columns, when it has >1 process column])
  reduce   = ceil(iters / K) x T_allreduce(8)
where T_p2p is the one-way latency (all four transfers of a sweep are in
flight at once, so a sweep pays about one transfer per direction).

Data that comes from memory (matmul's matrices, summa's blocks) is
predicted from the same benchmark measured with cold buffers (--buffers
cold) where the store holds it.  A phase that follows a compute sweep over
more than the last-level cache (jacobi's halos and residual, summa's
panels) is predicted from the benchmark measured with --buffers evicted:
each operation timed alone after every rank has streamed over twice the
last-level cache, so that state other than the message data (code, TLB
entries, the library's data) is out of cache as well; the stream is not
sized to the phase's own working set (on the reference machine, 16 KiB one way
takes 3 us hot, 5 us cold and 14 us evicted).  A phase with no such series
falls back to hot buffers and says so.  A size beyond the largest measured
is not extrapolated: the prediction names the sweep to run.

To each phase's model is added the waiting the ranks' arrival causes, as
the core measures it where every rank reads one clock (skew_us: the most
any one rank waited for the last one in, summed over its entries into the
phase; the median over samples): the slowest rank's time is its wait plus
the transfer, which a micro-benchmark, synchronised before every call,
never shows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..store.sizes import human, human_bytes
from . import hockney
from .apps import parse_params, phases
from .series import Config, Point, Series, find
from .significance import MIN_CHANGE

MIN_TOLERANCE = 0.25  # the goal: within 25% where the machine is not oversubscribed


@dataclass(frozen=True)
class Prediction:
    config: Config
    bench: str
    size: int  # the application's N
    phase: str
    measured_us: float  # the slowest rank's (the models' own definition)
    predicted_us: float | None
    tolerance: float  # relative: the models' own uncertainty, at least MIN_TOLERANCE
    note: str = ""
    least_us: float | None = None  # the rank that waited least

    @property
    def ratio(self) -> float | None:
        return self.predicted_us / self.measured_us if self.predicted_us else None

    @property
    def verdict(self) -> str:
        r = self.ratio
        if r is None:
            return "no model"
        return "ok" if 1 / (1 + self.tolerance) <= r <= 1 + self.tolerance else "MISS"


@dataclass(frozen=True)
class Model:
    fit: hockney.Fit
    lo: int  # the measured range
    hi: int
    rel_ci: float  # median relative half-width of the points' intervals
    busy: bool = False  # some point was measured while other processes used the CPU

    def covers(self, size: float) -> bool:
        return size <= self.hi * 1.01

    def predict(self, size: float) -> float:
        return self.fit.predict(size)


def model(series: Series | None) -> Model | None:
    if not series:
        return None
    sizes = sorted(s for s in series if s > 0)
    if len(sizes) < 2:
        return None
    f = hockney.fit(sizes, [series[s].median for s in sizes])
    cis = sorted((series[s].hi - series[s].lo) / 2 / series[s].median for s in sizes)
    return Model(f, sizes[0], sizes[-1], cis[len(cis) // 2],
                 any(series[s].flagged for s in sizes))


def llc_of(probe: Mapping[str, object] | None) -> int | None:
    """The last-level cache a stored probe read (None: none, or unknown)."""
    v = (probe or {}).get("l3_bytes")
    return v if isinstance(v, int) and v > 0 else None


def llc_in(store: object, rows: Sequence[Mapping[str, object]]) -> int | None:
    """The last-level cache of the probe taken with these records' sweeps
    (store.probe_for), None where there is none."""
    import json

    prow = store.probe_for(int(r["run_id"]) for r in rows)  # type: ignore[attr-defined, call-overload]
    return llc_of(json.loads(prow["data"]) if prow is not None else None)


def _dims(np_: int, px: int, py: int) -> tuple[int, int]:
    """The core's grid (cs_grid2 in core/harness/cs.h): as square as can
    be, rows first and larger; given factors kept."""
    if px and py:
        return px, py
    if px:
        return px, np_ // px
    if py:
        return np_ // py, py
    best = (np_, 1)
    for a in range(1, int(math.isqrt(np_)) + 1):
        if np_ % a == 0:
            best = (np_ // a, a)
    return best


def rank_average(series: Mapping[tuple[Config, str], Series]
                 ) -> dict[tuple[Config, str], Series]:
    """The collectives' series by their rank-average time (Point.rank_avg),
    each point's interval scaled with it; points without one are left out."""
    out: dict[tuple[Config, str], Series] = {}
    for key, pts in series.items():
        avg = {s: Point(s, p.rank_avg, p.lo * p.rank_avg / p.median,
                        p.hi * p.rank_avg / p.median, p.result_id)
               for s, p in pts.items() if p.rank_avg and p.median > 0}
        if avg:
            out[key] = avg
    return out


def predict(app_rows: Sequence[Mapping[str, object]],
            series: Mapping[tuple[Config, str], Series],
            llc_bytes: int | None = None) -> list[Prediction]:
    """Every communication phase of the matmul and jacobi records given,
    from the series of the same configuration (implementation and its
    settings, process count, cluster).  `llc_bytes`: the last-level cache
    the probe read (None: unknown), which decides whether a block summa has
    just packed is still in cache when it is sent.  The broadcasts whose root
    turns over read the series' rank averages (rank_average) where stored,
    else the slowest rank's."""
    from .series import collect

    out: list[Prediction] = []
    apps = collect(app_rows)
    phases_of = {int(r["id"]): phases(r) for r in app_rows if r["phases"]}  # type: ignore[call-overload]
    params_of = {int(r["id"]): parse_params(r["params"]) for r in app_rows}  # type: ignore[call-overload, arg-type]
    row_of = {int(r["id"]): r for r in app_rows}  # type: ignore[call-overload]
    models: dict[tuple[object, ...], Model | None] = {}
    averages = rank_average(series)

    def m(cfg: Config, bench: str, ranks: int | None = None, buffers: str = "hot",
          stat: str = "max") -> Model | None:
        np_ = 2 if bench == "latency" else ranks or cfg.np
        over = cfg.oversubscribed if np_ == cfg.np else False
        key = (cfg.base_key or cfg.base or cfg.mpi, cfg.cluster, np_, over, bench, buffers, stat)
        if key not in models:
            models[key] = model(find(series if stat == "max" else averages, cfg, bench, np_,
                                     over, {} if buffers == "hot" else {"buffers": buffers}))
        return models[key]

    def pick(cfg: Config, bench: str, ranks: int | None, buffers: str
             ) -> tuple[Model | None, str]:
        """The slowest rank's model measured with `buffers`, else the hot
        one; and which."""
        mod = m(cfg, bench, ranks, buffers) if buffers != "hot" else None
        return (mod, buffers) if mod is not None else (m(cfg, bench, ranks, "hot"), "hot")

    for (cfg, bench), s in sorted(apps.items(), key=lambda kv: (kv[0][0].mpi, kv[0][0].np,
                                                                 kv[0][1])):
        for n, p in sorted(s.items()):
            if p.result_id is None or p.result_id not in phases_of:
                continue
            ph, par = phases_of[p.result_id], params_of[p.result_id]
            terms = _terms(bench, n, cfg.np, par, llc_bytes)
            for phase, parts in terms.items():
                # the slowest rank's time, as the collective benchmarks the
                # models come from define theirs; the rank that waited least
                # is shown beside it (a rooted collective over TCP returns on
                # the root long before the data has arrived, a gather's
                # senders long before the root has it)
                ranks = ph.get(phase, {}).get("ranks_us") or []
                measured = ph.get(phase, {}).get("max_us")
                if not measured:
                    continue
                total, notes, tol, cold_used = 0.0, [], MIN_TOLERANCE, False
                used: list[str] = []  # what the model holds, as it was read
                for coll, size, times, comm, buffers, stat in parts:
                    if coll == "copy":  # memory, at the rate measured in the job
                        row = row_of[p.result_id]
                        # the root copies while the others wait: its rate alone,
                        # where the record has it (older ones: every rank at once)
                        gbs = next((row[k] for k in ("copy1_gbs", "copy_gbs")
                                    if isinstance(row[k], int | float)
                                    and row[k] > 0), None)
                        if not isinstance(gbs, int | float) or not gbs > 0:
                            total = math.nan
                            notes.append("no copy bandwidth in the record")
                            break
                        total += times * 2.0 * size / (float(gbs) * 1e3)
                        used.append("copies")
                        continue
                    mod, held = pick(cfg, coll, comm, buffers)
                    averaged = False
                    if stat == "avg" and mod is not None:
                        # the root turns over: each rank's time is the average, of the
                        # series the slowest rank's figure would come from (its buffers)
                        avg = m(cfg, coll, comm, held, "avg")
                        if avg is None:
                            notes.append(f"{coll}: the slowest rank's figure for a root that "
                                         "turns over (no rank average stored): an overcount")
                        elif avg.covers(size):  # else the slowest rank's may reach further
                            mod, averaged = avg, True
                    at = f" at {comm} ranks" if comm and comm != cfg.np else ""
                    if mod is None:
                        total = math.nan
                        notes.append(f"no {coll} series{at} for this configuration: "
                                     f"commscope run --for {bench},N={n} measures what this "
                                     "prediction reads")
                        break
                    if not mod.covers(size):
                        # never beyond the largest size measured: the sweep to run
                        total = math.nan
                        notes.append(
                            f"needs {coll}{at} at {_mib(size)}, measured up to "
                            f"{human_bytes(mod.hi)}: commscope run --bench {coll} --np "
                            f"{comm or (2 if coll == 'latency' else cfg.np)} --sizes "
                            f"{human(mod.lo)}:{human(_pow2_above(size))}"
                            f"{'' if buffers == 'hot' else ' --buffers ' + buffers} (or --for "
                            f"{bench},N={n})")
                        break
                    if held != buffers:
                        notes.append(f"{coll}: hot-buffer model for " + (
                            "data that comes from memory" if buffers == "cold" else
                            "a phase after a compute sweep") + f" (measure it with --buffers "
                            f"{buffers})")
                    if mod.busy:
                        notes.append(f"{coll}: from records taken while other processes used "
                                     "the CPU (flagged noisy; no cleaner ones were stored)")
                    cold_used = cold_used or held != "hot"
                    used.append(f"{coll} ({held}{', mean of rank averages' if averaged else ''})")
                    total += times * mod.predict(size)
                    tol = max(tol, mod.rel_ci + mod.fit.rms_rel_error)
                skew = ph.get(phase, {}).get("skew_us")
                if not math.isnan(total) and isinstance(skew, int | float) and skew > 0:
                    # the first rank in waits for the last: measured in the phase
                    total += float(skew)
                    if skew >= MIN_CHANGE * total:  # a smaller share is not said
                        notes.append(f"{skew / 1e3:.3f} ms of it the ranks' arrival skew, "
                                     "measured in the run")
                else:
                    skew = 0.0
                if bench == "jacobi" and phase == "exchange" and par.get("mode") == "overlap":
                    notes.append("overlapped with the interior: the wait is what shows")
                if not math.isnan(total) and total > 0:
                    notes.extend(_why(total, float(measured), min(ranks) if ranks else None,  # type: ignore[arg-type]
                                      tol, cfg, parts, cold_used, float(skew),
                                      ", ".join(sorted(set(used)))))
                if cfg.oversubscribed:
                    notes.append("oversubscribed: correctness only")
                out.append(Prediction(cfg, bench, n, phase, float(measured),  # type: ignore[arg-type]
                                      None if math.isnan(total) else total, tol,
                                      "; ".join(notes), min(ranks) if ranks else None))
    return out


def _why(pred: float, measured: float, least: float | None, tol: float, cfg: Config,
         parts: Sequence[Term], cold_used: bool = False, skew: float = 0.0,
         held: str = "") -> list[str]:
    """Why a phase misses, where the record itself shows it.  `skew`: the
    arrival skew already in `pred`; `held`: what the model was made of, as
    read (the series and their buffers, copies)."""
    lo, hi = 1 / (1 + tol), 1 + tol
    if lo <= pred / measured <= hi:
        return []
    gap = f"{(measured - pred) / 1e3:.3f} ms"
    if skew >= MIN_CHANGE * pred and pred < measured:
        return [f"{measured / pred:.1f}x the model with the ranks' arrival skew: {gap} of the "
                f"phase is in neither (the model holds {held}; the skew is the arrivals' as "
                "measured)"]
    if least and lo <= (pred - skew) / least <= hi:
        return ["the rank that waited least matches the model without the skew: the slowest "
                "one waited for the others (skew carried from the phase before, or a root "
                "returning early)"]
    big = max(t.size for t in parts)
    if pred < measured and cfg.cluster == "local" and big >= 1 << 20 and cold_used:
        return [f"{measured / pred:.1f}x the model, with no material skew measured: {gap} of "
                f"the phase is not in the model (it holds {held})"]
    if pred < measured and cfg.cluster == "local" and big >= 1 << 20 and any(
            t.buffers == "cold" for t in parts):
        return ["slower than the model: the application's matrices come cold from memory, the "
                "hot benchmark resends one buffer from cache (measure it with --buffers cold)"]
    if pred < measured and big < 1 << 16 and not skew:
        return ["small messages slower than the model, and no arrival skew in the record: "
                "each may wait for the slower rank, which a ping-pong never does"]
    return []


class Term(NamedTuple):
    """One part of a phase's model."""
    series: str  # the benchmark (or copy: memory, at the job's own rate)
    size: float  # bytes
    times: float  # how many times the phase does it
    comm: int | None  # the communicator's ranks, where not the job's
    buffers: str  # hot (data just written), cold (from memory), evicted (after a sweep)
    # max: the slowest rank's time a call (a fixed root); avg: the rank
    # average, for a broadcast whose root turns over the communicator
    # evenly (each rank is the root of 1/q of the calls: its time is the
    # average of the root's and the others')
    stat: str = "max"


def _mib(size: float) -> str:
    """A phase's message in words: 8 B, 16 KiB, 30.5 MiB (not 31250 KiB)."""
    n = int(size)
    return human_bytes(n) if n < 1 << 20 or n % (1 << 20) == 0 else f"{n / 2**20:.1f} MiB"


def _pow2_above(size: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(size, 1))))



def _firsts(n: int, p: int) -> list[int]:
    """Where each of p blocks of n starts (cs_block: the first n mod p get
    one more)."""
    base, extra = divmod(n, p)
    return [k * base + min(k, extra) for k in range(p)]


def _panels(n: int, pr: int, pc: int, nb: int) -> int:
    """The panels summa's loop broadcasts: nb at a time, a panel never
    crossing a block boundary of the process rows or columns (N=4000,
    nb=64 on a 2 x 1 grid: 32 per owner, 64, not ceil(4000/64) = 63)."""
    cuts = sorted({*_firsts(n, pr), *_firsts(n, pc), n})
    return sum(math.ceil((b - a) / nb) for a, b in zip(cuts, cuts[1:], strict=False) if b > a)


def _terms(bench: str, n: int, np_: int, par: Mapping[str, str],
           llc_bytes: int | None = None) -> dict[str, list[Term]]:
    """phase -> [(series, message bytes, how many times, the communicator's
    ranks when not the job's)]."""
    if np_ < 2:
        return {}
    if bench == "matmul":
        rows = math.ceil(n / np_)
        return {"bcast_B": [Term("bcast", 8.0 * n * n, 1.0, None, "cold")],
                "send_A": [Term("scatter", 8.0 * rows * n, 1.0, None, "cold")],
                "gather_C": [Term("gather", 8.0 * rows * n, 1.0, None, "cold")]}
    if bench == "summa":
        pr, pc = _dims(np_, 0, 0)
        mr, mc = math.ceil(n / pr), math.ceil(n / pc)
        nb = min(int(par.get("nb", 64)), n)
        panels = float(_panels(n, pr, pc, nb))
        block = 8.0 * mr * mc
        # a block is packed (or computed) just before it is sent: it is still
        # in cache where it fits there; the copies read and write the whole
        # matrices, from memory.  Each panel is broadcast after the product
        # of the one before has streamed the rank's block of C.
        cold = "cold" if llc_bytes is None or block > llc_bytes else "hot"
        out: dict[str, list[Term]] = {
            "send_AB": [Term("latency", block, 2.0 * (np_ - 1), None, cold),
                        Term("copy", block, 2.0 * np_, None, "cold")],
            "gather_C": [Term("latency", block, float(np_ - 1), None, cold),
                         Term("copy", block, float(np_), None, "cold")]}
        # The owner copies its panel out of its block inside the phase, and
        # the others wait in the broadcast for it: every rank's phase holds
        # the copy (B's rows are contiguous; A's panel is strided, not modelled
        # as a copy)
        if pc > 1:
            out["bcast_A"] = [Term("bcast", 8.0 * mr * nb, panels, pc, "evicted", "avg")]
        if pr > 1:
            out["bcast_B"] = [Term("bcast", 8.0 * nb * mc, panels, pr, "evicted", "avg"),
                              Term("copy", 8.0 * nb * mc, panels, None, "cold")]
        return out
    if bench == "jacobi":
        px, py = _dims(np_, int(par.get("px", 0)), int(par.get("py", 0)))
        weak = par.get("scale") == "weak"
        nx, ny = (n * px, n * py) if weak else (n, n)
        lx, ly = math.ceil(nx / px), math.ceil(ny / py)
        iters, every = int(par.get("iters", 20)), int(par.get("reduce_every", 10))
        exchange: list[Term] = []
        if px > 1:
            exchange.append(Term("latency", 8.0 * ly, float(iters), None, "evicted"))
        if py > 1:
            exchange.append(Term("latency", 8.0 * lx, float(iters), None, "evicted"))
        jac: dict[str, list[Term]] = {}
        if exchange:
            jac["exchange"] = exchange
        jac["reduce"] = [Term("allreduce", 8.0, float(math.ceil(iters / every)), None, "evicted")]
        return jac
    return {}


@dataclass(frozen=True)
class Need:
    """A series a prediction needs: the benchmark, up to which size, at how
    many ranks, with which buffers."""
    bench: str
    up_to: int  # the power of two at or above the largest message
    np: int
    buffers: str  # hot, cold or evicted


def needs(bench: str, ns: Sequence[int], np_: int, par: Mapping[str, str] | str,
          llc_bytes: int | None = None) -> list[Need]:
    """What `predict` reads for application `bench` at each N in `ns` on np_
    ranks (its parameters `par`, or K=V;K=V as --param takes them), one Need
    per benchmark, ranks and buffers, each up to the largest message any of
    the phases moves (never extrapolated).  measure.plan.build_plan plans
    --for's series with it."""
    if isinstance(par, str):
        par = parse_params(par)
    top: dict[tuple[str, int, str], int] = {}
    for n in ns:
        for parts in _terms(bench, n, np_, par, llc_bytes).values():
            for series, size, _times, comm, buffers, _stat in parts:
                if series == "copy":  # measured by the application itself
                    continue
                key = (series, 2 if series == "latency" else comm or np_, buffers)
                top[key] = max(top.get(key, 1), _pow2_above(size))
    return [Need(b, up, r, c) for (b, r, c), up in sorted(top.items())]


def table(rows: Sequence[Prediction]) -> str:
    lines = ["measured: the slowest rank's median (as the micro-benchmarks define theirs); "
             "least: the rank that waited least",
             f"{'configuration':<40} {'bench':<7} {'N':>6} {'phase':<9} {'measured_ms':>11} "
             f"{'least_ms':>9} {'predicted_ms':>12} {'pred/meas':>9}  verdict  note"]
    for p in rows:
        pred = f"{p.predicted_us / 1e3:.3f}" if p.predicted_us else "-"
        ratio = f"{p.ratio:.2f}" if p.ratio else "-"
        least = f"{p.least_us / 1e3:.3f}" if p.least_us else "-"
        lines.append(f"{p.config.label():<40} {p.bench:<7} {p.size:>6} {p.phase:<9} "
                     f"{p.measured_us / 1e3:>11.3f} {least:>9} {pred:>12} {ratio:>9}  "
                     f"{p.verdict:<7}  {p.note}")
    n_ok = sum(p.verdict == "ok" for p in rows)
    n_miss = sum(p.verdict == "MISS" for p in rows)
    lines.append(f"{len(rows)} phases: {n_ok} within the models' uncertainty (at least "
                 f"{MIN_TOLERANCE:.0%}), {n_miss} missed, {len(rows) - n_ok - n_miss} without "
                 "a model")
    return "\n".join(lines) + "\n"
