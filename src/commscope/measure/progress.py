"""How far a sweep is: a tqdm bar on a terminal, a line per job elsewhere."""

from __future__ import annotations

import sys

from tqdm import tqdm

LABEL_WIDTH = 40  # of the current job's label on the bar: the rest is the bar and the time left


class Progress:
    """A progress bar with the time left on a terminal (tqdm's estimate),
    one line per finished job elsewhere (a pipe, a log, CI, the tests):
    `[3/6] mpich 19 benchmarks np=2 #2: ok`.  On a terminal the same line
    is printed above the bar, so nothing the log would hold is lost.

    `total` may grow while jobs run (jobs measured again, a search's extra
    rounds) or shrink (candidates dropped): the bar follows it."""

    def __init__(self, total: int, stream=None, enabled: bool = True) -> None:
        stream = sys.stderr if stream is None else stream
        self._total, self.done, self.stream, self.enabled = total, 0, stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self._bar: tqdm | None = None  # drawn at the first job, closed when all are done

    @property
    def total(self) -> int:
        return self._total

    @total.setter
    def total(self, value: int) -> None:
        self._total = value
        if self._bar is not None:
            self._bar.total = max(value, self.done)
            self._bar.refresh()

    def _open(self, desc: str = "") -> tqdm:
        if self._bar is None:
            self._bar = tqdm(total=max(self._total, self.done), initial=self.done, desc=desc,
                             file=self.stream, unit="job", leave=False, dynamic_ncols=True)
        return self._bar

    def start(self, label: str) -> None:
        if not self.tty:
            return
        short = label if len(label) <= LABEL_WIDTH else label[:LABEL_WIDTH - 3] + "..."
        desc = f"{short:<{LABEL_WIDTH}}"
        self._open(desc).set_description_str(desc, refresh=True)

    def end(self, label: str, status: str, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        line = f"[{self.done}/{self.total}] {label}: {status}{note}"
        if not self.tty:
            self.stream.write(line + "\n")
            self.stream.flush()
            return
        bar = self._open()
        if bar.total is not None and bar.total < self.done:
            bar.total = self.done
        bar.update(1)
        bar.write(line, file=self.stream)  # above the bar, which is drawn again below it
        if self.done >= self.total:
            self.close()

    def close(self) -> None:
        """Take the bar off the terminal (the lines above it stay); a later
        job, where the total grew, draws a new one."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
