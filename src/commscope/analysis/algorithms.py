"""Which collectives a library lets a user choose the algorithm of, and the
variable that chooses it: one place for `tune`'s search (advise/search.py),
the diagnosis's hypotheses (mechanisms.py) and the causes' words
(causes.py)."""

from __future__ import annotations

# collectives whose algorithm Open MPI's coll/tuned and MPICH 4 let a user
# choose and `tune` searches by default
CHOSEN = ("bcast", "allreduce", "reduce", "alltoall")
# the MPI call each collective benchmark makes, as the libraries name its variables
OMPI_VAR = {"reduce_scatter": "reduce_scatter_block"}
MPICH_VAR = {"reduce_scatter": "REDUCE_SCATTER_BLOCK"}


def variable(family: str, call: str) -> str | None:
    """The variable that forces `call`'s algorithm under a family (Open
    MPI's without its OMPI_MCA_ prefix, which needs coll_tuned_use_dynamic_rules
    too), or None where the family has none of this form (MVAPICH2: its
    own tables, below; Intel MPI: I_MPI_ADJUST_*, asked of the library)."""
    if family == "openmpi":
        return f"coll_tuned_{OMPI_VAR.get(call, call)}_algorithm"
    if family == "mpich":
        return f"MPIR_CVAR_{MPICH_VAR.get(call, call.upper())}_INTRA_ALGORITHM"
    return None


# MVAPICH2 2.3.7 chooses each collective's algorithm from its own tuning
# tables, not from MPICH's variables; a user's MV2_INTER_<CALL>_TUNING (for
# alltoall MV2_ALLTOALL_TUNING) replaces the table with one algorithm at every
# size (ch3_shmem_coll.c reads them; each <call>_tuning.c's
# MV2_internode_<Call>_is_define maps the number to the function).  The flat
# algorithms only: the two-level ones, multicast and zero-copy need several
# nodes or InfiniBand.  Not bcast or gather: on one node their table's
# function never decides (bcast_osu.c runs the inter-node step on a leader
# communicator of one rank, then its shared-memory bcast, which the user
# table sets at every size; gather_osu.c runs MPIR_Gather_intra for ranks
# placed in blocks); the shared-memory switch below is tried for them.  For
# reduce the intra variable is set too: without it the user table's
# two-level flag is left unset (reduce_tuning.c), and only with it does the
# named algorithm surely run alone.
MV2_ALGORITHMS: dict[str, tuple[str, dict[str, str]]] = {
    "allreduce": ("MV2_INTER_ALLREDUCE_TUNING",
                  {"1": "recursive doubling", "2": "reduce-scatter then allgather",
                   "9": "ring"}),
    "reduce": ("MV2_INTER_REDUCE_TUNING",
               {"1": "binomial", "2": "k-nomial", "5": "reduce-scatter then gather",
                "8": "an allreduce"}),
    "allgather": ("MV2_INTER_ALLGATHER_TUNING",
                  {"2": "recursive doubling", "3": "Bruck's", "4": "ring", "5": "direct"}),
    "alltoall": ("MV2_ALLTOALL_TUNING",
                 {"0": "Bruck's", "1": "recursive doubling", "2": "scatter-destination",
                  "3": "pairwise"}),
    "scatter": ("MV2_INTER_SCATTER_TUNING", {"1": "binomial", "2": "direct"}),
}
# settings given with a call's algorithm, and what else the setting changes
MV2_WITH = {"reduce": (("MV2_INTRA_REDUCE_TUNING", "1"),)}
# MV2_INTER_REDUCE_TUNING=8 rewrites the reduce_scatter table too (reduce_tuning.c)
MV2_ALSO = {("reduce", "8"): ("reduce_scatter",)}
# MVAPICH2's shared-memory collectives (a node's ranks through one shared
# segment) answer before its tables for the calls they serve; off, every
# collective goes by point-to-point algorithms: a switch of all of them
MV2_SHMEM_OFF = (("MV2_USE_SHMEM_COLL", "0"),)
