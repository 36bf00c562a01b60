"""What a report section is made of, and the folder it is written to.

Sections hand the template plain values (text, table cells, figure
references); the template's environment escapes every one of them, so no
section writes markup."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from .figures import Figure, Grid, render_grid_svg, render_svg


@dataclass(frozen=True)
class Heading:
    text: str
    id: str = ""
    tag: ClassVar[str] = "h3"


@dataclass(frozen=True)
class Para:
    text: str
    css: str = ""
    tag: ClassVar[str] = "p"


@dataclass(frozen=True)
class Pre:
    text: str
    tag: ClassVar[str] = "pre"


@dataclass(frozen=True)
class Fold:
    """A table cell of one line with the whole text folded under it (a
    library's version: its first line, and every line it printed)."""

    line: str
    text: str
    tag: ClassVar[str] = "fold"


def fold(text: str) -> str | Fold:
    """The text's first line, the rest folded away where there is more."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    first = " ".join(lines[0].split()) if lines else ""
    return first if len(lines) <= 1 else Fold(first, text.strip())


@dataclass(frozen=True)
class Term:
    """A word the page uses, and what it means here."""

    word: str
    id: str
    meaning: str


@dataclass(frozen=True)
class Table:
    head: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    num: frozenset[int] = frozenset()  # columns of figures, right-aligned
    tag: ClassVar[str] = "table"


def table(head: Sequence[str], rows: Sequence[Sequence[object]], num: Sequence[int] = ()
          ) -> Table:
    return Table(tuple(head), tuple(tuple("" if v is None else v for v in r) for r in rows),
                 frozenset(num))


@dataclass(frozen=True)
class FigRef:
    fig_id: str
    title: str
    caption: str
    anchors: tuple[str, ...] = ()  # the panels' own ids, for links to one of them
    css: str = ""
    tag: ClassVar[str] = "figure"


Item = Heading | Para | Pre | Table | FigRef


@dataclass
class Page:
    """The report's folder: figures are written as they are made, and every
    plotted series is listed in figures.json (each panel of small multiples
    under its own id) so that tests can hold each point to the store."""

    out: Path
    plotted: list[dict[str, object]] = field(default_factory=list)
    # one colour per configuration across the report's figures (figures._colours)
    colours: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        (self.out / "fig").mkdir(parents=True, exist_ok=True)

    def _list(self, fig: Figure, grid: str = "") -> None:
        entry: dict[str, object] = {"id": fig.fig_id, "title": fig.title,
                                    "lines": [ln.__dict__ for ln in fig.lines]}
        if grid:
            entry["grid"] = grid
        self.plotted.append(entry)

    def figure(self, fig: Figure, caption: str) -> FigRef | None:
        if not fig.lines:
            return None
        (self.out / "fig" / f"{fig.fig_id}.svg").write_text(render_svg(fig, self.colours))
        self._list(fig)
        return FigRef(fig.fig_id, fig.title, caption)

    def grid(self, grid: Grid, caption: str) -> FigRef | None:
        panels = [p for p in grid.panels if p.lines]
        if not panels:
            return None
        g = Grid(grid.fig_id, grid.title, panels, grid.sharey, grid.cols)
        (self.out / "fig" / f"{g.fig_id}.svg").write_text(render_grid_svg(g, self.colours))
        for p in panels:
            self._list(p, g.fig_id)
        return FigRef(g.fig_id, g.title, caption, tuple(p.fig_id for p in panels), "grid")

    def write_index(self) -> None:
        (self.out / "figures.json").write_text(json.dumps(self.plotted))


def items(*xs: Item | None) -> list[Item]:
    """The items that exist (a figure with no line is None)."""
    return [x for x in xs if x is not None]
