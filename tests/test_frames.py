"""Tests for the tidy label frame: validation, rubric means, per-pair aggregates, reading files."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import aggregates, frames, label_files
from analysis.aggregates import add_rubric_means, judgments, pair_means
from analysis.frames import validate_frame
from analysis.label_files import read_labels
from tests.utils.factories import write_labels

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out


def _frame() -> pd.DataFrame:
    rows = []
    for pair, annotators in (("p1", ("a", "b")), ("p2", ("a",))):
        for k, ann in enumerate(annotators):
            pref = 1 if ann == "a" else -2
            for resp, base in (("chosen", 4.0), ("rejected", 3.0)):
                rows.append((pair, ann, resp, "correctness", base + k, pref, 2.0, 11.5))
                rows.append((pair, ann, resp, "rubric:0", 2.0 if resp == "chosen" else 0.0, pref, 2.0, 11.5))
                rows.append((pair, ann, resp, "rubric:1", 1.0, pref, 2.0, 11.5))
    return pd.DataFrame(rows, columns=list(frames.REQUIRED_COLUMNS))


def test_validate_frame_returns_contract_dtypes() -> None:
    out = validate_frame(_frame())
    assert out["value"].dtype == float and out["preference"].dtype == int
    assert out["pair_id"].map(type).eq(str).all()


def test_validate_frame_names_all_missing_columns() -> None:
    df = _frame().drop(columns=["value", "annotator"])
    with pytest.raises(ValueError, match=re.escape("label frame is missing column(s): annotator, value")):
        validate_frame(df)


def test_validate_frame_rejects_bad_response() -> None:
    df = _frame()
    df.loc[0, "response"] = "A"
    with pytest.raises(
        ValueError, match=re.escape("column 'response' must be 'chosen' or 'rejected', got: 'A'")
    ):
        validate_frame(df)


@pytest.mark.parametrize(
    ("column", "text"),
    [
        ("pair_id", "p\x1b[2J1"),  # a terminal escape: the CLI prints ids
        ("annotator", "bob\x07"),
        ("item", "correct\nness"),  # a name is one line
        ("category", "\x1b[31mACAD"),
    ],
)
def test_validate_frame_refuses_control_characters_where_the_pair_import_does(column: str, text: str) -> None:
    df = _frame().assign(category="academia")
    df.loc[3, column] = text
    with pytest.raises(ValueError) as info:
        validate_frame(df)
    said = str(info.value)
    assert said == f"column '{column}' holds a control character: {text!r} (first at row 4)"
    assert "\x1b" not in said and "\x07" not in said  # shown escaped


def test_validate_frame_keeps_what_the_pair_import_keeps() -> None:
    """A category may run over lines (a text); a bidirectional control in an id is imported with a
    warning (and shown escaped where the CLI prints it): a study's own labels must analyse."""
    df = _frame().assign(category="cook\nbook")
    df.loc[:, "pair_id"] = df["pair_id"] + "\u202e"
    out = validate_frame(df)
    assert set(out["category"]) == {"cook\nbook"} and out["pair_id"].str.endswith("\u202e").all()


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_labels_file_with_an_escape_in_an_id_names_its_row(tmp_path: Path, suffix: str) -> None:
    df = _frame()
    df.loc[4, "annotator"] = "a\x1b[2J"
    with pytest.raises(ValueError, match=re.escape("column 'annotator' holds a control character")) as info:
        read_labels(write_labels(tmp_path / f"labels{suffix}", df))
    assert str(info.value).endswith(f"(first at row {5 + (suffix == '.csv')})")


def test_validate_frame_rejects_non_numeric_value() -> None:
    df = _frame().astype({"value": object})
    df.loc[1, "value"] = "good"
    with pytest.raises(ValueError, match=re.escape("column 'value' has non-numeric values: 'good'")):
        validate_frame(df)


def test_validate_frame_rejects_missing_value() -> None:
    df = _frame()
    df.loc[1, "value"] = np.nan
    with pytest.raises(ValueError, match=re.escape("column 'value' has 1 missing value(s)")):
        validate_frame(df)


def test_validate_frame_rejects_preference_out_of_range() -> None:
    df = _frame()
    df.loc[2, "preference"] = 3
    with pytest.raises(
        ValueError, match=re.escape("column 'preference' must hold integers in -2..2, got: 3.0")
    ):
        validate_frame(df)


def test_validate_frame_rejects_bad_confidence_and_time() -> None:
    df = _frame()
    df.loc[2, "confidence"] = 0
    with pytest.raises(
        ValueError, match=re.escape("column 'confidence' must hold integers in 1..3, got: 0.0")
    ):
        validate_frame(df)
    df = _frame()
    df.loc[2, "time_s"] = -1.0
    with pytest.raises(ValueError, match=re.escape("column 'time_s' must be >= 0, got: -1.0")):
        validate_frame(df)


def test_validate_frame_allows_missing_confidence() -> None:
    df = _frame()
    df["confidence"] = np.nan
    assert validate_frame(df)["confidence"].isna().all()


