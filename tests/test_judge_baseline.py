"""The content-blind baseline of the alternative annotator test: a judge that ignores the responses
(first position, longer response, the same rating) is never "can replace", a good judge still is, and
a judge's position and length preferences are tested and flagged."""

import numpy as np
import pandas as pd
import pytest

from analysis.alttest import alignment_wins, alt_test
from analysis.judge_baseline import (
    FIRST_POSITION,
    LONGER,
    baseline_test,
    blind_wins,
    length_preference,
    preference_blind,
    replace_verdict,
)
from analysis.judges import judge_section
from tests.utils.judgehelpers import beta_study, preference_judge

pytestmark = pytest.mark.nodb


@pytest.fixture(scope="module")
def study() -> tuple[pd.DataFrame, np.ndarray]:
    return beta_study(annotators=5, pairs=200, seed=7)


def _pairs(frame: pd.DataFrame) -> list[str]:
    return sorted(frame["pair_id"].unique())


def _first_position_judge(frame: pd.DataFrame, *, recorded: bool, seed: int = 1) -> pd.DataFrame:
    """Always picks the response shown first; the order is random per pair."""
    pairs = _pairs(frame)
    chosen_first = np.random.default_rng(seed).random(len(pairs)) < 0.5
    orders = (
        ["chosen_first" if c else "rejected_first" for c in chosen_first] if recorded else [""] * len(pairs)
    )
    return preference_judge("first", pairs, np.where(chosen_first, 2.0, -2.0), orders)


def _row(frame: pd.DataFrame, judge: pd.DataFrame, epsilon: float, item: str = "preference") -> pd.Series:
    section = judge_section(frame, judge, quality_items=["correctness"], epsilon=epsilon, n_boot=5)
    return section.table.set_index(["judge", "item"]).loc[(judge["judge"].iloc[0], item)]


@pytest.mark.parametrize("recorded", [True, False])
def test_a_first_position_judge_passes_a_loose_alt_test_but_cannot_replace(
    study: tuple[pd.DataFrame, np.ndarray], recorded: bool
) -> None:
    frame, _ = study
    row = _row(frame, _first_position_judge(frame, recorded=recorded), epsilon=0.3)
    assert row["passes_alt_test"] is True
    assert row["can_replace"] is False and row["beats_baseline"] is False
    assert row["baseline"] in (FIRST_POSITION, LONGER)
    assert row["epsilon_too_loose"] is True and "cannot tell a judge that reads" in row["baseline_note"]


def test_with_its_orders_recorded_the_first_position_judge_is_its_own_baseline(
    study: tuple[pd.DataFrame, np.ndarray],
) -> None:
    frame, _ = study
    section = judge_section(frame, _first_position_judge(frame, recorded=True), quality_items=[], epsilon=0.2)
    row = section.table.iloc[0]
    assert row["advantage_over_baseline"] <= 1e-12
    card = section.cards.iloc[0]
    assert card["first_position_rate"] == 1.0 and card["position_bias"] is True
    assert card["first_position_p"] < 1e-50


def test_an_always_longer_judge_cannot_replace_and_is_flagged(study: tuple[pd.DataFrame, np.ndarray]) -> None:
    frame, _ = study
    pairs = _pairs(frame)
    lengths = frame.drop_duplicates("pair_id").set_index("pair_id").loc[pairs]
    longer = np.where(lengths["chosen_chars"] > lengths["rejected_chars"], 2.0, -2.0)
    judge = preference_judge("longer", pairs, longer, [""] * len(pairs))
    section = judge_section(frame, judge, quality_items=[], epsilon=0.3, n_boot=5)
    row = section.table.iloc[0]
    assert row["can_replace"] is False and row["advantage_over_baseline"] <= 1e-12
    card = section.cards.iloc[0]
    assert card["longer_rate_judge"] == 1.0 and card["longer_rate_people"] < 0.7
    assert card["length_bias"] is True and card["length_p"] < 1e-6


