"""Runtime settings: parsed from a file, applied to a job, read back inside
it through MPI_T; a setting the implementation did not take fails the job."""

from __future__ import annotations

import json

import pytest

from commscope.measure import settings
from commscope.store.db import Store
from tests.helpers import golden, one_line_error, run


def test_a_settings_file_parses_and_refuses_what_is_not_a_setting(tmp_path):
    f = tmp_path / "s.env"
    f.write_text("# tuned\nexport OMPI_MCA_btl_vader_eager_limit=8192\nUCX_TLS='posix,self'\n"
                 "OMPI_MCA_btl_vader_eager_limit=16384  # the later wins\n")
    assert settings.parse_file(f) == (("OMPI_MCA_btl_vader_eager_limit", "16384"),
                                      ("UCX_TLS", "posix,self"))
    for text, needle in (("PATH=/tmp\n", "is not an MPI setting"),
                         ("OMPI_MCA_x\n", "expected NAME=VALUE"),
                         ("UCX_TLS=\n", "has no value"),
                         ("# nothing\n", "sets nothing")):
        f.write_text(text)
        with pytest.raises(Exception, match=needle):
            settings.parse_file(f)


def test_mvapich2_ranges_without_its_indexed_tables_off_are_refused_in_one_line():
    """MVAPICH2 2.3.7 given MV2_ALLTOALL_TUNING=3:0-8192,0:8193-+ with its
    indexed tables on (the default) crashed (exit 11): refused before a
    job, naming the flags; with both off, or one algorithm alone, taken."""
    ranges = "export MV2_ALLTOALL_TUNING=3:0-8192,0:8193-+\n"
    with pytest.raises(settings.CommscopeError) as ex:
        settings.parse_text(ranges, "rc.env")
    said = str(ex.value)
    assert said.startswith("rc.env: MV2_ALLTOALL_TUNING=3:0-8192,0:8193-+: MVAPICH2 reads "
                           "ranges only with MV2_USE_INDEXED_TUNING=0 and "
                           "MV2_USE_INDEXED_ALLTOALL_TUNING=0"), said
    assert "\n" not in said
    with pytest.raises(settings.CommscopeError, match="only with MV2_USE_INDEXED_ALLREDUCE"):
        settings.parse_text("MV2_USE_INDEXED_TUNING=0\nMV2_INTER_ALLREDUCE_TUNING=2:0-64,9:65-+\n")
    ok = ranges + "MV2_USE_INDEXED_TUNING=0\nMV2_USE_INDEXED_ALLTOALL_TUNING=0\n"
    assert dict(settings.parse_text(ok))["MV2_ALLTOALL_TUNING"] == "3:0-8192,0:8193-+"
    assert settings.parse_text("MV2_ALLTOALL_TUNING=3\n") == (("MV2_ALLTOALL_TUNING", "3"),)
    # one range is read as one number; allgatherv has no indexed table to turn off
    assert settings.parse_text("MV2_ALLTOALL_TUNING=3:0-+\n")
    assert settings.parse_text("MV2_INTER_ALLGATHERV_TUNING=1:0-64,2:65-+\n")


def test_read_back_refuses_unknown_names_and_other_values():
    s = {"OMPI_MCA_a": "none", "OMPI_MCA_b": "4096", "MPIR_CVAR_C": "binomial",
         "UCX_TLS": "posix", "OMPI_MCA_d": "cma", "MPIR_CVAR_E": "8"}
    got = {"a": "none", "b": "4096.0", "MPIR_CVAR_C": "1", "d": "none", "MPIR_CVAR_E": None}
    out = settings.refused(s, got)
    assert len(out) == 2
    assert out[0] == "OMPI_MCA_d=cma was not taken: the implementation holds d=none"
    assert out[1].startswith("MPIR_CVAR_E: MPIR_CVAR_E is not a control variable")
    # Open MPI's flags read back as 1 and 0, whichever way they were spelled
    flags = {"OMPI_MCA_f": "true", "OMPI_MCA_g": "1", "OMPI_MCA_h": "yes"}
    assert settings.refused(flags, {"f": "1", "g": "1", "h": "0"}) == [
        "OMPI_MCA_h=yes was not taken: the implementation holds h=0"]
    assert settings.refused({"UCX_TLS": "x"}, None) == []
    assert settings.refused({"OMPI_MCA_a": "x"}, None) == [
        "OMPI_MCA_a: the job did not read its control variables back"]


