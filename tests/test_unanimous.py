"""The rubric and preference tests when every judgment scores the same: the exact bound for unanimous
judgments (analysis.unanimous), its size under its worst case, and the verdicts."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from analysis.crossed_mean import crossed_mean
from analysis.frames import validate_frame
from analysis.simulation import SimDesign, simulate_frame
from analysis.unanimous import distinct_matching, unanimous_p
from analysis.validation import validate_pairs
from analysis.verdicts import preference_verdict, rubric_verdict


def crossed(n_pairs: int, n_annotators: int) -> tuple[np.ndarray, np.ndarray]:
    """Every annotator on every pair: (pair, annotator) of each judgment."""
    return np.repeat(np.arange(n_pairs), n_annotators), np.tile(np.arange(n_annotators), n_pairs)


@pytest.mark.parametrize(("n_pairs", "n_annotators"), [(40, 3), (40, 6), (4, 9)])
def test_unanimous_preference_gets_half_to_the_power_of_the_matched_annotators(
    n_pairs: int, n_annotators: int
) -> None:
    """All chosen: p = 0.5 ** min(pairs, annotators), the interval's lower end where that p is alpha."""
    pairs, annotators = crossed(n_pairs, n_annotators)
    res = crossed_mean(np.full(len(pairs), 0.5), pairs, annotators, item="preference", low=-0.5)
    matched = min(n_pairs, n_annotators)
    assert res.matched == matched
    assert res.p_greater == pytest.approx(0.5**matched)
    assert res.ci_low == pytest.approx(-0.5 + 0.05 ** (1 / matched))
    assert res.ci_high == res.estimate == 0.5
    assert unanimous_p(0.5, null=0.0, low=-0.5, matched=matched) == res.p_greater


def test_without_the_scale_the_unanimous_test_stays_undefined() -> None:
    pairs, annotators = crossed(10, 5)
    res = crossed_mean(np.ones(50), pairs, annotators, item="rubric")
    assert math.isnan(res.p_greater) and res.matched == 0
    assert any("undefined" in w for w in res.warnings)


def test_a_unanimous_score_at_or_below_the_null_is_never_significant() -> None:
    pairs, annotators = crossed(10, 8)
    for value in (0.0, -1.0):
        res = crossed_mean(np.full(80, value), pairs, annotators, item="rubric", low=-2.0)
        assert res.p_greater == 1.0


def test_a_smaller_unanimous_gap_is_weaker_evidence() -> None:
    """Rubric differences in -2..2, all +1: a null population can score +1 in 2/3 of judgments."""
    assert unanimous_p(1.0, null=0.0, low=-2.0, matched=4) == pytest.approx((2 / 3) ** 4)
    assert unanimous_p(2.0, null=0.0, low=-2.0, matched=4) == pytest.approx(0.5**4)


