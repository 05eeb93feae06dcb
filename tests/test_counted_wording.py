"""Counts in the report's and the pages' sentences agree with their nouns ("1 pair to drop", "about 1
more judgment"), and a uniform draw's one inclusion probability is said once."""

from types import SimpleNamespace

import pytest

from analysis.render.text import cleaning_rate, cleaning_title
from annotator.intake.assign import AssignSummary
from annotator.intake.human_sample import SampleSummary

pytestmark = pytest.mark.nodb


@pytest.mark.parametrize(
    ("drop", "more", "title", "rate"),
    [
        (1, 1, "Cleaning list: 1 pair to drop, 1 needs more judgments", "0 of them"),
        (4, 3, "Cleaning list: 4 pairs to drop, 3 need more judgments", "2 of them"),
        (0, 0, "Cleaning list: 0 pairs to drop, 0 need more judgments", "0 of them"),
    ],
)
def test_the_cleaning_title_counts_in_words_that_agree(drop: int, more: int, title: str, rate: str) -> None:
    report = SimpleNamespace(
        not_computed={},
        summary={"n_drop": drop, "n_drop_any": drop // 2, "n_needs_more": more},
        parameters={"fdr": 0.1},
    )
    assert cleaning_title(report) == title  # type: ignore[arg-type]
    assert cleaning_rate(report) == (  # type: ignore[arg-type]
        "Drops at a Bayesian false discovery rate of 10% in this list (after more judgments, decide on "
        "the latest list: the drops of earlier lists taken together do not keep that rate); "
        f"{rate} also at 10% for any distribution of pair gaps, and over repeated looks."
    )


def test_a_uniform_draws_probability_is_said_once_and_an_active_ones_range() -> None:
    assigned = AssignSummary(study="s", created=60, pairs=20, annotators=3)
    uniform = SampleSummary("s", "j", False, 39, 20.0, 20, 0.5128, 0.5128, assigned)
    assert "inclusion probability 0.513 for every pair)" in str(uniform)
    active = SampleSummary("s", "j", True, 39, 20.0, 21, 0.41, 0.93, assigned)
    assert "inclusion probability 0.410 to 0.930, recorded per pair)" in str(active)


def test_the_headline_says_the_model_and_population_once_for_a_run_of_claims() -> None:
    from analysis.verdicts import CROSSED_POPULATION, claims_in_words

    claims = [
        "the study has at least 20 pairs rated by two or more annotators",
        f"{CROSSED_POPULATION}: chosen and rejected are equivalent",
        f"{CROSSED_POPULATION}: annotators judge that chosen follows the rubric better",
        "for these pairs as this panel rated them: the ratings are reliable",
        f"{CROSSED_POPULATION}: annotators prefer chosen",
    ]
    assert claims_in_words(claims) == (
        "the study has at least 20 pairs rated by two or more annotators; "
        f"{CROSSED_POPULATION}: chosen and rejected are equivalent, and annotators judge that chosen follows "
        "the rubric better; for these pairs as this panel rated them: the ratings are reliable; "
        f"{CROSSED_POPULATION}: annotators prefer chosen"
    )
    assert claims_in_words([]) == ""
