"""Agreement over time, with guideline-version markers (pure functions on the long label frame).

Every judgment records the guidelines version it was made under (``guideline_version``) and when it
was submitted (``submitted_at``). :func:`agreement_over_time` splits the main pairs into periods (a
calendar week, or a block of consecutive judgments) by the time their last judgment came in and
computes Krippendorff's alpha on each period's pairs; :func:`version_markers` gives the time each
guidelines version was first used, to draw as markers on that curve.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from analysis.agreement import krippendorff_alpha
from analysis.settings import DRIFT_BLOCK

__all__ = ["DRIFT_COLUMNS", "agreement_over_time", "version_markers"]

#: The columns of :func:`agreement_over_time`.
DRIFT_COLUMNS: tuple[str, ...] = (
    "period",
    "start",
    "end",
    "pairs",
    "judgments",
    "alpha_preference",
    "alpha_quality",
    "guideline_versions",
)


def _main_judgments(frame: pd.DataFrame) -> pd.DataFrame:
    main = frame
    if "control" in frame.columns:
        main = frame[frame["control"].fillna("").astype(str) == ""]
    if "submitted_at" not in main.columns:
        raise ValueError("the label frame has no 'submitted_at' column: drift needs submission times")
    return main


def _alpha(rows: pd.DataFrame, value: str, level: Literal["ordinal", "interval"]) -> float:
    matrix = rows.pivot_table(index="annotator", columns="unit", values=value, aggfunc="first")
    if matrix.shape[1] < 2 or matrix.notna().sum(axis=0).max() < 2:
        return float("nan")
    try:
        return float(krippendorff_alpha(matrix.to_numpy(dtype=float), level=level))
    except (ValueError, ZeroDivisionError):
        return float("nan")


def agreement_over_time(
    frame: pd.DataFrame,
    *,
    by: Literal["week", "block"] = "week",
    block_size: int = DRIFT_BLOCK,
    quality_items: tuple[str, ...] = ("correctness", "relevance", "helpfulness"),
) -> pd.DataFrame:
    """Krippendorff's alpha per period on the main pairs: one row per period (:data:`DRIFT_COLUMNS`).

    Parameters
    ----------
    frame : the long label frame with ``submitted_at`` (and optionally ``guideline_version`` and
        ``control``; control rows are left out).
    by : "week" (calendar weeks starting Monday, UTC) or "block" (consecutive blocks of
        `block_size` judgments in submission order).
    block_size : judgments per block when ``by="block"``.
    quality_items : the items whose per-response ratings give ``alpha_quality`` (ordinal).

    Notes
    -----
    A pair belongs to the period of its last judgment, so every period's alpha is computed on
    complete pairs; ``alpha_preference`` is ordinal on the 5-point preference, ``alpha_quality``
    ordinal on every (pair, response, quality item) unit. ``guideline_versions`` lists the versions
    the period's judgments were made under.
    """
    if by not in ("week", "block"):
        raise ValueError(f"by must be 'week' or 'block', got {by!r}")
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    main = _main_judgments(frame)
    if main.empty:
        return pd.DataFrame(columns=list(DRIFT_COLUMNS))
    main = main.assign(submitted_at=pd.to_datetime(main["submitted_at"], utc=True))
    if "guideline_version" not in main.columns:
        main = main.assign(guideline_version="")
    judgments = (
        main.groupby(["pair_id", "annotator"], sort=False)
        .agg(
            preference=("preference", "first"),
            submitted_at=("submitted_at", "first"),
            version=("guideline_version", "first"),
        )
        .reset_index()
        .sort_values("submitted_at", kind="stable")
        .reset_index(drop=True)
    )
    if by == "week":
        period = judgments["submitted_at"].dt.tz_convert("UTC").dt.tz_localize(None).dt.to_period("W-SUN")
        judgments["period"] = period.astype(str)
    else:
        judgments["period"] = (np.arange(len(judgments)) // block_size).astype(int)
    last = judgments.groupby("pair_id")["submitted_at"].transform("max")
    pair_period = judgments.loc[judgments["submitted_at"] == last].drop_duplicates("pair_id")
    judgments["pair_period"] = judgments["pair_id"].map(pair_period.set_index("pair_id")["period"])
    rows = []
    for key, group in judgments.groupby("pair_period", sort=True):
        pairs = set(group["pair_id"])
        prefs = group.assign(unit=group["pair_id"])
        scores = main[main["pair_id"].isin(pairs) & main["item"].isin(quality_items)]
        scores = scores.assign(
            unit=scores["pair_id"].astype(str)
            + "|"
            + scores["response"].astype(str)
            + "|"
            + scores["item"].astype(str)
        )
        versions = sorted({str(v) for v in group["version"] if str(v)})
        rows.append(
            (
                key,
                group["submitted_at"].min(),
                group["submitted_at"].max(),
                len(pairs),
                len(group),
                _alpha(prefs, "preference", "ordinal"),
                _alpha(scores, "value", "ordinal"),
                ", ".join(versions),
            )
        )
    return pd.DataFrame(rows, columns=list(DRIFT_COLUMNS))


def version_markers(frame: pd.DataFrame) -> pd.DataFrame:
    """When each guidelines version was first and last used: version, first_at, last_at, judgments."""
    main = _main_judgments(frame)
    columns = ["version", "first_at", "last_at", "judgments"]
    if main.empty or "guideline_version" not in main.columns:
        return pd.DataFrame(columns=columns)
    judgments = main.drop_duplicates(["pair_id", "annotator"]).assign(
        submitted_at=lambda d: pd.to_datetime(d["submitted_at"], utc=True)
    )
    table = (
        judgments.groupby("guideline_version")
        .agg(first_at=("submitted_at", "min"), last_at=("submitted_at", "max"), judgments=("pair_id", "size"))
        .reset_index()
        .rename(columns={"guideline_version": "version"})
        .sort_values("first_at")
        .reset_index(drop=True)
    )
    return table[columns]
