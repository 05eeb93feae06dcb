"""analysis/science/: model vs human accuracy, ceilings, kappa, McNemar, disagreements, support."""

import math

import numpy as np
import pandas as pd
import pytest

from analysis import science as bm

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out


def _frame(prefs: dict[str, list[int]], *, control: dict[str, str] | None = None) -> pd.DataFrame:
    """A label frame: per pair the preferences of annotators a0, a1, ... (one quality item)."""
    rows = []
    for pair_id, values in prefs.items():
        for k, pref in enumerate(values):
            for response in ("chosen", "rejected"):
                rows.append(
                    {
                        "pair_id": pair_id,
                        "annotator": f"a{k}",
                        "response": response,
                        "item": "correctness",
                        "value": 4.0,
                        "preference": pref,
                        "confidence": 2,
                        "time_s": 20.0,
                        "category": "cooking" if pair_id < "p5" else "travel",
                        "control": (control or {}).get(pair_id, ""),
                    }
                )
    return pd.DataFrame(rows)


def _predictions(choices: dict[str, dict[str, str]]) -> pd.DataFrame:
    rows = [
        {"pair_id": pair_id, "model": model, "choice": choice}
        for model, by_pair in choices.items()
        for pair_id, choice in by_pair.items()
    ]
    return pd.DataFrame(rows)


def test_choice_from_scores_is_strict() -> None:
    assert bm.choice_from_scores([2.0, 1.0, 1.0], [1.0, 2.0, 1.0]).tolist() == ["chosen", "rejected", "tie"]


def test_accuracy_ci_is_the_wilson_interval() -> None:
    # Wilson 95% interval for 8 of 10: 0.4902 to 0.9433 (Newcombe 1998, Table I method 3 style).
    outcome = pd.DataFrame(
        {
            "source": "m",
            "kind": "model",
            "pair_id": [f"p{i}" for i in range(10)],
            "category": "",
            "correct": [1.0] * 8 + [0.0] * 2,
        }
    )
    row = bm.accuracy_table(outcome, by_category=False).iloc[0]
    assert (row["accuracy"], round(row["ci_low"], 4), round(row["ci_high"], 4)) == (0.8, 0.4902, 0.9433)


def test_the_human_majority_counts_ties_and_splits_as_not_chosen() -> None:
    frame = _frame({"p1": [1, 2, -1], "p2": [0, 0, 1], "p3": [-1, 1, 0]})
    out = bm.human_outcomes(frame)
    majority = out[out["source"] == bm.HUMAN_MAJORITY].set_index("pair_id")["correct"].to_dict()
    assert majority == {"p1": 1.0, "p2": 0.0, "p3": 0.0}


def test_per_annotator_accuracy_is_over_the_pairs_they_rated() -> None:
    frame = _frame({"p1": [1, -1], "p2": [1], "p3": [2, 1]})
    out = bm.human_outcomes(frame)
    table = bm.accuracy_table(out, by_category=False)
    per = table[table["kind"] == "annotator"].set_index("source")
    assert per.loc["a0", "n"] == 3 and per.loc["a1", "n"] == 2
    assert per.loc["a1", "accuracy"] == 0.5


def test_controls_never_count() -> None:
    frame = _frame({"p1": [1, 1, 1], "c1": [-1, -1, -1]}, control={"c1": "gold"})
    out = bm.human_outcomes(frame)
    assert set(out["pair_id"]) == {"p1"}


def test_adjudicated_outcomes_follow_the_final_preference() -> None:
    frame = _frame({"p1": [1, -1, 0], "p2": [1, 1, 1]})
    final = pd.DataFrame({"pair_id": ["p1", "p2"], "preference": ["chosen", None], "keep": [True, None]})
    out = bm.human_outcomes(frame, final=final)
    adjudicated = out[out["source"] == bm.HUMAN_ADJUDICATED]
    assert adjudicated[["pair_id", "correct"]].values.tolist() == [["p1", 1.0]]


