"""Job-level noise from /proc/stat: CPU used by anything but the job, and
time stolen by the hypervisor, while the job ran."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mark:
    busy_s: float
    steal_s: float
    self_cpu_s: float
    ok: bool


def _ticks() -> tuple[float, float] | None:
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu":
        return None
    v = [int(x) for x in first[1:9]] + [0] * 8
    hz = os.sysconf("SC_CLK_TCK")
    # user nice system; interrupt and softirq time belongs to no process and
    # is mostly the job's own packets (a TCP or emulated link), so it is not
    # counted as others' CPU.
    busy = v[0] + v[1] + v[2]
    return busy / hz, v[7] / hz


def mark() -> Mark:
    t = os.times()
    ticks = _ticks()
    if ticks is None:
        return Mark(0.0, 0.0, t.user + t.system, False)
    return Mark(ticks[0], ticks[1], t.user + t.system, True)


def job_noise(a: Mark, b: Mark, job_cpu_s: float, wall_s: float) -> dict[str, object]:
    if not (a.ok and b.ok):
        return {"valid": False}
    ours = job_cpu_s + (b.self_cpu_s - a.self_cpu_s)
    other = max(0.0, (b.busy_s - a.busy_s) - ours)
    steal = b.steal_s - a.steal_s
    return {"valid": True, "other_cpu_s": round(other, 3), "steal_s": round(steal, 3),
            "job_cpu_s": round(job_cpu_s, 3), "wall_s": round(wall_s, 3),
            "other_cores": round(other / wall_s, 3) if wall_s > 0 else None,
            "load1": os.getloadavg()[0]}