@pytest.mark.parametrize("epsilon", [0.1, 0.15, 0.2])
def test_a_good_judge_can_still_replace(study: tuple[pd.DataFrame, np.ndarray], epsilon: float) -> None:
    frame, p_chosen = study
    pairs = _pairs(frame)
    both = [*pairs, *pairs]
    pref = np.where(p_chosen > 0.5, 2.0, -2.0)
    judge = preference_judge(
        "good", both, np.concatenate([pref, pref]), ["chosen_first"] * 200 + ["rejected_first"] * 200
    )
    section = judge_section(frame, judge, quality_items=[], epsilon=epsilon, n_boot=5)
    row = section.table.iloc[0]
    assert row["passes_alt_test"] is True and row["beats_baseline"] is True and row["can_replace"] is True
    assert section.cards.iloc[0]["position_bias"] is False


def test_a_judge_giving_every_response_the_same_rating_cannot_replace(
    study: tuple[pd.DataFrame, np.ndarray],
) -> None:
    frame, _ = study
    pairs = _pairs(frame)
    judge = pd.DataFrame(
        {
            "pair_id": np.repeat(pairs, 2),
            "judge": "constant",
            "order": "",
            "response": ["chosen", "rejected"] * len(pairs),
            "item": "correctness",
            "value": 4.0,
            "preference": np.nan,
            "confidence": np.nan,
        }
    )
    row = _row(frame, judge, epsilon=0.2, item="correctness")
    assert row["can_replace"] is False and row["beats_baseline"] is False


# ------------------------------------------------------------------------------------ the kernel


def test_a_coin_baseline_scores_the_mean_of_its_two_picks() -> None:
    rng = np.random.default_rng(3)
    h = rng.choice([-1.0, 0.0, 1.0], size=(4, 50, 1))
    f = np.ones((50, 1))
    coin, _ = blind_wins(h, f, preference_blind("coin", np.full(50, np.nan)), scoring="accuracy")
    up, _, _ = alignment_wins(h, np.ones((50, 1)), scoring="accuracy")
    down, _, _ = alignment_wins(h, -np.ones((50, 1)), scoring="accuracy")
    np.testing.assert_allclose(coin, (up + down) / 2)


def test_the_alt_test_alone_is_unchanged_by_the_baseline() -> None:
    rng = np.random.default_rng(5)
    h = rng.choice([-1.0, 0.0, 1.0], size=(4, 60, 1))
    f = rng.choice([-1.0, 1.0], size=(60, 1))
    verdict = replace_verdict(
        h, f, [preference_blind("coin", np.full(60, np.nan))], scoring="accuracy", epsilon=0.2
    )
    plain = alt_test(h, f, epsilon=0.2, scoring="accuracy")
    np.testing.assert_array_equal(verdict.alt.p_value, plain.p_value)
    assert float(verdict.alt.winning_rate) == float(plain.winning_rate)


def test_a_zero_variance_advantage_rejects_only_above_the_margin() -> None:
    mask = np.ones((3, 40), dtype=bool)
    tested = np.ones(3, dtype=bool)
    above = baseline_test(np.ones((3, 40)), np.full((3, 40), 0.9), mask, tested, margin=0.05)
    at = baseline_test(np.ones((3, 40)), np.full((3, 40), 0.95), mask, tested, margin=0.05)
    assert bool(above.beats) and float(above.p_value) == 0.0
    assert not bool(at.beats) and float(at.p_value) == 1.0


def test_the_length_test_is_an_exact_mcnemar_test() -> None:
    judge = np.array([True] * 9 + [False] * 11)
    people = np.array([False] * 9 + [False] * 11)
    only_judge, only_people, p = length_preference(judge, people)
    assert (only_judge, only_people) == (9, 0)
    assert p == pytest.approx(2 / 2**9)  # two-sided exact binomial, 9 of 9
