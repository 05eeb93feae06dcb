"""Tables a person reads: column labels with units, rounded numbers, empty cells for missing values.

One home for how a result table is shown (the app's pages and the HTML report): :func:`label` names a
column, :func:`cell` writes one value, :func:`readable` does both for a whole table. Nothing here
computes a statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LABELS", "SHARE_LABELS", "cell", "label", "labels", "readable", "whole"]

#: Column name -> the label a reader sees (units in parentheses; "0-1" marks a share).
LABELS: dict[str, str] = {
    "a": "Judge A",
    "a_only": "Only A right",
    "ac1": "Gwet's AC1",
    "accuracy": "Accuracy (0-1)",
    "accuracy_a": "Accuracy A (0-1)",
    "accuracy_b": "Accuracy B (0-1)",
    "active": "Active",
    "adjudicated": "Adjudicated",
    "adjudication_id": "Decision id",
    "adjudicator": "Adjudicator",
    "agreement": "Agreement (0-1)",
    "alpha": "Significance level",
    "annotator": "Annotator",
    "annotator_var": "Annotator variance (points²)",
    "arm": "Arm",
    "aspect": "Aspect",
    "assigned": "Assigned",
    "b": "Judge B",
    "b_only": "Only B right",
    "bias": "Bias",
    "category": "Category",
    "chosen": "Chosen",
    "ci_high": "CI high",
    "ci_level": "CI level",
    "ci_low": "CI low",
    "ci_method": "CI method",
    "competence": "Competence, MACE (0-1)",
    "competence_preference": "Preference competence, MACE (0-1)",
    "complete": "Complete",
    "confidence": "Confidence",
    "control": "Control kind",
    "converged": "Converged",
    "correlation": "Correlation with people",
    "created_at": "When (UTC)",
    "decision": "Decision",
    "df": "Degrees of freedom",
    "diff": "Chosen − rejected (points)",
    "diff_correctness": "Correctness diff (points)",
    "diff_helpfulness": "Helpfulness diff (points)",
    "diff_relevance": "Relevance diff (points)",
    "diff_rubric": "Rubric diff (points)",
    "difference": "Difference",
    "dimension": "Dimension",
    "direction": "Prefers",
    "done": "Done",
    "ds_ordinal": "Dawid-Skene, ratings (0-1)",
    "ds_preference": "Dawid-Skene, preference (0-1)",
    "dz": "Effect size dz",
    "effective_pairs": "Effective sample size (pairs)",
    "equivalent": "Equivalent",
    "ece": "ECE (expected calibration error)",
    "estimate": "Estimate (points)",
    "excluded": "Excluded",
    "expires_at": "Expires (UTC)",
    "fast_share": "Too fast (share 0-1)",
    "flag": "Flag",
    "flag_reason": "Flag reason",
    "flagged": "Flagged",
    "flagged_at": "Flagged at (UTC)",
    "fleiss_kappa": "Fleiss' kappa",
    "gold_accuracy": "Gold accuracy (0-1)",
    "gold_checks": "Gold checks",
    "high": "Upper bound (points)",
    "human_agreement": "Human agreement (0-1)",
    "icc_a1": "ICC(A,1)",
    "icc_ak": "ICC(A,k)",
    "item": "Item",
    "items_per_hour": "Items per hour",
    "judgments": "Judgments",
    "kappa": "Cohen's kappa",
    "keep": "Kept",
    "kind": "Kind",
    "krippendorff_alpha": "Krippendorff's alpha",
    "krippendorff_alpha_ci_high": "Alpha CI high",
    "krippendorff_alpha_ci_low": "Alpha CI low",
    "label": "Item",
    "lam": "Lambda (0-1)",
    "last_submitted_at": "Last judgment (UTC)",
    "level": "Level",
    "loo_spearman": "Agreement with the others (Spearman)",
    "low": "Lower bound (points)",
    "lower": "Share beyond the margin, lower bound (0-1)",
    "majority": "Majority",
    "max_share": "Tolerated share (0-1)",
    "mde": "Smallest detectable effect (points)",
    "mean_square": "Mean squared gap (points², unbiased: may fall below 0)",
    "mean_square_se": "Mean squared gap SE (points²)",
    "mean_square_upper": "Mean squared gap, upper bound (points²)",
    "measure": "Measure",
    "median_time_s": "Median time (s)",
    "method": "Method",
    "model": "Model",
    "n": "N",
    "n_annotators": "Annotators",
    "n_aspects": "Aspects",
    "n_chosen": "Prefer chosen",
    "n_flags": "Flags",
    "n_judgments": "Judgments",
    "n_loo_units": "Shared ratings (pair, response, item)",
    "n_models": "Models",
    "n_models_disagree": "Models disagreeing",
    "n_obs": "Judgments",
    "n_pairs": "Pairs",
    "n_rated": "Rated by people",
    "n_ratings": "Ratings",
    "n_rejected": "Prefer rejected",
    "n_side": "Non-tied judgments",
    "n_ties": "Ties",
    "n_units": "Units",
    "n_unsupported": "Unsupported aspects",
    "new": "New items",
    "note": "Note",
    "open": "Open",
    "p_greater": "p (one-sided)",
    "p_holm": "p (Holm)",
    "p_lower": "p lower",
    "p_mcnemar": "p (McNemar)",
    "p_t": "p (t test)",
    "p_upper": "p upper",
    "p_value": "p",
    "p_wilcoxon": "p (Wilcoxon)",
    "pair_db_id": "Pair no.",
    "pair_id": "Pair",
    "pair_var": "Pair variance (points²)",
    "people_ci_high": "People only: CI high",
    "people_ci_low": "People only: CI low",
    "people_equivalent": "People only: equivalent",
    "people_estimate": "People only: estimate (points)",
    "people_p_greater": "People only: p (one-sided)",
    "people_share": "People only: share (0-1)",
    "people_upper": "People only: share beyond the margin, upper bound (0-1)",
    "per_pair": "Annotators per pair",
    "percent_agreement": "Exact agreement (0-1)",
    "pool_needed": "Annotators needed",
    "power_at_pool_needed": "Power with them (0-1)",
    "preference": "Preference",
    "preference_label": "Preference (words)",
    "pvalue": "p",
    "queued": "Already queued",
    "rank_biserial": "Rank-biserial r",
    "rate": "Share preferring chosen (0-1)",
    "reason": "Reason",
    "reasons": "Why",
    "reference": "Reference arm",
    "rejected": "Rejected",
    "reopened": "Reopened",
    "residual_var": "Residual variance (points²)",
    "revision": "Revision",
    "revision_count": "Revisions",
    "revoked_at": "Revoked (UTC)",
    "rule": "Rule",
    "rules": "Rules",
    "same_share": "Same answers (share 0-1)",
    "se": "Standard error (points)",
    "self_consistency": "Self-consistency (0-1)",
    "sentence": "In words",
    "share": "Share (0-1)",
    "share_fast": "Under 10 s (share 0-1)",
    "share_prefer_chosen": "Prefer chosen (share 0-1)",
    "shown_at": "Shown at (UTC)",
    "side_a_ci_high": "Prefers side A, CI high (0-1)",
    "side_a_ci_low": "Prefers side A, CI low (0-1)",
    "side_a_p": "p (side A rate 0.5)",
    "side_a_p_holm": "p, Holm (side A rate 0.5)",
    "side_a_rate": "Prefers side A (share 0-1)",
    "side_chosen": "Chosen shown as",
    "skipped": "Skipped",
    "source": "Judge",
    "status_all": "All annotators",
    "status_without_excluded": "Without the excluded",
    "straight_lining": "Straight-lining",
    "straightlining": "Straight-lining (share 0-1)",
    "submitted_at": "Submitted (UTC)",
    "superior": "Superior",
    "support": "Support (0-1)",
    "swap_checks": "Swap checks",
    "t": "t",
    "term": "Term",
    "test": "Test",
    "time_s": "Time (s)",
    "too_fast": "Too fast",
    "total": "Items after",
    "unsupported_aspects": "Unsupported aspects",
    "upper": "Share beyond the margin, upper bound (0-1)",
    "used_at": "Opened (UTC)",
    "w": "W",
    "wilcoxon_ci_high": "Hodges-Lehmann CI high",
    "wilcoxon_ci_low": "Hodges-Lehmann CI low",
    "wilcoxon_equivalent": "Equivalent (Wilcoxon)",
    "wilcoxon_estimate": "Hodges-Lehmann estimate",
    "wilcoxon_p_value": "p (Wilcoxon)",
}

#: The crossed fit of the preference, whose estimate and interval are a share (0-1), not points.
SHARE_LABELS: dict[str, str] = {
    "estimate": "Share preferring chosen (0-1)",
    "ci_low": "CI low (0-1)",
    "ci_high": "CI high (0-1)",
    "se": "Standard error (0-1)",
}

_P_VALUES = {
    c for c in LABELS if c.startswith("p_") or c.endswith(("p_value", "_p")) or "_p_" in c or c == "pvalue"
}
_COUNTS = {c for c in LABELS if c.startswith("n_") or c in ("n", "judgments", "gold_checks", "swap_checks")}


def label(column: object) -> str:
    """The reader's name of a column: the known label, else the name in words ("ci_low" -> "Ci low")."""
    name = str(column)
    if name in LABELS:
        return LABELS[name]
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else name


