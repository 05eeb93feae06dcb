"""Tests for analysis.models: the REML kernel against statsmodels MixedLM, recovery of a known effect,
and degenerate inputs that must give warnings instead of exceptions."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from analysis.models import fit_random_intercept, mixed_effect


def _frame(
    n_pairs: int, n_annotators: int, effect: float, seed: int, *, rounded: bool = False
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pair = np.repeat(np.arange(n_pairs), n_annotators * 2)
    ann = np.tile(np.repeat(np.arange(n_annotators), 2), n_pairs)
    chosen = np.tile([1.0, 0.0], n_pairs * n_annotators)
    value = (
        3.5
        + rng.normal(0, 0.5, n_pairs)[pair]
        + rng.normal(0, 0.3, n_annotators)[ann]
        + effect * chosen
        + rng.normal(0, 0.6, len(pair))
    )
    if rounded:
        value = np.clip(np.rint(value), 1, 5)
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in pair],
            "annotator": [f"a{a}" for a in ann],
            "response": np.where(chosen == 1, "chosen", "rejected"),
            "item": "correctness",
            "value": value,
            "preference": 0,
            "confidence": 2.0,
            "time_s": 10.0,
        }
    )


def test_kernel_matches_statsmodels_mixedlm() -> None:
    """Same data, same model (REML, random intercept per group, unbalanced groups)."""
    df = _frame(150, 3, 0.2, seed=0)
    df = df.sample(frac=0.85, random_state=1).sort_values(["pair_id"])
    X = np.column_stack(
        [np.ones(len(df)), df["response"].eq("chosen"), df["annotator"].eq("a1"), df["annotator"].eq("a2")]
    ).astype(float)
    y, groups = df["value"].to_numpy(), df["pair_id"].to_numpy()
    ours = fit_random_intercept(y, X, groups)
    ref = sm.MixedLM(y, X, groups=groups).fit(reml=True)
    np.testing.assert_allclose(ours.params, ref.fe_params, rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(ours.cov_params)), ref.bse_fe, rtol=1e-3)
    assert ours.pair_var == pytest.approx(float(np.asarray(ref.cov_re)[0, 0]), rel=1e-4)
    assert ours.residual_var == pytest.approx(ref.scale, rel=1e-5)
    assert ours.reml_loglik == pytest.approx(ref.llf, rel=1e-8)


def test_recovers_known_effect_with_few_annotators() -> None:
    res = mixed_effect(_frame(400, 3, 0.3, seed=2), "correctness", margin=0.5)
    assert res.model.startswith("MixedLM (REML): value ~ is_chosen + C(annotator)")
    assert abs(res.estimate - 0.3) < 4 * res.se
    assert res.ci_low < res.estimate < res.ci_high
    assert res.pair_var == pytest.approx(0.25, rel=0.3)
    assert res.converged and res.warnings == []
    assert res.equivalent  # 0.3 is inside +-0.5 and the interval is narrow


def test_recovers_known_effect_with_crossed_random_effects() -> None:
    res = mixed_effect(_frame(60, 6, 0.8, seed=3), "correctness", margin=0.5)
    assert "crossed random intercepts" in res.model
    assert abs(res.estimate - 0.8) < 4 * res.se
    assert not res.equivalent
    assert res.annotator_var > 0


def test_many_annotators_large_data_uses_demeaned_fast_fit() -> None:
    res = mixed_effect(_frame(400, 6, 0.1, seed=4), "correctness", margin=0.5)
    assert "annotator-demeaned" in res.model
    assert abs(res.estimate - 0.1) < 4 * res.se


def test_all_identical_values_warn_instead_of_crash() -> None:
    df = _frame(20, 3, 0.0, seed=5).assign(value=4.0)
    res = mixed_effect(df, "correctness", margin=0.5)
    assert not res.converged
    assert res.model.startswith("OLS")
    assert any("all values are identical" in w for w in res.warnings)


def test_single_annotator_warns() -> None:
    res = mixed_effect(_frame(50, 1, 0.2, seed=6), "correctness", margin=0.5)
    assert any("only 1 annotator" in w for w in res.warnings)
    assert np.isfinite(res.estimate) and np.isfinite(res.se)


def test_singular_fit_is_reported() -> None:
    df = _frame(80, 3, 0.0, seed=7)
    rng = np.random.default_rng(0)
    df["value"] = rng.normal(3, 1, len(df))  # no pair effect at all
    res = mixed_effect(df, "correctness", margin=0.5)
    if res.pair_var == 0:
        assert any("singular fit" in w for w in res.warnings)
    assert np.isfinite(res.ci_low)


def test_bad_margin() -> None:
    with pytest.raises(ValueError, match=re.escape("margin must be a positive number, got -0.5")):
        mixed_effect(_frame(5, 2, 0, seed=0), "correctness", margin=-0.5)


def test_unknown_item() -> None:
    with pytest.raises(ValueError, match=re.escape("no scores for item 'style'")):
        mixed_effect(_frame(5, 2, 0, seed=0), "style", margin=0.5)


def test_to_dict_is_flat() -> None:
    out = mixed_effect(_frame(20, 1, 0.2, seed=6), "correctness", margin=0.5).to_dict()
    assert isinstance(out["warnings"], str)
    assert all(not isinstance(v, list | dict | np.ndarray) for v in out.values())
