"""A configuration is a value: what was measured on, in full, with one
canonical key.  Two runs with equal keys measured the same thing; resume,
"latest", comparisons, series, table columns and figure labels all go by it.

The benchmark and the message size are not part of a configuration: a
configuration is what benchmarks run on (implementation, transport, buffer
kind, benchmark parameters, runtime settings, cluster and placement)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace

from ..errors import CommscopeError
from . import core_facts

# Parameters of the core that change what a benchmark measures (not how
# long it samples), with their defaults, the core's own (core_options.json,
# typed: loggp_delay_us 20.0): a label names only those that differ from
# these.  The names are fixed here, not taken from the core's table: every
# configuration's key holds each of them, so a name added would change every
# stored key (a later one goes in LATER_PARAMS).
PARAM_DEFAULTS: dict[str, object] = core_facts.defaults(
    ("window", "dtype", "root", "rotate_root", "loggp_n", "loggp_delay_us", "param"))


def _frozen(d: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(d.items()))


@dataclass(frozen=True)
class Configuration:
    mpi: str  # the implementation's name (openmpi, mpich, ...), never the transport
    mpi_identity: str = ""  # the wrapper and compiler it drives (build.identity)
    transport: str = "mpi"  # mpi | chan | chan-cma: what moves the timed data
    buffer: str = "host"  # where the buffers live (room for device memory)
    params: tuple[tuple[str, object], ...] = ()  # benchmark parameters, sorted
    settings: tuple[tuple[str, str], ...] = ()  # environment and launcher settings, sorted
    cluster: str = "local"
    nodes: int = 1
    ppn: int = 2
    extra: tuple[tuple[str, object], ...] = field(default=())  # later kinds of identity

    @property
    def np(self) -> int:
        return self.nodes * self.ppn

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        for k in ("params", "settings", "extra"):
            d[k] = dict(getattr(self, k))
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> Configuration:
        return cls(mpi=str(d["mpi"]), mpi_identity=str(d.get("mpi_identity") or ""),
                   transport=str(d.get("transport") or "mpi"),
                   buffer=str(d.get("buffer") or "host"),
                   params=_frozen(dict(d.get("params") or {})),  # type: ignore[arg-type]
                   settings=_frozen(dict(d.get("settings") or {})),  # type: ignore[arg-type]
                   cluster=str(d.get("cluster") or "local"), nodes=int(d.get("nodes") or 1),  # type: ignore[arg-type]
                   ppn=int(d.get("ppn") or 1),  # type: ignore[arg-type]
                   extra=_frozen(dict(d.get("extra") or {})))  # type: ignore[arg-type]

    @property
    def key(self) -> str:
        """Canonical: the sorted JSON of every field, hashed."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @property
    def base_key(self) -> str:
        """The key of what a benchmark runs on short of its own parameters and
        the placement: the implementation's build, transport, buffers,
        settings, cluster and the rest (a matmul record's latency series is
        the one of the same base key at 2 processes, with no parameters)."""
        return replace(self, params=(), nodes=1, ppn=1).key

    def parts(self) -> dict[str, str]:
        """Each field as a label would show it ('' where it says nothing)."""
        params = dict(self.params)
        shown = [f"{k}={v}" for k, v in sorted(params.items())
                 if k not in PARAM_DEFAULTS or PARAM_DEFAULTS[k] != v]
        return {
            "mpi": self.mpi,
            "transport": "" if self.transport == "mpi" else self.transport,
            "buffer": "" if self.buffer == "host" else self.buffer,
            "params": " ".join(shown),
            "settings": " ".join(f"{k}={v}" for k, v in self.settings if k not in NOT_SETTINGS),
            "cluster": "" if self.cluster == "local" else self.cluster,
            "nodes": "" if self.nodes == 1 else f"{self.nodes} nodes",
            "np": f"np={self.np}",
            "extra": " ".join(f"{k}={v}" for k, v in self.extra),
            "identity": self.mpi_identity[:8],
        }

    def label(self) -> str:
        p = self.parts()
        return " ".join(v for k, v in p.items() if v and k not in ("np", "identity"))


# Variables of a settings prefix that set nothing: a container image's note
# of what it installed (NVIDIA's images set NCCL_VERSION, which NCCL never
# reads).  Left out of new runs' settings; in runs stored with them, still
# part of the key, never of the label.
NOT_SETTINGS = frozenset({"NCCL_VERSION"})

_CHAN = re.compile(r"^(chan(?:-cma)?)\((.+)\)$")


