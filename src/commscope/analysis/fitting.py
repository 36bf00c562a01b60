"""Hockney's and LogGP's models fitted to stored series: what each fit is,
the line that says it, and the parameters to store with the run it came
from.  No I/O: the caller finds the runs and stores the fits."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..store import core_facts
from . import hockney, loggp
from .series import Config, Series


@dataclass(frozen=True)
class Fitted:
    """One line of `fit`'s output; with params, a fit to store for the run
    of (configuration, bench)."""

    text: str
    config: Config | None = None
    bench: str = ""
    model: str = ""
    params: dict[str, object] | None = None
    counts: bool = True  # a fit made (stored or refused), not a note


HEADER = (f"{'configuration':<34} {'bench':<15} {'alpha_us':>9} {'beta_GB/s':>10} "
          f"{'break_B':>9} {'alpha2_us':>9} {'beta2_GB/s':>10} {'rms_err':>8}")


def hockney_fits(series: Mapping[tuple[Config, str], Series], groups: Mapping[str, str],
                 app_like: set[str]) -> Iterator[Fitted]:
    """Hockney's piecewise line for every series of a message size: groups
    are the benchmarks' groups from the core's table; a benchmark it does
    not know is an application when its records carry one's fields
    (app_like)."""
    yield Fitted(HEADER, counts=False)
    apps: list[str] = []
    for (cfg, bench), s in sorted(series.items(), key=lambda kv: (kv[0][0].mpi, kv[0][1])):
        why = hockney.skipped(bench, groups.get(bench), bench in app_like)
        if why:
            if why.startswith("an application") and bench not in apps:
                apps.append(bench)
            continue
        sizes = sorted(x for x in s if x > 0)
        if len(sizes) < 2:
            yield Fitted(f"{cfg.label():<34} {bench:<15} not stored: {len(sizes)} size(s), "
                         "a line needs more", counts=False)
            continue
        f = hockney.fit(sizes, [s[x].median for x in sizes])
        bad = hockney.implausible(f, sizes, [s[x].median for x in sizes])
        if bad:  # fitted and refused: said, not an empty result
            yield Fitted(f"{cfg.label():<34} {bench:<15} not stored: {bad}")
            continue
        p1 = f.pieces[0]
        p2 = f.pieces[1] if len(f.pieces) > 1 else None
        yield Fitted(f"{cfg.label():<34} {bench:<15} {p1.alpha_us:>9.3f} "
                     f"{p1.beta_gb_per_s:>10.2f} {f.breakpoint or '-':>9} "
                     f"{(f'{p2.alpha_us:.3f}' if p2 else '-'):>9} "
                     f"{(f'{p2.beta_gb_per_s:.2f}' if p2 else '-'):>10} "
                     f"{f.rms_rel_error:>8.3f}", cfg, bench, "hockney", f.to_json())
    if apps:
        yield Fitted(f"not fitted: {', '.join(apps)} (applications: their size is a problem "
                     "size, not a message; Hockney's model is of messages)", counts=False)


def loggp_fits(series: Mapping[tuple[Config, str], Series],
               options: Callable[[Config], Mapping[str, object]]) -> Iterator[Fitted]:
    """LogGP's parameters from the four trains of each configuration that
    has them all; options(config): the options its loggp_nd run had (the
    train length and the delay)."""
    configs = {cfg for (cfg, bench) in series if bench == "loggp_1"}
    for cfg in sorted(configs, key=lambda c: (c.mpi, c.np)):
        trains = {b: series.get((cfg, b)) for b in core_facts.names("loggp")}
        if not all(trains.values()):
            continue
        opts = options(cfg)
        med = {b: {s: p.median for s, p in t.items()} for b, t in trains.items() if t}
        p = loggp.extract(med["loggp_1"], med["loggp_n"], med["loggp_nd"], med["loggp_ndr"],
                          int(opts["loggp_n"]), float(opts["loggp_delay_us"]))  # type: ignore[call-overload, arg-type]
        yield Fitted(f"LogGP {cfg.label()}: L={p.L_us:.3f} us  o_s={p.o_s_us:.3f} us  "
                     f"o_r={p.o_r_us:.3f} us  g={p.g_us:.3f} us  "
                     f"G={p.G_us_per_byte * 1e3:.4f} ns/B ({p.G_gb_per_s:.2f} GB/s)"
                     + ("  [L < 0: the overheads account for the whole small-message time]"
                        if p.L_us < 0 else ""), cfg, "loggp_nd", "loggp", p.to_json())
