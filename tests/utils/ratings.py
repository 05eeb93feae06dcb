"""A small rated study for service tests: three annotators, native pairs, judgments in chosen terms."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.intake import assign, ingest
from annotator.people import accounts, authorization
from annotator.people.authorization import SYSTEM
from annotator.rating import labels
from annotator.store import db
from annotator.store.models import Assignment, Pair, id_of
from tests.utils.databases import fresh_db_url

STUDY = "s1"
ANNOTATORS = ("ann1", "ann2", "ann3")
PASSWORD = "correct-horse-battery"
QUALITY = ("correctness", "relevance", "helpfulness")


def new_engine(tmp_path: Path) -> Engine:
    return db.make_engine(fresh_db_url(tmp_path, migrated=True))


def record(i: int, **overrides: Any) -> dict[str, Any]:
    """One native pair record with two rubric aspects."""
    base: dict[str, Any] = {
        "id": f"p{i}",
        "question": f"How do I plan meals for week {i}?",
        "profile": [{"id": f"post{i}-{k}", "category": "cooking", "text": f"Post {k}."} for k in range(2)],
        "rubric_aspects": [
            {"aspect": f"Aspect {k}", "reason": f"Reason {k}", "evidence": f"Evidence {k}"} for k in range(2)
        ],
        "narrative": f"I cook for two ({i}).",
        "category": "cooking",
        "chosen": f"A two-person plan for week {i}.",
        "rejected": f"A generic plan for week {i}.",
        "source": "test",
    }
    return base | overrides


def build_study(
    tmp_path: Path,
    n_pairs: int,
    *,
    records: list[dict[str, Any]] | None = None,
    roles: Mapping[str, str] | None = None,
) -> Engine:
    """A database with `n_pairs` pairs in STUDY, three annotators (plus `roles`), overlap 3 assigned."""
    engine = new_engine(tmp_path)
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records or [record(i) for i in range(n_pairs)]))
    ingest.import_file(engine, path, study=STUDY, account=SYSTEM)
    with db.session_scope(engine) as session:
        for name in ANNOTATORS:
            accounts.add_user(session, username=name, role="annotator", password=PASSWORD, account=SYSTEM)
        for name, role in (roles or {}).items():
            accounts.add_user(session, username=name, role=role, password=PASSWORD, account=SYSTEM)
        assign.assign(session, study=STUDY, overlap=len(ANNOTATORS), account=SYSTEM)
    return engine


def account(engine: Engine, username: str) -> authorization.Account:
    with Session(engine) as session:
        user = accounts.get_user(session, username)
        return authorization.account_of(user)


def rate(
    engine: Engine,
    username: str,
    pair: str,
    *,
    preference: int = 1,
    chosen: Mapping[str, float] | None = None,
    rejected: Mapping[str, float] | None = None,
    confidence: int = 2,
    comment: str = "",
    flag: bool = False,
    flag_reason: str = "",
    submission_id: str | None = None,
) -> int:
    """Submit a judgment through the blinded A/B interface, given in chosen/rejected terms.

    `preference` is in chosen terms (-2..2, positive = chosen preferred); scores default to 4 on every
    quality dimension and 1 on both rubric aspects. Returns the judgment id.
    """
    default = dict.fromkeys(QUALITY, 4.0) | {"rubric:0": 1.0, "rubric:1": 1.0}
    chosen_scores = default | dict(chosen or {})
    rejected_scores = default | dict(rejected or {})
    with db.session_scope(engine) as session:
        user = accounts.get_user(session, username)
        found = session.exec(
            select(Assignment).join(Pair).where(Pair.external_id == pair, Assignment.annotator_id == user.id)
        ).one()
        annotator = authorization.account_of(user)
        labels.show(session, assignment_id=id_of(found), account=annotator)
        chosen_is_a = found.chosen_side == "A"
        index = 2 - preference if chosen_is_a else 2 + preference
        scores = {
            "A": chosen_scores if chosen_is_a else rejected_scores,
            "B": rejected_scores if chosen_is_a else chosen_scores,
        }
        revision = found.revisions + 1
        submission = labels.Submission(
            submission_id=submission_id or f"{username}-{pair}-{revision}",
            preference=index,
            scores={side: dict(values) for side, values in scores.items()},
            confidence=confidence,
            comment=comment,
            flag=flag,
            flag_reason=flag_reason,
        )
        judgment = labels.submit(
            session, assignment_id=id_of(found), account=annotator, submission=submission
        )
        return id_of(judgment)


def rate_all(engine: Engine, pair: str, preferences: list[int], **kwargs: Any) -> list[int]:
    """One judgment per annotator (in ANNOTATORS order) on `pair`."""
    return [
        rate(engine, name, pair, preference=p, **kwargs)
        for name, p in zip(ANNOTATORS, preferences, strict=False)
    ]
