"""The parser of every command: options, their help and their checks."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import __version__
from ..analysis.significance import MIN_CHANGE, MIN_FACTOR
from ..measure import discovery
from ..measure.cluster import emu as emu_mod
from ..measure.plan import (
    run_options,
)
from ..measure.source_build import SOURCE_BUILDS
from .common import DEFAULT_DB, Parser, mode_arg, positive, sweep_ids


def _core_run_options(p: argparse.ArgumentParser, repeat: str = "--repeat") -> None:
    """`run`'s options that the core takes, from the core's own table
    (type, range, default and help are written once, in options.c); the
    help names the command's own option for repetitions (tune: --rounds)."""
    for o in run_options():
        name, kind, default = f"--{o['name']}", str(o["type"]), o["default"]
        text = str(o["help"]).replace("(--repeat)", f"({repeat})").replace("%", "%%")
        hidden = o["scope"] == "hidden"
        if kind == "flag":
            p.add_argument(name, dest=str(o["field"]), action="store_true",
                           help=argparse.SUPPRESS if hidden else text)
            continue
        conv: Callable[[str], object] = str
        if kind in ("int", "float"):
            conv = positive(int if kind == "int" else float, float(o["lo"]), float(o["hi"]))  # type: ignore[arg-type]
        p.add_argument(name, dest=str(o["field"]), type=conv,
                       default=int(default) if kind == "int" else  # type: ignore[call-overload]
                       float(default) if kind == "float" else default,  # type: ignore[arg-type]
                       help=argparse.SUPPRESS if hidden else f"{text} (default {default})")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    p.add_argument("--bench", action="append", help="only these benchmarks (e.g. latency,bw)")
    p.add_argument("--mpi", action="append", help="only these implementations (e.g. openmpi)")
    p.add_argument("--np", action="append", help="only these process counts (e.g. 2)")
    p.add_argument("--all", action="store_true",
                   help="every stored run, not only the newest per configuration")
    p.add_argument("--mode", type=mode_arg,
                   help="which machine mode's records (core-to-core cache-line floor): "
                        "'dominant' (default: the mode most records were measured in), a "
                        "label such as floor~50ns, or 'all'")