def test_outcomes_keep_only_the_validated_pairs() -> None:
    frame = _frame({"p1": [1, 1, 1], "p2": [1, 1, -1], "p3": [-1, -1, -1]})
    final = pd.DataFrame(
        {
            "pair_id": ["p1", "p2", "p3"],
            "preference": ["chosen"] * 2 + ["rejected"],
            "keep": [True, True, False],
        }
    )
    predictions = _predictions({"m": {"p1": "chosen", "p2": "rejected", "p3": "chosen"}})
    out = bm.outcomes(frame, predictions, final=final)
    assert set(out["pair_id"]) == {"p1", "p2"}


def test_accuracy_per_category() -> None:
    predictions = _predictions({"m": {"p1": "chosen", "p2": "chosen", "p7": "rejected"}})
    table = bm.accuracy_table(
        bm.model_outcomes(predictions, categories=pd.Series({"p1": "a", "p2": "a", "p7": "b"}))
    )
    by = table.set_index("category")["accuracy"].to_dict()
    assert by == {"(all)": pytest.approx(2 / 3), "a": 1.0, "b": 0.0}


def test_kappa_is_one_when_the_model_matches_the_majority() -> None:
    frame = _frame({"p1": [1, 1, 1], "p2": [-1, -1, 1], "p3": [1, 2, 1], "p4": [-2, -1, -1]})
    predictions = _predictions({"m": {"p1": "chosen", "p2": "rejected", "p3": "chosen", "p4": "rejected"}})
    row = bm.kappa_table(frame, predictions, n_boot=50).iloc[0]
    assert (row["kappa"], row["agreement"], row["n_pairs"]) == (1.0, 1.0, 4)


def test_mcnemar_exact_p_value() -> None:
    # 6 pairs where only the model is right, none the other way: exact two-sided p = 2 * 0.5**6.
    n = 10
    outcome = pd.concat(
        [
            pd.DataFrame(
                {
                    "source": "m",
                    "kind": "model",
                    "pair_id": [f"p{i}" for i in range(n)],
                    "category": "",
                    "correct": 1.0,
                }
            ),
            pd.DataFrame(
                {
                    "source": bm.HUMAN_MAJORITY,
                    "kind": "human",
                    "pair_id": [f"p{i}" for i in range(n)],
                    "category": "",
                    "correct": [0.0] * 6 + [1.0] * 4,
                }
            ),
        ]
    )
    row = bm.paired_comparisons(outcome, n_boot=200).iloc[0]
    assert (row["a"], row["b"], row["a_only"], row["b_only"]) == ("m", bm.HUMAN_MAJORITY, 6, 0)
    assert row["p_mcnemar"] == pytest.approx(2 * 0.5**6)
    assert row["difference"] == pytest.approx(0.6) and row["ci_low"] > 0


def test_models_are_compared_with_each_other() -> None:
    predictions = _predictions({"a": {"p1": "chosen"}, "b": {"p1": "rejected"}})
    table = bm.paired_comparisons(bm.model_outcomes(predictions), n_boot=10)
    assert table[["a", "b"]].values.tolist() == [["a", "b"]]


def test_disagreements_list_the_pairs_where_a_model_differs_from_the_majority() -> None:
    frame = _frame({"p1": [1, 1, 1], "p2": [-1, -1, 1], "p3": [1, -1, 0]})
    predictions = _predictions(
        {
            "strong": {"p1": "chosen", "p2": "rejected", "p3": "chosen"},
            "weak": {"p1": "rejected", "p2": "chosen", "p3": "chosen"},
        }
    )
    queue = bm.disagreements(frame, predictions)
    assert queue["pair_id"].tolist() == [
        "p3",
        "p2",
        "p1",
    ]  # p3: both differ (no majority); then lowest agreement
    assert queue.set_index("pair_id").loc["p1", "models_disagree"] == "weak"


