"""Owners' judgments in the database: an owner reaches only their own pairs, the report reads them
apart from the third-party judgments, and a study without owners reports as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from annotator.errors import UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.rating.owners import owner_pairs, record_owner_judgment
from annotator.review.owner_rows import owner_rows
from annotator.review.readers import label_frame
from annotator.store import db
from tests.utils.factories import make_records, write_jsonl

HOSTILE = "<img src=x onerror=alert(1)>"


def _owned_study(engine: Engine, folder: Path) -> None:
    records = make_records(6)
    for k, record in enumerate(records):
        record["owner" if k % 2 else "user_id"] = ("alice", "bob", HOSTILE)[k % 3]
    ingest.import_file(engine, write_jsonl(folder / "pairs.jsonl", records), study="s", account=SYSTEM)


def test_an_owner_reaches_only_their_own_pairs(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        alice = {p.external_id for p in owner_pairs(session, study="s", owner="alice")}
        bob = {p.external_id for p in owner_pairs(session, study="s", owner="bob")}
        assert len(alice) == 2 and len(bob) == 2 and not alice & bob
        other = sorted(bob)[0]
        with pytest.raises(UserError, match="is not a pair of this owner"):
            record_owner_judgment(session, study="s", owner="alice", pair_external_id=other, preference=2)
        assert owner_pairs(session, study="s", owner="") == []


def test_owner_answers_are_checked(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        mine = owner_pairs(session, study="s", owner="alice")[0].external_id
        for bad in ({"preference": 3}, {"preference": 1, "aspects": [2]}, {"preference": 1, "confidence": 0}):
            with pytest.raises(UserError):
                record_owner_judgment(session, study="s", owner="alice", pair_external_id=mine, **bad)


def test_owner_judgments_never_enter_the_third_party_label_frame(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        for owner in ("alice", "bob", HOSTILE):
            for pair in owner_pairs(session, study="s", owner=owner):
                record_owner_judgment(
                    session, study="s", owner=owner, pair_external_id=pair.external_id, preference=1,
                    aspects=[2, 1], side_chosen="A",
                )  # fmt: skip
    with db.session_scope(engine) as session:
        assert label_frame(session, study="s", account=SYSTEM).empty
        rows = owner_rows(session, study="s", account=SYSTEM)
    assert len(rows) == 12 and set(rows["rater_kind"]) == {"owner"}
    assert HOSTILE in set(rows["annotator"])


def test_a_second_answer_replaces_the_first(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        mine = owner_pairs(session, study="s", owner="bob")[0].external_id
        record_owner_judgment(session, study="s", owner="bob", pair_external_id=mine, preference=2)
        record_owner_judgment(session, study="s", owner="bob", pair_external_id=mine, preference=-1)
    with db.session_scope(engine) as session:
        rows = owner_rows(session, study="s", account=SYSTEM)
    assert rows["preference"].tolist() == [-1]
