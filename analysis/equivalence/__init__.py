"""Equivalence (TOST), superiority and preference statistics for chosen/rejected pairs.

The claim to show is that ``chosen`` and ``rejected`` are *equivalent* on general quality (two
one-sided tests against a margin, never a non-significant t test) and *different* on rubric alignment
(a one-sided superiority test), with the preference rate for ``chosen`` reported alongside.

All functions take arrays and return frozen dataclasses with flat fields or DataFrames with flat
columns (``ci_low``/``ci_high``). One module per family: ``tost`` (t-based TOST), ``wilcoxon``
(rank-based TOST), ``superiority``, ``preference`` (rates over judgments and pairs), ``combine``
(intersection-union, Holm), over ``checks`` (the shared input checks and the result base).
"""

from analysis.equivalence.combine import IutResult, holm, intersection_union
from analysis.equivalence.preference import (
    PairPreference,
    PreferenceRate,
    logit_interval,
    preference_pairs,
    preference_rate,
    wilson_interval,
)
from analysis.equivalence.superiority import SuperiorityResult, superiority_paired
from analysis.equivalence.tost import TostResult, tost_from_estimate, tost_ind, tost_paired
from analysis.equivalence.wilcoxon import WilcoxonTostResult, wilcoxon_tost_paired

__all__ = [
    "wilson_interval",
    "IutResult",
    "PreferenceRate",
    "SuperiorityResult",
    "TostResult",
    "WilcoxonTostResult",
    "holm",
    "intersection_union",
    "PairPreference",
    "logit_interval",
    "preference_pairs",
    "preference_rate",
    "superiority_paired",
    "tost_from_estimate",
    "tost_ind",
    "tost_paired",
    "wilcoxon_tost_paired",
]
