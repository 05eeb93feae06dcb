"""Agreement statistics for annotation studies.

Krippendorff's alpha (nominal, ordinal, interval, ratio) with a fast unit-bootstrap confidence
interval, Fleiss' and Cohen's kappa, Gwet's AC1/AC2, percent agreement, the six Shrout & Fleiss /
McGraw & Wong intraclass correlations, and a per-item agreement table for a study's tidy label frame.

Reliability data are arrays of shape ``(raters, units)`` with ``np.nan`` for a missing rating, as in
the ``krippendorff`` package. All kernels are NumPy: alpha never builds an ``N x V x V`` array (the
``krippendorff`` package does), so continuous values such as per-response mean rubric scores are fine,
and the ICC is a two-way ANOVA on group means instead of pingouin's formula-based ANOVA.
"""

from analysis.agreement.alpha import alpha_ci, krippendorff_alpha
from analysis.agreement.icc import icc
from analysis.agreement.inputs import Level, Weights
from analysis.agreement.kappa import (
    cohen_kappa,
    fleiss_kappa,
    fleiss_table,
    gwet_ac1,
    gwet_ac2,
    kappa_from_codes,
    percent_agreement,
)
from analysis.agreement.table import agreement_table

__all__ = [
    "Level",
    "Weights",
    "agreement_table",
    "alpha_ci",
    "cohen_kappa",
    "fleiss_kappa",
    "fleiss_table",
    "gwet_ac1",
    "gwet_ac2",
    "icc",
    "kappa_from_codes",
    "krippendorff_alpha",
    "percent_agreement",
]
