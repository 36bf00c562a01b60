"""How far a sweep is: a tqdm bar on a terminal, a line per job elsewhere."""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

# no monitor thread beside the bar: `matrix --at-once` forks a process a job, and a
# thread holding a lock at a fork leaves the child that lock held
tqdm.monitor_interval = 0

LABEL_WIDTH = 40  # of the current job's label on the bar: the rest is the bar and the time left


class Progress:
    """A progress bar with the time left on a terminal (tqdm's estimate),
    one line per finished job elsewhere (a pipe, a log, CI, the tests):
    `[3/6] mpich 19 benchmarks np=2 #2: ok`.  On a terminal only a job that
    did not end well leaves a line above the bar; the bar itself goes when
    its phase ends, and a phase with a `name` then leaves one line saying
    what it did (`sweep: 13 jobs, all ok (36 s)`), on a pipe too.  `each`
    False: no line per item anywhere, the summary only (the report's
    figures).

    `failures` False: a job that failed leaves no line either (a
    diagnosis's trials: a setting the library refuses is one of its
    results, said in its conclusions and stored; on the first screen of
    `make run` they were 23 of 67 lines).

    `total` may grow while jobs run (jobs measured again, a search's extra
    rounds) or shrink (candidates dropped): the bar follows it."""

    GOOD = ("ok", "drawn")  # what an item that ended well says

    def __init__(self, total: int, stream=None, enabled: bool = True, name: str = "",
                 each: bool = True, unit: str = "job", failures: bool = True) -> None:
        stream = sys.stderr if stream is None else stream
        self._total, self.done, self.stream, self.enabled = total, 0, stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.name, self.each, self.unit, self.failures = name, each, unit, failures
        self.counts: dict[str, int] = {}
        self._t0: float | None = None
        self._said = False  # the phase's summary line, printed once
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
                             file=self.stream, unit=self.unit, leave=False, dynamic_ncols=True)
        return self._bar

    def start(self, label: str) -> None:
        if self._t0 is None:
            self._t0 = time.monotonic()
        if not self.tty:
            return
        short = label if len(label) <= LABEL_WIDTH else label[:LABEL_WIDTH - 3] + "..."
        desc = f"{short:<{LABEL_WIDTH}}"
        self._open(desc).set_description_str(desc, refresh=True)

    def end(self, label: str, status: str, note: str = "") -> None:
        self.done += 1
        if self._t0 is None:
            self._t0 = time.monotonic()
        self.counts[status] = self.counts.get(status, 0) + 1
        if not self.enabled:
            return
        line = f"[{self.done}/{self.total}] {label}: {status}{note}"
        if not self.tty:
            if self.each or status not in self.GOOD:
                self.stream.write(line + "\n")
                self.stream.flush()
            return
        bar = self._open()
        if bar.total is not None and bar.total < self.done:
            bar.total = self.done
        bar.update(1)
        if (status not in self.GOOD and self.failures) or note:
            bar.write(line, file=self.stream)  # above the bar, which is drawn again below it
        if self.done >= self.total:
            self._drop_bar()

    def summary(self) -> str:
        """What the phase did, in one line (empty before its first item)."""
        if not self.done:
            return ""
        bad = {k: n for k, n in self.counts.items() if k not in self.GOOD}
        good = self.done - sum(bad.values())
        said = (f"all {next(iter(self.counts))}" if len(self.counts) == 1 else
                ", ".join([f"{good} ok"] * bool(good) + [f"{n} {k}" for k, n in sorted(
                    bad.items())]))
        secs = time.monotonic() - (self._t0 or time.monotonic())
        return f"{self.name}: {self.done} {self.unit}(s), {said} ({secs:.0f} s)"

    def _drop_bar(self) -> None:
        """Take the bar off the terminal (the lines above it stay); a later
        job, where the total grew, draws a new one."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        """The phase is over: the bar goes, and a named phase says what it
        did, once."""
        self._drop_bar()
        if self.enabled and self.name and self.done and not self._said:
            self._said = True
            self.stream.write(self.summary() + "\n")
            self.stream.flush()
