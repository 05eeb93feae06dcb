"""Tests for analysis.diagnostics.annotator_diagnostics."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analysis.diagnostics import annotator_diagnostics

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out


def _frame(seed: int = 0, pairs: int = 40) -> pd.DataFrame:
    """Three careful annotators (truth +- 1), one random, one straight-liner who is fast."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(pairs):
        truth = rng.integers(1, 6, size=(2, 3))
        for a in ["good1", "good2", "good3", "random", "flat"]:
            time_s = 5.0 if a == "flat" else 30.0 + p
            for r, response in enumerate(["chosen", "rejected"]):
                for i, item in enumerate(["correctness", "relevance", "helpfulness"]):
                    if a == "random":
                        value = int(rng.integers(1, 6))
                    elif a == "flat":
                        value = 4
                    else:
                        value = int(np.clip(truth[r, i] + rng.integers(-1, 2) * (rng.random() < 0.3), 1, 5))
                    rows.append((f"p{p}", a, response, item, value, 1, time_s))
                rows.append((f"p{p}", a, response, "rubric:0", int(rng.integers(0, 3)), 1, time_s))
    return pd.DataFrame(
        rows, columns=["pair_id", "annotator", "response", "item", "value", "preference", "time_s"]
    )


def test_columns_and_counts() -> None:
    diag = annotator_diagnostics(_frame())
    assert list(diag.columns) == [
        "annotator", "n_judgments", "loo_spearman", "n_loo_units", "straightlining", "median_time_s",
        "share_fast",
    ]  # fmt: skip
    assert diag["annotator"].tolist() == ["flat", "good1", "good2", "good3", "random"]
    assert (diag["n_judgments"] == 40).all()
    assert (diag["n_loo_units"] == 40 * 2 * 3).all()  # rubric items are not quality items


def test_flags_the_random_and_the_straight_lining_annotator() -> None:
    diag = annotator_diagnostics(_frame(), fast_seconds=10.0).set_index("annotator")
    good = diag.loc[["good1", "good2", "good3"]]
    assert (good["loo_spearman"] > 0.6).all()
    assert abs(diag.at["random", "loo_spearman"]) < 0.3
    assert np.isnan(diag.at["flat", "loo_spearman"])  # no variation in the annotator's own values
    assert diag.at["flat", "straightlining"] == 1.0
    assert (good["straightlining"] < 0.2).all()
    assert diag.at["flat", "share_fast"] == 1.0
    assert diag.at["flat", "median_time_s"] == 5.0
    assert (good["share_fast"] == 0.0).all()
    assert diag.at["good1", "median_time_s"] == pytest.approx(np.median(30.0 + np.arange(40)))


def test_leave_one_out_is_against_the_mean_of_the_others() -> None:
    frame = pd.DataFrame({
        "pair_id": ["p1", "p1", "p2", "p2", "p3", "p3"] * 3,
        "annotator": ["a"] * 6 + ["b"] * 6 + ["c"] * 6,
        "response": ["chosen", "rejected"] * 9,
        "item": "relevance",
        "value": [1, 2, 3, 4, 5, 1] + [2, 2, 4, 4, 5, 1] + [1, 3, 3, 5, 4, 2],
    })  # fmt: skip
    diag = annotator_diagnostics(frame).set_index("annotator")
    others = (np.array([2, 2, 4, 4, 5, 1]) + np.array([1, 3, 3, 5, 4, 2])) / 2
    expected = pd.Series([1, 2, 3, 4, 5, 1]).corr(pd.Series(others), method="spearman")
    assert diag.at["a", "loo_spearman"] == pytest.approx(expected, abs=1e-12)
    assert np.isnan(diag.at["a", "median_time_s"])  # no time_s column


def test_explicit_quality_items() -> None:
    diag = annotator_diagnostics(_frame(), quality_items=["correctness"])
    assert (diag["n_loo_units"] == 80).all()


def test_errors() -> None:
    with pytest.raises(ValueError, match=re.escape("frame has no column(s) ['item']")):
        annotator_diagnostics(_frame().drop(columns="item"))
    with pytest.raises(ValueError, match=re.escape("frame has no rows")):
        annotator_diagnostics(_frame().iloc[:0])


def test_the_diagnostics_columns_have_readers_names() -> None:
    """The Annotators page's columns: the shared units are ratings, not pairs (39 pairs x 2 responses x 3
    dimensions read "Shared pairs 234"), the position columns say what they measure, their p values are
    formatted as p values."""
    from analysis.diagnostics import POSITION_COLUMNS
    from analysis.readable import cell, label

    assert label("n_loo_units") == "Shared ratings (pair, response, item)"
    names = [label(column) for column in POSITION_COLUMNS]
    assert names == [
        "Non-tied judgments",
        "Prefers side A (share 0-1)",
        "Prefers side A, CI low (0-1)",
        "Prefers side A, CI high (0-1)",
        "p (side A rate 0.5)",
        "p, Holm (side A rate 0.5)",
    ]
    assert cell(0.0004, "side_a_p_holm") == "<\u00a00.001" and cell(0.04567, "side_a_p") == "0.046"
