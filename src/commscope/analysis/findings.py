"""What the data shows, in sentences, each with its numbers and the records
behind it.  No finding without a statistically separated difference: every
comparison here needs non-overlapping 95% confidence intervals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..sizes import human_bytes
from . import crossover, hockney
from .series import Config, Point, Series, separated

BANDWIDTH = {"bw", "bibw", "sendloop"}
DROP_MIN = 0.10  # a drop smaller than 10% is not worth a sentence
MIN_FACTOR = 1.05  # nor is an implementation faster by less than 5%
SKIP_FASTER = {"loggp_1", "loggp_n", "loggp_nd", "loggp_ndr"}  # model inputs, not results


@dataclass(frozen=True)
class Finding:
    kind: str  # faster | drop | protocol | collective-slower
    text: str
    records: tuple[int, ...] = field(default=())
    bench: str = ""  # the benchmark whose figure shows it
    xrow: crossover.Row | None = None  # collective-slower: the comparison behind it


def _ranges(marks: list[tuple[int, str | None]]) -> list[tuple[str, list[int]]]:
    """Runs of consecutive sizes with the same label; None breaks a run."""
    runs: list[tuple[str, list[int]]] = []
    prev: str | None = None
    for s, lab in marks:
        if lab is not None and lab == prev:
            runs[-1][1].append(s)
        elif lab is not None:
            runs.append((lab, [s]))
        prev = lab
    return runs


def faster_implementation(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    out: list[Finding] = []
    groups: dict[tuple[int, str, str], dict[str, Series]] = {}
    for (cfg, bench), s in series.items():
        if bench not in SKIP_FASTER:
            groups.setdefault((cfg.np, cfg.cluster, bench), {})[cfg.mpi] = s
    for (np_, cluster, bench), by_mpi in sorted(groups.items()):
        mpis = sorted(by_mpi)
        for i, a in enumerate(mpis):
            for b in mpis[i + 1:]:
                sa, sb = by_mpi[a], by_mpi[b]
                marks: list[tuple[int, str | None]] = []
                for s in sorted(set(sa) & set(sb)):
                    sign = separated(sa[s], sb[s])  # time: lower is faster
                    ratio = max(sa[s].median, sb[s].median) / min(sa[s].median, sb[s].median)
                    if ratio < MIN_FACTOR:
                        sign = 0
                    marks.append((s, a if sign < 0 else b if sign > 0 else None))
                for winner, sizes in _ranges(marks):
                    if len(sizes) < 2:
                        continue  # one size alone is not a range
                    loser = b if winner == a else a
                    ratios = sorted(by_mpi[loser][s].median / by_mpi[winner][s].median
                                    for s in sizes)
                    med = ratios[len(ratios) // 2]
                    recs = tuple(p.result_id for s in sizes for p in (sa[s], sb[s])
                                 if p.result_id is not None)
                    out.append(Finding(
                        "faster",
                        f"{bench}, {np_} processes, {cluster}: {winner} is faster than {loser} "
                        f"from {human_bytes(sizes[0])} to {human_bytes(sizes[-1])} "
                        f"(median ratio {med:.2f}x, up to {ratios[-1]:.2f}x)",
                        recs, bench))
    return out


def _bw(p: Point, size: int, k: float) -> tuple[float, float, float]:
    """Bandwidth (median, low, high) from a per-op time and its CI."""
    return k * size / p.median, k * size / p.hi, k * size / p.lo


def bandwidth_drops(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    """Seed 003 saw Open MPI's bandwidth fall between neighbouring sizes."""
    out: list[Finding] = []
    for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][1])):
        if bench not in BANDWIDTH:
            continue
        k = 2.0 if bench == "bibw" else 1.0
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
                    bench))
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
        out.append(Finding(
            "protocol",
            f"latency under {cfg.label()}: the protocol changes between "
            f"{human_bytes(left.last_size)} and {human_bytes(right.first_size)} "
            f"(alpha {left.alpha_us:.2f} -> {right.alpha_us:.2f} us, "
            f"beta {left.beta_gb_per_s:.1f} -> {right.beta_gb_per_s:.1f} GB/s)",
            tuple(p.result_id for p in s.values() if p.result_id is not None), bench))
    return out


def collectives_vs_sends(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    out: list[Finding] = []
    for row in crossover.analyze(series):
        v = row.verdict
        if v.scenario not in (1, 3, 4):
            continue
        sizes = [s for s, m in v.marks if m == "H"]
        coll = row.coll
        recs = tuple(coll[s].result_id for s in sizes if coll[s].result_id is not None)
        if v.scenario == 1:
            where = "at every measured size"
        elif len(sizes) == 1:
            where = f"at {human_bytes(sizes[0])}"
        else:
            where = f"from {human_bytes(sizes[0])} to {human_bytes(sizes[-1])}"
        out.append(Finding(
            "collective-slower",
            f"{crossover.MPI_NAME[row.collective]} under {row.config.label()} is slower than "
            f"{row.reference} {where}: {v.advice(row.collective, row.reference)}",
            recs, row.collective, row))
    return out


def all_findings(series: Mapping[tuple[Config, str], Series]) -> list[Finding]:
    """Oversubscribed series (more ranks than cores) measure the scheduler,
    not the communication: no finding is drawn from them."""
    series = {k: s for k, s in series.items() if not k[0].oversubscribed}
    return (faster_implementation(series) + bandwidth_drops(series) + protocol_switches(series)
            + collectives_vs_sends(series))


def text(findings: list[Finding]) -> str:
    if not findings:
        return "no statistically separated difference to report\n"
    lines = []
    for i, f in enumerate(findings, 1):
        recs = ",".join(str(r) for r in f.records[:12]) + ("..." if len(f.records) > 12 else "")
        lines.append(f"{i:>3}. [{f.kind}] {f.text}\n     records: {recs}")
    return "\n".join(lines) + "\n"
