"""Between-annotator study arms: each arm's measures and the differences between arms, with
two-way (pairs and annotators) bootstrap CIs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.aggregates import judgment_differences, judgments
from analysis.frames import ANNOTATOR, ARM, ITEM, PAIR_ID, PREFERENCE, split_controls
from analysis.vocabulary import RUBRIC_PREFIX

# ---------------------------------------------------------------------------------------------- arms


def _two_way_boot(
    y: np.ndarray,
    pair_codes: np.ndarray,
    ann_codes: np.ndarray,
    arm_codes: np.ndarray,
    n_arms: int,
    *,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Replicates (n_boot x n_arms) of the per-arm mean of `y`, resampling pairs (shared by the arms)
    and, independently, annotators within each arm (annotators are nested in arms)."""
    n_pairs = int(pair_codes.max()) + 1
    n_ann = int(ann_codes.max()) + 1
    arm_of_ann = np.zeros(n_ann, dtype=int)
    arm_of_ann[ann_codes] = arm_codes
    out = np.full((n_boot, n_arms), np.nan)
    for b in range(n_boot):
        wp = rng.multinomial(n_pairs, np.full(n_pairs, 1.0 / n_pairs)).astype(float)
        wa = np.zeros(n_ann)
        for arm in range(n_arms):
            members = np.flatnonzero(arm_of_ann == arm)
            if len(members):
                wa[members] = rng.multinomial(len(members), np.full(len(members), 1.0 / len(members)))
        w = wp[pair_codes] * wa[ann_codes]
        num = np.bincount(arm_codes, weights=w * y, minlength=n_arms)
        den = np.bincount(arm_codes, weights=w, minlength=n_arms)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[b] = num / den
    return out


def _arm_measures(main: pd.DataFrame, quality_items: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per measure: one row per judgment with pair_id, annotator, arm, y."""
    per_judgment = judgments(main)
    measures = {
        "accuracy": per_judgment.assign(y=(per_judgment[PREFERENCE] > 0).astype(float))[
            [PAIR_ID, ANNOTATOR, ARM, "y"]
        ]
    }
    arms = per_judgment.set_index([PAIR_ID, ANNOTATOR])[ARM]
    items = list(quality_items)
    if main[ITEM].astype(str).str.startswith(RUBRIC_PREFIX).any():
        items.append("rubric")
    for item in items:
        try:
            diffs = judgment_differences(main, item)
        except ValueError:
            continue
        diffs[ARM] = arms.reindex(pd.MultiIndex.from_frame(diffs[[PAIR_ID, ANNOTATOR]])).to_numpy()
        measures[f"{item} (chosen - rejected)"] = diffs.rename(columns={"diff": "y"})[
            [PAIR_ID, ANNOTATOR, ARM, "y"]
        ]
    return measures


def arm_comparison(
    frame: pd.DataFrame,
    *,
    quality_items: Sequence[str] = (),
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study arms side by side: ``(per_arm, differences)``.

    Measures: ``accuracy`` (share of judgments preferring chosen) and, per quality item and the
    rubric, the mean chosen - rejected difference. CIs are percentile bootstraps that resample pairs
    and, independently, annotators within each arm (the arms are between annotators, so the
    annotator is the unit of randomization). ``per_arm`` columns: ``measure, arm, n_annotators,
    n_pairs, n_judgments, estimate, ci_low, ci_high``; ``differences`` (each arm minus the first arm):
    ``measure, arm, reference, difference, ci_low, ci_high``. Both are empty without an ``arm``
    column or with fewer than two arms.
    """
    per_cols = ["measure", "arm", "n_annotators", "n_pairs", "n_judgments", "estimate", "ci_low", "ci_high"]
    diff_cols = ["measure", "arm", "reference", "difference", "ci_low", "ci_high"]
    empty = (pd.DataFrame(columns=per_cols), pd.DataFrame(columns=diff_cols))
    if ARM not in frame.columns:
        return empty
    main, _ = split_controls(frame)
    main = main.assign(**{ARM: main[ARM].fillna("").astype(str)})
    main = main[main[ARM] != ""]
    arm_names = sorted(main[ARM].unique())
    if len(arm_names) < 2:
        return empty
    rng = np.random.default_rng(seed)
    per_rows, diff_rows = [], []
    for measure, data in _arm_measures(main, quality_items).items():
        data = data.dropna(subset=["y", ARM])
        if data.empty:
            continue
        arm_codes = pd.Categorical(data[ARM], categories=arm_names).codes.astype(int)
        pair_codes, _ = pd.factorize(data[PAIR_ID])
        ann_codes, _ = pd.factorize(data[ANNOTATOR])
        y = data["y"].to_numpy(dtype=float)
        boot = _two_way_boot(y, pair_codes, ann_codes, arm_codes, len(arm_names), n_boot=n_boot, rng=rng)
        for k, arm in enumerate(arm_names):
            part = data[arm_codes == k]
            if part.empty:  # e.g. no rubric ratings in an arm that hides the rubric
                continue
            reps = boot[:, k][np.isfinite(boot[:, k])]
            low, high = np.quantile(reps, [alpha / 2, 1 - alpha / 2]) if len(reps) else (math.nan, math.nan)
            per_rows.append(
                {
                    "measure": measure,
                    "arm": arm,
                    "n_annotators": int(part[ANNOTATOR].nunique()),
                    "n_pairs": int(part[PAIR_ID].nunique()),
                    "n_judgments": len(part),
                    "estimate": float(part["y"].mean()) if len(part) else math.nan,
                    "ci_low": float(low),
                    "ci_high": float(high),
                }
            )
            if k == 0:
                continue
            ref = data[arm_codes == 0]["y"]
            if ref.empty:
                continue
            deltas = boot[:, k] - boot[:, 0]
            deltas = deltas[np.isfinite(deltas)]
            dl, dh = np.quantile(deltas, [alpha / 2, 1 - alpha / 2]) if len(deltas) else (math.nan, math.nan)
            diff_rows.append(
                {
                    "measure": measure,
                    "arm": arm,
                    "reference": arm_names[0],
                    "difference": float(part["y"].mean() - ref.mean())
                    if len(part) and len(ref)
                    else math.nan,
                    "ci_low": float(dl),
                    "ci_high": float(dh),
                }
            )
    return pd.DataFrame(per_rows, columns=per_cols), pd.DataFrame(diff_rows, columns=diff_cols)


def arm_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Who is in which arm: ``arm, n_annotators, n_pairs, n_judgments`` (main pairs only)."""
    if ARM not in frame.columns:
        return pd.DataFrame(columns=["arm", "n_annotators", "n_pairs", "n_judgments"])
    main, _ = split_controls(frame)
    per_judgment = judgments(main)
    grouped = per_judgment.groupby(per_judgment[ARM].fillna("").astype(str), sort=True)
    out = pd.DataFrame(
        {
            "n_annotators": grouped[ANNOTATOR].nunique(),
            "n_pairs": grouped[PAIR_ID].nunique(),
            "n_judgments": grouped.size(),
        }
    )
    out.index.name = "arm"
    return out.reset_index()