def _support_frame(answers: dict[tuple[str, int], list[int]]) -> pd.DataFrame:
    rows = []
    for (pair_id, aspect), values in answers.items():
        for k, value in enumerate(values):
            rows.append(
                {
                    "pair_id": pair_id,
                    "annotator": f"a{k}",
                    "response": "chosen",
                    "item": f"support:{aspect}",
                    "value": float(value),
                    "preference": 1,
                    "confidence": 2,
                    "time_s": 10.0,
                }
            )
    return pd.DataFrame(rows)


def test_support_per_aspect_rate_and_majority() -> None:
    frame = _support_frame({("p1", 0): [2, 2, 1], ("p1", 1): [0, 0, 2]})
    table = bm.support_by_aspect(frame).set_index("aspect")
    assert table.loc[0, "support"] == pytest.approx(5 / 6) and table.loc[0, "majority"] == "yes"
    assert table.loc[1, "majority"] == "no"


def test_a_pair_with_an_unsupported_aspect_is_flagged() -> None:
    frame = _support_frame({("p1", 0): [2, 2], ("p1", 1): [0, 0], ("p2", 0): [2, 1]})
    table = bm.support_by_pair(frame).set_index("pair_id")
    assert table.loc["p1", "flagged"] and table.loc["p1", "unsupported_aspects"] == "1"
    assert not table.loc["p2", "flagged"]


def test_support_agreement_is_one_when_all_agree() -> None:
    frame = _support_frame({("p1", 0): [2, 2], ("p1", 1): [0, 0], ("p2", 0): [1, 1], ("p2", 1): [2, 2]})
    result = bm.support_agreement(frame, n_boot=50)
    assert (result["krippendorff_alpha"], result["percent_agreement"], result["n_units"]) == (1.0, 1.0, 4)


def test_support_values_outside_the_scale_are_refused() -> None:
    with pytest.raises(ValueError, match="rubric-support values must be 0, 1 or 2"):
        bm.support_by_aspect(_support_frame({("p1", 0): [3]}))


def test_validated_pair_ids_are_the_kept_ones() -> None:
    final = pd.DataFrame({"pair_id": ["b", "a", "c"], "keep": [True, True, None]})
    assert bm.validated_pair_ids(final) == ["a", "b"]


def test_the_accuracy_interval_covers_the_truth_at_least_93_percent() -> None:
    rng = np.random.default_rng(5)
    hits = 0
    reps = 400
    for _ in range(reps):
        correct = (rng.random(80) < 0.85).astype(float)
        outcome = pd.DataFrame(
            {
                "source": "m",
                "kind": "model",
                "pair_id": [f"p{i}" for i in range(80)],
                "category": "",
                "correct": correct,
            }
        )
        row = bm.accuracy_table(outcome, by_category=False).iloc[0]
        hits += row["ci_low"] <= 0.85 <= row["ci_high"]
    assert hits / reps >= 0.93 and not math.isnan(hits)


def _report(with_models: bool) -> object:
    from analysis.report import ReportSettings, build_report
    from analysis.simulation import SimDesign, SimEffects, simulate_frame

    frame = simulate_frame(np.random.default_rng(3), SimDesign(n_pairs=30, pool=6), SimEffects(noise=0.4))
    pairs = sorted(frame["pair_id"].astype(str).unique())
    predictions = _predictions({"rm": dict.fromkeys(pairs, "chosen")}) if with_models else None
    return build_report(frame, study="s", settings=ReportSettings(n_boot=50), predictions=predictions)


def test_the_report_has_the_benchmark_section_with_predictions() -> None:
    from analysis.render import to_json, to_markdown

    report = _report(True)
    markdown = to_markdown(report)  # type: ignore[arg-type]
    assert "## Models and the human ceiling" in markdown and "| rm | model | (all) |" in markdown
    assert to_json(report)["benchmark"]["accuracy"][0]["source"] == "rm"  # type: ignore[arg-type]


def test_the_report_has_no_benchmark_section_without_predictions_arms_or_support() -> None:
    from analysis.render import benchmark_sections, to_html

    report = _report(False)
    assert benchmark_sections(report) == []  # type: ignore[arg-type]
    assert "human ceiling" not in to_html(report)  # type: ignore[arg-type]