CASES = {
    "openmpi": ("OMPI_MCA_btl_vader_eager_limit", "8192", "OMPI_MCA_btl_vader_eagr_limit"),
    "mpich": ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "65536", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZ"),
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_a_setting_is_taken_and_a_misspelled_one_fails_the_job(capsys, tmp_path, cores, family):
    if family not in cores:
        pytest.skip(f"{family} not installed")
    key, value, wrong = CASES[family]
    db = tmp_path / "s.db"
    good, bad = tmp_path / "good.env", tmp_path / "bad.env"
    good.write_text(f"{key}={value}\n")
    bad.write_text(f"{wrong}={value}\n")
    base = ["run", "--no-advise",
            "--db", str(db), "--mpi", family, "--bench", "latency", "--sizes", "8",
            "--time-cap", "0.05", "--no-probe", "--quiet"]
    rc, _, err = run(capsys, *base, "--settings", str(good))
    assert rc == 0, err
    rc, _, err = run(capsys, *base, "--settings", str(bad))
    assert rc == 1
    assert f"{wrong}: {wrong.removeprefix('OMPI_MCA_')} is not a control variable" in err
    store = Store(db, create=False)
    ok, failed = store.runs()
    assert ok["status"] == "ok" and failed["status"] == "failed"
    assert json.loads(ok["config"])["settings"] == {key: value}
    assert "settings not taken" in failed["stderr_tail"]
    # the setting is part of the configuration: not the default's series
    assert ok["config_key"] != failed["config_key"]


def test_settings_on_a_cluster_and_unreadable_files_are_one_line(capsys, tmp_path):
    f = tmp_path / "s.env"
    f.write_text("UCX_TLS=posix\n")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=2\n")
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--settings", str(f), "--cluster", f"hostfile:{hosts}",
                     "--db", str(tmp_path / "x.db"))
    one_line_error(rc, err, "--settings applies to local runs only")
    rc, _, err = run(capsys, "run", "--no-advise", "--settings", str(tmp_path / "none.env"))
    one_line_error(rc, err, "cannot read settings file")


def test_an_mpich_string_variable_is_checked_by_name_only(capsys, tmp_path, cores):
    """MPICH's MPI_T reads a string control variable back as its compiled
    default whatever the environment set (seen with 4.0.2 and 5.0.2), so a
    string setting it has is taken on its name; a misspelled one still fails."""
    if "mpich" not in cores:
        pytest.skip("mpich not installed")
    assert settings.refused({"MPIR_CVAR_CH4_NETMOD": "ucx"}, {"MPIR_CVAR_CH4_NETMOD": ""}) == []
    good = tmp_path / "good.env"
    good.write_text("MPIR_CVAR_CH4_NETMOD=ucx\n")
    rc, _, err = run(capsys, "run", "--no-advise", "--db", str(tmp_path / "s.db"), "--mpi", "mpich",
                     "--bench", "latency", "--sizes", "8", "--time-cap", "0.05", "--no-probe",
                     "--quiet", "--settings", str(good))
    assert rc == 0, err


EP_CFG = """\
[1.1] [vm:1:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(self/memory0 cma/memory) \
rma(self/memory0 sysv/memory posix/memory) am(self/memory0 cma/memory)
[1.2] [vm:1:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[1]: tag(sysv/memory cma/memory) \
rma(sysv/memory posix/memory) am(sysv/memory cma/memory)
"""


