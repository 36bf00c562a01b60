"""The findings the page leads with after the first screen: each with its
anchor and the figure it points at."""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis import crossover, findings
from .against_sends import xfig_id
from .common import COLLECTIVES, LEAD_FINDINGS, P2P


def finding_anchor(f: findings.Finding, xrows: list[crossover.Row]) -> str:
    """The figure that shows a finding; the section, for benchmarks that
    have no figure of their own (the hand-written *_sends versions)."""
    if f.xrow is not None and f.xrow in xrows:
        return xfig_id(f.xrow, xrows.index(f.xrow))
    if f.bench in {b for b, *_ in P2P} or f.bench in COLLECTIVES:
        return f"fig-{f.bench}"
    return "crossover" if xrows else "findings"


def finding_view(i: int, f: findings.Finding, xrows: list[crossover.Row],
                 n_recs: int = 20) -> dict[str, object]:
    recs = ", ".join(str(x) for x in f.records[:n_recs]) + ("…" if len(f.records) > n_recs
                                                             else "")
    return {"id": f"finding-{i}", "kind": f.kind, "text": f.text, "recs": recs,
            "save": f"({s})" if (s := findings.saving(f)) else "",
            "anchor": finding_anchor(f, xrows)}


def findings_section(found: Sequence[findings.Finding], xrows: list[crossover.Row]
                     ) -> dict[str, object]:
    """Every finding, those that save most first: the implementation
    comparisons in a table of their own, the others as sentences, past
    LEAD_FINDINGS folded away.  Ids follow the order of `found`."""
    views = [finding_view(i, f, xrows, 20 if f.kind != "faster" else 8)
             for i, f in enumerate(found)]
    return {"lead": [v for v, f in zip(views, found, strict=True) if f.kind != "faster"],
            "faster": [v for v, f in zip(views, found, strict=True) if f.kind == "faster"],
            "shown": LEAD_FINDINGS}