def test_validate_frame_rejects_rubric_value_out_of_range() -> None:
    df = _frame()
    df.loc[1, "value"] = 3.0
    with pytest.raises(
        ValueError, match=re.escape("column 'value (rubric aspects)' must hold integers in 0..2")
    ):
        validate_frame(df)


def test_validate_frame_rejects_duplicates() -> None:
    df = _frame()
    df = pd.concat([df, df.iloc[[0]]], ignore_index=True)
    with pytest.raises(
        ValueError, match=re.escape("label frame has 1 duplicate (pair_id, annotator, response, item) row(s)")
    ):
        validate_frame(df)


def test_validate_frame_rejects_non_dataframe() -> None:
    with pytest.raises(TypeError, match="expected a pandas DataFrame, got list"):
        validate_frame([])  # type: ignore[arg-type]


def test_add_rubric_means_is_mean_over_aspects() -> None:
    out = add_rubric_means(validate_frame(_frame()))
    rub = out[out["item"] == frames.RUBRIC_ITEM].set_index(["pair_id", "annotator", "response"])["value"]
    assert rub[("p1", "a", "chosen")] == 1.5 and rub[("p1", "a", "rejected")] == 0.5
    assert len(rub) == 6
    # idempotent: existing "rubric" rows are replaced, not duplicated
    assert len(add_rubric_means(out)) == len(out)


def test_pair_means_averages_over_annotators() -> None:
    pm = pair_means(validate_frame(_frame()), "correctness")
    assert pm.to_dict("records") == [
        {"pair_id": "p1", "chosen": 4.5, "rejected": 3.5, "diff": 1.0, "n_annotators": 2},
        {"pair_id": "p2", "chosen": 4.0, "rejected": 3.0, "diff": 1.0, "n_annotators": 1},
    ]


def test_pair_means_derives_rubric_and_drops_incomplete_judgments() -> None:
    df = validate_frame(_frame())
    df = df.drop(
        df[(df["pair_id"] == "p1") & (df["annotator"] == "b") & (df["response"] == "rejected")].index
    )
    pm = pair_means(df, "rubric")
    assert pm.set_index("pair_id").loc["p1", "n_annotators"] == 1
    assert pm["diff"].tolist() == [1.0, 1.0]


def test_pair_means_unknown_item() -> None:
    with pytest.raises(ValueError, match=re.escape("no scores for item 'style'")):
        pair_means(validate_frame(_frame()), "style")


def test_judgments_one_row_per_pair_and_annotator() -> None:
    j = judgments(validate_frame(_frame()))
    assert list(j.columns) == ["pair_id", "annotator", "preference", "confidence", "time_s"]
    assert j["preference"].tolist() == [1, -2, 1]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_read_labels_round_trip(tmp_path: Path, suffix: str) -> None:
    df = _frame()
    df["pair_id"] = df["pair_id"].str.replace("p", "00")  # ids that look numeric stay strings
    path = write_labels(tmp_path / f"labels{suffix}", df)
    out = read_labels(path)
    assert out["pair_id"].tolist() == df["pair_id"].tolist()
    assert np.allclose(out["value"], df["value"])


def test_a_labels_line_that_is_no_json_is_named_by_its_line(tmp_path: Path) -> None:
    path = write_labels(tmp_path / "labels.jsonl", _frame())
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('":', '"', 1)  # a colon lost in the third record
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"^line 3: not valid JSON: Expecting ':' delimiter \(character \d+\)$"
    ):
        read_labels(path)


def test_read_labels_unsupported_type(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=re.escape("unsupported labels file type '.xlsx': use .csv, .jsonl or .parquet")
    ):
        read_labels(tmp_path / "labels.xlsx")


# ------------------------------------------------------------------------------ optional columns


def _with_optional() -> pd.DataFrame:
    df = _frame()
    df["control"] = np.where(df["pair_id"] == "p2", "positive", "")
    df["arm"] = "profile"
    df["side_chosen"] = np.where(df["annotator"] == "a", "A", "B")
    df["chosen_chars"] = 800.0
    df["rejected_chars"] = 650.0
    return df


def test_optional_columns_are_validated_and_kept() -> None:
    out = validate_frame(_with_optional())
    assert set(out["control"]) == {"", "positive"}
    bad = _with_optional().assign(control="sometimes")
    with pytest.raises(
        ValueError, match=re.escape("column 'control' must be empty or one of gold, positive")
    ):
        validate_frame(bad)
    with pytest.raises(ValueError, match=re.escape("column 'side_chosen' must be 'A' or 'B', got: 'C'")):
        validate_frame(_with_optional().assign(side_chosen="C"))
    missing = _with_optional()
    missing["control"] = None  # a tool that leaves it empty: main pairs
    assert (validate_frame(missing)["control"] == "").all()


def test_split_controls_keeps_controls_out_of_the_main_frame() -> None:
    main, controls = frames.split_controls(validate_frame(_with_optional()))
    assert set(main["pair_id"]) == {"p1"} and set(controls["pair_id"]) == {"p2"}
    all_main, none = frames.split_controls(validate_frame(_frame()))
    assert len(all_main) == len(_frame()) and none.empty


