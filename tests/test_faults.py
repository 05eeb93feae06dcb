"""Faults: `kill -9` in the middle of long commands, and database failures reported in one line.

The kill tests run the real CLI as a subprocess (`python -m annotator --db URL ...`), wait until it
has started writing, send SIGKILL, check that the database is consistent, and re-run the command (in
process, through the same Typer app) to finish the job. (A newer schema is covered in
tests/test_db.py and tests/test_cli.py.)
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.people.authorization import SYSTEM
from annotator.review.adjudicate import auto_resolve
from annotator.store import db
from annotator.store.models import Adjudication, Assignment, Event, Judgment, Pair, Score, Study
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.factories import make_record, make_records, make_study, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _count(engine: Engine, table: type) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


def _integrity(engine: Engine) -> str:
    path = engine.url.database
    assert path is not None
    connection = sqlite3.connect(path)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


def _wal_size(engine: Engine) -> int:
    try:
        return os.path.getsize(f"{engine.url.database}-wal")
    except OSError:
        return 0


def _cli(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "annotator", "--db", url, *args]


def _env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": str(ROOT)}


def run_and_kill(command: list[str], started: Callable[[], bool], timeout: float = 120) -> bool:
    """Run `command`; SIGKILL it as soon as `started()` is true. True if it was killed, False if it
    ended on its own first."""
    process = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if started():
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
                return True
            time.sleep(0.005)
        assert process.poll() is not None, "the command neither started writing nor ended"
        return False
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def rerun(url: str, *args: str) -> str:
    """Re-run the killed command to completion: the same CLI, in-process (a second interpreter start
    costs seconds and tests nothing more)."""
    result = runner.invoke(app, ["--db", url, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.sqlite_only
def test_kill_9_during_import_writes_nothing_and_a_rerun_imports_all(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    """3,000 records (~20 MB) in one transaction: the import is killed once its WAL holds more than
    1 MB of uncommitted pages; the database then has no study and no pair, and re-running imports
    all 3,000."""
    long = "word " * 600
    records = [make_record(i, n_posts=20, chosen=f"{long}{i}", rejected=f"{i}{long}") for i in range(3000)]
    path = write_jsonl(tmp_path / "big.jsonl", records)
    before = _wal_size(engine)
    killed = run_and_kill(
        _cli(db_url, "import", str(path), "--study", "big"), lambda: _wal_size(engine) > before + 1_000_000
    )
    assert killed, "the import finished before it could be killed"
    assert _integrity(engine) == "ok"
    assert (_count(engine, Study), _count(engine, Pair), _count(engine, Event)) == (0, 0, 0)
    rerun(db_url, "import", str(path), "--study", "big")
    assert _integrity(engine) == "ok"
    assert (_count(engine, Study), _count(engine, Pair)) == (1, 3000)
    with Session(engine) as session:
        assert session.exec(select(Event.action)).all() == ["import"]


def _simulate_study(engine: Engine, tmp_path: Path, n_pairs: int) -> None:
    make_study(engine, tmp_path, n_pairs)


def _check_judgments(engine: Engine) -> list[Judgment]:
    """Every judgment has all its scores; every done assignment points at exactly one judgment."""
    with Session(engine) as session:
        judgments = session.exec(select(Judgment)).all()
        scores = Counter(session.exec(select(Score.judgment_id)).all())
        done = session.exec(select(Assignment).where(Assignment.status == "done")).all()
    per_judgment = 2 * (3 + 2)  # A and B: three quality dimensions and two rubric aspects
    assert all(scores[j.id] == per_judgment for j in judgments)
    assert sum(scores.values()) == per_judgment * len(judgments)  # no orphan score
    assert sorted(a.current_judgment_id for a in done) == sorted(j.id for j in judgments)
    assert all(j.revision == 1 for j in judgments)
    return list(judgments)


def test_kill_9_during_simulate_keeps_whole_judgments_and_a_rerun_finishes(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    """150 pairs x 3 simulated annotators, committed in batches of 200: killed after the first batch
    is in; every judgment saved has all its scores, and re-running completes exactly 450 judgments."""
    _simulate_study(engine, tmp_path, 150)
    killed = run_and_kill(_cli(db_url, "simulate", "--study", "s1"), lambda: _count(engine, Judgment) > 0)
    assert killed, "simulate finished before it could be killed"
    if engine.dialect.name == "sqlite":
        assert _integrity(engine) == "ok"
    partial = len(_check_judgments(engine))
    assert 0 < partial < 450
    rerun(db_url, "simulate", "--study", "s1")
    judgments = _check_judgments(engine)
    assert len(judgments) == 450
    assert _count(engine, Assignment) == 450
    with Session(engine) as session:
        assert set(session.exec(select(Pair.n_done)).all()) == {3}


@pytest.mark.sqlite_only
def test_kill_9_during_adjudicate_auto_is_all_or_nothing_and_a_rerun_completes(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    """auto_resolve writes all its decisions in one transaction. The kill is sent as soon as the
    command's first write reaches the WAL; depending on timing that is before or after the commit,
    so the check is both ways: no decision, or all of them; the re-run then ends with every pair
    decided exactly once (a decision equal to the latest one is not repeated)."""
    _simulate_study(engine, tmp_path, 200)
    simulate(engine, study="s1", spec=SimulationSpec(noise=0.3))
    with db.session_scope(engine) as session:  # the reference: what one uninterrupted run decides
        auto_resolve(session, study="s1", account=SYSTEM)
    expected = _count(engine, Adjudication)
    assert expected > 0
    with engine.begin() as connection:  # start again without decisions
        connection.exec_driver_sql("DELETE FROM adjudication")
    before = _wal_size(engine)
    run_and_kill(
        _cli(db_url, "adjudicate", "--study", "s1", "--auto"),
        lambda: _wal_size(engine) != before,
        timeout=180,
    )
    assert _integrity(engine) == "ok"
    assert _count(engine, Adjudication) in (0, expected)
    rerun(db_url, "adjudicate", "--study", "s1", "--auto")
    assert _count(engine, Adjudication) == expected
    with Session(engine) as session:
        pairs = Counter(session.exec(select(Adjudication.pair_id)).all())
        decisions = session.exec(select(Adjudication.decision)).all()
    assert set(pairs.values()) == {1}
    assert all("judgment_ids" in d for d in decisions)


# ------------------------------------------------------------------------------- one-line db errors


def _one_line_db_error(result: object) -> str:
    exit_code, output, stderr = result.exit_code, result.output, result.stderr  # type: ignore[attr-defined]
    assert exit_code == 1, output
    assert "Traceback" not in output
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("database error:")
    return str(lines[0])


@pytest.fixture
def pairs_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "pairs.jsonl", make_records(300, n_posts=10))


@pytest.mark.sqlite_only
def test_a_read_only_database_is_one_line_and_nothing_is_written(
    db_url: str, engine: Engine, pairs_file: Path
) -> None:
    """Tests run as root, for whom chmod does not stop a write; instead the database is opened
    through a read-only URL the user could give (`sqlite:///file:PATH?mode=ro&uri=true`), so SQLite
    itself refuses the write ("attempt to write a readonly database")."""
    read_only = f"sqlite:///file:{engine.url.database}?mode=ro&uri=true"
    result = runner.invoke(app, ["--db", read_only, "import", str(pairs_file), "--study", "s1"])
    assert "read-only" in _one_line_db_error(result)
    assert (_count(engine, Study), _count(engine, Pair), _count(engine, Event)) == (0, 0, 0)


@pytest.fixture
def small_disk(engine: Engine) -> Iterator[None]:
    """Every new SQLite connection may grow the file by only 20 pages (`PRAGMA max_page_count`):
    SQLite then fails a write with SQLITE_FULL, "database or disk is full", as on a full disk."""

    def limit(connection: sqlite3.Connection, _record: object) -> None:
        if isinstance(connection, sqlite3.Connection):
            pages = connection.execute("PRAGMA page_count").fetchone()[0]
            connection.execute(f"PRAGMA max_page_count = {pages + 20}")

    event.listen(Pool, "connect", limit)
    try:
        yield
    finally:
        event.remove(Pool, "connect", limit)


@pytest.mark.sqlite_only
def test_a_full_disk_is_one_line_and_nothing_is_written(
    db_url: str, engine: Engine, pairs_file: Path, small_disk: None
) -> None:
    result = runner.invoke(app, ["--db", db_url, "import", str(pairs_file), "--study", "s1"])
    assert "disk is full" in _one_line_db_error(result)
    assert (_count(engine, Study), _count(engine, Pair), _count(engine, Event)) == (0, 0, 0)


@pytest.mark.sqlite_only
def test_a_database_locked_past_the_busy_timeout_is_one_line(
    db_url: str, engine: Engine, pairs_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holds BEGIN EXCLUSIVE; with $ANNOTATOR_BUSY_TIMEOUT_MS=300 the import
    gives up after about 0.3 s with one line, and nothing of it is written."""
    monkeypatch.setenv(db.BUSY_TIMEOUT_ENV, "300")
    holder = sqlite3.connect(str(engine.url.database), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        start = time.monotonic()
        result = runner.invoke(app, ["--db", db_url, "import", str(pairs_file), "--study", "s1"])
        elapsed = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    line = _one_line_db_error(result)
    assert "locked for 0.3 s" in line and db.BUSY_TIMEOUT_ENV in line
    assert elapsed < 5
    assert (_count(engine, Study), _count(engine, Pair), _count(engine, Event)) == (0, 0, 0)
    monkeypatch.delenv(db.BUSY_TIMEOUT_ENV)
    result = runner.invoke(app, ["--db", db_url, "import", str(pairs_file), "--study", "s1"])
    assert result.exit_code == 0 and _count(engine, Pair) == 300


def test_a_bad_busy_timeout_is_a_user_error(monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    monkeypatch.setenv(db.BUSY_TIMEOUT_ENV, "soon")
    result = runner.invoke(app, ["--db", "sqlite:///x.db", "init"])
    assert result.exit_code == 1 and "ANNOTATOR_BUSY_TIMEOUT_MS" in result.stderr


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["init"], "error: cannot create the database's folder data: "),
        (["users", "list"], "error: no database at {tmp}/data/x.db; run `annotator init` first"),
        (["serve"], "error: no database at {tmp}/data/x.db; run `annotator init` first"),
        (["demo", "--no-serve"], "error: cannot replace the demo database data/demo.db: "),
    ],
)
def test_a_database_folder_that_cannot_be_made_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], expected: str
) -> None:
    """A database's folder under a file (as root, whom permissions do not stop) cannot be made: one
    line naming it, for the default database and the demo's; a command that needs an existing
    database says there is none (it never makes one)."""
    (tmp_path / "data").write_text("a file where the folder would go")
    monkeypatch.chdir(tmp_path)
    given = [] if command[0] in ("init", "demo") else ["--db", f"sqlite:///{tmp_path / 'data' / 'x.db'}"]
    result = runner.invoke(app, [*given, *command])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(expected.format(tmp=tmp_path)), result.output
    assert (tmp_path / "data").read_text() == "a file where the folder would go"