def test_ucx_transports_are_read_back_from_ucx_itself():
    """UCX at log level info names each endpoint's lanes: the transports to
    the other ranks are those of the endpoints not to the process itself."""
    lanes = settings.ucx_lanes(EP_CFG)
    assert lanes == ["sysv/memory", "cma/memory", "posix/memory"]
    assert settings.ucx_refused({"UCX_TLS": "sysv,cma,posix,self"}, lanes) == []
    assert settings.ucx_refused({"UCX_TLS": "posix,self"}, lanes) == [
        "UCX_TLS=posix,self was not taken: UCX used sysv/memory, cma/memory"]
    # groups and negations name build-dependent sets: recorded, not judged
    assert settings.ucx_refused({"UCX_TLS": "sm,self"}, lanes) == []
    assert settings.ucx_refused({"UCX_TLS": "^tcp"}, lanes) == []
    assert settings.ucx_refused({"UCX_TLS": "tcp,self"}, [])[0].startswith(
        "UCX_TLS: UCX named no endpoint's transports")


@pytest.mark.parametrize("tls,want", [("tcp,self", "tcp/"), ("posix,self", "posix/")])
def test_ucx_tls_is_taken_and_the_lanes_are_stored(capsys, tmp_path, cores, tls, want):
    """Debian's MPICH on UCX: the job runs with the transports asked for,
    and its record says which lanes UCX used.  Noise policy: beside a busy
    run, a job over UCX's TCP once hung in MPI_Finalize after its record
    (the known UCX trouble, docs/clusters.md): killed 10 s after its footer,
    its record and lanes kept, the command's exit 1; that ending is
    accepted, with the record checked as any other."""
    if "mpich" not in cores:
        pytest.skip("mpich not installed")
    env = tmp_path / "ucx.env"
    env.write_text(f"UCX_TLS={tls}\n")
    db = tmp_path / "u.db"
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(db), "--mpi", "mpich", "--bench", "latency",
                     "--sizes", "8", "--time-cap", "0.05", "--no-probe", "--quiet",
                     "--settings", str(env))
    from commscope.store.db import Store

    (r,) = Store(db).runs()
    if rc != 0:
        assert r["status"] == "timeout" and "hung in MPI_Finalize" in r["stderr_tail"], err
    assert len(Store(db).result_rows()) == 1, err
    line = r["stderr_tail"].strip().splitlines()[-1]
    assert line.startswith("UCX lanes to the other ranks: ") and want in line, line
    allowed = {w for w in tls.split(",")}
    assert all(tl.split("/")[0] in allowed for tl in line.split(": ", 1)[1].split()), line


# -- binding ---------------------------------------------------------------------
def test_binding_is_read_back_from_each_ranks_cpus():
    r = settings.binding_refused
    assert r("none", ["0-3", "0-3"], 4, False) == []
    assert r("none", ["0-3", "2"], 4, False) == [
        "COMMSCOPE_BIND=none was not taken: rank 1 may run only on CPUs 2"]
    assert r("core", ["0", "1"], 4, False) == []
    assert r("core", ["0,4", "1,5"], 8, False) == []  # a core's two hardware threads
    assert r("core", ["0-1", "1"], 4, False) == [
        "COMMSCOPE_BIND=core was not taken: ranks 0 and 1 share CPUs (0-1; 1)"]
    assert r("core", ["0", "0-3"], 4, False) == [
        "COMMSCOPE_BIND=core was not taken: rank 1 may run on every CPU (0-3)"]
    # an oversubscribed job is never bound, whatever was asked
    assert r("core", ["0-1", "0-1", "0-1"], 2, True) == []
    assert r("core", ["0-1", "?"], 2, False) == [
        "COMMSCOPE_BIND=core: the job did not report each rank's CPUs"]
    assert r("core", [], 2, False) == r("core", ["0-1", "?"], 2, False)


