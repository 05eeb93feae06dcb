"""Helpers for the quality-control tests: a study with a chosen QC config, answering a queue."""

from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.intake import ingest
from annotator.people.authorization import SYSTEM, account_of
from annotator.rating import labels
from annotator.store import db
from annotator.store.models import Assignment, Pair, User, id_of
from annotator.study import StudyConfig, load_config, parse_config
from tests.utils.factories import make_form, make_records, write_jsonl


def qc_config(**sections: dict[str, Any]) -> StudyConfig:
    """The default study config with some sections replaced, e.g. controls={"rate": 0.2}."""
    data = load_config().model_dump()
    for name, values in sections.items():
        data[name] = data.get(name, {}) | values
    return parse_config(data)


def qc_study(
    engine: Engine,
    folder: Path,
    n_pairs: int,
    *,
    study: str = "s1",
    extra: list[dict[str, Any]] | None = None,
    **sections: dict[str, Any],
) -> None:
    """Import `n_pairs` pairs (plus `extra` records) into `study` with a config (see qc_config)."""
    path = write_jsonl(folder / f"{study}.jsonl", make_records(n_pairs) + (extra or []))
    ingest.import_file(engine, path, study=study, config=qc_config(**sections), account=SYSTEM)


def answer_all(engine: Engine, username: str, *, study_id: int = 1, k: int = 0) -> int:
    """Let one annotator answer every item the queue serves (the same form each time); returns how many."""
    done = 0
    with db.session_scope(engine) as session:
        annotator = account_of(session.exec(select(User).where(User.username == username)).one())
    while True:
        with db.session_scope(engine) as session:
            item = labels.next_assignment(session, account=annotator, study_id=study_id)
            if item is None:
                return done
            labels.show(session, assignment_id=id_of(item), account=annotator)
            labels.submit(
                session,
                assignment_id=id_of(item),
                account=annotator,
                submission=make_form(f"{username}-{item.id}", k),
            )
            done += 1


def queue_of(engine: Engine, username: str) -> list[tuple[Assignment, Pair]]:
    """An annotator's assignments with their pairs, in queue order."""
    with Session(engine) as session:
        rows = session.exec(
            select(Assignment, Pair)
            .join(Pair, Pair.id == Assignment.pair_id)  # type: ignore[arg-type]
            .join(User, User.id == Assignment.annotator_id)  # type: ignore[arg-type]
            .where(User.username == username)
            .order_by(Assignment.position)  # type: ignore[arg-type]
        ).all()
        return [(a, p) for a, p in rows]
