"""`annotator backup`: a consistent SQLite copy while annotators work, restore, and refusals."""

import multiprocessing
import shutil
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import UserError
from annotator.rating import labels
from annotator.store import db
from annotator.store.backup import backup
from annotator.store.models import Assignment, Event, Judgment, Pair, Score, Study, User, id_of
from tests.utils.concurrency import SCORES_PER_JUDGMENT, Step, make_small_study, plain_main, worker
from tests.utils.factories import account_for, make_form

runner = CliRunner()
TABLES = (Study, Pair, User, Assignment, Judgment, Score)


@pytest.fixture
def study(engine: Engine, tmp_path: Path) -> dict[int, list[int]]:
    return make_small_study(engine, tmp_path)


def _counts(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {t.__name__: int(session.exec(select(func.count()).select_from(t)).one()) for t in TABLES}


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def _integrity(path: Path) -> str:
    connection = sqlite3.connect(path)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


@pytest.mark.sqlite_only
def test_a_backup_taken_while_another_process_submits_is_consistent(
    db_url: str, engine: Engine, study: dict[int, list[int]], tmp_path: Path
) -> None:
    """One process submits and revises 60 judgments while the test backs up twice; each copy passes
    integrity_check, is at the head schema, and holds whole judgments only (every one with all its
    scores, its submit event, and the assignment pointing at its newest revision)."""
    user_id, queue = next(iter(study.items()))
    plan: list[Step] = [(user_id, queue[i % len(queue)], f"bk-{i}", i, False) for i in range(60)]
    ctx = multiprocessing.get_context("spawn")
    results, barrier = ctx.Queue(), ctx.Barrier(1)  # kept alive until the child has unpickled them
    process = ctx.Process(target=worker, args=(db_url, plan, barrier, results))
    with plain_main():
        process.start()
    copies = []
    deadline = time.monotonic() + 120
    while len(copies) < 2 and time.monotonic() < deadline and process.is_alive():
        if _counts(engine)["Judgment"] >= 10 * (len(copies) + 1):
            target = tmp_path / f"copy{len(copies)}.db"
            result = runner.invoke(app, ["--db", db_url, "backup", str(target)])
            assert result.exit_code == 0, result.output
            copies.append(target)
        time.sleep(0.05)
    latencies, errors = results.get(timeout=120)
    process.join(timeout=30)
    assert errors == [] and len(latencies) == 60
    assert copies, "the submitting process finished before a backup was taken"
    for path in copies:
        assert _integrity(path) == "ok"
        copy = db.make_engine(_sqlite_url(path))
        db.check_schema(copy)  # opens at the head schema
        with Session(copy) as session:
            judgments = session.exec(select(Judgment)).all()
            scores = Counter(session.exec(select(Score.judgment_id)).all())
            events = session.exec(select(func.count()).where(Event.action == "submit")).one()
            current = {a.id: a.current_judgment_id for a in session.exec(select(Assignment))}
        copy.dispose()
        assert 0 < len(judgments) <= 60
        assert all(scores[j.id] == SCORES_PER_JUDGMENT for j in judgments)
        assert events == len(judgments)
        newest = {}
        for judgment in sorted(judgments, key=lambda j: j.revision):
            newest[judgment.assignment_id] = judgment.id
        assert all(current[a] == j for a, j in newest.items())


@pytest.mark.sqlite_only
def test_a_restored_backup_works(
    db_url: str, engine: Engine, study: dict[int, list[int]], tmp_path: Path
) -> None:
    """Copy the backup over a fresh path: `annotator init` is a no-op, the counts are those at backup
    time, and submitting works on it."""
    user_id, queue = next(iter(study.items()))
    with Session(engine) as session:
        annotator = account_for(session, user_id)
    for i, assignment_id in enumerate(queue[:4]):
        with db.session_scope(engine) as session:
            labels.submit(
                session, assignment_id=assignment_id, account=annotator, submission=make_form(f"r{i}", i)
            )
    at_backup = _counts(engine)
    target = tmp_path / "backup.db"
    backup(engine, target)
    with db.session_scope(engine) as session:  # work after the backup is not in it
        labels.submit(session, assignment_id=queue[5], account=annotator, submission=make_form("after", 9))
    restored_path = tmp_path / "restored" / "annotations.db"
    restored_path.parent.mkdir()
    shutil.copyfile(target, restored_path)
    url = _sqlite_url(restored_path)
    result = runner.invoke(app, ["--db", url, "init"])
    assert result.exit_code == 0 and f"(was {db.head_revision()})" in result.output
    restored = db.make_engine(url)
    assert _counts(restored) == at_backup
    with db.session_scope(restored) as session:
        pending = labels.next_assignment(session, account=annotator, study_id=1)
        assert pending is not None and pending.id not in queue[:4]
        labels.submit(
            session, assignment_id=id_of(pending), account=annotator, submission=make_form("new", 1)
        )
    with Session(restored) as session:
        assert labels.progress(session, account=annotator, study_id=1).done == 5
    restored.dispose()


@pytest.mark.sqlite_only
def test_backup_refuses_to_overwrite_without_force_and_logs_an_event(engine: Engine, tmp_path: Path) -> None:
    url = str(engine.url)
    target = tmp_path / "copy.db"
    target.write_text("precious")
    result = runner.invoke(app, ["--db", url, "backup", str(target)])
    assert result.exit_code == 1
    assert "already exists" in result.output and "--force" in result.output
    assert target.read_text() == "precious"
    result = runner.invoke(app, ["--db", url, "backup", str(target), "--force"])
    assert result.exit_code == 0, result.output
    assert _integrity(target) == "ok"
    assert not list(tmp_path.glob(".copy.db.*"))  # no temporary file left behind
    with Session(engine) as session:
        events = session.exec(select(Event).where(Event.action == "backup")).all()
    assert len(events) == 1 and events[0].detail["file"] == str(target)


@pytest.mark.sqlite_only
def test_backup_into_a_missing_folder_is_one_line(engine: Engine, tmp_path: Path) -> None:
    result = runner.invoke(app, ["--db", str(engine.url), "backup", str(tmp_path / "no" / "copy.db")])
    assert result.exit_code == 1 and "does not exist" in result.output and "Traceback" not in result.output


def test_postgresql_gets_a_pg_dump_hint_without_the_password() -> None:
    """No server and no driver (psycopg is only in the `postgres` extra) are needed: the refusal comes
    from the URL, before any connection."""
    with pytest.raises(UserError, match="pg_dump") as caught:
        backup("postgresql+psycopg://me:secret@db.example:5432/study", "copy.db")
    assert "secret" not in str(caught.value) and "db.example:5432/study" in str(caught.value)
    assert not Path("copy.db").exists()


@pytest.mark.nodb  # no database
def test_the_pg_dump_hint_needs_no_postgresql_driver(tmp_path: Path) -> None:
    """With psycopg not importable (a fresh `pip install -e ".[test]"`: it is only in the postgres
    extra), `annotator backup` on a PostgreSQL URL still gives the pg_dump advice, not a driver error."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('psycopg', 'psycopg2', 'psycopg_binary'):\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from annotator.cli import main\n"
        "url = 'postgresql+psycopg://me:secret@db.example/study'\n"
        "sys.argv = ['annotator', '--db', url, 'backup', 'x.db']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1
    assert "pg_dump" in done.stderr and "secret" not in done.stderr and "Traceback" not in done.stderr
