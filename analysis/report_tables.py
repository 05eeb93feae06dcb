"""The descriptive tables of the validation report, which no verdict rests on: the annotators needed
(design), the per-pair table, the cleaning list and its failed pairs, position and length bias per
annotator, and the differences by category."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.aggregates import pair_majority
from analysis.cleaning import KEEP, study_cleaning
from analysis.frames import (
    ANNOTATOR,
    CATEGORY,
    CHOSEN_CHARS,
    PAIR_ID,
    PREFERENCE,
    REJECTED_CHARS,
    RUBRIC_ITEM,
    SIDE_CHOSEN,
)
from analysis.lazy import stats
from analysis.mixed import fit_crossed
from analysis.power import Plan, recommend_design
from analysis.scale import Margin, item_margin
from analysis.validation import ValidationResult, preference_scores


def design_table(validation: ValidationResult, *, margin: Margin, alpha: float, power: float) -> pd.DataFrame:
    """Per dimension: variance components and the annotator pool the crossed TOST would need (against
    the dimension's margin)."""
    rows = []
    for row in validation.crossed.to_dict("records"):
        n_pairs, n_obs = int(row["n_pairs"]), int(row["n_obs"])
        per_pair = max(1, round(n_obs / max(n_pairs, 1)))
        out = {
            "dimension": row["dimension"],
            "n_pairs": n_pairs,
            "n_annotators": int(row["n_annotators"]),
            "per_pair": per_pair,
            "pair_var": row["pair_var"],
            "annotator_var": row["annotator_var"],
            "residual_var": row["residual_var"],
            "pool_needed": math.nan,
            "power_at_pool_needed": math.nan,
        }
        comps = {k: row[k] for k in ("pair_var", "annotator_var", "residual_var")}
        if all(isinstance(v, float) and math.isfinite(v) for v in comps.values()) and n_pairs >= 2:
            try:
                plan = Plan(
                    n_pairs, per_pair, 1000, item_margin(margin, str(row["dimension"])), alpha=alpha, **comps
                )
                rec = recommend_design(plan, power=power, keep_pairs=True)
                out["pool_needed"], out["power_at_pool_needed"] = rec.pool, rec.power
            except ValueError:
                pass
        rows.append(out)
    return pd.DataFrame(rows)


def per_pair_table(
    main: pd.DataFrame, validation: ValidationResult, per_judgment: pd.DataFrame
) -> pd.DataFrame:
    """Per pair: chosen - rejected mean difference per item and rubric, and the majority preference."""
    table = None
    for item, means in validation.pair_means.items():
        col = means.set_index(PAIR_ID)[["diff"]].rename(columns={"diff": f"diff_{item}"})
        table = col if table is None else table.join(col, how="outer")
    assert table is not None  # validate_pairs needs at least one quality item
    votes = (per_judgment[PREFERENCE] > 0).astype("float64").groupby(per_judgment[PAIR_ID])
    table["share_prefer_chosen"] = votes.mean()
    table["n_judgments"] = votes.size()
    table["majority"] = pair_majority(per_judgment).set_index(PAIR_ID)["majority"]
    if CATEGORY in main.columns:
        table["category"] = main.groupby(PAIR_ID)[CATEGORY].first()
    return table.reset_index()


def cleaning_table(
    validation: ValidationResult,
    per_judgment: pd.DataFrame,
    quality_items: Sequence[str],
    margin: float,
    fdr: float,
    margins: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """The cleaning list (:mod:`analysis.cleaning`) from the crossed fits' variance components
    (`margins`: each quality item's own margin, when they differ from `margin`)."""

    def parts(row: Any) -> tuple[float, float, float]:
        return float(row["pair_var"]), float(row["annotator_var"]), float(row["residual_var"])

    components = {row["dimension"]: parts(row) for row in validation.crossed.to_dict("records")}
    if not validation.rubric_crossed.empty:
        components[RUBRIC_ITEM] = parts(validation.rubric_crossed.iloc[0])
    differences = {item: validation.differences[item] for item in components}
    scores = per_judgment[[PAIR_ID, ANNOTATOR]].assign(score=preference_scores(per_judgment) - 0.5)
    return study_cleaning(
        differences,
        components,
        scores,
        parts(validation.preference_crossed.iloc[0]),
        quality_items=quality_items,
        margin=margin,
        fdr=fdr,
        margins=margins,
    )


def failed_pairs_table(cleaning: pd.DataFrame) -> pd.DataFrame:
    """The pairs of the cleaning list that are not kept (to drop, or needing more judgments), with
    ``reasons`` saying the decision, the defect and the pair's evidence."""
    if cleaning.empty:
        return pd.DataFrame(columns=[PAIR_ID, "decision", "reasons"])
    out = cleaning[cleaning["decision"] != KEEP].copy()
    out["reasons"] = [
        f"{d}: {r or 'uncertain'} ({e})"
        for d, r, e in zip(out["decision"], out["reason"], out["evidence"], strict=True)
    ]
    return out.reset_index(drop=True)


def bias_tables(
    main: pd.DataFrame, validation: ValidationResult, per_judgment: pd.DataFrame, alpha: float
) -> pd.DataFrame:
    """Position and length bias: the rate of preferring side A, and side / length as covariates."""
    rows: list[dict[str, Any]] = []
    z = float(stats.norm.ppf(1 - alpha / 2))
    level = 1 - alpha
    if SIDE_CHOSEN in per_judgment.columns and per_judgment[SIDE_CHOSEN].notna().any():
        j = per_judgment[(per_judgment[PREFERENCE] != 0) & per_judgment[SIDE_CHOSEN].notna()]
        if len(j) >= 2:
            prefers_a = ((j[PREFERENCE] > 0) == (j[SIDE_CHOSEN] == "A")).to_numpy(dtype=float)
            rate = float(prefers_a.mean())
            # cluster-robust (by pair) SE of a mean
            resid = pd.Series(prefers_a - rate).groupby(j[PAIR_ID].to_numpy()).sum().to_numpy()
            n = len(prefers_a)
            g = len(resid)
            se = math.sqrt(g / max(g - 1, 1) * float((resid**2).sum())) / n
            rows.append(
                {
                    "bias": "position",
                    "item": "preference",
                    "term": "rate of preferring side A (non-tied judgments)",
                    "estimate": rate,
                    "se": se,
                    "ci_low": rate - z * se,
                    "ci_high": rate + z * se,
                    "ci_level": level,
                    "df": math.nan,
                    "p_value": float(2 * stats.norm.sf(abs(rate - 0.5) / se)) if se > 0 else math.nan,
                    "n": n,
                }
            )
    for item, d in validation.differences.items():
        cols, names = [np.ones(len(d))], ["intercept"]
        if SIDE_CHOSEN in d.columns and d[SIDE_CHOSEN].notna().all() and d[SIDE_CHOSEN].nunique() == 2:
            side = np.where(d[SIDE_CHOSEN] == "A", 0.5, -0.5)
            cols.append(side - side.mean())
            names.append("side: chosen shown as A")
        if CHOSEN_CHARS in d.columns and REJECTED_CHARS in d.columns:
            length = ((d[CHOSEN_CHARS] - d[REJECTED_CHARS]) / 1000.0).to_numpy(dtype=float)
            if np.isfinite(length).all() and np.ptp(length) > 0:
                cols.append(length - length.mean())
                names.append("length: chosen - rejected, per 1000 characters")
        if len(cols) == 1 or float(np.ptp(d["diff"])) == 0:
            continue
        start = None
        crossed = validation.crossed[validation.crossed["dimension"] == item]
        if not crossed.empty and crossed.iloc[0]["residual_var"] > 0:
            row = crossed.iloc[0]
            start = (row["pair_var"] / row["residual_var"], row["annotator_var"] / row["residual_var"])
        try:
            fit = fit_crossed(
                d["diff"].to_numpy(),
                np.column_stack(cols),
                d[PAIR_ID].to_numpy(),
                d[ANNOTATOR].to_numpy(),
                start=start,
            )
        except (ValueError, np.linalg.LinAlgError):
            continue
        for k in range(1, len(names)):
            variance = float(fit.cov_params[k, k])  # below 0 only by rounding in a near-singular fit
            est, se, df = (
                float(fit.params[k]),
                math.sqrt(variance) if variance > 0 else math.nan,
                float(fit.df[k]),
            )
            t = float(stats.t.ppf(1 - alpha / 2, df))
            rows.append(
                {
                    "bias": "position" if names[k].startswith("side") else "length",
                    "item": item,
                    "term": names[k],
                    "estimate": est,
                    "se": se,
                    "ci_low": est - t * se,
                    "ci_high": est + t * se,
                    "ci_level": level,
                    "df": df,
                    "p_value": float(2 * stats.t.sf(abs(est) / se, df)) if se > 0 else math.nan,
                    "n": fit.n_obs,
                }
            )
    return pd.DataFrame(rows)


def category_table(validation: ValidationResult, alpha: float) -> pd.DataFrame:
    """Per category and item: mean per-pair difference with its 1 - 2*alpha t interval (forest plot)."""
    rows: list[dict[str, Any]] = []
    for item, d in validation.differences.items():
        if CATEGORY not in d.columns:
            return pd.DataFrame()
        per_pair = d.groupby(PAIR_ID).agg(diff=("diff", "mean"), category=(CATEGORY, "first"))
        for category, g in per_pair.groupby("category", sort=True):
            n = len(g)
            mean = float(g["diff"].mean())
            se = float(g["diff"].std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
            half = float(stats.t.ppf(1 - alpha, n - 1)) * se if n > 1 else math.nan
            rows.append(
                {
                    "category": str(category),
                    "item": item,
                    "n_pairs": n,
                    "estimate": mean,
                    "ci_low": mean - half,
                    "ci_high": mean + half,
                }
            )
    return pd.DataFrame(rows)