def test_binding_becomes_each_launchers_flags_and_bad_values_are_refused(tmp_path):
    from commscope.measure import mpi

    assert mpi.bind_flags("openmpi", "none") == ["--bind-to", "none", "--map-by", "core"]
    assert mpi.bind_flags("openmpi", "hwthread") == ["--bind-to", "hwthread", "--map-by",
                                                     "hwthread"]
    assert mpi.bind_flags("mpich", "none") == []  # hydra binds nothing unless told
    assert mpi.bind_flags("mpich", "core") == ["-bind-to", "core"]
    assert mpi.bind_flags("intel", "none") == ["-genv", "I_MPI_PIN", "0"]
    with pytest.raises(Exception, match="COMMSCOPE_BIND must be one of core, hwthread, none"):
        mpi.bind_flags("mpich", "socket")
    f = tmp_path / "b.env"
    for text in ("COMMSCOPE_BIND=socket\n", "COMMSCOPE_BINDING=core\n"):
        f.write_text(text)
        with pytest.raises(Exception, match="commscope's own setting is COMMSCOPE_BIND="):
            settings.parse_file(f)


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_a_binding_is_taken_and_one_the_launcher_overrides_fails(capsys, tmp_path, cores,
                                                                 family, monkeypatch):
    """Unbound ranks may each run on every core; bound ones on one each.
    MPICH's launcher also binds when HYDRA_BINDING says so: then 'none' was
    not what the job ran under, and the job fails as not taken."""
    import os

    if family not in cores:
        pytest.skip(f"{family} not installed")
    n = len(os.sched_getaffinity(0))
    if n < 2:
        pytest.skip("needs two cores")
    env, db = tmp_path / "b.env", tmp_path / "b.db"
    # Noise policy: which binding the job ran under is the question.  Unbound
    # ranks beside a busy core share it with the busy loop, each round trip a
    # time slice: the 8 B job took 15-33 s here (under 1 s idle), past its
    # default timeout once; its timeout is raised, its figure never read.
    args = ["run", "--no-advise",
            "--db", str(db), "--mpi", family, "--bench", "latency", "--sizes", "8",
            "--time-cap", "0.05", "--no-probe", "--quiet", "--settings", str(env),
            "--timeout", "150"]
    for bind in ("none", "core"):
        env.write_text(f"COMMSCOPE_BIND={bind}\n")
        rc, _, err = run(capsys, *args)
        assert rc == 0, err
    runs = Store(db).runs()
    cpus = [json.loads(r["header"])["cpus"] for r in runs]
    assert [json.loads(r["config"])["settings"]["COMMSCOPE_BIND"] for r in runs] == [
        "none", "core"]
    assert all(len(settings._cpu_set(c) or ()) == n for c in cpus[0]), cpus
    assert all(len(settings._cpu_set(c) or ()) < n for c in cpus[1]), cpus
    if family == "mpich":
        monkeypatch.setenv("HYDRA_BINDING", "core")
        env.write_text("COMMSCOPE_BIND=none\n")
        rc, _, err = run(capsys, *args)
        assert rc == 1 and "COMMSCOPE_BIND=none was not taken: rank 0 may run only on" in err, err



# -- UCX's own variables ---------------------------------------------------------------
READ = ("[1.2] [vm:1:0]  parser.c:1916 UCX  INFO  UCX_* env variables: UCX_RNDV_THRES=16k "
        "UCX_LOG_LEVEL=info\n")
UNUSED = ("[1.2] [vm:1:0]  parser.c:1908 UCX  WARN  unused env variable: UCX_RNDV_THRES (set "
          "UCX_WARN_UNUSED_ENV_VARS=n to suppress this warning)\n")


def test_ucx_variables_are_read_back_from_what_ucx_says():
    s = {"UCX_RNDV_THRES": "16k", "UCX_RNDV_THRESH": "1m"}
    assert settings.ucx_unread(s, READ + UNUSED) == [
        "UCX_RNDV_THRES=16k was not taken: UCX says it has no such variable"]
    assert settings.ucx_unread({"UCX_RNDV_THRESH": "1m"}, READ) == []
    assert settings.ucx_unread({"UCX_RNDV_THRESH": "1m"}, "") == [
        "UCX_RNDV_THRESH: UCX never read its variables (is this implementation on UCX?)"]
    # one variable: UCX says "variable", not "variables"
    assert settings.ucx_unread({"UCX_RNDV_THRESH": "1m"}, READ.replace("variables", "variable")
                               ) == []
    assert settings.ucx_unread({"OMPI_MCA_x": "1"}, "") == []


