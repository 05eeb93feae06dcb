"""Pseudonymized exports: no code for rows without an adjudicator, no real name in
any column (the rule included), and codes that a list of usernames cannot reproduce."""

import hashlib
from pathlib import Path

from sqlmodel import Session, select

from annotator.people.authorization import SYSTEM
from annotator.publish import export
from annotator.review import adjudicate, readers
from annotator.store import db
from annotator.store.models import Pair, Study
from tests.utils.ratings import ANNOTATORS, STUDY, account, build_study, rate_all

BOSS = "chief_adjudicator"


def _decided_study(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = build_study(tmp_path, 4, roles={BOSS: "adjudicator"})
    rate_all(engine, "p0", [1, 1, 1])  # unanimous: decided automatically, no adjudicator
    rate_all(engine, "p1", [2, 2, 1])
    rate_all(engine, "p2", [1, -1, 0])  # no majority: a person decides
    with db.session_scope(engine) as session:
        adjudicate.auto_resolve(session, study=STUDY, account=SYSTEM)
    with db.session_scope(engine) as session:
        pair_id = session.exec(select(Pair.id).where(Pair.external_id == "p2")).one()
        adjudicate.decide(
            session, pair_id=pair_id, account=account(engine, BOSS), preference="tie", keep=False
        )
    return engine


def test_rows_without_an_adjudicator_get_no_code(tmp_path: Path) -> None:
    engine = _decided_study(tmp_path)
    with db.session_scope(engine) as session:
        frame = export.build(
            session, export.ExportRequest(STUDY, "adjudicated", pseudonymize=True), account=SYSTEM
        )
    by_pair = dict(zip(frame["pair_id"], frame["adjudicator"], strict=True))
    assert by_pair["p0"] is None and by_pair["p1"] is None and by_pair["p3"] is None
    assert isinstance(by_pair["p2"], str) and by_pair["p2"].startswith("R")


def test_no_real_name_in_any_column_of_a_pseudonymized_export(tmp_path: Path) -> None:
    engine = _decided_study(tmp_path)
    with db.session_scope(engine) as session:
        adjudicated = export.build(
            session, export.ExportRequest(STUDY, "adjudicated", pseudonymize=True), account=SYSTEM
        )
        labels = export.build(
            session, export.ExportRequest(STUDY, "labels", pseudonymize=True), account=SYSTEM
        )
    for frame in (adjudicated, labels):
        text = frame.to_csv()  # type: ignore[union-attr]
        for name in (*ANNOTATORS, BOSS):
            assert name not in text
    rule = adjudicated.set_index("pair_id").loc["p2", "rule"]  # type: ignore[union-attr]
    assert rule.startswith("decided by R")


def test_pseudonyms_cannot_be_recomputed_from_the_usernames(tmp_path: Path) -> None:
    """The old code was sha256(study, name): anyone with the list of usernames could map them back."""
    engine = _decided_study(tmp_path)
    with db.session_scope(engine) as session:
        codes = set(readers.label_frame(session, study=STUDY, pseudonymize=True, account=SYSTEM)["annotator"])
    guesses = {
        prefix + hashlib.sha256(f"{STUDY}\x00{name}".encode()).hexdigest()[:n]
        for name in ANNOTATORS
        for prefix in ("R",)
        for n in (8, 10)
    }
    assert codes and not codes & guesses


def test_each_study_has_its_own_secret_and_codes_are_stable(tmp_path: Path) -> None:
    engine = _decided_study(tmp_path)
    with db.session_scope(engine) as session:
        first = readers.label_frame(session, study=STUDY, pseudonymize=True, account=SYSTEM)[
            "annotator"
        ].tolist()
    with db.session_scope(engine) as session:
        again = readers.label_frame(session, study=STUDY, pseudonymize=True, account=SYSTEM)[
            "annotator"
        ].tolist()
    assert first == again
    with Session(engine) as session:
        secret = session.exec(select(Study.pseudonym_key)).one()
    assert secret is not None and len(secret) >= 32
