"""Numbers a reviewer would query: every interval inside its scale, one unit per test, agreement with
its n (no coefficient from too few doubly rated pairs), plot axes that hold every value, a sample-size
verdict that counts the pairs that can inform it, and no pair dropped on one judgment."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from analysis.agreement.table import MIN_REPLICATED_UNITS
from analysis.cleaning import DECISIONS
from analysis.equivalence import preference_pairs
from analysis.readable import SHARE_LABELS
from analysis.render.plots import figures
from analysis.report import ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from analysis.vocabulary import ANNOTATOR, PAIR_ID, PREFERENCE

pytestmark = pytest.mark.nodb  # statistics and static checks: no database


def _frame(seed: int, design: SimDesign, effects: SimEffects = SimEffects()) -> pd.DataFrame:
    return simulate_frame(np.random.default_rng(seed), design, effects)


def _rated_once_but(frame: pd.DataFrame, replicated: int) -> pd.DataFrame:
    """The frame with only its first `replicated` pairs keeping every annotator; the others keep one."""
    pairs = list(dict.fromkeys(frame[PAIR_ID]))
    first = frame.groupby(PAIR_ID)[ANNOTATOR].transform("first")
    keep = frame[PAIR_ID].isin(pairs[:replicated]) | (frame[ANNOTATOR] == first)
    return frame[keep].reset_index(drop=True)


def test_a_pair_level_preference_share_near_one_has_its_interval_inside_0_1() -> None:
    pairs = [f"p{i}" for i in range(29) for _ in range(3)]
    preferences = [2] * (28 * 3) + [2, 1, -1]  # 28 pairs all for chosen, one split
    result = preference_pairs(pairs, preferences)
    assert result.rate > 0.98
    assert 0 <= result.ci_low <= result.rate <= result.ci_high <= 1


def test_every_pair_alike_still_gets_an_interval_inside_0_1() -> None:
    result = preference_pairs(["a", "a", "b", "b", "c", "c"], [2, 1, 2, 2, 1, 1])
    assert result.rate == 1
    assert 0 < result.ci_low < 1 and result.ci_high == 1  # a Wilson interval over 3 pairs, not [1, 1]


@pytest.fixture(scope="module")
def lopsided() -> pd.DataFrame:
    """29 pairs that chosen wins almost always; 2 of them rated by three annotators, 27 by one."""
    frame = _frame(5, SimDesign(n_pairs=29, per_pair=3, pool=3), SimEffects(preference_rate=0.97, noise=0.4))
    return _rated_once_but(frame, replicated=2)


@pytest.fixture(scope="module")
def lopsided_report(lopsided: pd.DataFrame):  # type: ignore[no-untyped-def]
    return build_report(lopsided, study="lopsided", settings=ReportSettings(n_boot=100))


def test_the_preference_verdict_is_a_share_with_an_interval_inside_0_1(lopsided_report) -> None:  # type: ignore[no-untyped-def]
    row = lopsided_report.validation.preference_crossed.iloc[0]
    assert 0.5 < row["estimate"] <= 1, "the estimate is the share preferring chosen, not share - 0.5"
    assert 0 <= row["ci_low"] <= row["estimate"] <= row["ci_high"] <= 1
    detail = lopsided_report.verdict("preference").detail
    shown = [float(x) for x in re.findall(r"[-\d.]+", detail.split("share ", 1)[1])[:3]]
    assert all(0 <= x <= 1 for x in shown), detail
    assert SHARE_LABELS["estimate"].endswith("(0-1)")


def test_agreement_from_two_doubly_rated_pairs_is_no_coefficient(lopsided_report) -> None:  # type: ignore[no-untyped-def]
    agreement = lopsided_report.agreement
    for row in agreement.to_dict("records"):
        assert row["n_units"] < MIN_REPLICATED_UNITS
        assert math.isnan(row["krippendorff_alpha"]) and math.isnan(row["krippendorff_alpha_ci_low"])
        assert row["note"].startswith("too few doubly rated pairs")
    reliability = lopsided_report.verdict("reliability")
    assert reliability.status == "inconclusive"
    assert "too few doubly rated pairs" in reliability.detail


def test_the_sample_size_verdict_counts_the_pairs_rated_twice_or_more(lopsided_report) -> None:  # type: ignore[no-untyped-def]
    verdict = lopsided_report.verdict("sample_size")
    assert verdict.status == "inconclusive", "29 pairs, but only 2 rated by two or more annotators"
    assert "2 of 29 pairs rated by two or more annotators (27 rated once)" in verdict.detail
    assert "at least 20 are needed before the study can PASS overall" in verdict.detail


def test_a_pair_with_one_judgment_is_never_dropped(lopsided_report, lopsided: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    cleaning = lopsided_report.cleaning
    once = cleaning[cleaning["n_judgments"] < 2]
    assert len(once) == 27
    assert (once["decision"] != DECISIONS[0]).all()
    assert once["evidence"].str.contains("never dropped").all()
    assert once["q_value"].isna().all()


def test_the_agreement_axis_holds_a_negative_alpha() -> None:
    """Annotators who disagree on purpose: the preference alpha is negative, and the axis shows it."""
    frame = _frame(2, SimDesign(n_pairs=40, per_pair=3, pool=3), SimEffects(noise=0.4))
    judgments = frame.groupby([PAIR_ID, ANNOTATOR], sort=False).ngroup()
    frame[PREFERENCE] = np.where(judgments % 2 == 0, 2, -2)  # alternate sides within every pair
    report = build_report(frame, study="split", settings=ReportSettings(n_boot=100, extras=True))
    alphas = report.agreement.set_index("item")["krippendorff_alpha"]
    assert alphas["preference"] < -0.2
    low, high = figures(report)["agreement"].axes[0].get_xlim()
    lows = report.agreement["krippendorff_alpha_ci_low"].clip(-1, 1)
    assert low <= min(alphas.min(), lows.min()) and high >= 1