@pytest.mark.parametrize("family,key,needle", [
    ("mpich", "UCX_RNDV_THRES", "UCX_RNDV_THRES=16k was not taken: UCX says it has no such"),
    ("openmpi", "UCX_RNDV_THRESH", "UCX_RNDV_THRESH: UCX never read its variables")])
def test_a_ucx_variable_ucx_did_not_take_fails_the_job(capsys, tmp_path, cores, family, key,
                                                       needle):
    """MPICH's UCX warns of a variable it does not have; Debian's Open MPI
    4.1 does not load UCX here at all, so no UCX variable can be taken."""
    if family not in cores:
        pytest.skip(f"{family} not installed")
    env = tmp_path / "ucx.env"
    args = ["run", "--no-advise",
            "--db", str(tmp_path / "u.db"), "--mpi", family, "--bench", "latency",
            "--sizes", "8", "--time-cap", "0.05", "--no-probe", "--quiet", "--settings", str(env)]
    env.write_text(f"{key}=16k\n")
    rc, _, err = run(capsys, *args)
    assert rc == 1 and needle in err, err
    if family == "mpich":
        env.write_text("UCX_RNDV_THRESH=16k\n")
        rc, _, err = run(capsys, *args)
        assert rc == 0, err


def test_what_ucx_chose_is_read_from_its_protocol_tables():
    """UCX_PROTO_INFO=y output of PyPI's MPICH 5 (UCX 1.22) between two
    ranks, the two processes' lines interleaved as they came: the tagged
    send to the other process, once, each range with its transport."""

    from commscope.measure import runner

    said = (golden("ucx_proto_info.txt")).read_text()
    assert settings.ucx_protocols(said) == [
        "intra-node, from host memory: 0..92 eager short (sysv/memory); 93..5028 eager "
        "copy-in copy-out (sysv/memory); 5029..inf (?) rendezvous zero-copy read from remote "
        "(cma/memory)"]
    # the same tables, with UCX's "256K" sizes, and none of self's
    assert settings.ucx_protocols(said.replace("5029..inf", "256K..inf")
                                  )[0].endswith("256K..inf (?) rendezvous zero-copy read from "
                                                "remote (cma/memory)")
    assert settings.ucx_protocols("") == []
    # the stored stderr keeps what else was said, not the tables
    f = golden("ucx_proto_info.txt")
    assert runner._stderr_tail(f, 100000).strip() == ""


@pytest.mark.mpi
def test_the_report_says_what_ucx_chose(capsys, tmp_path, cores):
    """A real MPICH run with UCX_TLS: its lanes, and (written into its
    stored stderr as a run on a newer UCX writes it) UCX's protocols, in
    the report's table of what the libraries chose."""
    import sqlite3

    from commscope.report import sections

    if "mpich" not in cores:
        pytest.skip("mpich not installed")
    env, db = tmp_path / "u.env", tmp_path / "u.db"
    env.write_text("UCX_TLS=tcp,self\n")
    rc, _, err = run(capsys, "run", "--no-advise",
                     "--db", str(db), "--mpi", "mpich", "--bench", "latency",
                     "--sizes", "8", "--time-cap", "0.05", "--no-probe", "--quiet",
                     "--settings", str(env))
    assert rc == 0, err
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET stderr_tail = stderr_tail || ?",
                  ("\nUCX protocols, intra-node, from host memory: 0..92 eager short "
                   "(sysv/memory)",))
    (r,) = Store(db).runs()
    t = sections.library_choices(Store(db), {r["id"]})
    assert t is not None
    said = [row[1] for row in t.rows]
    assert said[0] == "UCX lanes: tcp/lo tcp/eth0" or said[0].startswith("UCX lanes: tcp/"), said
    assert said[1] == "UCX protocols, intra-node, from host memory: 0..92 eager short " \
        "(sysv/memory)", said
    assert all(row[0] == "mpich UCX_TLS=tcp,self" for row in t.rows), t.rows
    rc, out, err = run(capsys, "report", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "What the libraries said they chose" in page and "0..92 eager short" in page