def from_stored(mpi_name: str, mpi_identity: str | None, options: Mapping[str, object],
                cluster: str, nodes: int | None, np_: int,
                settings: Mapping[str, str] | None = None) -> Configuration:
    """The configuration of a run stored before configurations existed
    (schema 4 and older): the transport was written into the name then."""
    m = _CHAN.match(mpi_name)
    mpi, transport = (m.group(2), m.group(1)) if m else (mpi_name, str(
        options.get("transport") or "mpi"))
    n = int(nodes or 1)
    return Configuration(mpi=mpi, mpi_identity=mpi_identity or "", transport=transport,
                         params=params_of(options), settings=_frozen(dict(settings or {})),
                         cluster=cluster or "local", nodes=n, ppn=max(1, np_ // n))


# Parameters that joined later: part of a configuration only where they
# are not the default, so that every configuration stored before them
# keeps its key (hot buffers are what every earlier run measured).
LATER_PARAMS: dict[str, object] = core_facts.defaults(("buffers",))


def params_of(options: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    later = {k: options[k] for k, v in LATER_PARAMS.items()
             if options.get(k) is not None and options.get(k) != v}
    return _frozen({**{k: options.get(k, v) for k, v in PARAM_DEFAULTS.items()}, **later})


_WHAT_CACHE: dict[tuple[str, tuple[str, ...], str], str] = {}


def _applies(param: str, row: Mapping[str, object]) -> bool:
    """Does a benchmark parameter change what this record measured?  A
    latency record is the same measurement whatever --root said: the core's
    table says which options change each benchmark (changed_by).  A
    parameter the table names for no benchmark is said wherever it is set;
    a benchmark the table does not know (core_facts.bench) goes by what its
    record shows: the root where it has one, an application's --param where
    it declares parameters, the buffers where it does not (an application
    moves its own data), nothing else.  A parameter left out of a label
    never merges two configurations: config.Apart names it where needed."""
    if param not in core_facts.changing_options():
        return True
    b = core_facts.bench(str(row["bench"]))
    if b.known:
        return param in b.changed_by
    app = bool(row["params"])
    if param in ("root", "rotate_root"):
        return row["root"] is not None
    if param == "buffers":
        return not app
    return param == "param" and app


def shown_params(row: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """The parameters a record's label names: those that apply to its
    benchmark and differ from the defaults, as text ("buffers", "cold")."""
    cfg = config_of(row)
    if cfg is None:
        return ()
    return tuple((k, str(v)) for k, v in cfg.params
                 if _applies(k, row) and (k not in PARAM_DEFAULTS or PARAM_DEFAULTS[k] != v))


def what(row: Mapping[str, object], params: bool = True) -> str:
    """What a stored record was measured with, short of where: the
    implementation, and the transport, buffers, parameters and settings
    where they are not the defaults ("openmpi", "openmpi chan",
    "mpich UCX_TLS=sm"); only the parameters that apply to the record's
    benchmark."""
    text = _text(row)
    cfg = config_of(row)
    if cfg is None:
        return str(row["mpi_name"])
    used = tuple(k for k, _ in cfg.params if params and _applies(k, row))
    declared = str(row["params"] or "")
    key = (str(text), used, declared)
    if key not in _WHAT_CACHE:
        def own(k: str, v: object) -> object:
            """An application's --param, less what its benchmark does not declare."""
            if k != "param":
                return v
            mine = {x.split("=", 1)[0] for x in declared.split(";") if "=" in x}
            return ";".join(x for x in str(v).split(";") if x.split("=", 1)[0] in mine)

        c = Configuration(**{**cfg.__dict__, "params": tuple(
            (k, own(k, v)) for k, v in cfg.params if k in used)})
        p = c.parts()
        _WHAT_CACHE[key] = " ".join(v for k, v in p.items() if v and k in (
            "mpi", "transport", "buffer", "params", "settings", "extra"))
    return _WHAT_CACHE[key]


# -- telling configurations apart -------------------------------------------
# The order a label names fields in (as parts() does), the build last.
_ORDER = ("mpi", "transport", "buffer", "params", "settings", "cluster", "nodes", "ppn",
          "extra", "mpi_identity")
_UNSET = object()


def differences(a: Configuration, b: Configuration) -> tuple[str, ...]:
    """Where two configurations differ: a field's name ("mpi_identity"), or
    one parameter, setting or extra by its name ("params.window")."""
    out: list[str] = []
    for name in _ORDER:
        x, y = getattr(a, name), getattr(b, name)
        if name in ("params", "settings", "extra"):
            dx, dy = dict(x), dict(y)
            out += [f"{name}.{k}" for k in sorted(set(dx) | set(dy), key=str)
                    if dx.get(k, _UNSET) != dy.get(k, _UNSET)]
        elif x != y:
            out.append(name)
    return tuple(out)


def word(cfg: Configuration, name: str, width: int = 8) -> str:
    """How a label names one field of cfg (a name from `differences`), even
    where it holds the default: "window=64", "build 2667a80c"."""
    if "." in name:
        part, k = name.split(".", 1)
        v = dict(getattr(cfg, part)).get(k, _UNSET)
        return f"{k}=(unset)" if v is _UNSET else f"{k}={v}"
    if name == "mpi_identity":
        return f"build {cfg.mpi_identity[:width] or '(unknown)'}"
    if name == "nodes":
        return f"{cfg.nodes} nodes"
    if name == "ppn":
        return f"ppn={cfg.ppn}"
    return f"{name}={getattr(cfg, name)}"


class Apart:
    """Display labels that never stand for two configurations.

    entries are (label, key, configuration) for every record to be shown,
    the label as it would be shown (what, process count, place).  Where one
    label holds records of several keys, the fields that tell those
    configurations apart (a parameter that does not apply to the benchmark,
    the build behind one implementation name...) are named (`name`) in the
    label of every configuration of that implementation, so that each reads
    the same way wherever it is shown.  Keys that nothing stored tells apart
    (a record without a configuration, or two keys of equal configurations)
    are a CommscopeError naming both."""

    def __init__(self, entries: Iterable[tuple[str, str, Configuration | None]]) -> None:
        keys: dict[str, dict[str, Configuration | None]] = {}
        for label, key, cfg in entries:
            keys.setdefault(label, {}).setdefault(key, cfg)
        found: dict[str, set[str]] = {}  # implementation -> the fields that tell its own apart
        builds: set[str] = set()
        for label, cfgs in sorted(keys.items()):
            items = sorted(cfgs.items())
            for i, (ka, ca) in enumerate(items):
                for kb, cb in items[i + 1:]:
                    if ca is None or cb is None:
                        none = " nor ".join(k or "(no key)" for k, c in ((ka, ca), (kb, cb))
                                            if c is None)
                        raise CommscopeError(
                            f"two configurations are both labelled '{label}' and nothing "
                            f"stored tells them apart: keys {ka or '(no key)'} and "
                            f"{kb or '(no key)'} (no configuration is stored for {none})")
                    d = differences(ca, cb)
                    if not d:
                        raise CommscopeError(
                            f"two configurations are both labelled '{label}' and differ in "
                            f"nothing stored: keys {ka} and {kb} both hold "
                            f"{json.dumps(ca.to_json(), sort_keys=True)} (the store's keys "
                            "disagree with its configurations)")
                    for c in (ca, cb):
                        found.setdefault(c.mpi, set()).update(d)
                    if "mpi_identity" in d:
                        builds |= {ca.mpi_identity, cb.mpi_identity}

        def ordered(fs: Iterable[str]) -> tuple[str, ...]:
            return tuple(sorted(fs, key=lambda f: (_ORDER.index(f.split(".")[0]), f)))

        self.by_impl = {m: ordered(fs) for m, fs in found.items()}
        self.fields = ordered(set().union(*found.values()))
        self.width = 8  # of a build's identity: enough to tell every build named apart
        while len({b[:self.width] for b in builds}) < len(builds):
            self.width += 4

    def name(self, text: str, cfg: Configuration | None) -> str:
        """text (what a record ran with) with the fields that tell its
        configuration from another of the same label, where not already said."""
        if cfg is None:
            return text
        words = [w for f in self.by_impl.get(cfg.mpi, ())
                 if (w := word(cfg, f, self.width)) and f" {w} " not in f" {text} "]
        return " ".join([text, *words])


def stored(row: Mapping[str, object]) -> tuple[str, Configuration | None]:
    """A stored record's configuration key (runs.config_key; its
    configuration's where only that was stored; '' where neither) and its
    full configuration (None where the store holds none)."""
    try:
        key = row["config_key"]
    except (KeyError, IndexError):
        key = None
    full = config_of(row)
    return str(key or (full.key if full else "")), full


def _text(row: Mapping[str, object]) -> str:
    try:
        return str(row["config"] or "")
    except (KeyError, IndexError):
        return ""


_CFG_CACHE: dict[str, Configuration] = {}


def config_of(row: Mapping[str, object]) -> Configuration | None:
    """A stored row's configuration (its "config" column, JSON), decoded
    once per text; None where the row has none (stored before
    configurations existed, or a row without that column)."""
    text = _text(row)
    if not text:
        return None
    if text not in _CFG_CACHE:
        _CFG_CACHE[text] = Configuration.from_json(json.loads(text))
    return _CFG_CACHE[text]


def place(r: Mapping[str, object]) -> str:
    """Where a record was measured: the cluster, and its nodes when more than one."""
    nodes = r["nodes"] or 1
    return r["cluster"] if nodes == 1 else f"{r['cluster']} {nodes} nodes"
