"""Results computed ahead of a visit: the stored report is build_report's on the same data, the worker
brings a stale one up to date after writes (settled, not on every write), a failing computation is one
line and no retry until the data changes, one worker per database (the lock), the worker stops with its
server, and the pages show the stored result with the data it covers."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from streamlit.testing.v1.element_tree import Image
from typer.testing import CliRunner

from analysis.render import figure_captions, format_for
from annotator import server
from annotator.cli import app
from annotator.errors import UserError
from annotator.people.authorization import SYSTEM
from annotator.review import adjudication_queue, report_worker, stored_results, study_report
from annotator.store import db
from annotator.store.worker_lock import WorkerLock
from tests.utils.apphelpers import app_for
from tests.utils.ratings import STUDY, account, build_study, rate, rate_all

N_PAIRS = 10


def rated(tmp_path: Path) -> Engine:
    """STUDY with N_PAIRS pairs, each rated by the three annotators (varied preferences and gaps)."""
    engine = build_study(tmp_path, N_PAIRS, roles={"boss": "researcher", "judge": "adjudicator"})
    for i in range(N_PAIRS):
        gap = {"correctness": 3 + i % 3}
        rate_all(engine, f"p{i}", [1, (i % 5) - 2, 2 - i % 3], chosen=gap)
    return engine


def as_json(report: object) -> object:
    return json.loads(format_for("json").render(report))  # type: ignore[arg-type]


def store_now(engine: Engine, kind: str) -> None:
    with db.session_scope(engine) as session:
        version = stored_results.current_version(session, study=STUDY, kind=kind)
    stored_results.compute_and_save(engine, study=STUDY, kind=kind, version=version)


def stored(engine: Engine, kind: str) -> tuple[stored_results.Stored, object]:
    with db.session_scope(engine) as session:
        found = stored_results.latest(session, study=STUDY, kind=kind, account=SYSTEM)
        assert found is not None
        return found, stored_results.load(session, found)


def current(engine: Engine, kind: str) -> str:
    with db.session_scope(engine) as session:
        return stored_results.current_version(session, study=STUDY, kind=kind)


def url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def test_the_worker_brings_a_stale_report_up_to_date_equal_to_build_report(tmp_path: Path) -> None:
    engine = rated(tmp_path)
    store_now(engine, "report")
    store_now(engine, "adjudication")
    before, _ = stored(engine, "report")
    rate(engine, "ann1", "p0", preference=-2)  # a revision: the stored results are stale now
    keeper, url, now = report_worker.Keeper(), url_of(engine), 1000.0
    assert report_worker.keep_once(url, keeper, now) == 0, "not before the writes have settled"
    assert report_worker.keep_once(url, keeper, now + report_worker.SETTLE_S) == 2
    after, (report, figures) = stored(engine, "report")  # type: ignore[misc]
    assert set(figures) == set(figure_captions(report)) and all(
        f.startswith("<?xml") for f in figures.values()
    )
    assert after.version == current(engine, "report") != before.version
    assert after.newest_judgment > before.newest_judgment and after.n_judgments == before.n_judgments + 1
    with db.session_scope(engine) as session:
        fresh = study_report.study_report(session, study=STUDY, account=SYSTEM)
        evidence = adjudication_queue.study_evidence(session, study=STUDY, account=SYSTEM)
        waiting = adjudication_queue.queue(session, study=STUDY, account=SYSTEM, evidence=evidence)
    assert as_json(report) == as_json(fresh)
    _, (stored_evidence, stored_queue) = stored(engine, "adjudication")  # type: ignore[misc]
    assert stored_evidence.equals(evidence) and stored_queue.equals(waiting)
    assert report_worker.keep_once(url, keeper, now + 100) == 0, "nothing to do when up to date"


def test_a_result_stored_by_other_code_is_stale_and_computed_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same data, other code (an upgrade, a changed analysis): the stored report is not current,
    and the worker computes it again with this code."""
    engine = rated(tmp_path)
    store_now(engine, "report")
    before, _ = stored(engine, "report")
    assert json.loads(before.version)[-1] == stored_results.code_fingerprint()
    monkeypatch.setattr(stored_results, "code_fingerprint", lambda: "other-code")
    assert current(engine, "report") != before.version
    assert stored_results.newest_judgment(current(engine, "report")) == before.newest_judgment
    keeper, url, now = report_worker.Keeper(), url_of(engine), 1000.0
    report_worker.keep_once(url, keeper, now)
    assert report_worker.keep_once(url, keeper, now + report_worker.SETTLE_S) == 1
    after, _ = stored(engine, "report")
    assert json.loads(after.version)[-1] == "other-code" and after.n_judgments == before.n_judgments


