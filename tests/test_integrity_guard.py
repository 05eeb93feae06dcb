"""A database too large to check before the server starts is checked while it starts, by a guard that
holds every write: a damaged file stops the server and is never written to."""

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from annotator.server import free_port
from annotator.store import integrity
from tests.utils.damage import damaged_db

pytestmark = pytest.mark.sqlite_only

ROOT = Path(__file__).resolve().parents[1]
# A stand-in for `serve`: start the guard, detach (as serve does before it becomes the server), say so,
# then keep running while ignoring SIGTERM, so that only the guard's SIGKILL ends it.
OWNER = (
    "import signal, sys, time\n"
    "from pathlib import Path\n"
    "from annotator.store import integrity\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "guard = integrity.start_guard(Path(sys.argv[1]), 'the test database', 10_000)\n"
    "guard.detach()\n"
    "print('guarded', flush=True)\n"
    "time.sleep(120)\n"
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _environment(**extra: str) -> dict[str, str]:
    return os.environ | {"PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"} | extra


def test_a_write_waits_while_the_guard_checks_and_a_damaged_file_stops_its_server(tmp_path: Path) -> None:
    path = Path(damaged_db(tmp_path).removeprefix("sqlite:///"))
    before = _digest(path)
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_environment(),
    )
    assert owner.stdout is not None
    assert owner.stdout.readline().strip() == b"guarded"
    writer = sqlite3.connect(path, timeout=0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        writer.execute("BEGIN IMMEDIATE")
    assert owner.poll() is None  # the refusal above happened while the server was still running
    writer.close()
    _, stderr = owner.communicate(timeout=120)
    assert owner.returncode == -9  # it ignored SIGTERM, so the guard killed it
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "fails its integrity check" in lines[0] and "server was stopped" in lines[0]
    assert _digest(path) == before


def test_serve_on_a_damaged_file_checked_while_starting_stops_and_writes_nothing(tmp_path: Path) -> None:
    url = damaged_db(tmp_path)
    path = Path(url.removeprefix("sqlite:///"))
    before = _digest(path)
    served = subprocess.run(
        [sys.executable, "-m", "annotator", "--db", url, "serve", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
        env=_environment(**{integrity.CHECK_FIRST_ENV: "0"}),
    )
    assert "writes wait for it" in served.stdout, served.stdout + served.stderr
    assert served.returncode != 0
    assert "fails its integrity check" in served.stderr and "server was stopped" in served.stderr
    assert "Traceback" not in served.stderr
    assert _digest(path) == before
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_small_file_is_checked_before_the_server_starts_and_a_large_one_while_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.db"
    path.write_bytes(b"\0" * 2**20)
    monkeypatch.setenv(integrity.CHECK_FIRST_ENV, "2")
    assert not integrity.checked_while_starting(path)
    monkeypatch.setenv(integrity.CHECK_FIRST_ENV, "0.5")
    assert integrity.checked_while_starting(path)
