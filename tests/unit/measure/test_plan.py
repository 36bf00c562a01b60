"""Plan expansion, launch command lines and the noise policy, on fixed data."""

from __future__ import annotations

from dataclasses import replace

import pytest

from commscope.errors import CommscopeError
from commscope.measure.mpi import LaunchSpec, launch_argv
from commscope.measure.plan import CoreOptions, expand
from commscope.measure.runner import NoisePolicy, default_timeout, rounds
from commscope.store.records import parse_file
from tests.helpers import IMPI, MPICH, OMPI, RECORDS, ROOT, stub_core


def test_expand_is_one_launch_per_implementation_and_placement():
    jobs = expand([stub_core(OMPI), stub_core(MPICH)], ["latency", "bw"], [2, 4], CoreOptions())
    assert len(jobs) == 4
    assert {(j.core.impl.name, j.bench, j.np) for j in jobs} == {
        (m, "latency,bw", n) for m in ("openmpi", "mpich") for n in (2, 4)}
    with pytest.raises(CommscopeError, match="bcast runs over MPI only"):
        expand([stub_core(OMPI)], ["latency", "bcast"], [2], CoreOptions(transport="chan"))


def test_rounds_repeat_every_job_in_orders_that_change():
    jobs = [replace(j, bench=b) for j in expand([stub_core(OMPI)], ["latency"], [2], CoreOptions())
            for b in ("a", "b", "c", "d", "e")]
    plan = rounds(jobs, 4)
    assert len(plan) == 4
    for r, rnd in enumerate(plan, start=1):
        assert sorted(j.bench for j in rnd) == ["a", "b", "c", "d", "e"]
        assert {j.rep for j in rnd} == {r}
    orders = [tuple(j.bench for j in rnd) for rnd in plan]
    assert orders[0] == ("a", "b", "c", "d", "e")  # the first round as planned
    assert len(set(orders)) >= 3  # then varied
    keys = {j.plan_key() for rnd in plan for j in rnd}
    assert len(keys) == 20  # a repetition is its own measurement for --resume
    assert len({j.config.key for rnd in plan for j in rnd}) == 1  # of one configuration


def test_expand_refuses_unknown_bench_and_unusable_np():
    with pytest.raises(CommscopeError, match="unknown benchmark 'pingpong'"):
        expand([stub_core(OMPI)], ["pingpong"], [2], CoreOptions())
    with pytest.raises(CommscopeError, match="at least 2 processes"):
        expand([stub_core(OMPI)], ["latency"], [1], CoreOptions())


def test_plan_key_depends_on_what_is_measured():
    a = expand([stub_core(OMPI)], ["latency"], [2], CoreOptions())[0]
    b = expand([stub_core(OMPI)], ["latency"], [2], CoreOptions())[0]
    c = expand([stub_core(OMPI)], ["latency"], [2], CoreOptions(sizes="8"))[0]
    d = expand([stub_core(MPICH)], ["latency"], [2], CoreOptions())[0]
    assert a.plan_key() == b.plan_key()
    assert len({a.plan_key(), c.plan_key(), d.plan_key()}) == 3


def test_core_argv_round_trips_options():
    argv = CoreOptions(sizes="8:1M", factor=4, target_ci=0.05, raw=True).argv()
    assert argv[argv.index("--sizes") + 1] == "8:1M"
    assert argv[argv.index("--factor") + 1] == "4"
    assert argv[argv.index("--target-ci") + 1] == "0.05"
    assert "--raw" in argv and "--inject" not in argv


def test_openmpi_launch_lines():
    exe, args = "/c/cs-core", ["--bench", "latency"]
    assert launch_argv(OMPI, LaunchSpec(2, 2, True), exe, args) == [
        "/usr/bin/mpirun.openmpi", "-n", "2", "--allow-run-as-root", "--bind-to", "core",
        "--map-by", "core", exe, *args]
    assert launch_argv(OMPI, LaunchSpec(4, 2, False), exe, args) == [
        "/usr/bin/mpirun.openmpi", "-n", "4", "--oversubscribe", "--bind-to", "none", exe, *args]


