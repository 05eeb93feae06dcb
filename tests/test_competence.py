"""Per-annotator quality control on label frames (analysis/competence.py)."""

import numpy as np
import pandas as pd
import pytest

from analysis.competence import (
    QC_COLUMNS,
    annotator_competence,
    apply_exclusion,
    attention,
    control_checks,
    label_competence,
    qc_table,
    self_consistency,
)

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

ITEMS = ("correctness", "relevance", "helpfulness")


def _judgment(
    pair_id: str,
    annotator: str,
    chosen: tuple[float, ...],
    rejected: tuple[float, ...],
    *,
    preference: int = 1,
    time_s: float = 60.0,
    control: str = "",
) -> pd.DataFrame:
    rows = []
    for response, values in (("chosen", chosen), ("rejected", rejected)):
        for item, value in zip(ITEMS, values, strict=True):
            rows.append((pair_id, annotator, response, item, float(value), preference, 2.0, time_s, control))
    return pd.DataFrame(
        rows,
        columns=[
            "pair_id",
            "annotator",
            "response",
            "item",
            "value",
            "preference",
            "confidence",
            "time_s",
            "control",
        ],
    )


def _frame(*parts: pd.DataFrame) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True)


def test_gold_checks_compare_preference_sign_and_scores_within_tolerance() -> None:
    frame = _judgment("g1", "ann", (4, 4, 4), (2, 3, 3), preference=2, control="gold")
    expected = {
        "g1": {"preference": 1, "scores": {"chosen": {"correctness": 5}, "rejected": {"correctness": 4}}}
    }
    checks = control_checks(frame, expected, tolerance=1)
    assert dict(zip(checks["check"], checks["correct"], strict=True)) == {
        "preference": True,
        "chosen:correctness": True,
        "rejected:correctness": False,
    }


def test_positive_checks_want_the_defect_rated_worse() -> None:
    frame = _frame(
        _judgment("c1", "good", (4, 4, 4), (2, 4, 4), control="positive"),
        _judgment("c1", "blind", (4, 4, 4), (4, 4, 4), control="positive"),
    )
    checks = control_checks(frame, {"c1": {"worse_on": ["correctness"]}})
    assert checks.set_index("annotator")["correct"].to_dict() == {"good": True, "blind": False}


def test_duplicate_checks_want_a_near_tie() -> None:
    frame = _frame(
        _judgment("d1", "careful", (4, 4, 4), (4, 4, 5), preference=0, control="duplicate"),
        _judgment("d1", "careless", (5, 1, 5), (1, 5, 1), preference=-2, control="duplicate"),
    )
    accuracy = control_checks(frame, {}).groupby("annotator")["correct"].mean()
    assert (accuracy["careful"], accuracy["careless"]) == (1.0, 0.0)


def test_self_consistency_is_one_for_an_identical_repeat() -> None:
    frame = _frame(
        _judgment("p1", "ann", (4, 3, 4), (3, 3, 2), preference=1),
        _judgment("s1", "ann", (4, 3, 4), (3, 3, 2), preference=1, control="swap"),
    )
    table = self_consistency(frame, {"s1": "p1"})
    assert table.set_index("annotator")["self_consistency"]["ann"] == 1.0


def test_self_consistency_drops_with_changed_answers() -> None:
    frame = _frame(
        _judgment("p1", "ann", (5, 5, 5), (1, 1, 1), preference=2),
        _judgment("s1", "ann", (1, 1, 1), (5, 5, 5), preference=-2, control="swap"),
    )
    table = self_consistency(frame, {"s1": "p1"})
    assert table["self_consistency"].iloc[0] == pytest.approx(0.0)


def test_attention_flags_too_fast_annotators() -> None:
    frame = _frame(
        *[_judgment(f"p{i}", "quick", (4, 3, 4), (3, 4, 2), preference=i % 5 - 2, time_s=3) for i in range(6)]
    )
    row = attention(frame, min_seconds=10, max_fast_share=0.5, min_judgments=5).iloc[0]
    assert (row["too_fast"], row["fast_share"], row["straight_lining"]) == (True, 1.0, False)


