"""The crossed model from sufficient statistics: equal to REML on a balanced design, close to it on an
unbalanced one, and the same sums from NumPy, from SQL (SUMS_SQL) and from a partitioned Parquet dataset."""

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from analysis.aggregates import judgment_differences
from analysis.mixed import fit_crossed
from analysis.sufficient import SUMS_SQL, crossed_moments, group_sums, parquet_sums

pytestmark = pytest.mark.nodb


def _design(pairs: int, annotators: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pair, annotator = np.repeat(np.arange(pairs), annotators), np.tile(np.arange(annotators), pairs)
    d = (
        0.2
        + rng.normal(0, 0.3, annotators)[annotator]
        + rng.normal(0, 0.5, pairs)[pair]
        + rng.normal(0, 0.8, pairs * annotators)
    )
    return d, pair, annotator


def test_on_a_balanced_design_the_moments_are_the_reml_estimates() -> None:
    d, pair, annotator = _design(400, 5, 0)
    moments = crossed_moments(group_sums(d, pair, annotator))
    fit = fit_crossed(d, np.ones((len(d), 1)), pair, annotator)
    assert fit.pair_var > 0 and fit.annotator_var > 0  # the ANOVA = REML case
    assert moments.pair_var == pytest.approx(fit.pair_var, rel=1e-6)
    assert moments.annotator_var == pytest.approx(fit.annotator_var, rel=1e-5)
    assert moments.residual_var == pytest.approx(fit.residual_var, rel=1e-6)
    assert moments.mean == pytest.approx(float(fit.params[0]), rel=1e-9)
    assert moments.se == pytest.approx(float(np.sqrt(fit.cov_params[0, 0])), rel=1e-5)


def test_on_an_unbalanced_design_the_moments_are_close_to_reml() -> None:
    d, pair, annotator = _design(3000, 6, 1)
    keep = np.random.default_rng(2).random(len(d)) < 0.5
    moments = crossed_moments(group_sums(d[keep], pair[keep], annotator[keep]))
    fit = fit_crossed(d[keep], np.ones((int(keep.sum()), 1)), pair[keep], annotator[keep])
    assert moments.n_obs == int(keep.sum()) and moments.n_annotators == 6
    assert moments.pair_var == pytest.approx(fit.pair_var, rel=0.1)
    assert moments.residual_var == pytest.approx(fit.residual_var, rel=0.05)
    assert moments.annotator_var == pytest.approx(fit.annotator_var, rel=0.1)
    assert moments.mean == pytest.approx(float(fit.params[0]), abs=0.01)


def test_a_negative_component_is_held_at_zero() -> None:
    rng = np.random.default_rng(3)
    pair, annotator = np.repeat(np.arange(300), 3), np.tile(np.arange(3), 300)
    d = rng.normal(0, 1, 900)  # no pair and no annotator effect: the raw solutions straddle 0
    moments = crossed_moments(group_sums(d, pair, annotator))
    assert min(moments.pair_var, moments.annotator_var, moments.residual_var) >= 0
    assert moments.residual_var == pytest.approx(1.0, abs=0.15)


def test_too_few_pairs_or_annotators_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2 pairs and 2 annotators"):
        crossed_moments(group_sums(np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 0])))


def _long_frame(pairs: int, annotators: int) -> pd.DataFrame:
    """A long label frame with two items; one judgment lacks its rejected score on one item."""
    rng = np.random.default_rng(4)
    rows = []
    for i in range(pairs):
        for j in range(annotators):
            for item in ("correctness", "relevance"):
                for response in ("chosen", "rejected"):
                    if (i, j, item, response) == (1, 0, "relevance", "rejected"):
                        continue
                    rows.append(
                        {
                            "pair_id": f"p{i:03d}",
                            "annotator": f"a{j}",
                            "response": response,
                            "item": item,
                            "value": float(rng.integers(1, 6)),
                            "preference": 0,
                            "confidence": 2,
                            "time_s": 9.0,
                        }
                    )
    return pd.DataFrame(rows)


def _reference(frame: pd.DataFrame, item: str) -> dict[str, dict[str, tuple[float, float, float]]]:
    diffs = judgment_differences(frame, item)
    return {
        side: {
            str(unit): (float(len(group)), float(group["diff"].sum()), float((group["diff"] ** 2).sum()))
            for unit, group in diffs.groupby(column)
        }
        for side, column in (("pair", "pair_id"), ("annotator", "annotator"))
    }


def test_the_sums_sql_gives_the_sums_of_the_judgment_differences() -> None:
    frame = _long_frame(12, 3)
    connection = sqlite3.connect(":memory:")
    frame[["pair_id", "annotator", "response", "item", "value"]].to_sql("labels", connection)
    rows = connection.execute(SUMS_SQL).fetchall()
    for item in ("correctness", "relevance"):
        found: dict[str, dict[str, tuple[float, float, float]]] = {"pair": {}, "annotator": {}}
        for side, row_item, unit, n, s, s2 in rows:
            if row_item == item:
                found[side][unit] = (float(n), float(s), float(s2))
        assert found == _reference(frame, item)


def test_a_partitioned_parquet_dataset_gives_the_same_moments_as_the_frame(tmp_path: Path) -> None:
    frame = _long_frame(40, 4)
    ds.write_dataset(
        pa.Table.from_pandas(frame, preserve_index=False),
        tmp_path / "labels",
        format="parquet",
        partitioning=["item"],
        partitioning_flavor="hive",
    )
    for item in ("correctness", "relevance"):
        diffs = judgment_differences(frame, item)
        codes_pair = diffs["pair_id"].astype("category").cat.codes.to_numpy()
        codes_annotator = diffs["annotator"].astype("category").cat.codes.to_numpy()
        expected = crossed_moments(group_sums(diffs["diff"].to_numpy(), codes_pair, codes_annotator))
        sums = parquet_sums(tmp_path / "labels", item)
        by_unit = {
            side: {u: (float(n[k]), float(t[k]), float(t2[k])) for k, u in enumerate(units)}
            for side, units, n, t, t2 in (
                ("pair", sums.pair_units, sums.pair_n, sums.pair_s, sums.pair_s2),
                ("annotator", sums.annotator_units, sums.annotator_n, sums.annotator_s, sums.annotator_s2),
            )
        }
        assert by_unit == _reference(frame, item)  # integer scores: the sums are exact
        found = crossed_moments(sums)
        assert found.n_obs == expected.n_obs == len(diffs)
        for field in ("mean", "se", "pair_var", "annotator_var", "residual_var"):
            assert getattr(found, field) == pytest.approx(getattr(expected, field), rel=1e-12, abs=1e-12)
