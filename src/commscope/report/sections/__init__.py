"""The report's sections after the first screen, one module each: each a
function that makes its figures and returns the items its template block
shows.  What the page and the other modules use of them is named here."""

from .against_sends import crossover_section
from .behind import Behind, behind
from .common import COLLECTIVES, LEAD_FINDINGS, P2P, Tick, slug
from .found import finding_anchor, finding_view, findings_section
from .gpu import gpu, gpu_impls, gpu_sharing
from .messages import collectives, hockney_table, p2p
from .models import comparison, diagnosis_section, loggp_table
from .runs import failures, id_ranges, library_choices, runs_section
from .settings import tuned_impls, tuning
from .terms import crossover_terms, terms

__all__ = ["COLLECTIVES", "LEAD_FINDINGS", "P2P", "Behind", "Tick", "behind", "collectives",
           "comparison", "crossover_section", "crossover_terms", "diagnosis_section",
           "failures", "finding_anchor", "finding_view", "findings_section", "gpu",
           "gpu_impls", "gpu_sharing", "hockney_table", "id_ranges", "library_choices",
           "loggp_table", "p2p", "runs_section", "slug", "terms", "tuned_impls", "tuning"]
