#!/usr/bin/env python3
"""One process's 1-byte copies between host and device, without MPI: what a
GPU path's small-message latency is held against (docs/gpu.md, "Measured").

Each figure is the median of 3000 calls timed with perf_counter around the
call and its synchronisation, after 100 untimed: a stream synchronisation
alone, a copy to pinned host memory, a copy from it, a copy to pageable host
memory, and a one-element kernel.  The bytes moved are checked afterwards.
Needs PyTorch with a GPU (the lent machines' image has it); prints one JSON
line, or says why not and exits 2.

    python3 bench/gpu_small_copies.py
"""

import json
import statistics
import sys
import time


def main() -> int:
    try:
        import torch
    except ImportError:
        print("no PyTorch here: nothing measured")
        return 2
    if not torch.cuda.is_available():
        print("no GPU here: nothing measured")
        return 2
    d = torch.full((1,), 7, dtype=torch.uint8, device="cuda")
    h = torch.zeros(1, dtype=torch.uint8, pin_memory=True)
    p = torch.zeros(1, dtype=torch.uint8)
    s = torch.cuda.current_stream()

    def t(f, n: int = 3000) -> float:
        for _ in range(100):
            f()
        ts = []
        for _ in range(n):
            a = time.perf_counter()
            f()
            ts.append(time.perf_counter() - a)
        return round(statistics.median(ts) * 1e6, 2)

    r = {"sync_us": t(torch.cuda.synchronize),
         "d2h_pinned_1B_us": t(lambda: (h.copy_(d, non_blocking=True), s.synchronize())),
         "d2h_pageable_1B_us": t(lambda: p.copy_(d))}
    ok = int(h.item()) == 7 and int(p.item()) == 7
    h.fill_(9)
    r["h2d_pinned_1B_us"] = t(lambda: (d.copy_(h, non_blocking=True), s.synchronize()))
    ok = ok and int(d.item()) == 9
    r["launch_sync_us"] = t(lambda: (d.add_(1), s.synchronize()))
    r["valid"] = ok
    r["device"] = torch.cuda.get_device_name(0)
    print(json.dumps(r))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
