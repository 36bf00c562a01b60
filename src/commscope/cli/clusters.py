"""commscope doctor, cluster (up, down, list) and slurm script."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from ..advise import doctor as doctor_mod
from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import discovery
from ..measure.cluster import emu as emu_mod
from ..measure.cluster.slurm import sbatch_script
from ..measure.plan import (
    CoreOptions,
    expand,
    run_options,
)
from ..store import outputs
from ..store.sizes import expand_sizes
from .common import command, ints, listed, named_impls, no_empty_values
from .parser import make_parser


@command("doctor")
def cmd_doctor(a: argparse.Namespace) -> int:
    impl = discovery.select([a.mpi] if a.mpi else [])[0]

    def show(ch: doctor_mod.Check) -> None:
        if not a.json:
            print(ch.line(), flush=True)

    checks = doctor_mod.diagnose(a.cluster, impl, db=Path(a.db) if a.db else None,
                                 timeout_s=a.timeout, progress=show)
    if a.json:
        print(doctor_mod.to_json(checks))
    else:
        print(doctor_mod.summary(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


@command("cluster up")
def cmd_cluster_up(a: argparse.Namespace) -> int:
    name = a.name or next(f"emu{i}" for i in range(1, 1000)
                          if not (emu_mod.STATE_ROOT / emu_mod.prefix(f"emu{i}")).exists())
    c = emu_mod.up(name, a.nodes, a.link, a.degrade)
    p = emu_mod.PROFILES[c.link]
    print(f"emulated cluster {c.name}: {len(c.nodes)} node(s), link {p.name} ({p.what}), "
          f"subnet {c.subnet}")
    for n in c.nodes:
        own = (f"  degraded: link {n.link} ({emu_mod.PROFILES[n.link].what})" if n.link else
               f"  degraded: its processes held to {emu_mod.CPU_SHARE}% of one CPU"
               if n.cgroup else "")
        print(f"  {n.hostname:<16} {n.address:<12} netns {n.netns}{own}")
    print(f"use it with: commscope run --cluster emu:{c.name} ...   remove it with: "
          f"commscope cluster down {c.name}")
    return 0


@command("cluster down")
def cmd_cluster_down(a: argparse.Namespace) -> int:
    for name in a.names:
        killed = emu_mod.down(name)
        print(f"removed emulated cluster {name}"
              + (f" ({killed} process(es) left inside were killed)" if killed else ""))
    return 0


@command("cluster list")
def cmd_cluster_list(a: argparse.Namespace) -> int:
    found = emu_mod.list_clusters()
    if a.json:
        print(json.dumps([c.to_json() for c in found], indent=1))
        return 0
    if not found:
        print("no emulated cluster (commscope cluster up --nodes 2 --link 1gbit makes one)")
    for c in found:
        slow = ", ".join(f"{n.hostname} {n.link or 'cpu'}" for n in c.nodes
                         if n.link or n.cgroup)
        print(f"{c.name:<12} {len(c.nodes)} node(s)  link {c.link:<9} subnet {c.subnet}  "
              f"prefix {c.prefix}" + (f"  degraded: {slow}" if slow else ""))
    stray = emu_mod.stray_namespaces()
    if stray:
        print(f"namespaces left by an interrupted `cluster up`: {', '.join(stray)} "
              "(`commscope cluster down NAME` removes them)")
    return 0


@command("slurm script")
def cmd_slurm_script(a: argparse.Namespace) -> int:
    run_args = list(a.run_args)
    if run_args and run_args[0] == "--":
        run_args = run_args[1:]
    no_empty_values(run_args)
    ra = make_parser().parse_args(["run", *run_args])  # bad options fail here, not in the queue
    expand_sizes(ra.sizes, ra.factor)
    ints(ra.np, "--np")
    # benchmark names and their options, by this machine's core (the table is the same
    # on the cluster's nodes): an unknown one fails here, not after the queue
    try:
        impl = named_impls(ra)[0]
    except CommscopeError:  # an MPI of the cluster's own, not installed here
        impl = discovery.select([])[0]
    core = build_mod.build(impl)
    opts = CoreOptions(**{str(o["field"]): getattr(ra, str(o["field"])) for o in run_options()})
    expand([core], listed(ra.bench) or ["p2p"], [], opts, places=[])
    build_mod.check_options(core, ["--bench", (listed(ra.bench) or ["latency"])[0], *opts.argv()])
    text = sbatch_script(nodes=a.nodes, ppn=a.ppn, time_min=a.time, run_args=run_args,
                         db=os.path.abspath(a.db), partition=a.partition, account=a.account)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        outputs.write_text(outputs.target(a.out, "slurm script --out", a.db), text, 0o755)
        print(f"wrote {a.out}; submit it with: sbatch {shlex.quote(a.out)}", file=sys.stderr)
    return 0