def test_mpich_and_intel_launch_lines():
    exe = "/c/cs-core"
    assert launch_argv(MPICH, LaunchSpec(2, 2, True), exe, []) == [
        "/usr/bin/mpiexec.mpich", "-n", "2", "-bind-to", "core", exe]
    assert launch_argv(MPICH, LaunchSpec(4, 2, True), exe, []) == [
        "/usr/bin/mpiexec.mpich", "-n", "4", exe]
    # Intel MPI: shared memory only on one node, pinned; not pinned when oversubscribed
    assert launch_argv(IMPI, LaunchSpec(2, 8, True), exe, []) == [
        "/x/bin/mpiexec", "-n", "2", "-genv", "I_MPI_FABRICS", "shm",
        "-genv", "I_MPI_PIN_PROCESSOR_LIST", "0-7", exe]
    assert launch_argv(IMPI, LaunchSpec(4, 2, True), exe, []) == [
        "/x/bin/mpiexec", "-n", "4", "-genv", "I_MPI_FABRICS", "shm", "-genv", "I_MPI_PIN", "0",
        exe]


def test_launch_line_is_a_list_that_keeps_odd_arguments_whole():
    odd = "/tmp/out dir/$(rm -rf x);.jsonl"
    argv = launch_argv(MPICH, LaunchSpec(2, 2, True), "/c/cs-core", ["--output", odd])
    assert argv[-1] == odd


def test_timeout_lets_every_size_of_every_benchmark_reach_its_cap():
    for cap, nsizes, nbenches in ((1.0, 23, 1), (2.0, 23, 12), (0.5, 5, 3)):
        t = default_timeout(CoreOptions(time_cap_s=cap), nsizes, nbenches)
        assert t >= nsizes * nbenches * (cap + 1.0)  # the cap, plus set-up and validation
        assert t <= 30 + nsizes * nbenches * 4 * (cap + 1.0)  # and not unbounded




def test_noise_policy():
    r = parse_file(RECORDS).results[0]
    p = NoisePolicy(max_other_cores=0.1)
    quiet = replace(r, noise_valid=True, other_cpu_s=0.0, steal_s=0.0, wall_s=1.0)
    busy = replace(quiet, other_cpu_s=0.5)
    tick_noise = replace(quiet, other_cpu_s=0.02, wall_s=0.05)
    stolen = replace(quiet, steal_s=0.2)
    assert not p.flag(quiet)
    assert p.flag(busy)
    assert not p.flag(tick_noise)  # below /proc/stat's resolution
    assert p.flag(stolen)
    assert p.flag_job({"valid": True, "other_cpu_s": 1.0, "wall_s": 4.0})
    assert not p.flag_job({"valid": True, "other_cpu_s": 0.1, "wall_s": 4.0})
    assert not p.flag_job({"valid": False})


def test_a_jobs_status_is_decided_from_how_it_ended_and_what_it_wrote():
    """runner.classify: a pure function of the process's end and the
    records; the core's exit statuses are cs.h's (3 invalid, 7 skipped)."""
    from commscope.measure.procs import Outcome
    from commscope.measure.runner import classify
    from commscope.store.records import Parsed

    good = parse_file(RECORDS)
    ok_footer = Parsed(good.header, good.results, {"status": "ok"})
    bad = replace(good.results[0], valid=False)

    def ended(code=0, sig=None, timed_out=False, hung=False):
        return Outcome(code, sig, timed_out, 1.0, 1.0, 0, hung)

    cases = [
        (ended(), ok_footer, "ok", ""),
        (ended(hung=True), ok_footer, "timeout", "did not exit"),
        (ended(None, None, True), Parsed(), "timeout", "killed after 30s"),
        (ended(None, 9), Parsed(), "failed", "signal 9"),
        (ended(7), Parsed(footer={"status": "skipped", "reason": "no GPU"}), "skipped", "no GPU"),
        (ended(7), Parsed(), "failed", "exit code 7"),  # 7 without its footer is no skip
        (ended(3), Parsed(), "invalid", "validation"),
        (ended(0), Parsed(good.header, [bad], {"status": "ok"}), "invalid", "validation"),
        (ended(5), ok_footer, "failed", "exit code 5"),
        (ended(0), Parsed(good.header, good.results, None), "failed", "without a complete"),
    ]
    for end, parsed, status, says in cases:
        got, msg = classify(end, parsed, 30.0)
        assert got == status and says in msg, (end, got, msg)


def test_the_exit_statuses_classify_names_are_the_cores():
    """runner.CS_EINVALID and CS_ESKIP are core/harness/cs.h's enum cs_status."""
    import re

    from commscope.measure import runner

    cs_h = (ROOT / "core" / "harness" / "cs.h").read_text()
    enum = re.search(r"enum cs_status \{(.*?)\};", cs_h, re.S)
    assert enum, "cs.h has no enum cs_status"
    values = {k: int(v) for k, v in re.findall(r"(CS_\w+)\s*=\s*(\d+)", enum.group(1))}
    assert values["CS_EINVALID"] == runner.CS_EINVALID
    assert values["CS_ESKIP"] == runner.CS_ESKIP