def test_rubric_scores_is_the_one_mean_over_aspects() -> None:
    rows = pd.DataFrame(
        {
            "judgment_id": [1, 1, 1, 2, 2],
            "response": "rejected",
            "item": ["rubric:0", "rubric:1", "relevance", "rubric:0", "rubric:2"],
            "value": [2.0, 0.0, 5.0, 1.0, 1.0],
        }
    )
    out = aggregates.rubric_scores(rows, ["judgment_id", "response"])
    assert out.to_dict("records") == [
        {"judgment_id": 1, "response": "rejected", "item": "rubric", "value": 1.0},
        {"judgment_id": 2, "response": "rejected", "item": "rubric", "value": 1.0},
    ]


def test_judgment_differences_one_row_per_judgment() -> None:
    out = aggregates.judgment_differences(validate_frame(_with_optional()), "correctness")
    assert out[["pair_id", "annotator", "diff"]].values.tolist() == [
        ["p1", "a", 1.0],
        ["p1", "b", 1.0],
        ["p2", "a", 1.0],
    ]
    assert {"side_chosen", "chosen_chars", "rejected_chars"} <= set(out.columns)
    pd.testing.assert_frame_equal(
        aggregates.pair_means_from_differences(out), pair_means(validate_frame(_frame()), "correctness")
    )


def test_pair_majority_is_the_one_majority() -> None:
    votes = pd.DataFrame({"pair_db_id": [7, 7, 7, 8, 8, 9], "preference": [2, 1, -1, 0, -1, -2]})
    out = aggregates.pair_majority(votes, pair_col="pair_db_id").set_index("pair_db_id")
    assert out["majority"].to_dict() == {7: "chosen", 8: "none", 9: "rejected"}
    assert out.loc[7, "agreement"] == pytest.approx(2 / 3)
    assert out.loc[7, ["n_votes", "n_chosen", "n_rejected", "n_tie"]].tolist() == [3, 2, 1, 0]


def test_read_labels_keeps_optional_text_columns(tmp_path: Path) -> None:
    df = _with_optional()
    path = tmp_path / "labels.csv"
    df.to_csv(path, index=False)
    back = read_labels(path)
    assert back["control"].tolist() == df["control"].tolist()
    assert back["side_chosen"].tolist() == df["side_chosen"].tolist()


@pytest.mark.parametrize(
    ("column", "bad", "message"),
    [
        ("value", "x", "column 'value' has non-numeric values: 'x' (first at row 5)"),
        ("preference", 5, "column 'preference' must hold integers in -2..2, got: 5.0 (first at row 5)"),
        ("response", "A", "column 'response' must be 'chosen' or 'rejected', got: 'A' (first at row 5)"),
        ("time_s", -2.0, "column 'time_s' must be >= 0, got: -2.0 (first at row 5)"),
    ],
)
def test_a_bad_labels_file_names_the_column_and_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str, bad: object, message: str
) -> None:
    monkeypatch.setattr(label_files, "CHUNK_ROWS", 2)  # the bad value in the second of several chunks
    df = _frame().astype({column: object})
    df.loc[3, column] = bad
    path = tmp_path / "labels.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match=re.escape(message)):
        read_labels(path)


def test_a_duplicated_score_names_its_row() -> None:
    df = pd.concat([_frame(), _frame().iloc[[5]]], ignore_index=True)
    with pytest.raises(
        ValueError,
        match=re.escape("1 duplicate (pair_id, annotator, response, item) row(s) (first at row 19)"),
    ):
        validate_frame(df)


def test_check_items_names_an_unknown_item_and_a_score_off_its_scale() -> None:
    frame = validate_frame(_frame())
    frames.check_items(frame, {"correctness": (1, 5)})  # rubric aspects are the study's own
    with pytest.raises(
        ValueError, match=re.escape("must hold integers in 1..3, got: 4.0, 5.0 (first at row 1)")
    ):
        frames.check_items(frame, {"correctness": (1, 3)})
    with pytest.raises(ValueError, match=re.escape("holds 'correctness', which is neither")):
        frames.check_items(frame, {"accuracy": (1, 5)})


def test_validate_frame_rejects_a_rubric_support_answer_out_of_range() -> None:
    df = _frame()
    df.loc[0, "item"] = "support:0"
    df.loc[0, "value"] = 3.0
    with pytest.raises(
        ValueError, match=re.escape("column 'value (rubric support)' must hold integers in 0..2")
    ):
        validate_frame(df)


def test_check_items_lets_an_owner_row_be_the_preference_and_no_one_else() -> None:
    df = _frame()
    df["rater_kind"] = ""
    df.loc[0, ["item", "rater_kind"]] = ["preference", "owner"]
    df.loc[0, "value"] = 1.0
    frames.check_items(validate_frame(df), {"correctness": (1, 5)})
    df.loc[0, "rater_kind"] = "annotator"
    with pytest.raises(ValueError, match=re.escape("holds 'preference', which is neither")):
        frames.check_items(validate_frame(df), {"correctness": (1, 5)})
