"""What the sections share: the point-to-point figures in the order the report
shows them, the collectives, the progress tick, an anchor's slug."""

from __future__ import annotations

import re
from collections.abc import Callable

from ...store.core_facts import names

# The point-to-point figures in the order the report shows them, each with its
# axis and title; what each plots (time, bandwidth, rate) is the core's figure.
P2P = (("latency", "one-way latency (us)", "Latency (ping-pong, round trip / 2)"),
       ("bw", "bandwidth (MB/s)", "Unidirectional bandwidth"),
       ("bibw", "bandwidth (MB/s, both ways)", "Bidirectional bandwidth"),
       ("roundtrip", "round trips per second", "Round-trip rate"),
       ("sendloop", "time per send (us)", "Send loop: time per send"))
COLLECTIVES = names("coll")  # the core's collectives, in its order
LEAD_FINDINGS = 8  # the findings shown before any fold: the ones that save most

Tick = Callable[[str], None]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


