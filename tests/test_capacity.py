"""The label frame in bounded memory (codes, chunked reads, no whole-frame copy) and the drafts' writes."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlmodel import Session, select

from analysis import aggregates, label_files
from analysis.aggregates import pair_means
from analysis.frames import coded, validate_frame
from analysis.label_files import read_labels
from annotator.people.authorization import SYSTEM, account_of
from annotator.rating import drafts
from annotator.review import readers
from annotator.store import db
from annotator.store.models import Assignment, Draft, Study, User, id_of
from tests.utils.ratings import ANNOTATORS, STUDY, build_study, rate


@pytest.fixture
def rated(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A rated study: 3 pairs, 3 annotators (the PostgreSQL pass drops its database after each test)."""
    engine = build_study(tmp_path, 3)
    for k, name in enumerate(ANNOTATORS):
        for i in range(3):
            rate(engine, name, f"p{i}", preference=1 - k, comment="=1+1" if k == 0 else "")
    yield engine
    engine.dispose()


def frame_of(engine) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    with Session(engine) as session:
        return readers.label_frame(session, study=STUDY, account=SYSTEM)


def test_the_label_frame_holds_its_text_columns_as_sorted_codes(rated) -> None:  # type: ignore[no-untyped-def]
    frame = frame_of(rated)
    for name in ("pair_id", "annotator", "response", "item", "category", "comment", "control", "arm"):
        assert isinstance(frame[name].dtype, pd.CategoricalDtype), name
        categories = list(frame[name].cat.categories)
        assert categories == sorted(categories), name
    assert "" in frame["control"].cat.categories  # `== ""` and fillna("") work as on text
    assert set(frame["annotator"]) == set(ANNOTATORS)
    assert set(frame["response"]) == {"chosen", "rejected"}
    assert frame["comment"].fillna("").isin(["=1+1", ""]).all()
    assert len(frame) == 3 * 3 * 2 * 5  # pairs x annotators x responses x (3 quality + 2 aspects)


def test_scores_read_in_small_chunks_equal_one_read(rated, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    whole = frame_of(rated)
    monkeypatch.setattr(readers, "SCORE_CHUNK", 7)
    chunked = frame_of(rated)
    pd.testing.assert_frame_equal(whole, chunked)
    with Session(rated) as session:
        study_id = id_of(session.exec(select(Study).where(Study.name == STUDY)).one())
        scores = readers.current_scores(session, study_id=study_id)
    assert list(scores["item"].cat.categories) == sorted(set(scores["item"].astype(str)))


def test_the_derived_rubric_item_equals_the_concatenated_frame(rated) -> None:  # type: ignore[no-untyped-def]
    frame = validate_frame(frame_of(rated))
    direct = pair_means(frame, "rubric")
    via_concat = pair_means(aggregates.add_rubric_means(frame), "rubric")
    pd.testing.assert_frame_equal(direct, via_concat)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_coded_frame_round_trips_through_every_labels_file(
    rated, tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from annotator.publish import export

    monkeypatch.setattr(label_files, "CHUNK_ROWS", 5)  # several chunks with different categories
    path = tmp_path / f"labels{suffix}"
    with db.session_scope(rated) as session:
        export.export(
            session, export.ExportRequest(STUDY, "labels"), fmt=suffix[1:], path=path, account=SYSTEM
        )
    back = read_labels(path)
    original = validate_frame(frame_of(rated))
    assert isinstance(back["pair_id"].dtype, pd.CategoricalDtype)
    assert back["pair_id"].astype(str).tolist() == original["pair_id"].astype(str).tolist()
    assert back["item"].astype(str).tolist() == original["item"].astype(str).tolist()
    assert back["value"].tolist() == original["value"].tolist()
    if suffix == ".csv":  # a coded text column is quoted like any other text (formula neutralized)
        assert set(back.loc[back["annotator"] == ANNOTATORS[0], "comment"]) == {"'=1+1"}


def test_coded_keeps_missing_and_texts() -> None:
    values = pd.Series(["b", None, 3, "a"])
    codes = coded(values, with_empty=True)
    assert list(codes.cat.categories) == ["", "3", "a", "b"]
    assert codes.isna().tolist() == [False, True, False, False]
    assert coded(codes) is codes  # already codes over sorted texts: no copy


def test_a_draft_is_updated_in_place_and_cleared(rated) -> None:  # type: ignore[no-untyped-def]
    with Session(rated) as session:
        user = session.exec(select(User).where(User.username == ANNOTATORS[0])).one()
        item = session.exec(select(Assignment).where(Assignment.annotator_id == user.id)).first()
        assert item is not None
    annotator, assignment_id = account_of(user), id_of(item)
    for answers, opened in (({"preference": 1}, [2]), ({"preference": 3, "comment": "x"}, None)):
        with db.session_scope(rated) as session:
            drafts.save_draft(
                session, assignment_id=assignment_id, account=annotator, answers=answers, opened_posts=opened
            )
    with Session(rated) as session:
        draft = drafts.load_draft(session, assignment_id=assignment_id, account=annotator)
        assert draft is not None
        assert draft.answers == {"preference": 3, "comment": "x"}
        assert draft.opened_posts == [2]  # kept when a later answer does not say
        assert len(session.exec(select(Draft)).all()) == 1
    with db.session_scope(rated) as session:
        drafts.clear_draft(session, assignment_id=assignment_id, account=annotator)
    with Session(rated) as session:
        assert drafts.load_draft(session, assignment_id=assignment_id, account=annotator) is None


def test_every_text_column_of_a_labels_file_is_read_as_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(label_files, "CHUNK_ROWS", 3)  # several chunks; the comment is empty in some
    n = 8
    df = pd.DataFrame(
        {
            "pair_id": [f"p{k // 2}" for k in range(n)],
            "annotator": "ann",
            "response": ["chosen", "rejected"] * (n // 2),
            "item": "correctness",
            "value": 4.0,
            "preference": 1,
            "confidence": 2.0,
            "time_s": 9.0,
            "judgment_id": [str(k // 2) for k in range(n)],
            "submitted_at": [f"2026-12-01T10:0{k // 2}:00+00:00" for k in range(n)],
            "comment": ["", "", "", "", "", "", "ok", "ok"],
        }
    )
    path = tmp_path / "labels.csv"
    df.to_csv(path, index=False)
    back = read_labels(path)
    for name in ("judgment_id", "submitted_at", "comment"):
        assert isinstance(back[name].dtype, pd.CategoricalDtype), name
    assert back["submitted_at"].astype(str).tolist() == df["submitted_at"].tolist()
    assert back["judgment_id"].astype(str).tolist() == df["judgment_id"].tolist()
    assert back["comment"].astype(object).fillna("").tolist() == df["comment"].tolist()
    assert back["value"].dtype == float and back["preference"].dtype == int


def test_validating_a_validated_frame_copies_no_column(rated) -> None:  # type: ignore[no-untyped-def]
    once = validate_frame(frame_of(rated))
    again = validate_frame(once)
    for name in ("value", "preference", "confidence", "time_s", "chosen_chars", "rejected_chars"):
        assert np.shares_memory(once[name].to_numpy(), again[name].to_numpy()), name
    for name in ("pair_id", "annotator", "item"):
        assert np.shares_memory(once[name].array.codes, again[name].array.codes), name