def test_a_study_written_to_all_the_time_is_recomputed_after_the_longest_wait(tmp_path: Path) -> None:
    engine = rated(tmp_path)
    store_now(engine, "report")
    keeper, url = report_worker.Keeper(), url_of(engine)
    start = 50.0
    for step in range(3):  # a write before every pass: never settled
        rate(engine, "ann2", f"p{step}", preference=2)
        assert report_worker.keep_once(url, keeper, start + step) == 0
    rate(engine, "ann2", "p5", preference=2)
    assert report_worker.keep_once(url, keeper, start + report_worker.MAX_WAIT_S) == 1
    assert stored(engine, "report")[0].version == current(engine, "report")


def test_a_failing_report_is_one_line_and_not_retried_until_the_data_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = rated(tmp_path)
    store_now(engine, "report")
    rate(engine, "ann3", "p1", preference=0)
    calls: list[str] = []

    def failing(session: object, *, study: str, kind: str) -> object:
        calls.append(kind)
        raise ValueError("singular\nmatrix")

    monkeypatch.setattr(stored_results, "compute", failing)
    keeper, url = report_worker.Keeper(), url_of(engine)
    report_worker.keep_once(url, keeper, 0.0)
    assert report_worker.keep_once(url, keeper, report_worker.SETTLE_S) == 0
    assert report_worker.keep_once(url, keeper, 2 * report_worker.MAX_WAIT_S) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert calls == ["report"] and len(lines) == 1
    said = f"{report_worker.PREFIX} the report of study '{STUDY}' failed: ValueError: singular matrix"
    assert lines[0] == said
    rate(engine, "ann3", "p2", preference=0)  # new data: one new attempt
    report_worker.keep_once(url, keeper, 100.0)
    report_worker.keep_once(url, keeper, 100.0 + report_worker.SETTLE_S)
    assert calls == ["report", "report"]


def test_one_holder_of_the_worker_lock_per_database(tmp_path: Path) -> None:
    engine = rated(tmp_path)
    other = db.make_engine(url_of(engine))
    first, second = WorkerLock(engine, "test-lock"), WorkerLock(other, "test-lock")
    try:
        assert first.acquire() and first.acquire(), "taking a held lock again is a no-op"
        assert not second.acquire()
        first.release()
        assert second.acquire() and not first.acquire()
    finally:
        first.release()
        second.release()
        other.dispose()


def await_state(check: Callable[[], bool], *, timeout: float = 240, what: str = "") -> None:
    """Wait until `check()` holds (polling), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Callable[[Engine], subprocess.Popen[bytes]]]:
    """Start stand-ins for servers (a process that starts this database's worker, as a page does, and
    stays); all stopped afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(engine: Engine) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"server-{len(started)}.log").open("wb")
        code = (
            "import sys, time\n"
            "from annotator.review import report_worker\n"
            "report_worker.ensure_running(sys.argv[1])\n"
            "print(report_worker._started[sys.argv[1]][0].pid, flush=True)\n"
            "time.sleep(600)\n"
        )
        # The workers run at the server's priority: at their usual one they get a few percent of a core
        # beside the test suite's other processes, and a report takes minutes.
        process = subprocess.Popen(
            [sys.executable, "-c", code, url_of(engine)],
            stdout=subprocess.PIPE,
            stderr=log,
            env=os.environ | {"PYTHONUNBUFFERED": "1", report_worker.NICE_ENV: "0"},
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=30)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone too
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.long
def test_two_servers_one_worker_that_keeps_the_report_and_stops_with_its_server(
    tmp_path: Path, servers: Callable[[Engine], subprocess.Popen[bytes]]
) -> None:
    engine = rated(tmp_path)
    store_now(engine, "report")
    rate(engine, "ann1", "p3", preference=-1)
    stale = current(engine, "report")
    one, two = servers(engine), servers(engine)
    workers = [int(server.stdout.readline()) for server in (one, two)]  # type: ignore[union-attr]
    await_state(lambda: stored(engine, "report")[0].version == stale, what="the worker's report")
    logs = [(tmp_path / f"server-{k}.log") for k in range(2)]
    await_state(lambda: any("waiting" in log.read_text() for log in logs), what="the second worker to wait")
    waiting = [k for k, log in enumerate(logs) if "waiting" in log.read_text()]
    assert len(waiting) == 1, "exactly one worker computes"
    holder = 1 - waiting[0]
    (one, two)[holder].terminate()  # its server stops: so does its worker, and the other takes over
    await_state(lambda: not alive(workers[holder]), timeout=30, what="the worker to stop with its server")
    rate(engine, "ann1", "p4", preference=-1)
    newer = current(engine, "report")
    await_state(lambda: stored(engine, "report")[0].version == newer, what="the other worker's report")
    assert stored(engine, "report")[0].version == newer


