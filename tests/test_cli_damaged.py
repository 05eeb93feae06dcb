"""`annotator analyze`, `annotator export` and `annotator init` on a SQLite file that fails its
quick_check: one line that says so, exit code 1, and nothing written."""

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from annotator.cli import app
from annotator.store import db
from tests.utils.damage import damaged_db
from tests.utils.qchelpers import qc_study

runner = CliRunner()


@pytest.mark.parametrize(
    "command",
    [["analyze", "--study", "s1"], ["export", "labels", "--study", "s1", "--out", "labels.csv"], ["init"]],
)
def test_a_damaged_file_is_one_line_and_exit_one(tmp_path: Path, command: list[str]) -> None:
    url = damaged_db(tmp_path)
    result = runner.invoke(app, ["--db", url, *command])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert (
        len(lines) == 1
        and "fails its integrity check" in lines[0]
        and lines[0].count("restore the latest backup") == 1
    )
    assert "Traceback" not in result.output
    assert not (tmp_path / "labels.csv").exists()


def test_a_full_disk_during_the_check_is_named_as_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's quick_check failing for want of space is a full disk, not damage: no advice to restore."""
    url = f"sqlite:///{tmp_path / 'fine.db'}"
    db.upgrade(url)
    engine = db.make_engine(url)
    qc_study(engine, tmp_path, 3)
    engine.dispose()
    run = Connection.exec_driver_sql

    def full_disk(self: Connection, statement: str, *args: Any, **kwargs: Any) -> Any:
        if "quick_check" in statement:
            raise OperationalError(statement, None, sqlite3.OperationalError("database or disk is full"))
        return run(self, statement, *args, **kwargs)

    monkeypatch.setattr(Connection, "exec_driver_sql", full_disk)
    result = runner.invoke(app, ["--db", url, "export", "labels", "--study", "s1", "--out", "labels.csv"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "the disk is full" in lines[0]
    assert "integrity" not in lines[0] and "backup" not in lines[0]
    assert not (tmp_path / "labels.csv").exists()
