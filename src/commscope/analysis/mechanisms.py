"""What could make a call slow, each with the experiment that would show
it: the hypotheses the diagnosis tries on a confirmed gap (diagnosis.py).

Each hypothesis is a mechanism of the slow side's library with the
setting that takes it away, and its preconditions: a mechanism whose
precondition does not hold here is not tried (Open MPI's inline sends
matter only with XPMEM; an eager limit cannot explain a gap that ends
below it).  A mechanism no setting moves is said as such and never as a
cause.  The library's own settings come first and are searched whole
(every algorithm it offers for the collective, its device path before its
generic one): code is never advised before them.

Read against the sources of the libraries measured here (Open MPI 4.1.4,
MPICH 4.0.2): docs/diagnosis.md cites the lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .algorithms import MPICH_VAR, MV2_ALGORITHMS, MV2_ALSO, MV2_SHMEM_OFF, MV2_WITH, variable
from .diagnosis import Gap, Hypothesis

# A message of s bytes goes eagerly while s plus ob1's header union fits the
# limit (pml_ob1_sendreq.h:380: 56 B on x86-64): under a 4096 B limit, 4040 B
# of payload is the last eager one.
OB1_HEADER = 56
OB1_INLINE = 256  # pml_ob1_isend.c, mca_pml_ob1_send_inline: a fixed number, no parameter

P2P_CALLS = ("latency", "bw", "bibw", "roundtrip")
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "alltoall",
               "allgather", "reduce_scatter")
REDUCING = ("reduce", "allreduce", "reduce_scatter")
# MPICH algorithms a single-node search leaves out: smp splits by node, ccl
# hands the call to an external library, auto is the default's own choice
MPICH_SKIP = ("smp", "ccl", "auto")
# every MPICH 4 collective also takes nb, the non-blocking algorithm waited on
# (MPIR_<Coll>_allcomm_nb: mpir_cvars.h), which the library's names of its
# intra algorithms leave out
MPICH_NB = "nb"
# the calls whose ch4 device path is a composition over the node's
# sub-communicators on one node (ch4_coll_impl.h: barrier and bcast alpha,
# reduce alpha and beta); the others pass the call to the netmod on the
# whole communicator, where turning the path off changes nothing but a lookup
MPICH_COMPOSED = ("barrier", "bcast", "reduce")
# what else a setting of one MPICH collective changes: the device path's
# barrier and MPICH's own smp barrier end in a one-byte bcast
MPICH_ALSO = {"bcast": ("barrier",)}
# and of one Open MPI collective: coll/tuned's reduce_scatter_block at 128 KiB
# a block and more is a reduce then a scatter (coll_tuned_decision_fixed.c)
OMPI_ALSO = {"reduce": ("reduce_scatter",), "scatter": ("reduce_scatter",)}
# UCX's shared-memory transports (v1.13): a short message's payload ends at
# about 92 B (its 128 B FIFO element, less headers: mm_iface.c), one copy's
# at 8256 B (the segment), and rendezvous starts above that
UCX_SHORT = 92
UCX_BCOPY = 8256

Cvars = Mapping[str, Mapping[str, object]]  # name -> {"value": ..., "enum": [...]}



def _value(cv: Cvars, name: str) -> str | None:
    v = cv.get(name, {}).get("value")
    return None if v is None else str(v)


def _int(cv: Cvars, name: str) -> int | None:
    v = _value(cv, name)
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return None


def _pow2_above(n: int) -> int:
    k = 1
    while k <= n:
        k <<= 1
    return k


def _ucx(cv: Cvars) -> bool:
    pml = _value(cv, "pml") or ""
    return not pml.startswith("^") and "ucx" in pml.split(",")


def openmpi(gap: Gap, cv: Cvars) -> list[Hypothesis]:
    """coll/tuned's algorithms for a collective (at 2 ranks most are one
    message each: forcing them tests little, and the text says what each
    did); the shared-memory path's eager limit and single copy for a call
    whose messages cross them, collectives included."""
    call, sizes = gap.call, gap.sizes
    out: list[Hypothesis] = []
    if call in COLLECTIVES:
        var = variable("openmpi", call)
        for item in cv.get(var, {}).get("enum", []) or []:  # type: ignore[union-attr]
            if item == "ignore":
                continue
            out.append(Hypothesis(
                f"alg:{call}:{item}", f"the {call} algorithm coll/tuned's fixed rules chose",
                (("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"), (f"OMPI_MCA_{var}", str(item))),
                (call, *OMPI_ALSO.get(call, ()))))
    elif call not in P2P_CALLS:
        return out
    if _ucx(cv):
        return out
    limit = _int(cv, "btl_vader_eager_limit")
    top = max(sizes) if sizes else 0
    above = [s for s in sizes if limit is not None and s + OB1_HEADER > limit]
    if limit is not None and above:
        first = limit - OB1_HEADER + 1  # the first payload sent by rendezvous
        want = _pow2_above(top + OB1_HEADER - 1)
        sets = [("OMPI_MCA_btl_vader_eager_limit", str(want))]
        biggest = _int(cv, "btl_vader_max_send_size")
        if biggest is not None and biggest < want:
            sets.append(("OMPI_MCA_btl_vader_max_send_size", str(want)))
        out.append(Hypothesis(
            "eager-limit",
            f"Open MPI's shared-memory eager limit ({limit} B): above {first - 1} B of payload a "
            "message goes by rendezvous (a request to send and a reply first: "
            "pml_ob1_sendreq.h:380)", tuple(sorted(sets)), COLLECTIVES + P2P_CALLS,
            applies=(first, 1 << 62), raises="OMPI_MCA_btl_vader_eager_limit"))
        copy = _value(cv, "btl_vader_single_copy_mechanism")
        for item in cv.get("btl_vader_single_copy_mechanism", {}).get("enum", []) or []:  # type: ignore[union-attr]
            if copy and str(item) != copy:
                out.append(Hypothesis(
                    f"single-copy:{item}",
                    f"the rendezvous's single copy ({copy}) rather than {item}",
                    (("OMPI_MCA_btl_vader_single_copy_mechanism", str(item)),),
                    COLLECTIVES + P2P_CALLS, applies=(first, 1 << 62)))
    copy = _value(cv, "btl_vader_single_copy_mechanism")
    inline = _int(cv, "btl_vader_max_inline_send")
    if copy == "xpmem" and inline is not None and any(s > inline for s in sizes):
        # only with XPMEM does vader send above its inline limit by single copy
        out.append(Hypothesis(
            "inline", f"vader's inline limit ({inline} B) with XPMEM",
            (("OMPI_MCA_btl_vader_max_inline_send", str(_pow2_above(top))),),
            COLLECTIVES + P2P_CALLS))
    if call in P2P_CALLS and sizes and min(sizes) > OB1_INLINE >= min(sizes) // 2:
        out.append(Hypothesis(
            "ob1-inline", f"ob1's inline send, which stops at {OB1_INLINE} B (above it, a send "
            "request and the FIFO instead of the fast box)",
            untestable="a fixed number in ob1's send path (pml_ob1_isend.c:95); no setting "
                       "moves it"))
    return out


def mpich_device(version: str) -> str:
    """The device MPICH was built with, from its version text ("ch4:ucx")."""
    for line in version.splitlines():
        if line.startswith("MPICH Device:"):
            return line.split(":", 1)[1].strip()
    return ""


def mpich(gap: Gap, cv: Cvars, algorithms: Mapping[str, Sequence[str]],
          device: str = "") -> list[Hypothesis]:
    """MPICH 4 (ch4): a collective goes to the device path (a composition
    of calls on the node's sub-communicators) unless its own variable
    turns that off, and MPIR_CVAR_<CALL>_INTRA_ALGORITHM takes effect
    either way (mpir_coll.c, ch4_coll.h); the shared-memory module's own
    algorithms exist only where MPICH was built with it (ch4:ofi; ch4:ucx
    leaves shared memory to UCX, and the POSIX variables it still lists
    do nothing).  Point-to-point under ch4:ucx is UCX's: its transports and
    rendezvous threshold are UCX's variables."""
    call, sizes = gap.call, gap.sizes
    out: list[Hypothesis] = []
    ucx = device.startswith("ch4:ucx")
    if call in P2P_CALLS and ucx:
        top, low = (max(sizes), min(sizes)) if sizes else (0, 0)
        for tls in ("posix,self", "sysv,self"):
            out.append(Hypothesis(f"ucx-tls:{tls}", "UCX's choice of shared-memory transport",
                                  (("UCX_TLS", tls),), COLLECTIVES + P2P_CALLS))
        if low <= 4 * UCX_SHORT and top > UCX_SHORT:
            out.append(Hypothesis(
                "ucx-short", f"UCX's short messages, which end at about {UCX_SHORT} B of "
                "payload (its 128 B shared-memory FIFO element: uct/sm/mm/base/mm_iface.c)",
                (("UCX_POSIX_FIFO_ELEM_SIZE", "512"), ("UCX_SYSV_FIFO_ELEM_SIZE", "512")),
                COLLECTIVES + P2P_CALLS))
        if top > UCX_BCOPY:
            out.append(Hypothesis(
                "ucx-rndv", f"UCX's rendezvous above about {UCX_BCOPY} B (its automatic "
                "threshold, not read here: ucp_ep.c)",
                (("UCX_RNDV_THRESH", str(_pow2_above(top))),), COLLECTIVES + P2P_CALLS,
                applies=(UCX_BCOPY + 1, 1 << 62), raises="UCX_RNDV_THRESH"))
            out.append(Hypothesis("ucx-cma", "UCX's single copy (cma) in its rendezvous",
                                  (("UCX_TLS", "^cma"),), COLLECTIVES + P2P_CALLS,
                                  applies=(UCX_BCOPY + 1, 1 << 62)))
        return out
    if call not in COLLECTIVES:
        return out
    up = MPICH_VAR.get(call, call.upper())
    also = (call, *MPICH_ALSO.get(call, ()))
    one = f"MPIR_CVAR_{up}_DEVICE_COLLECTIVE"
    off: tuple[tuple[str, str], ...] = ()
    if one in cv and (call in MPICH_COMPOSED or not ucx):
        off = ((one, "0"),)
        out.append(Hypothesis(
            f"device-off:{call}",
            f"the device path MPICH takes for {call} (a composition over the node's "
            "sub-communicators: ch4_coll_impl.h)", off, also))
    posix = f"MPIR_CVAR_{up}_POSIX_INTRA_ALGORITHM"
    if posix in cv and device.startswith("ch4:ofi"):
        out.append(Hypothesis(
            f"posix:{call}:release_gather",
            f"the shared-memory module's choice for {call} (not its release_gather)",
            ((posix, "release_gather"),), also))
    var = variable("mpich", call)
    if var in cv:
        # an algorithm that cannot apply here fails the job rather than running
        # MPICH's own choice in silence (MPIR_CVAR_COLLECTIVE_FALLBACK)
        probe = (("MPIR_CVAR_COLLECTIVE_FALLBACK", "error"),) if (
            "MPIR_CVAR_COLLECTIVE_FALLBACK" in cv) else ()
        names = [a for a in algorithms.get(call, ()) if a not in MPICH_SKIP]
        for alg in [*names, *([MPICH_NB] if MPICH_NB not in names else [])]:
            out.append(Hypothesis(f"alg:{call}:{alg}", f"the {call} algorithm MPICH chose",
                                  ((var, alg),), also, probe=probe))
            if call == "barrier" and off:
                # the device path's barrier is one on the node's communicator and
                # then a bcast of one byte (ch4_coll_impl.h:11-54); with the path
                # off, MPICH's own selection takes the same node-aware shape for
                # a communicator with sub-communicators (smp: mpir/generic.json);
                # only both settings together run the algorithm alone
                out.append(Hypothesis(
                    f"alg:{call}:{alg}+device-off",
                    "MPICH's node-aware barrier (a barrier on the node's communicator, then a "
                    "one-byte bcast, on the device path and in its own smp algorithm alike)",
                    tuple(sorted(off + ((var, alg),))), also, probe=probe))
    return out


def fast_side(gap: Gap, family_fast: str, cv_fast: Cvars) -> list[Hypothesis]:
    """Mechanisms of the faster library that would explain the gap if taking
    them away slowed it to the other's time: Open MPI's vectorised
    reduction operator (op/avx) for a reduction it does faster."""
    if (gap.kind != "implementation" or gap.call not in REDUCING or family_fast != "openmpi"
            or "op_avx_support" not in cv_fast):
        return []
    # with op/avx excluded, Open MPI's base loop runs (op_base_functions.c, built
    # -O3: SSE2); MPICH's MPI_SUM is a scalar loop (opsum.c, -O2) no setting changes
    return [Hypothesis("op-avx", "Open MPI's AVX-512 reduction operator (op/avx; without it "
                       "its SSE2 loop runs, and MPICH's MPI_SUM is a scalar loop no setting "
                       "changes)", (("OMPI_MCA_op", "^avx"),), REDUCING, side="fast")]


def mvapich2(gap: Gap) -> list[Hypothesis]:
    """MVAPICH2 2.3.7: its shared-memory collectives first (they decide
    before the tables), then every flat algorithm of the call's table."""
    if gap.call not in COLLECTIVES:
        return []
    out = [Hypothesis(f"mv2-shmem-off:{gap.call}",
                      "MVAPICH2's shared-memory collectives (MV2_USE_SHMEM_COLL, on by default: "
                      "ch3_shmem_coll.c)", MV2_SHMEM_OFF, COLLECTIVES)]
    if gap.call in MV2_ALGORITHMS:
        var, algs = MV2_ALGORITHMS[gap.call]
        out += [Hypothesis(f"mv2-alg:{gap.call}:{v}",
                           f"the {gap.call} algorithm MVAPICH2's tuning table chose (here "
                           f"{name}: {var}={v})",
                           tuple(sorted(((var, v), *MV2_WITH.get(gap.call, ())))),
                           (gap.call, *MV2_ALSO.get((gap.call, v), ())))
                for v, name in algs.items()]
    return out


def hypotheses(gap: Gap, family: str, cv: Cvars, algorithms: Mapping[str, Sequence[str]],
               family_fast: str = "", cv_fast: Cvars | None = None,
               version: str = "", variant: str = "") -> list[Hypothesis]:
    """Every mechanism the slow side's library could have here, with its
    setting; the device path and the library's own algorithms before all
    else, since they decide before anything a user could write."""
    if variant == "mvapich2":
        out = mvapich2(gap)
    elif family == "openmpi":
        out = openmpi(gap, cv)
    elif family == "mpich":
        out = mpich(gap, cv, algorithms, mpich_device(version))
    else:
        out = []
    return out + fast_side(gap, family_fast, cv_fast or {})