def captions(at: object) -> list[str]:
    return [c.value for c in at.caption]  # type: ignore[attr-defined]


@pytest.mark.page
@pytest.mark.parametrize(("page", "what"), [("validation", "Report"), ("adjudicate", "Queue")])
def test_the_pages_show_the_stored_result_and_what_it_covers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: str, what: str
) -> None:
    engine = rated(tmp_path)
    monkeypatch.setenv(db.ENV_VAR, url_of(engine))
    at = app_for(account(engine, "boss"), timeout=180)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception
    first, _ = stored(engine, "report" if page == "validation" else "adjudication")  # the first visit's
    at.run()
    saved = f"{3 * N_PAIRS} judgments saved (revisions included)"
    covers = f"{what} of {first.computed_at.strftime('%H:%M')} UTC over {saved}"
    assert f"{covers}; up to date" in captions(at)
    rate(engine, "ann2", "p6", preference=-2)
    at.run()
    assert not at.exception
    assert f"{covers}; 1 judgment since; updating" in captions(at)
    button = at.button(key=f"{page}_current")
    button.click().run()
    assert not at.exception
    now, _ = stored(engine, "report" if page == "validation" else "adjudication")
    assert now.n_judgments == 3 * N_PAIRS + 1
    at.run()
    assert any(
        c.endswith(f"over {3 * N_PAIRS + 1} judgments saved (revisions included); up to date")
        for c in captions(at)
    )


@pytest.mark.page
def test_a_report_stored_without_its_figures_is_shown_with_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report stored by an earlier version (the Report alone) still opens, its figures drawn."""
    engine = rated(tmp_path)
    with db.session_scope(engine) as session:
        version = stored_results.current_version(session, study=STUDY, kind="report")
        report, _ = stored_results.compute(session, study=STUDY, kind="report")
        stored_results.save(session, study=STUDY, kind="report", version=version, value=report)
    monkeypatch.setenv(db.ENV_VAR, url_of(engine))
    at = app_for(account(engine, "boss"), timeout=180)
    at.switch_page("views/validation.py").run()
    assert not at.exception
    assert any(
        c.endswith(f"over {3 * N_PAIRS} judgments saved (revisions included); up to date")
        for c in captions(at)
    )
    assert sum(isinstance(node, Image) for node in at.main) == len(figure_captions(report))


@pytest.mark.sqlite_only
def test_on_sqlite_the_result_is_a_file_beside_the_database_and_a_lost_one_is_computed_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlmodel import Session, select

    from annotator.store.models import StoredResult

    engine = rated(tmp_path)
    for _ in range(3):
        store_now(engine, "report")
    with Session(engine) as session:
        found = stored_results.latest(session, study=STUDY, kind="report", account=SYSTEM)
        folder = stored_results.results_folder(session)
        payloads = [len(row.payload) for row in session.exec(select(StoredResult))]
    database = db.sqlite_file(engine)
    assert found is not None and folder is not None and database is not None
    assert folder == database.with_name(f"{database.name}-results")
    assert len(list(folder.glob("*.pickle"))) == 2, "the newest file and the one before it"
    assert payloads and max(payloads) < 1000, "the table names the file; it does not hold the report"
    for path in folder.glob("*.pickle"):
        path.unlink()
    with Session(engine) as session:
        assert stored_results.load(session, found) is None
    monkeypatch.setenv(db.ENV_VAR, url_of(engine))
    at = app_for(account(engine, "boss"), timeout=180)
    at.switch_page("views/validation.py").run()
    assert not at.exception
    assert any(c.startswith("Report of the current data") for c in captions(at))
    again, report = stored(engine, "report")
    assert again.stamp != found.stamp and report is not None


@pytest.mark.page
def test_a_pair_decided_since_the_stored_queue_leaves_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from annotator.review import adjudicate

    engine = rated(tmp_path)
    monkeypatch.setenv(db.ENV_VAR, url_of(engine))
    judge = account(engine, "judge")
    at = app_for(judge, timeout=180)
    assert not at.exception
    _, (_, waiting) = stored(engine, "adjudication")  # type: ignore[misc]
    assert len(waiting) >= 2, "the study has pairs for a person"
    assert f"Queue ({len(waiting)})" in [h.value for h in at.header]
    first = int(waiting["pair_db_id"].iloc[0])
    with db.session_scope(engine) as session:
        adjudicate.decide(session, pair_id=first, account=judge, preference="chosen", keep=True)
    at.run()
    assert not at.exception
    assert f"Queue ({len(waiting) - 1})" in [h.value for h in at.header]
    assert any(c.endswith("the data changed since; updating") for c in captions(at))
    assert stored(engine, "adjudication")[0].version != current(engine, "adjudication")  # the stored one


class _Planted:
    """A pickle that, when loaded, creates the file `path` (how code would run in the server)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch, (str(self.path),))  # type: ignore[return-value]