def _missing(value: Any) -> bool:
    if value is None or value is pd.NaT:
        return True
    if isinstance(value, float | np.floating):
        return not math.isfinite(float(value))
    try:
        return bool(pd.isna(value)) if np.ndim(value) == 0 else False
    except (TypeError, ValueError):
        return False


def whole(series: pd.Series) -> bool:
    """Whether a numeric column holds only whole numbers (then they are shown without decimals)."""
    if not pd.api.types.is_float_dtype(series.dtype):
        return False
    finite = series[np.isfinite(series.to_numpy(dtype=float, na_value=np.nan))]
    return bool(len(finite)) and bool((finite == finite.round()).all())


def cell(value: Any, column: object = "", *, digits: int = 2, integers: bool = False) -> str:
    """One value as a reader sees it: "" when missing, yes/no, counts (and any value of a column of
    whole numbers: `integers`) without decimals, p values to 3 places ("< 0.001" below), other numbers
    to `digits` places, times to the minute, lists joined."""
    if _missing(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    name = str(column)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if name in _P_VALUES:
            return "<\u00a00.001" if number < 0.001 else f"{number:.3f}"
        if integers or name in _COUNTS:
            return f"{number:.0f}" if number.is_integer() else f"{number:.{digits}f}"
        return f"{number:.{digits}f}"
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list | tuple | set | np.ndarray):
        return ", ".join(cell(v, column, digits=digits) for v in value)
    return str(value)


def readable(df: pd.DataFrame, columns: Sequence[str] | None = None, *, digits: int = 2) -> pd.DataFrame:
    """The table as text a person reads: the chosen columns (those that exist, in order), labelled,
    every value written by :func:`cell`. Labels that would repeat keep their column name."""
    shown = [c for c in (columns or list(df.columns)) if c in df.columns]
    out = pd.DataFrame(
        {c: [cell(v, c, digits=digits, integers=whole(df[c])) for v in df[c].tolist()] for c in shown},
        index=range(len(df)),
    )
    out.columns = labels(shown)
    return out


def labels(columns: Sequence[str]) -> list[str]:
    """The labels of `columns`; a label two columns share keeps each column's name after it."""
    found = [label(c) for c in columns]
    return [
        name if found.count(name) == 1 else f"{name} ({c})" for name, c in zip(found, columns, strict=True)
    ]