def make_parser() -> Parser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = Parser(prog="commscope", formatter_class=fmt,
               description="Measure how fast MPI communicates here, store it, show it.",
               epilog="example: commscope run --bench latency,bw --mpi openmpi,mpich --np 2")
    p.add_argument("--version", action="version", version=f"commscope {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)

    r = sub.add_parser("run", help="run a sweep and store it", formatter_class=fmt,
                       epilog="example: commscope run --bench latency --bench bw "
                              "--mpi openmpi --mpi mpich --np 2 --sizes 1:4M --db my.db")
    r.add_argument("--bench", action="append",
                   help="benchmarks or groups (p2p, loggp, coll, coll-sends, all), "
                        "repeatable or comma-separated (default: p2p); list: what there is")
    r.add_argument("--mpi", action="append",
                   help="implementations by name or mpicc path (default: all found)")
    r.add_argument("--cc", action="append",
                   help="C compilers the wrappers drive instead of their own, each a "
                        "configuration of its own (e.g. --cc gcc,clang)")
    r.add_argument("--np", action="append", help="process counts (default 2; e.g. --np 2,4)")
    r.add_argument("--cluster", action="append",
                   help="where: local (default), hostfile:PATH, slurm, slurm:mpirun or "
                        "emu:NAME; repeat to run the sweep on several side by side")
    r.add_argument("--nodes", action="append",
                   help="nodes to spread the ranks over (default: one rank per node, as many "
                        "nodes as the cluster has)")
    r.add_argument("--ppn", action="append",
                   help="processes per node; np = nodes x ppn (instead of --np)")
    r.add_argument("--for", dest="for_", action="append", metavar="APP,PARAMS",
                   help="measure what predicting an application needs: the application at "
                        "these parameters and every benchmark its phases are predicted from, "
                        "up to the largest message, with cold buffers for data that comes "
                        "from memory and evicted ones after a compute sweep (e.g. --for "
                        "matmul,N=2000,4000 or --for 'summa,N=4000;nb=128'); then see analyze "
                        "predict")
    r.add_argument("--repeat", type=positive(int, 1, 1000), default=1,
                   help="independent repetitions of every job, run in interleaved rounds whose "
                        "order changes; figures are medians over them with a between-run "
                        "interval (e.g. --repeat 3)")
    r.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    r.add_argument("--timeout", type=positive(float, 1, 86400), default=None,
                   help="seconds before a job is killed (default: from sizes and --time-cap)")
    _core_run_options(r)
    r.add_argument("--transport", action="append",
                   help="mpi (default), chan or chan-cma: Chai, Hartono and Panda's intra-node "
                        "channel design, bootstrapped by the MPI (e.g. --transport mpi,chan)")
    r.add_argument("--path", action="append",
                   help="where the buffers live and what moves them: host (default), staged, "
                        "staged-pageable, staged-pipelined (--stage-chunk), cuda-aware, ipc, "
                        "nccl, or all (every path; those this "
                        "machine cannot run are recorded as skipped) (e.g. --path host,staged)")
    r.add_argument("--resume", action="store_true",
                   help="skip jobs whose results are already stored")
    r.add_argument("--advise-budget", type=positive(float, 0, 86400), default=70.0,
                   help="seconds for the diagnosis after the sweep: its gaps measured again, "
                        "the settings that could close them tried, the settings file checked "
                        "as a whole (e.g. --advise-budget 120; 0 skips it; default 70)")
    r.add_argument("--no-advise", action="store_true",
                   help="no diagnosis: the sweep's differences stay unconfirmed (commscope "
                        "diagnose runs it later)")
    r.add_argument("--retry-noisy", type=positive(int, 0, 10), default=0,
                   help="re-run a job up to N times while records are flagged noisy")
    r.add_argument("--noise-max-cores", type=positive(float, 0, 1024), default=0.10,
                   help="flag records when others used more than this many cores (default 0.1)")
    r.add_argument("--quiet", action="store_true", help="no progress and no summary")
    r.add_argument("--show", action="store_true",
                   help="print the sweep's tables too (commscope show prints them any time)")
    r.add_argument("--settings", metavar="FILE",
                   help="NAME=VALUE lines of MPI settings (e.g. from commscope tune --write), "
                        "applied to every job and read back inside it; a setting not taken "
                        "fails the job")
    r.add_argument("--no-probe", action="store_true",
                   help="do not take the machine probe (about half a second) at the start")

    s = sub.add_parser("show", help="print stored results as tables", formatter_class=fmt,
                       epilog="example: commscope show --db my.db --bench latency")
    _filters(s)
    s.add_argument("--runs", action="store_true", help="list runs with their status instead")
    s.add_argument("--per-node", action="store_true",
                   help="bandwidth per machine: per-process MB/s x processes per node "
                        "(as the UMBC cluster report does)")
    s.add_argument("--busbw", action="store_true",
                   help="collectives as bus bandwidth (MB/s each link carries, as nccl-tests' "
                        "busbw) instead of time")

    s.add_argument("--profile", metavar="ID",
                   help="a stored profile of a program (commscope profile), by id or 'last'; "
                        "'list' lists them")

    pf = sub.add_parser("profile", help="run an MPI program commscope did not write with every "
                        "MPI call counted and timed on each rank (a PMPI library preloaded)",
                        formatter_class=fmt,
                        epilog="example: commscope profile --np 2 -- ./my_program input.txt")
    pf.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    pf.add_argument("--mpi", action="append",
                    help="the implementation (default: the one the program is linked against)")
    pf.add_argument("--np", type=positive(int, 1, 1 << 20), default=2,
                    help="processes (default 2)")
    pf.add_argument("--cluster", default="local",
                    help="where the ranks run: local (default), emu:NAME, hostfile:PATH (run "
                         "from a folder every node sees: the ranks write their profiles "
                         "there), slurm or slurm:mpirun")
    pf.add_argument("--nodes", type=positive(int, 1, 1 << 16), default=None,
                    help="nodes the processes are spread over (default: as many as the "
                         "cluster has, up to --np)")
    pf.add_argument("--timeout", type=positive(float, 1, 7 * 86400), default=600.0,
                    help="seconds before the program's whole process group is killed "
                         "(default 600)")
    pf.add_argument("--settings", help="a settings file (KEY=VALUE of the MPI's variables) to "
                    "run the program with")
    pf.add_argument("--top", type=positive(int, 0, 100000), default=12,
                    help="the N hottest calls (default 12; 0: all)")
    pf.add_argument("--stack", type=positive(int, 1, 8), default=1, metavar="N",
                    help="a call site is the call's line and the N-1 callers above it "
                         "(default 1; as mpiP's -k: a call in a helper told apart by who "
                         "called the helper; unwinding costs microseconds a call: see "
                         "docs/profile.md)")
    pf.add_argument("--verify", action="append", metavar="SETTINGS",
                    help="run the program with this settings file against its defaults, in "
                         "interleaved rounds: faster for this program only where the rounds' "
                         "interval says so (repeatable)")
    pf.add_argument("--rounds", type=positive(int, 2, 1000), default=None,
                    help="rounds for --verify (default 5)")
    pf.add_argument("--check", help="a command run after each run (no shell; e.g. "
                    "'grep -q PASSED out.txt'): a setting under which it fails is no advice")
    pf.add_argument("--fresh", action="append", metavar="FILE",
                    help="a file the program appends to, removed before each run so that "
                         "--check reads that run's (repeatable; inside the working folder)")
    pf.add_argument("program", nargs=argparse.REMAINDER,
                    help="-- then the program and its arguments, passed unchanged (no shell)")

    e = sub.add_parser("export", help="write stored results as CSV or JSON", formatter_class=fmt,
                       epilog="example: commscope export --db my.db --format csv > results.csv")
    _filters(e)
    e.add_argument("--format", choices=("csv", "json"), default="csv", help="csv or json")
    e.add_argument("--points", action="store_true",
                   help="the figures show prints, one row per configuration, benchmark and size "
                        "over its repetitions, with their interval and marks; the JSON adds the "
                        "provenance (docs/export.md). Without it: every record of every run")
    e.add_argument("--output", default="-", help="file to write (default stdout)")

    an = sub.add_parser("analyze", help="crossovers and findings from stored results",
                        formatter_class=fmt, epilog="example: commscope analyze crossover")
    asub = an.add_subparsers(dest="anacmd", metavar="ANALYSIS", parser_class=Parser)
    ac = asub.add_parser("crossover",
                         help="collectives against equivalent sends (the commodity-cluster study)",
                         epilog="example: commscope analyze crossover --db my.db --np 4")
    _filters(ac)
    af = asub.add_parser("findings", help="what the diagnosis established, and what the data "
                         "shows",
                         epilog="example: commscope analyze findings --db my.db --limit 5")
    _filters(af)
    af.add_argument("--limit", type=positive(int, 0, 100000), default=10,
                    help="show the N findings that save most (default 10; 0: all)")
    af.add_argument("--brief", action="store_true",
                    help="what `run` ended with, again: the headline figures and each "
                    "conclusion in two lines at most, to the terminal's width")
    af.add_argument("--details", action="store_true",
                    help="each conclusion with what established it and what was tried")
    af.add_argument("--verbose", action="store_true",
                    help="each finding with the ids of the records behind it")
    ag = asub.add_parser("guidelines", help="collectives slower than a composition of others "
                         "that does the same job, or slower on a smaller message",
                         epilog="example: commscope analyze guidelines --db my.db --np 4")
    _filters(ag)
    ap_ = asub.add_parser("predict", help="each application phase predicted from the models "
                          "of the same configuration, against its measurement",
                          epilog="example: commscope analyze predict --db my.db --np 2")
    _filters(ap_)
    aa = asub.add_parser("app", help="a profiled program's hot calls set against the "
                         "benchmarks of the same implementation, communicator and message",
                         epilog="example: commscope analyze app --db my.db --profile last")
    aa.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    aa.add_argument("--profile", default="last",
                    help="the profile (commscope profile): its id, or 'last' (default)")
    aa.add_argument("--top", type=positive(int, 0, 100000), default=10,
                    help="the N hottest calls (default 10; 0: all)")
    aa.add_argument("--measure", action="store_true",
                    help="measure the benchmarks the hottest calls miss (one `commscope "
                         "run` into the same store), then set the calls against them")
    ft = sub.add_parser("fit", help="fit Hockney and LogGP models and store them",
                        epilog="example: commscope fit --db my.db --model hockney --bench latency")
    _filters(ft)
    ft.add_argument("--model", choices=("hockney", "loggp", "all"), default="all",
                    help="which model (default all)")

    dg = sub.add_parser("diagnose", help="measure a sweep's gaps again, try what could close "
                        "them, check the settings as a whole (what `run` does after a sweep)",
                        epilog="example: commscope diagnose --db my.db --budget 120")
    dg.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    dg.add_argument("--sweep", type=sweep_ids,
                    help="the sweep to diagnose, or several whose configurations to set side "
                         "by side (e.g. --sweep 3 or --sweep 1,2; default: the newest that ran "
                         "on this machine)")
    dg.add_argument("--budget", type=positive(float, 1, 86400), default=60.0,
                    help="seconds for the experiments (default 60)")
    dg.add_argument("--details", action="store_true",
                    help="each conclusion with what established it and what was tried")
    dg.add_argument("--noise-max-cores", type=positive(float, 0, 1024), default=0.10,
                    help="flag a trial's records when others used more than this many cores; "
                         "flagged rounds are left out of every comparison (default 0.1)")
    dg.add_argument("--quiet", action="store_true", help="only the conclusions")

    rp = sub.add_parser("report", help="write a self-contained HTML report",
                        epilog="example: commscope report --db my.db --out report/")
    _filters(rp)
    rp.add_argument("--out", default="report", help="folder to write (default ./report)")
    rp.add_argument("--compare-a", help="add a comparison: set A (e.g. mpi=openmpi)")
    rp.add_argument("--compare-b", help="and set B (e.g. mpi=mpich)")
    rp.add_argument("--factor", type=positive(float, 1.0, 100.0), default=MIN_FACTOR,
                    help=f"minimum change factor of the comparison (default {MIN_FACTOR:g})")
    cp = sub.add_parser("compare", help="compare two runs or sets; exit 1 on a regression",
                        epilog="example: commscope compare --db my.db --a run=3 --b run=7")
    cp.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    cp.add_argument("--a", required=True, help="baseline: run=ID[,ID], sweep=ID, mpi=NAME, "
                                               "cluster=NAME")
    cp.add_argument("--b", required=True, help="candidate, same forms as --a")
    cp.add_argument("--factor", type=positive(float, 1.0, 100.0), default=MIN_FACTOR,
                    help=f"smallest change that counts (default {MIN_FACTOR:g} = "
                         f"{MIN_CHANGE:.0%}%; single runs need 2x)")
    cp.add_argument("--format", choices=("text", "json"), default="text",
                    help="text (default) or json, for CI")

    tu = sub.add_parser("tune", help="search settings that make an implementation faster "
                        "here, decided over interleaved rounds", formatter_class=fmt,
                        epilog="example: commscope tune --mpi openmpi --bench bw --sizes 64K:4M "
                               "--write tuned.env")
    tu.add_argument("--mpi", required=True, help="the implementation to tune (one)")
    tu.add_argument("--bench", action="append", help="what to make faster (default bw)")
    tu.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    tu.add_argument("--rounds", type=positive(int, 3, 50), default=4,
                    help="interleaved rounds of every candidate and the default (default 4)")
    tu.add_argument("--extra-rounds", type=positive(int, 0, 50), default=4,
                    help="more rounds, after --rounds, for the default and the candidates "
                         "still close (a gain whose interval reaches 1), while --budget "
                         "allows (default 4)")
    tu.add_argument("--budget", type=positive(float, 1, 86400), default=900.0,
                    help="seconds the search may take at most; a larger plan is refused "
                         "before it starts (default 900)")
    tu.add_argument("--candidates", action="append", metavar="FILE",
                    help="settings files of your own to try besides the built-in space")
    tu.add_argument("--validate", default="none",
                    help="after the search, the winner against the default on this "
                         "application's end-to-end time: matmul, jacobi or none (default)")
    tu.add_argument("--validate-param", default="N=1000",
                    help="the application's parameters for --validate (default N=1000)")
    tu.add_argument("--write", metavar="FILE", help="write the winning settings here")
    tu.add_argument("--apply", action="store_true",
                    help="print only the winner's export lines (for eval)")
    tu.add_argument("--timeout", type=positive(float, 1, 86400),
                    help="seconds before one job is killed")
    tu.add_argument("--noise-max-cores", type=positive(float, 0, 1024), default=0.10,
                    help="flag records when others used more than this many cores")
    tu.add_argument("--quiet", action="store_true", help="no progress")
    _core_run_options(tu, repeat="--rounds")

    pr = sub.add_parser("probe", help="this machine's own figures, without MPI",
                        formatter_class=fmt,
                        epilog="example: commscope probe --cpus 0-3 --json")
    pr.add_argument("--db", default="commscope.db", help="store file (default ./commscope.db)")
    pr.add_argument("--no-store", action="store_true", help="print only, store nothing")
    pr.add_argument("--json", action="store_true", help="the probe's JSON")
    pr.add_argument("--cpus", help="the cores to measure between (default: every core this "
                                   "process may use), e.g. 0-3,8")
    pr.add_argument("--pair-ms", type=positive(float, 0.1, 10000), default=40.0,
                    help="milliseconds of cache-line bounces per pair of cores (default 40)")

    m = sub.add_parser("mpi", help="find, describe and add MPI implementations",
                       formatter_class=fmt, epilog="example: commscope mpi list")
    msub = m.add_subparsers(dest="mpicmd", metavar="ACTION", parser_class=Parser)
    ml = msub.add_parser("list", help="describe every implementation found",
                         epilog="example: commscope mpi list --json")
    ml.add_argument("--json", action="store_true", help="machine-readable output")
    ma = msub.add_parser("add", help="add an implementation by the path of its mpicc",
                         epilog="example: commscope mpi add /opt/mpich/bin/mpicc --name mpich42")
    ma.add_argument("mpicc", help="path of the implementation's mpicc")
    ma.add_argument("--name", help="name to use in --mpi (default: FAMILY-user; "
                    "mvapich2-user for MVAPICH2)")
    mi = msub.add_parser("install", help="install a PyPI build of an MPI, or build a "
                         "CUDA-aware Open MPI from Debian's source (openmpi-cuda, about 6 "
                         "minutes on 2 cores), into a prefix of its own and build the core "
                         "with it",
                         epilog="example: commscope mpi install mpich5 impi")
    mi.add_argument("names", nargs="+", metavar="NAME",
                    help=f"any of: {', '.join([*discovery.KNOWN, *SOURCE_BUILDS])}, or all "
                    "(PyPI's)")
    mi.add_argument("--source", metavar="TARBALL", help="openmpi-cuda: build from this "
                    "Open MPI tarball instead of fetching Debian's source package")
    mi.add_argument("--version", help="an exact release (default: the newest of the series)")
    mi.add_argument("--wheels", metavar="DIR", help="install from the wheels in DIR, "
                    "without an index (offline)")
    mi.add_argument("--force", action="store_true", help="reinstall over an installed one")
    mr = msub.add_parser("remove", help="uninstall an installed implementation, or forget a "
                         "user-added one", epilog="example: commscope mpi remove mpich42")
    mr.add_argument("name")

    dr = sub.add_parser("doctor", help="check a cluster is ready for a sweep: hosts reached "
                        "without a password, the same core and MPI, records, TCP between pairs",
                        formatter_class=fmt,
                        epilog="example: commscope doctor --cluster hostfile:hosts --mpi openmpi")
    dr.add_argument("--cluster", required=True,
                    help="hostfile:PATH, slurm (inside an allocation) or emu:NAME")
    dr.add_argument("--mpi", help="the implementation to check (default: the first found)")
    dr.add_argument("--db", help="the store the sweep will write (its folder must be writable)")
    dr.add_argument("--timeout", type=positive(float, 1, 600), default=20.0,
                    help="seconds each remote command and each ping may take (default 20)")
    dr.add_argument("--json", action="store_true", help="the checks as JSON")

    mx = sub.add_parser("matrix", help="latency and bandwidth between every pair of nodes: "
                        "the slow node or link named", formatter_class=fmt,
                        epilog="example: commscope matrix --cluster emu:a --repeat 3")
    mx.add_argument("--cluster",
                    help="emu:NAME, hostfile:PATH or slurm (inside an allocation: salloc -N 4 "
                    "commscope matrix --cluster slurm); one rank on each node of a pair")
    mx.add_argument("--within-node", action="store_true",
                    help="every pair of this machine's CPUs instead, two ranks pinned to "
                         "the pair's CPUs: a slow CPU (pairs within a socket and across "
                         "sockets judged apart)")
    mx.add_argument("--cpus", help="with --within-node: these CPUs only (e.g. 0-3,8; "
                                   "default: every CPU this process may run on)")
    mx.add_argument("--mpi", action="append", help="the implementation (default: the first "
                                                   "found that the cluster launches)")
    mx.add_argument("--repeat", type=positive(int, 1, 100), default=3,
                    help="rounds over every pair, for each pair's between-run interval "
                         "(default 3)")
    mx.add_argument("--latency-size", default="8", help="latency's message size (default 8)")
    mx.add_argument("--stall-time", type=positive(float, 0.01, 60), default=None,
                    metavar="SECONDS",
                    help="measure each pair at least this long (e.g. 0.3) and judge its "
                         "longest sample too: a node that stops for tens of milliseconds "
                         "at a time (its CPU taken part of the time) shows there, not in "
                         "the median")
    mx.add_argument("--bw-size", default="1M", help="bandwidth's message size (default 1M)")
    mx.add_argument("--timeout", type=positive(float, 1.0, 86400.0),
                    help="seconds a pair may take before it is killed and named (default: "
                         "from the sizes)")
    mx.add_argument("--at-once", action="store_true",
                    help="run each round's pairs (disjoint) at the same time: n-1 rounds "
                         "(n for odd n) instead of n(n-1)/2 pairs, for many nodes; the slow "
                         "pairs are then measured alone (default: one pair at a time)")
    mx.add_argument("--db", default=DEFAULT_DB, help="store file (default ./commscope.db)")
    mx.add_argument("--quiet", action="store_true", help="no progress lines")
    mx.set_defaults(cc=None)

    cl = sub.add_parser("cluster", help="emulated clusters of this machine (root)",
                        formatter_class=fmt)
    clsub = cl.add_subparsers(dest="clcmd", metavar="ACTION", parser_class=Parser)
    cu = clsub.add_parser("up", help="make N nodes: namespaces joined by shaped links",
                          epilog="example: commscope cluster up --nodes 2 --link 1gbit --name a")
    cu.add_argument("--nodes", type=positive(int, 1, emu_mod.MAX_NODES), required=True,
                    help="number of nodes")
    cu.add_argument("--link", default="unshaped", choices=list(emu_mod.PROFILES),
                    help="link profile (default unshaped)")
    cu.add_argument("--name", help="cluster name: a letter, then letters or digits "
                                   "(default emu1, emu2, ...)")
    cu.add_argument("--degrade", action="append", metavar="NODE:PROFILE",
                    help="give one node a link of another profile, both ways (e.g. "
                         "n3:100mbit), or hold its processes to a quarter of one CPU "
                         "(n3:cpu); repeatable: a bad node for `commscope matrix` to find")
    cd = clsub.add_parser("down", help="kill what runs inside, delete the namespaces",
                          epilog="example: commscope cluster down a")
    cd.add_argument("names", nargs="+", metavar="NAME")
    cls = clsub.add_parser("list", help="emulated clusters that exist",
                           epilog="example: commscope cluster list --json")
    cls.add_argument("--json", action="store_true", help="machine-readable output")

    sl = sub.add_parser("slurm", help="Slurm helpers", formatter_class=fmt)
    slsub = sl.add_subparsers(dest="slcmd", metavar="ACTION", parser_class=Parser)
    ss = slsub.add_parser("script", help="write an sbatch script for a sweep",
                          epilog="example: commscope slurm script --nodes 2 --ppn 1 --out "
                                 "sweep.sh -- --bench latency,bw --mpi openmpi")
    ss.add_argument("--nodes", type=positive(int, 1, 100000), required=True)
    ss.add_argument("--ppn", type=positive(int, 1, 100000), default=1,
                    help="processes per node (default 1)")
    ss.add_argument("--time", type=positive(int, 1, 100000), default=30,
                    help="time limit in minutes (default 30)")
    ss.add_argument("--partition", help="partition to submit to")
    ss.add_argument("--account", help="account to charge")
    ss.add_argument("--db", default=DEFAULT_DB, help="store file the job writes")
    ss.add_argument("--out", default="-", help="script file (default: standard output)")
    ss.add_argument("run_args", nargs=argparse.REMAINDER,
                    help="after --: options of `commscope run` for the sweep")

    b = sub.add_parser("build", help="build the core for implementations (cached)",
                       epilog="example: commscope build --mpi openmpi --force")
    b.add_argument("--mpi", action="append", help="implementations (default: all found)")
    b.add_argument("--cc", action="append", help="C compilers the wrappers drive instead of "
                   "their own (e.g. --cc clang)")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    return p
