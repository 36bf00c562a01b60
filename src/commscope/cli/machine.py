"""commscope probe, mpi (list, add, install, remove) and build: this
machine and the implementations on it."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..errors import CommscopeError
from ..measure import build as build_mod
from ..measure import discovery, provenance
from ..measure import installs as installs_mod
from ..measure import mpi as mpi_mod
from ..measure import probe as probe_mod
from ..measure.source_build import SOURCE_BUILDS
from ..store.db import Store
from .common import command, named_impls


@command("probe")
def cmd_probe(a: argparse.Namespace) -> int:
    """The machine's own figures, without MPI: printed, and stored unless
    --no-store."""
    data = probe_mod.run(cpus=a.cpus, pair_ms=a.pair_ms)
    if not a.no_store:
        store = Store(a.db)
        store.add_probe(data, provenance.machine().get("hostname") or "")
        store.close()
    if a.json:
        print(json.dumps(data, indent=1))
    else:
        print(probe_mod.text(data), end="")
    return 0


@command("mpi list")
def cmd_mpi_list(a: argparse.Namespace) -> int:
    impls = discovery.discover()
    rows = []
    for m in impls:
        root = os.geteuid() == 0
        cores = os.cpu_count() or 1
        entry: dict[str, object] = {**m.to_json()}
        try:
            core = build_mod.build(m)
            entry["version"] = core.mpi_version
            entry["mpi_standard"] = core.info.get("mpi_standard")
        except CommscopeError as exc:
            entry["version"] = None
            entry["error"] = str(exc).splitlines()[0]
        spec2 = mpi_mod.LaunchSpec(2, cores, root)
        specn = mpi_mod.LaunchSpec(cores + 2, cores, root)
        entry["flags"] = mpi_mod.launcher_flags(m, spec2)
        entry["flags_oversubscribed"] = mpi_mod.launcher_flags(m, specn)
        rows.append(entry)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("no MPI implementation found (commscope mpi add PATH/TO/mpicc adds one)")
        return 0
    for e in rows:
        ver = str(e.get("version") or e.get("error") or "?").splitlines()[0]
        family = f"{e['family']}: {e['variant']}" if e.get("variant") else e["family"]
        print(f"{e['name']}  [{family}, {e['source']}]")
        print(f"  version   {ver}")
        print(f"  mpicc     {e['mpicc']}")
        print(f"  launcher  {e['launcher']}")
        print(f"  flags     {' '.join(e['flags']) or '(none)'}   "  # type: ignore[arg-type]
              f"oversubscribed: {' '.join(e['flags_oversubscribed']) or '(none)'}")  # type: ignore[arg-type]
    return 0


@command("mpi add")
def cmd_mpi_add(a: argparse.Namespace) -> int:
    impl = mpi_mod.describe_path(a.mpicc, name=a.name, source="user")
    core = build_mod.build(impl)  # only an implementation that builds is remembered
    discovery.add_user(impl)
    print(f"added {impl.name} ({impl.family}): {core.mpi_version.splitlines()[0]}")
    return 0


@command("mpi install")
def cmd_mpi_install(a: argparse.Namespace) -> int:
    names = installs_mod.check_names(a.names, a.version, a.source, a.wheels)
    for name in names:
        if installs_mod.is_installed(name) and not a.force:
            print(f"{name} is installed already in {discovery.root() / name} "
                  "(--force reinstalls)")
            continue
        if name in SOURCE_BUILDS:
            print(f"building {name}: {SOURCE_BUILDS[name].title} (minutes; the log goes to "
                  f"{discovery.root() / (name + '.build.log')})", flush=True)
            impl, core = installs_mod.install_from_source(name, a.source)
        else:
            impl, core = installs_mod.install(name, version=a.version, wheels=a.wheels)
        details = discovery.details(impl.name)
        pkgs = details.get("packages") or {}
        print(f"installed {impl.name} ({impl.family}) in {Path(impl.mpicc).parent.parent}: "
              + ", ".join(f"{k} {v}" for k, v in pkgs.items()))  # type: ignore[union-attr]
        if isinstance(b := details.get("build"), dict):
            print(f"  built with CUDA {b.get('cuda')} ({b.get('cuda_root')}): configure "
                  f"{b.get('configure_s')} s, make {b.get('make_s')} s, prefix "
                  f"{int(b.get('prefix_bytes') or 0) / 2**20:.1f} MiB")
        print(f"  {core.mpi_version.splitlines()[0] if core.mpi_version else '?'}")
        print(f"  run with: commscope run --mpi {impl.name} ...")
    return 0


@command("mpi remove")
def cmd_mpi_remove(a: argparse.Namespace) -> int:
    if not installs_mod.uninstall(a.name):
        discovery.remove_user(a.name)
    print(f"removed {a.name}")
    return 0


@command("build")
def cmd_build(a: argparse.Namespace) -> int:
    for impl in named_impls(a):
        core = build_mod.build(impl, force=a.force)
        print(f"{impl.name}{' cc=' + impl.cc if impl.cc else ''}: {core.exe} "
              f"({core.info.get('compiler') or 'compiler unknown'})")
    return 0