def test_attention_flags_straight_lining() -> None:
    frame = _frame(*[_judgment(f"p{i}", "flat", (3, 3, 3), (3, 3, 3), preference=0) for i in range(6)])
    assert bool(attention(frame).iloc[0]["straight_lining"])


def test_attention_does_not_flag_below_min_judgments() -> None:
    frame = _frame(*[_judgment(f"p{i}", "new", (3, 3, 3), (3, 3, 3), time_s=1) for i in range(2)])
    row = attention(frame, min_judgments=5).iloc[0]
    assert not row["too_fast"] and not row["straight_lining"]


def _crowd_labels(seed: int = 0) -> tuple[pd.DataFrame, set[str]]:
    """Eight workers on 80 tasks with 3 labels; w0 and w1 answer at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, 80)
    rows = []
    for w in range(8):
        for t in range(80):
            spam = w < 2
            label = int(rng.integers(0, 3)) if spam or rng.random() > 0.85 else int(truth[t])
            rows.append((f"t{t}", f"w{w}", label))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), {"w0", "w1"}


@pytest.mark.parametrize("method", ["mace", "dawid_skene"])
def test_competence_models_rank_random_workers_last(method: str) -> None:
    labels, spammers = _crowd_labels()
    competence = label_competence(labels, method=method)  # type: ignore[arg-type]
    assert set(competence.sort_values().index[:2]) == spammers


def test_competence_is_nan_with_a_single_worker() -> None:
    labels = pd.DataFrame({"task": ["a", "b"], "worker": ["w", "w"], "label": [0, 1]})
    assert label_competence(labels).isna().all()


def test_annotator_competence_leaves_controls_out() -> None:
    frame = _frame(
        _judgment("p1", "a", (4, 3, 4), (3, 3, 2)),
        _judgment("p1", "b", (4, 3, 4), (3, 3, 2)),
        _judgment("c1", "only_controls", (4, 3, 4), (3, 3, 2), control="gold"),
    )
    assert sorted(annotator_competence(frame)["annotator"]) == ["a", "b"]


def test_qc_table_has_one_row_per_annotator_and_the_documented_columns() -> None:
    frame = _frame(_judgment("p1", "a", (4, 3, 4), (3, 3, 2)), _judgment("p1", "b", (5, 3, 4), (3, 2, 2)))
    table = qc_table(frame)
    assert list(table.columns) == list(QC_COLUMNS) and list(table["annotator"]) == ["a", "b"]


def test_exclusion_names_the_failed_criterion() -> None:
    table = pd.DataFrame(
        {
            "annotator": ["ok", "bad"],
            "gold_checks": [5, 5],
            "gold_accuracy": [0.9, 0.4],
            "swap_checks": [0, 0],
            "self_consistency": [np.nan, np.nan],
            "competence": [0.7, 0.6],
            "too_fast": [False, False],
            "straight_lining": [False, False],
        }
    )
    out = apply_exclusion(table, min_gold_accuracy=0.7).set_index("annotator")
    assert (out.loc["ok", "excluded"], out.loc["bad", "excluded"]) == (False, True)
    assert out.loc["bad", "reasons"] == "gold accuracy 0.40 < 0.7"


def test_exclusion_ignores_gold_accuracy_on_too_few_checks() -> None:
    table = pd.DataFrame(
        {
            "annotator": ["new"],
            "gold_checks": [2],
            "gold_accuracy": [0.0],
            "swap_checks": [0],
            "self_consistency": [np.nan],
            "competence": [np.nan],
            "too_fast": [False],
            "straight_lining": [False],
        }
    )
    assert not apply_exclusion(table, min_gold_accuracy=0.7, min_checks=3)["excluded"].iloc[0]
