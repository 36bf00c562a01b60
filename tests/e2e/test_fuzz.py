"""Random and boundary values for every option of the commands a user
points at data or at a sweep: whatever comes in, the exit code is 0, 1 or
2, an error is a few lines and never a traceback, and the store is
byte-identical afterwards.  Nothing is launched: the test stops a command
where it would start a job (the runner's sweep, tune's first job, doctor's
first remote command or ping, the probe), and counts that as getting
through.  Not fuzzed here, because what they do is change the system:
cluster up/down (network namespaces), mpi install (downloads), mpi add and
remove (the user's list of implementations), build (compiles); their
inputs have tests of their own (unit/cli/test_errors, unit/measure/test_installs,
e2e/test_cluster_emu)."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from commscope import cli  # noqa: E402
from commscope.cli import run as cli_run  # noqa: E402
from tests.helpers import golden_store  # noqa: E402

FUZZED = ("run", "show", "export", "analyze crossover", "analyze findings",
          "analyze guidelines", "analyze predict", "fit", "report", "compare", "tune",
          "slurm script", "mpi list", "doctor", "probe", "cluster list")

BOUNDARY = ["", " ", "0", "-1", "1", "2", "3", "64", "1e400", "nan", "inf", "-inf",
            "99999999999999999999", "0.5", "x", "all", "none", "hot", "cold", "openmpi", "mpich",
            "latency", "bw", "coll", "matmul", "N=64", "N=0", "N=64;N=128", "8:1M", "4M:1",
            "1:4Q", "local", "emu:nope", "hostfile:/nonexistent", "slurm", "run=1",
            "run=99999999999999999999", "-oProxyCommand=x", "../../x", "/", "/dev/null",
            "/proc/self/status", "floor~50ns", "dominant", "\u00e9", "a,b", ",", "-", "$(x)",
            # files the test makes: the store itself, an empty file, a binary one, a
            # path in a missing folder, a hostfile naming an option
            "@STORE@", "@EMPTY@", "@BIN@", "@MISSING@", "hostfile:@BIN@", "hostfile:@HOSTS@"]
VALUES = st.one_of(st.sampled_from(BOUNDARY),
                   st.text(st.characters(blacklist_categories=("Cs",),
                                         blacklist_characters="\x00"), max_size=12))


class Launched(BaseException):
    """Where a real job would start."""


def _commands() -> dict[str, list[argparse.Action]]:
    out: dict[str, list[argparse.Action]] = {}

    def walk(p: argparse.ArgumentParser, words: list[str]) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if subs:
            for name, sp in subs[0].choices.items():
                walk(sp, [*words, name])
        elif " ".join(words) in FUZZED:
            out[" ".join(words)] = [a for a in p._actions
                                    if a.option_strings and "-h" not in a.option_strings]

    walk(cli.make_parser(), [])
    return out


COMMANDS = _commands()


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    cmd = draw(st.sampled_from(sorted(COMMANDS)))
    argv = cmd.split()
    for action in draw(st.lists(st.sampled_from(COMMANDS[cmd]), max_size=3)):
        argv.append(action.option_strings[-1])
        if action.nargs != 0:
            argv.append(draw(VALUES))
    return argv


@pytest.fixture(scope="module")
def precious(tmp_path_factory) -> Path:
    return golden_store(tmp_path_factory.mktemp("fuzz") / "precious.db", runs=2)


def test_no_input_breaks_a_command_or_the_store(precious, tmp_path, monkeypatch, impls):
    from commscope.advise import search

    def launch(*a, **k):
        raise Launched

    monkeypatch.setattr(cli_run, "run_sweep", launch)
    monkeypatch.setattr(search, "read_cvars", launch)
    monkeypatch.setattr(search, "search", launch)
    from commscope.advise import doctor
    from commscope.measure import probe

    monkeypatch.setattr(doctor, "bounded", launch)
    monkeypatch.setattr(doctor, "_ping", launch)
    monkeypatch.setattr(probe, "run", launch)
    monkeypatch.delenv("COMMSCOPE_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)  # whatever an example writes lands here
    digest = hashlib.sha256(precious.read_bytes()).hexdigest()
    seen = {"launched": 0}
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "bin").write_bytes(b"\x00\xff\xfe\x80")
    (tmp_path / "hosts").write_text("-oProxyCommand=x slots=1\n")
    files = {"@STORE@": str(precious), "@EMPTY@": str(tmp_path / "empty"),
             "@BIN@": str(tmp_path / "bin"), "@MISSING@": str(tmp_path / "no" / "x"),
             "@HOSTS@": str(tmp_path / "hosts")}

    def real(v: str) -> str:
        for k, path in files.items():
            v = v.replace(k, path)
        return v

    @settings(max_examples=400, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(argvs())
    def one(argv: list[str]) -> None:
        import contextlib
        import io

        argv = [real(v) for v in argv]
        (tmp_path / "empty").write_bytes(b"")  # as it was, whatever the last example did
        err = io.StringIO()
        rc: object
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            words = _cmd(argv).split()
            has_db = any("--db" in a.option_strings for a in COMMANDS[" ".join(words)])
            try:  # the store first: a --db the example draws comes later and wins
                rc = cli.main([*words, "--db", str(precious), *argv[len(words):]] if has_db
                              else argv)
            except Launched:
                seen["launched"] += 1
                rc = 0
            except SystemExit as exc:  # argparse: usage errors and --help
                rc = exc.code
        text = err.getvalue()
        assert rc in (0, 1, 2), (argv, rc, text)
        assert "Traceback" not in text and "internal error" not in text, (argv, text)
        assert text.count("\n") <= 12, (argv, text)
        assert hashlib.sha256(precious.read_bytes()).hexdigest() == digest, argv

    one()
    assert seen["launched"] > 0  # some examples got all the way to a launch


def _cmd(argv: list[str]) -> str:
    """The command words an argv starts with."""
    words = argv[:2] if " ".join(argv[:2]) in COMMANDS else argv[:1]
    return " ".join(words)
