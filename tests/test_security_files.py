"""A damaged database, file permissions and the server process."""

import os
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner, Result

from annotator import server
from annotator.cli import app
from annotator.server import free_port
from annotator.store import db
from tests.utils.factories import make_study

runner = CliRunner()
SEED_OFFSET = 0.5  # overwrite from the middle of the file


def _damage(path: Path, size: int = 40_000) -> None:
    """Overwrite `size` bytes in the middle of a file with noise (a failing disk, a bad copy)."""
    length = path.stat().st_size
    assert length > 2 * size, length
    with path.open("r+b") as handle:
        handle.seek(int(length * SEED_OFFSET))
        handle.write(os.urandom(size))


@pytest.fixture
def damaged(db_url: str, engine: Engine, tmp_path: Path) -> str:
    make_study(engine, tmp_path, 200)
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    _damage(Path(str(engine.url.database)))
    return db_url


def _one_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "--study", "s1"],
        ["export", "pairs", "--study", "s1", "--out", "{tmp}/p.jsonl"],
        ["backup", "{tmp}/copy.db"],
    ],
    ids=["analyze", "export", "backup"],
)
def test_a_damaged_database_is_one_line(damaged: str, tmp_path: Path, args: list[str]) -> None:
    shown = [a.replace("{tmp}", str(tmp_path)) for a in args]
    line = _one_line(runner.invoke(app, ["--db", damaged, *shown]))
    assert "error" in line


@pytest.mark.sqlite_only
def test_serve_refuses_a_damaged_database(damaged: str, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(server, "run", lambda url, **_: started.append(url) or 0)
    line = _one_line(runner.invoke(app, ["--db", damaged, "serve"]))
    assert "integrity" in line or "damaged" in line
    assert started == []


@pytest.mark.sqlite_only
def test_a_healthy_database_passes_the_integrity_check(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 3)
    assert db.integrity_problem(engine) is None


# ------------------------------------------------------------------------------------ permissions


@pytest.mark.sqlite_only
def test_the_database_and_its_wal_are_readable_by_the_owner_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new/annotations.db"
    db.upgrade(url)
    engine = db.make_engine(url)
    make_study(engine, tmp_path, 2)
    with engine.connect() as connection:  # keep the WAL open while looking
        connection.exec_driver_sql("SELECT 1")
        files = [p for p in (tmp_path / "new").iterdir() if p.name.startswith("annotations.db")]
        assert any(p.name.endswith("-wal") for p in files), files
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in files}
    engine.dispose()
    assert all(mode & 0o077 == 0 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}


@pytest.mark.sqlite_only
def test_a_backup_is_readable_by_the_owner_only(env_db: str, engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    result = runner.invoke(app, ["backup", str(tmp_path / "copy.db")])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((tmp_path / "copy.db").stat().st_mode) & 0o077 == 0


# ------------------------------------------------------------------------------- the server (4, 12)


def test_the_server_passes_its_security_settings_itself(tmp_path: Path) -> None:
    """Whatever the working directory (an installed wheel has no .streamlit/config.toml), Streamlit
    reads the settings from the flags: no error details in the browser, XSRF protection on, and the
    theme's colours (Streamlit's own red primary would fail contrast)."""
    flags = dict(flag.removeprefix("--").split("=", 1) for flag in server.FLAGS)
    options = {key.replace(".", "_"): value for key, value in flags.items()}
    code = (
        "from streamlit import config; from streamlit.web import bootstrap;"
        f"bootstrap.load_config_options(flag_options={options!r});"
        "print(config.get_option('client.showErrorDetails'),"
        " config.get_option('server.enableXsrfProtection'), config.get_option('theme.light.primaryColor'),"
        " config.get_option('theme.dark.backgroundColor'))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["none", "true", "#3049c0", "#14171f"]


def test_the_server_drops_streamlit_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", "full")
    env = server.environment("sqlite:///x.db")
    assert "STREAMLIT_CLIENT_SHOW_ERROR_DETAILS" not in env and env[db.ENV_VAR] == "sqlite:///x.db"


@pytest.mark.slow
def test_serve_becomes_the_server_and_stops_on_sigterm(env_db: str, tmp_path: Path) -> None:
    """`annotator serve` execs Streamlit: the pid we started is the server, and SIGTERM stops it (today
    the child kept serving and an idle parent held 155 MB)."""
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "annotator", "serve", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                time.sleep(0.3)
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"streamlit" in cmdline
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        assert children == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) is not None
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
