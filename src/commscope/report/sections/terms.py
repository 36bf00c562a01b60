"""The words the page uses, defined once."""

from __future__ import annotations

from ...analysis.repeats import MODE_GAP
from ..page import Term

# Each term as the analysis means it (analysis/crossover.py, analysis/repeats.py,
# docs/collectives.md), for the place on the page a reader meets it.
STUDY_DOC = "docs/collectives.md"


def crossover_terms(min_change: str) -> list[Term]:
    """The words of the table of collectives against sends."""
    return [
        Term("H, L and =", "term-marks",
             "at one message size, H: the collective is surely slower than what it is set "
             "against; L: surely faster; =: not told apart (the 95% intervals between runs "
             f"overlap, the medians are less than {min_change} apart, or the size is the only "
             "one among its neighbours to be separated: a claim needs two neighbouring sizes, "
             "and the first or last size compared alone is none either)."),
        Term("short and long", "term-short-long",
             "the verdict for short messages is the mark of the first size told apart, the "
             "verdict for long messages that of the last; sizes not told apart decide "
             "neither."),
        Term("changing length", "term-changing-length",
             "where the verdict changes from the short-message side to the long-message side "
             "(the crossover), claimed only when the sizes told apart change mark exactly "
             "once: the first size surely on the long-message side, or the span of sizes "
             "between the two sides where nothing is told apart. Empty where none is "
             "claimed."),
        Term("scenario", "term-scenario",
             "the commodity-cluster study's four cases, short then long: 1: H/H, the "
             "collective is slower at short and long messages; 2: L/L, faster at both; 3: H "
             "then L, slower for short messages and faster for long ones; 4: L then H, faster "
             "for short and slower for long. Mixed: the marks change more than once, and no "
             "crossover is claimed; empty: no size is told apart."),
        Term("hand-written equivalent", "term-hand-written",
             "a benchmark whose name ends in _sends (bcast_sends, reduce_sends, gather_sends, "
             "scatter_sends, alltoall_sends): the collective written by hand from "
             "point-to-point sends (the root sends to, or receives from, every process in "
             "turn; the hand-made alltoall posts every receive, then sends to every process "
             "in a rotated order), computing the same result and validated the same way as "
             "the collective. Only these are ever advised instead of a collective."),
        Term("equivalent sends (k x MPI_Send)", "term-equivalent-sends",
             "the commodity-cluster study's count of the sends a collective stands for (n-1 "
             "for bcast, reduce, gather and scatter, n(n-1) for alltoall, with n processes), "
             "priced from the measured one-way latency: a reference for the collective's "
             "overhead, never advice (a send combines no data, and a sum of latencies is no "
             "measured program)."),
        Term("the commodity-cluster study", "term-study",
             "the study whose comparison of each collective with its equivalent sends, H/L "
             "marks and four scenarios this section follows; commscope's source describes it "
             f"in {STUDY_DOC}, section \"Against the equivalent sends (the commodity-cluster "
             "study)\"."),
    ]


def terms(min_change: str) -> list[Term]:
    """The words the findings and tables use, for the page's glossary (those
    of the crossover table are defined above it: crossover_terms)."""
    out = [
        Term("point", "term-point",
             "one configuration, benchmark and message size: the median over its "
             "repetitions (separate launches of the same job, interleaved with the other "
             "configurations')."),
        Term("±, bands and intervals", "term-interval",
             "two 95% intervals from the spread of the combined runs' medians (Student's t "
             "on their logarithms), never narrower than one run's own interval. The tables' "
             "intervals say where a next run's figure is expected (a prediction interval, "
             "about twice as wide as the other with three runs), reaching the figures of the "
             "point's runs taken in another machine mode, since a next run may be taken in "
             "that state. The bands of the figures, and every comparison, use the interval "
             "of the typical figure, which runs measured together can be compared by. With "
             "three runs a wide interval is what three runs allow, not an error; more "
             "repetitions (--repeat) narrow it. A point combines the runs measured in its "
             "machine mode and, where a clean run exists, without other processes on the "
             "CPU: where that leaves one or two runs, the tables' interval comes from the "
             "spread of its configuration's points of the benchmark near its size, pooled "
             "(holding its own runs), or else from that run's own "
             "interval (which does not hold from one run to the next on a virtual machine) "
             "or the two runs' range; the tables and the export mark such points (¹, ²)."),
        Term("told apart (separated)", "term-separated",
             "two figures whose 95% intervals do not overlap and whose medians differ by "
             f"{min_change} or more; \"not separated\" and \"not told apart\": no claim "
             "either way."),
        Term("floor and host mode", "term-floor",
             "the floor is the time one cache line takes from one core to another, one way, "
             "measured before every record (the core-to-core floor). On a virtual machine the "
             "host moves the virtual CPUs, and the floor jumps between levels that last for "
             "seconds (hyper-threads of one core, other cores, other sockets); each level is "
             f"a host mode (machine mode), floors more than {MODE_GAP:g}x apart being "
             "different ones. A comparison between configurations is drawn only from records "
             "of one mode: across modes it would measure the host, not the MPI."),
        Term("processes", "term-processes",
             "the MPI processes of one job (MPI calls them ranks), one per core unless "
             "marked oversubscribed."),
    ]
    return out


