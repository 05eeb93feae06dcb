"""Factories for tests: pair records, pair files in every supported format, users and small studies."""

import csv
import functools
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from annotator.intake import ingest
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, Account, account_of
from annotator.rating import labels
from annotator.store import db
from annotator.store.models import Event, Pair, Study, User, id_of
from annotator.synthetic import complete_form

PASSWORD = "correct-horse-battery"
DIMENSIONS = ("correctness", "relevance", "helpfulness")  # the default study's quality dimensions


def make_record(i: int = 0, *, n_posts: int = 3, n_aspects: int = 2, **overrides: Any) -> dict[str, Any]:
    """One native (Personalized RewardBench) pair record; `overrides` replace or add keys."""
    record: dict[str, Any] = {
        "id": f"pair-{i}",
        "question": f"How should I plan meals for week {i}?",
        "profile": [
            {"id": f"post-{i}-{k}", "category": "cooking", "text": f"Past post {k} of user {i}."}
            for k in range(n_posts)
        ],
        "rubric_aspects": [
            {"aspect": f"Aspect {k}", "reason": f"Reason {k}", "evidence": f"Evidence {k}"}
            for k in range(n_aspects)
        ],
        "narrative": f"I cook for two and want quick recipes ({i}).",
        "category": "cooking",
        "chosen": f"A quick two-person plan for week {i}, following the user's rubric.",
        "rejected": f"A generic family meal plan for week {i}.",
    }
    record.update(overrides)
    return record


def make_plain_record(i: int = 0, **overrides: Any) -> dict[str, Any]:
    """One plain preference record: prompt/chosen/rejected, no profile and no rubric."""
    record: dict[str, Any] = {
        "id": f"plain-{i}",
        "prompt": f"Plain question {i}?",
        "chosen": f"Good answer {i}.",
        "rejected": f"Worse answer {i}.",
    }
    record.update(overrides)
    return record


def make_records(n: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [make_record(i, **kwargs) for i in range(n)]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_json(path: Path, records: list[Any]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_csv(path: Path, records: list[dict[str, Any]]) -> Path:
    """A CSV with the list columns (and any other non-text value) JSON-encoded."""
    columns = list(dict.fromkeys(key for record in records for key in record))
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for record in records:
            writer.writerow(
                {key: value if isinstance(value, str) else json.dumps(value) for key, value in record.items()}
            )
    return path


def write_labels(path: Path, frame: Any) -> Path:
    """A label frame (pandas) as the labels file its suffix names: CSV, JSON lines or Parquet."""
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)
    return path


def write_parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    """A Parquet file shaped like the Hugging Face one: list<struct> columns for profile and rubric."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    post = pa.struct([("id", pa.string()), ("category", pa.string()), ("text", pa.string())])
    aspect = pa.struct([("aspect", pa.string()), ("reason", pa.string()), ("evidence", pa.string())])
    fields = [
        ("id", pa.string()),
        ("question", pa.string()),
        ("profile", pa.list_(post)),
        ("rubric_aspects", pa.list_(aspect)),
        ("narrative", pa.string()),
        ("category", pa.string()),
        ("chosen", pa.string()),
        ("rejected", pa.string()),
    ]
    extra = [key for key in dict.fromkeys(k for r in records for k in r) if key not in dict(fields)]
    schema = pa.schema(fields + [(key, pa.string()) for key in extra])
    pq.write_table(pa.Table.from_pylist(records, schema=schema), path)
    return path


@functools.cache
def _cheap_hash() -> str:
    return accounts.hash_password(PASSWORD)


def make_user(
    session: Session, username: str, *, role: str = "annotator", password: str | None = None
) -> User:
    """A user; without `password` it gets PASSWORD through one cached hash (scrypt is slow on purpose)."""
    if password is not None:
        return accounts.add_user(session, username=username, role=role, password=password, account=SYSTEM)
    user = User(username=username, role=role, password_hash=_cheap_hash())
    session.add(user)
    session.flush()
    return user


def account_for(session: Session, user_id: int) -> Account:
    """The account of user `user_id` as a login would give it (read from its row): how a test acts as
    that annotator."""
    user = session.get(User, user_id)
    assert user is not None, f"no user {user_id}"
    return account_of(user)


def make_annotators(engine: Engine, n: int, *, prefix: str = "ann") -> list[int]:
    """`n` active annotators named ann00, ann01, ...; returns their ids."""
    with db.session_scope(engine) as session:
        return [id_of(make_user(session, f"{prefix}{k:02d}")) for k in range(n)]


def make_study(
    engine: Engine, folder: Path, n_pairs: int, *, study: str = "s1", start: int = 0, **kwargs: Any
) -> ingest.ImportSummary:
    """Import `n_pairs` native records (ids pair-<start>...) into `study`."""
    path = write_jsonl(
        folder / f"pairs-{study}-{start}-{n_pairs}.jsonl", make_records(n_pairs + start)[start:]
    )
    return ingest.import_file(engine, path, study=study, **({"account": SYSTEM} | kwargs))


def counts(engine: Engine) -> dict[str, int]:
    """Row counts of the tables an import writes to."""
    with Session(engine) as session:
        return {
            table.__name__: int(session.exec(select(func.count()).select_from(table)).one())
            for table in (Study, Pair, Event)
        }


@contextmanager
def temp_engine() -> Iterator[Engine]:
    """A fresh migrated database (for hypothesis examples): a SQLite file in a temporary folder, or a
    new PostgreSQL database when the tests run on PostgreSQL (see conftest)."""
    from tests.utils.databases import postgres

    server = postgres()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/test.db" if server is None else server.fresh(migrated=True)
        engine = db.make_engine(url)
        db.upgrade(engine)
        try:
            yield engine
        finally:
            engine.dispose()
            if server is not None:
                server.drop(url)  # hypothesis makes many examples per test: do not keep them all


def make_form(submission_id: str, k: int, *, n_aspects: int = 2) -> labels.Submission:
    """A complete form for the default study whose answers depend on `k` (so revisions differ)."""
    return complete_form(submission_id, k, dimensions=DIMENSIONS, n_aspects=n_aspects)


def write_parquet_table(path: Path, columns: dict[str, list[Any]]) -> Path:
    """A Parquet file with the given columns (Arrow infers the types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path
