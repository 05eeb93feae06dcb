"""Control pairs: the import field, `controls make` (swap, degrade, duplicate), mixing into queues at a
rate, blinding, and their place in the label frame (left out of the main analysis)."""

import random
from dataclasses import asdict
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import IngestError
from annotator.intake import controls
from annotator.intake.assign import assign
from annotator.people.authorization import SYSTEM, account_of
from annotator.rating import labels
from annotator.review.readers import label_frame
from annotator.store import db
from annotator.store.models import Assignment, Pair, User, id_of
from tests.utils.factories import account_for, make_annotators, make_record
from tests.utils.qchelpers import answer_all, qc_study, queue_of

runner = CliRunner()
GOLD = make_record(
    99, id="gold-1", control="gold", expected={"preference": 1, "scores": {"chosen": {"correctness": 5}}}
)


def _pairs(engine: Engine) -> dict[str, Pair]:
    with Session(engine) as session:
        return {p.external_id: p for p in session.exec(select(Pair))}


def _assign(engine: Engine, overlap: int = 2) -> None:
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=overlap, account=SYSTEM)


def _make(engine: Engine, kind: str, n: int) -> controls.ControlSummary:
    with db.session_scope(engine) as session:
        return controls.make_controls(session, study="s1", kind=kind, n=n, account=SYSTEM)  # type: ignore[arg-type]


def test_import_stores_the_control_kind_of_a_gold_pair(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 2, extra=[GOLD])
    pairs = _pairs(engine)
    assert (pairs["gold-1"].control, pairs["pair-0"].control) == ("gold", "")


def test_import_refuses_an_unknown_control_kind_naming_line_and_field(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"line 3, field control: expected one of gold, positive, training"):
        qc_study(engine, tmp_path, 2, extra=[make_record(7, control="sneaky")])
    assert _pairs(engine) == {}


def test_import_refuses_a_gold_pair_without_expected_answers(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"field expected: a gold control needs expected answers"):
        qc_study(engine, tmp_path, 1, extra=[make_record(7, control="gold")])


def test_assign_gives_control_pairs_no_overlap(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 4, extra=[GOLD])
    make_annotators(engine, 3)
    _assign(engine)
    with Session(engine) as session:
        gold_id = _pairs(engine)["gold-1"].id
        assert session.exec(select(Assignment).where(Assignment.pair_id == gold_id)).all() == []


def test_controls_are_mixed_into_every_queue_at_the_rate(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 12, extra=[GOLD], controls={"rate": 0.2})
    make_annotators(engine, 3)
    _assign(engine, overlap=3)
    for name in ("ann00", "ann01", "ann02"):
        kinds = [pair.control for _, pair in queue_of(engine, name)]
        assert (kinds.count(""), kinds.count("gold")) == (12, 1)  # round(0.2 * 12 / 0.8) = 3, one gold pair


def test_degrade_makes_positive_controls_with_the_defect_in_rejected(engine: Engine, tmp_path: Path) -> None:
    long_text = (
        "Bake the bread at 220 degrees for 35 minutes, then let it rest on a rack for an hour before slicing."
    )
    qc_study(engine, tmp_path, 0, extra=[make_record(i, rejected=f"{long_text} ({i})") for i in range(3)])
    summary = _make(engine, "degrade", 3)
    pairs = _pairs(engine)
    made = [p for p in pairs.values() if p.control == "positive"]
    sources = {p.id: p for p in pairs.values() if p.control == ""}
    assert summary.pairs == 3 and len(made) == 3
    for control in made:
        source = sources[control.control_of]
        assert control.chosen == source.chosen and control.rejected != source.rejected
        assert control.meta["worse_on"] and control.meta["defect"] in controls.DEFECTS


def test_each_defect_changes_the_text() -> None:
    text = "Use 2 cups of flour. It is best to knead for 10 minutes.\n\nThen bake it."
    for defect in controls.DEFECTS:
        assert controls.degrade(text, defect, rng=random.Random(1), other="Tax law paragraph.") != text


def test_duplicate_shows_the_same_response_twice(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 3)
    _make(engine, "duplicate", 2)
    made = [p for p in _pairs(engine).values() if p.control == "duplicate"]
    assert len(made) == 2 and all(p.chosen == p.rejected for p in made)