def test_a_result_written_by_someone_else_is_never_unpickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever can write the table or the results folder cannot make the server run code: a payload
    without the seal of this machine's key is treated as lost (computed anew)."""
    import pickle

    from sqlalchemy import update

    from annotator.store.models import StoredResult

    engine = rated(tmp_path)
    store_now(engine, "report")
    found, report = stored(engine, "report")
    assert report is not None, "a sealed result reads back"
    marker = tmp_path / "code-ran"
    planted = pickle.dumps(_Planted(marker))
    with db.session_scope(engine) as session:
        folder = stored_results.results_folder(session)
    if folder is not None:  # SQLite: the file beside the database, and a file name outside the folder
        for path in folder.glob("*.pickle"):
            path.write_bytes(planted)
        assert stored(engine, "report")[1] is None
        outside = tmp_path / "outside.pickle"
        outside.write_bytes(planted)
        with db.session_scope(engine) as session:
            session.execute(update(StoredResult).values(payload=b"file:../outside.pickle"))
        assert stored(engine, "report")[1] is None
    for payload in (planted, b"x" * 32 + planted):  # PostgreSQL's table, with or without a fake seal
        with db.session_scope(engine) as session:
            session.execute(update(StoredResult).values(payload=payload))
        assert stored(engine, "report")[1] is None
    assert not marker.exists()
    monkeypatch.setenv(stored_results.KEY_VAR, "another machine's key")
    store_now(engine, "report")
    assert stored(engine, "report")[1] is not None
    monkeypatch.delenv(stored_results.KEY_VAR)
    assert stored(engine, "report")[1] is None, "sealed under another key"
    assert found.study == STUDY


@pytest.mark.nodb
@pytest.mark.parametrize("given", ["-1", "20", "low"])
def test_a_worker_priority_out_of_range_is_one_line_and_no_worker(
    given: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(report_worker.NICE_ENV, given)
    with pytest.raises(
        UserError,
        match=rf"^\$ANNOTATOR_REPORT_WORKER_NICE must be a whole number from 0 to 19, not '{given}'$",
    ):
        report_worker.niceness()
    assert report_worker.main(os.getpid()) == 2  # the worker says so in one line and stops
    assert capsys.readouterr().err.strip().splitlines() == [
        f"report worker: $ANNOTATOR_REPORT_WORKER_NICE must be a whole number from 0 to 19, not '{given}'"
    ]


@pytest.mark.nodb
@pytest.mark.parametrize(("given", "expected"), [("", report_worker.NICE), ("0", 0), ("19", 19)])
def test_the_worker_priority_is_the_setting_or_the_default(
    given: str, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(report_worker.NICE_ENV, given)
    assert report_worker.niceness() == expected


def test_serve_refuses_a_worker_priority_it_cannot_set_in_one_line(
    env_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_start(*_args: object, **_kwargs: object) -> int:
        raise AssertionError("serve started with a report worker priority it cannot set")

    monkeypatch.setattr(server, "run", must_not_start)
    monkeypatch.setenv(report_worker.NICE_ENV, "high")
    refused = CliRunner().invoke(app, ["serve"])
    assert refused.exit_code == 1
    assert [line for line in refused.output.splitlines() if line.strip()] == [
        "error: $ANNOTATOR_REPORT_WORKER_NICE must be a whole number from 0 to 19, not 'high'"
    ]
