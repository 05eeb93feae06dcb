"""Dynamic overlap: a pair whose judgments disagree beyond the rule gets another annotator, up to a cap."""

from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.intake.assign import assign_pairs, study_pair_ids
from annotator.store import db, tallies
from annotator.store.models import Assignment, User
from tests.utils.factories import make_annotators
from tests.utils.qchelpers import answer_all, qc_study

RULE = {"max_overlap": 3, "max_spread": 2}


def _setup(engine: Engine, folder: Path, **rule: int) -> None:
    """pair-0 for ann00 and ann01 (on opposite sides); ann02 is in the study with pair-1 only."""
    qc_study(engine, folder, 2, dynamic_overlap=RULE | rule)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        first, second = study_pair_ids(session, "s1")
        for name, pair in (("ann00", first), ("ann01", first), ("ann02", second)):
            assign_pairs(session, study="s1", annotator=name, pair_ids=[pair])


def _annotators_on_the_pair(engine: Engine) -> list[str]:
    with Session(engine) as session:
        first = study_pair_ids(session, "s1")[0]
        rows = session.exec(
            select(User.username)
            .join(Assignment, Assignment.annotator_id == User.id)  # type: ignore[arg-type]
            .where(Assignment.pair_id == first)
        )
        return sorted(rows)


def test_disagreeing_judgments_bring_in_another_annotator(engine: Engine, tmp_path: Path) -> None:
    _setup(engine, tmp_path)
    answer_all(engine, "ann00", k=0)  # "A much better"; the two annotators see chosen on different sides
    answer_all(engine, "ann01", k=0)
    assert _annotators_on_the_pair(engine) == ["ann00", "ann01", "ann02"]
    with Session(engine) as session:  # the extra item is in the Progress page's counts too
        assert tallies.agrees(session, 1) and 3 in tallies.assigned_counts(session, 1)


def test_agreeing_judgments_keep_the_overlap(engine: Engine, tmp_path: Path) -> None:
    _setup(engine, tmp_path)
    with Session(engine) as session:
        query = select(User.username, Assignment.chosen_side).join(
            Assignment,
            Assignment.annotator_id == User.id,  # type: ignore[arg-type]
        )
        sides = dict(session.exec(query).all())
    answer_all(engine, "ann00", k=0 if sides["ann00"] == "A" else 4)  # both: chosen much better
    answer_all(engine, "ann01", k=0 if sides["ann01"] == "A" else 4)
    assert _annotators_on_the_pair(engine) == ["ann00", "ann01"]


def test_the_cap_stops_the_extension(engine: Engine, tmp_path: Path) -> None:
    _setup(engine, tmp_path, max_overlap=2)
    answer_all(engine, "ann00", k=0)
    answer_all(engine, "ann01", k=0)
    assert _annotators_on_the_pair(engine) == ["ann00", "ann01"]