def test_swap_repeats_rated_pairs_with_the_sides_exchanged(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 4)
    make_annotators(engine, 2)
    _assign(engine, overlap=2)
    answer_all(engine, "ann00")
    summary = _make(engine, "swap", 2)
    queue = queue_of(engine, "ann00")
    side_of = {pair.id: a.chosen_side for a, pair in queue if pair.control == ""}
    repeats = [(a, pair) for a, pair in queue if pair.control == "swap"]
    assert summary.assignments == 2 and len(repeats) == 2  # ann01 has rated nothing: no repeats
    for assignment, pair in repeats:
        assert assignment.chosen_side != side_of[pair.control_of]


def test_a_swap_repeat_looks_like_its_original_with_sides_exchanged(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 2)
    make_annotators(engine, 1)
    _assign(engine, overlap=1)
    answer_all(engine, "ann00")
    _make(engine, "swap", 1)
    queue = queue_of(engine, "ann00")
    repeat, copy = next((a, pair) for a, pair in queue if pair.control == "swap")
    original = next(a for a, pair in queue if pair.id == copy.control_of)
    with db.session_scope(engine) as session:
        annotator = account_for(session, repeat.annotator_id)
        shown_repeat = asdict(labels.show(session, assignment_id=id_of(repeat), account=annotator))
        shown_original = asdict(labels.show(session, assignment_id=id_of(original), account=annotator))
    for view in (shown_repeat, shown_original):
        for per_item in ("assignment_id", "revisions", "shown_at", "token"):  # differ between any two items
            view.pop(per_item, None)
    swapped = shown_original | {"text_a": shown_original["text_b"], "text_b": shown_original["text_a"]}
    assert shown_repeat == swapped


def test_next_assignment_serves_a_control_placed_before_the_main_pairs(
    engine: Engine, tmp_path: Path
) -> None:
    qc_study(engine, tmp_path, 3, extra=[GOLD], controls={"rate": 0.25})
    make_annotators(engine, 1)
    _assign(engine, overlap=1)
    with db.session_scope(engine) as session:
        gold = session.exec(select(Assignment).join(Pair).where(Pair.control == "gold")).one()  # type: ignore[arg-type]
        gold.position = 0
        session.add(gold)
    with Session(engine) as session:
        user = session.exec(select(User)).one()
        served = labels.next_assignment(session, account=account_of(user), study_id=1)
        assert served is not None and served.id == gold.id


def test_the_label_frame_marks_control_rows(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 3, extra=[GOLD], controls={"rate": 0.25})
    make_annotators(engine, 1)
    _assign(engine, overlap=1)
    answer_all(engine, "ann00")
    with Session(engine) as session:
        frame = label_frame(session, study="s1", account=SYSTEM)
    by_pair = frame.groupby("pair_id")["control"].first().to_dict()
    assert by_pair == {"pair-0": "", "pair-1": "", "pair-2": "", "gold-1": "gold"}


def test_cli_controls_make_prints_a_summary(engine: Engine, db_url: str, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 3)
    result = runner.invoke(
        app, ["controls", "make", "--study", "s1", "--kind", "duplicate", "--n", "2", "--db", db_url]
    )
    assert result.exit_code == 0, result.output
    assert "2 new duplicate control pairs" in result.output


def test_cli_controls_make_refuses_an_unknown_kind_in_one_line(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    qc_study(engine, tmp_path, 3)
    result = runner.invoke(
        app, ["controls", "make", "--study", "s1", "--kind", "weird", "--n", "2", "--db", db_url]
    )
    assert result.exit_code == 1
    assert "unknown control kind 'weird'; use swap, degrade or duplicate" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("kind", ["degrade", "duplicate", "swap"])
def test_making_controls_reads_only_the_pairs_it_copies_in_full(
    kind: str, engine: Engine, tmp_path: Path
) -> None:
    """The study's main pairs are read as ids; a pair is read in full (texts, profile, rubric) only
    as a control's source or as the text a degraded response borrows."""
    qc_study(engine, tmp_path, 30)
    make_annotators(engine, 2)
    _assign(engine, overlap=2)
    answer_all(engine, "ann00")
    loaded: list[int] = []

    def count(target: Pair, _: object) -> None:
        loaded.append(id_of(target))

    event.listen(Pair, "load", count)
    try:
        summary = _make(engine, kind, 2)
    finally:
        event.remove(Pair, "load", count)
    assert summary.pairs == 2
    assert len(set(loaded)) <= 2 * summary.pairs