def test_the_matching_counts_annotators_on_pairs_of_their_own() -> None:
    """A pool: 3 of 20 annotators per pair over 60 pairs matches all 20; one pair rated by 9 matches 1;
    one annotator on every pair matches 1."""
    pairs = np.repeat(np.arange(60), 3)
    pool = (np.arange(180) + pairs // 7) % 20
    assert distinct_matching(pairs, pool) == 20
    assert distinct_matching(np.zeros(9, dtype=int), np.arange(9)) == 1
    assert distinct_matching(np.arange(9), np.zeros(9, dtype=int)) == 1
    assert distinct_matching(["p1", "p2", "p2"], ["a", "a", "b"]) == 2


def test_size_under_the_bound_s_worst_case() -> None:
    """Each annotator always prefers chosen or always rejected (probability 1/2 each: the share is 0.5,
    the null's boundary). With 5 annotators on 40 pairs a study is unanimous in 1/32 of draws and then
    p = 1/32 < 0.05; no other study is unanimous. 4,000 studies: PASS share within 4 SE of 1/32 and
    below alpha + 2 SE."""
    rng = np.random.default_rng(11)
    pairs, annotators = crossed(40, 5)
    studies, passed = 4000, 0
    for _ in range(studies):
        way = (rng.random(5) < 0.5)[annotators].astype(float) - 0.5
        if np.ptp(way) == 0:  # a split panel's test is the crossed model's (unchanged here)
            res = crossed_mean(way, pairs, annotators, item="preference", low=-0.5)
            passed += bool(res.p_greater < 0.05)
    se = math.sqrt(0.05 * 0.95 / studies)
    assert abs(passed / studies - 1 / 32) < 4 * math.sqrt((1 / 32) * (31 / 32) / studies)
    assert passed / studies <= 0.05 + 2 * se


def unanimous_frame(n_annotators: int) -> pd.DataFrame:
    """A study in which every annotator prefers chosen and finds every rubric aspect met by chosen only."""
    frame = simulate_frame(
        np.random.default_rng(3), SimDesign(n_pairs=30, per_pair=n_annotators, pool=n_annotators)
    )
    frame["preference"] = 2
    rubric = frame["item"].str.startswith("rubric")
    frame.loc[rubric, "value"] = np.where(frame.loc[rubric, "response"] == "chosen", 2, 0)
    return validate_frame(frame)


@pytest.mark.parametrize(("n_annotators", "status"), [(3, "inconclusive"), (7, "pass")])
def test_a_unanimous_panel_passes_with_enough_annotators(n_annotators: int, status: str) -> None:
    """Unanimity of 3 annotators cannot rule out a population half of whom see the opposite (p = 1/8);
    of 7 it can (p = 1/128, Holm-adjusted 1/64). The sentence names the bound."""
    validation = validate_pairs(unanimous_frame(n_annotators), quality_items=["correctness"])
    for verdict in (preference_verdict(validation, 0.05), rubric_verdict(validation, 0.05)):
        assert verdict.status == status, verdict.detail
        assert f"exact bound for unanimous judgments over {n_annotators} annotators" in verdict.detail
        assert not re.search(r"\bnan\b", verdict.detail)
    share = validation.preference_crossed.iloc[0]
    assert share["estimate"] == 1.0 and share["ci_high"] == 1.0
    assert share["ci_low"] == pytest.approx(0.05 ** (1 / n_annotators))


def test_identical_gaps_get_the_exact_bound_on_both_sides() -> None:
    """Every gap 0 on a 1-5 scale (differences in -4..4), margin 0.5: a null population at +-0.5 can put
    7/8 of its gaps at 0, so 3 annotators give p = (7/8)^3 and 23 give (7/8)^23 < 0.05."""
    from analysis.mixed import unanimous_tost

    few = unanimous_tost(0.0, margin=0.5, span=4.0, alpha=0.05, matched=3, n=60)
    assert few.p_lower == few.p_upper == pytest.approx(0.875**3) and not few.equivalent
    many = unanimous_tost(0.0, margin=0.5, span=4.0, alpha=0.05, matched=23, n=460)
    assert many.pvalue == pytest.approx(0.875**23) and many.equivalent
    assert -0.5 < many.ci_low < 0 < many.ci_high < 0.5
    shifted = unanimous_tost(0.25, margin=0.5, span=4.0, alpha=0.05, matched=23, n=460)
    assert shifted.p_upper == pytest.approx((3.5 / 3.75) ** 23) and shifted.p_upper > shifted.p_lower


def test_a_dimension_rated_alike_everywhere_is_tested_by_the_bound_in_the_report() -> None:
    """Every relevance rating the same (the ceiling): the equivalence verdict names the exact bound and
    shows no nan; the other dimensions keep the crossed model."""
    from analysis.verdicts import equivalence_verdict

    frame = simulate_frame(np.random.default_rng(2), SimDesign(n_pairs=40, per_pair=3, rubric_aspects=0))
    frame.loc[frame["item"] == "relevance", "value"] = 5.0
    validation = validate_pairs(validate_frame(frame), quality_items=["correctness", "relevance"])
    row = validation.crossed.set_index("dimension").loc["relevance"]
    assert row["pvalue"] == pytest.approx(0.875**3) and math.isnan(row["df"])
    verdict = equivalence_verdict(validation, pd.DataFrame(), ["correctness", "relevance"], 0.05, 0.8)
    assert "relevance +0.000" in verdict.detail and "exact bound for unanimous judgments" in verdict.detail
    assert not re.search(r"\bnan\b", verdict.detail)


def test_equivalence_size_under_the_bound_s_worst_case() -> None:
    """Annotators who each always give a gap of 0 (probability 7/8) or always 4 (the mean gap is 0.5:
    the null's upper boundary), 23 annotators on 30 pairs: unanimous at 0 in (7/8)^23 = 0.046 of the
    studies, each then equivalent; 4,000 studies stay below alpha + 2 SE."""
    from analysis.mixed import mixed_effect

    rng = np.random.default_rng(12)
    pairs, annotators = crossed(30, 23)
    studies, passed = 4000, 0
    for _ in range(studies):
        gap = np.where(rng.random(23) < 0.875, 0.0, 4.0)[annotators]
        if np.ptp(gap) == 0:
            d = pd.DataFrame({"pair_id": pairs, "annotator": annotators, "diff": gap})
            passed += mixed_effect(None, "q", margin=0.5, differences=d, span=4.0).equivalent
    assert passed / studies <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / studies)
    assert abs(passed / studies - 0.875**23) < 4 * math.sqrt(0.046 * 0.954 / studies)
