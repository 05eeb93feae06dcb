"""A SQLite database with one page in the middle of the file overwritten (a failing disk, a bad copy)."""

import sqlite3
from pathlib import Path

from annotator.store import db
from tests.utils.qchelpers import qc_study


def damaged_db(folder: Path, pairs: int = 30) -> str:
    """The URL of a database with `pairs` pairs whose middle page is all 0xff bytes."""
    path = folder / "damaged.db"
    url = f"sqlite:///{path}"
    db.upgrade(url)
    engine = db.make_engine(url)
    qc_study(engine, folder, pairs)
    engine.dispose()
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size, pages = (connection.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count"))
    connection.close()
    with path.open("r+b") as raw:
        raw.seek(page_size * (pages // 2))
        raw.write(b"\xff" * page_size)
    return url
