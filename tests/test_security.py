"""Security: authorization in the service functions (not only in the page list), what the pages pass,
login throttling and session expiry, no secrets or texts in the audit log, and the audit log itself.
"""

import ast
import dataclasses
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError
from sqlmodel import Session, func, select

from annotator.errors import AuthError
from annotator.intake import assign, ingest
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, Account
from annotator.publish import export
from annotator.rating import labels
from annotator.review import adjudicate, adjudication_queue, readers, study_progress
from annotator.store import db
from annotator.store.models import Adjudication, Assignment, Event, Judgment, User, id_of
from tests.utils.factories import PASSWORD, make_record, make_user, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
# The pages and the rating page's parts: every file that calls a service for the logged-in user.
PAGE_FILES = sorted(
    str(p.relative_to(ROOT / "annotator" / "app"))
    for folder in ("views", "rating_page")
    for p in (ROOT / "annotator" / "app" / folder).glob("*.py")
)
STUDY = "s1"
DIMENSIONS = ("correctness", "relevance", "helpfulness")


@dataclasses.dataclass(frozen=True)
class World:
    engine: Engine
    folder: Path
    accounts: dict[str, Account]
    queues: dict[str, list[int]]  # annotator -> assignment ids in queue order

    def pair_file(self, start: int = 10, n: int = 2) -> Path:
        return write_jsonl(
            self.folder / f"more-{start}.jsonl", [make_record(i) for i in range(start, start + n)]
        )


@pytest.fixture
def world(engine: Engine, tmp_path: Path) -> Iterator[World]:
    """Three pairs rated by nobody yet; ann1 and ann2 each have all three; an adjudicator and a researcher."""
    ingest.import_file(
        engine,
        write_jsonl(tmp_path / "pairs.jsonl", [make_record(i) for i in range(3)]),
        study=STUDY,
        account=SYSTEM,
    )
    found: dict[str, Account] = {}
    with db.session_scope(engine) as session:
        for name, role in (
            ("ann1", "annotator"),
            ("ann2", "annotator"),
            ("judge", "adjudicator"),
            ("boss", "researcher"),
        ):
            user = make_user(session, name, role=role)
            found[name] = Account(id=id_of(user), username=name, role=role)
    with db.session_scope(engine) as session:
        assign.assign(session, study=STUDY, overlap=2, seed=0, account=SYSTEM)
    queues: dict[str, list[int]] = {}
    with Session(engine) as session:
        for name in ("ann1", "ann2"):
            query = (
                select(Assignment.id)
                .where(Assignment.annotator_id == found[name].id)
                .order_by(Assignment.position)
            )
            queues[name] = [int(i or 0) for i in session.exec(query)]
    yield World(engine, tmp_path, found, queues)


def form(submission_id: str, *, comment: str = "", flag_reason: str = "") -> labels.Submission:
    scores: dict[str, dict[str, float | None]] = {
        "A": dict.fromkeys(DIMENSIONS, 4) | {"rubric:0": 2, "rubric:1": 1},
        "B": dict.fromkeys(DIMENSIONS, 3) | {"rubric:0": 0, "rubric:1": 1},
    }
    return labels.Submission(
        submission_id=submission_id,
        preference=1,
        scores=scores,
        confidence=2,
        comment=comment,
        flag=bool(flag_reason),
        flag_reason=flag_reason,
    )


def submit(w: World, name: str, index: int = 0, **kwargs: Any) -> Judgment:
    with db.session_scope(w.engine) as session:
        labels.show(session, assignment_id=w.queues[name][index], account=w.accounts[name])
    with db.session_scope(w.engine) as session:
        return labels.submit(
            session,
            assignment_id=w.queues[name][index],
            account=w.accounts[name],
            submission=form(f"{name}-{index}", **kwargs),
        )


def n_rows(engine: Engine, table: type) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


def events(engine: Engine) -> list[Event]:
    with Session(engine) as session:
        return list(session.exec(select(Event).order_by(Event.id)))


# ------------------------------------------------------------------ authorization in the service layer

# Each call gets (world, session, account); the researcher-only ones first.
Call = Callable[[World, Session, Account], Any]
RESEARCHER_CALLS: dict[str, Call] = {
    "ingest.import_file": lambda w, s, a: ingest.import_file(w.engine, w.pair_file(), study=STUDY, account=a),
    "assign.assign": lambda w, s, a: assign.assign(s, study=STUDY, overlap=1, account=a),
    "accounts.add_user": lambda w, s, a: accounts.add_user(
        s, username="mallory", role="researcher", password="x" * 12, account=a
    ),
    "accounts.set_active": lambda w, s, a: accounts.set_active(s, username="ann2", active=False, account=a),
    "export.build labels": lambda w, s, a: export.build(s, export.ExportRequest(STUDY, "labels"), account=a),
    "export.build adjudicated": lambda w, s, a: export.build(
        s, export.ExportRequest(STUDY, "adjudicated"), account=a
    ),
    "export.build pairs": lambda w, s, a: export.build(s, export.ExportRequest(STUDY, "pairs"), account=a),
    "readers.label_frame": lambda w, s, a: readers.label_frame(s, study=STUDY, account=a),
    "export.record_export": lambda w, s, a: export.record_export(
        s, export.ExportRequest(STUDY, "labels"), rows=0, fmt="csv", account=a
    ),
    "export.export": lambda w, s, a: export.export(
        s, export.ExportRequest(STUDY, "labels"), fmt="csv", path=w.folder / "out.csv", account=a
    ),
    "study_progress.reassign_open": lambda w, s, a: study_progress.reassign_open(
        s, account=a, study=STUDY, username="ann2"
    ),
    "study_progress.data_version": lambda w, s, a: study_progress.data_version(s, STUDY, account=a),
    "study_progress.annotator_progress": lambda w, s, a: study_progress.annotator_progress(
        s, study=STUDY, account=a
    ),
    "study_progress.pair_completion": lambda w, s, a: study_progress.pair_completion(
        s, study=STUDY, account=a
    ),
    "study_progress.stalled_assignments": lambda w, s, a: study_progress.stalled_assignments(
        s, study=STUDY, account=a
    ),
    "study_progress.judgments_over_time": lambda w, s, a: study_progress.judgments_over_time(
        s, study=STUDY, account=a
    ),
    "study_progress.filter_options": lambda w, s, a: study_progress.filter_options(s, study=STUDY, account=a),
}
ADJUDICATOR_CALLS: dict[str, Call] = {
    "adjudication_queue.queue": lambda w, s, a: adjudication_queue.queue(s, study=STUDY, account=a),
    "adjudicate.auto_resolve": lambda w, s, a: adjudicate.auto_resolve(s, study=STUDY, account=a),
    "adjudication_queue.pair_detail": lambda w, s, a: adjudication_queue.pair_detail(s, pair_id=1, account=a),
    "adjudicate.decide": lambda w, s, a: adjudicate.decide(
        s, pair_id=1, account=a, preference="chosen", keep=True
    ),
}


def _state(engine: Engine) -> tuple[int, ...]:
    """Row counts and the active flags: a refused call must change none of them."""
    with Session(engine) as session:
        active = tuple(session.exec(select(User.active).order_by(User.id)))
    tables = (Event, User, Assignment, Adjudication, Judgment)
    return (*(n_rows(engine, t) for t in tables), *active)


@pytest.mark.parametrize("name", [*RESEARCHER_CALLS, *ADJUDICATOR_CALLS])
@pytest.mark.parametrize("who", ["ann1"])
def test_an_annotator_may_not_call_researcher_or_adjudicator_functions(
    world: World, name: str, who: str
) -> None:
    call = {**RESEARCHER_CALLS, **ADJUDICATOR_CALLS}[name]
    before = _state(world.engine)
    with pytest.raises(AuthError, match="may not do this"), db.session_scope(world.engine) as session:
        call(world, session, world.accounts[who])
    assert _state(world.engine) == before
    assert not (world.folder / "out.csv").exists()


@pytest.mark.parametrize("name", list(RESEARCHER_CALLS))
def test_an_adjudicator_may_not_call_researcher_functions(world: World, name: str) -> None:
    before = _state(world.engine)
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        RESEARCHER_CALLS[name](world, session, world.accounts["judge"])
    assert _state(world.engine) == before


@pytest.mark.parametrize("name", list(RESEARCHER_CALLS))
def test_a_researcher_may_call_researcher_functions(world: World, name: str) -> None:
    submit(world, "ann1")
    with db.session_scope(world.engine) as session:
        RESEARCHER_CALLS[name](world, session, world.accounts["boss"])


@pytest.mark.parametrize("who", ["judge", "boss"])
@pytest.mark.parametrize("name", list(ADJUDICATOR_CALLS))
def test_adjudicators_and_researchers_may_adjudicate(world: World, name: str, who: str) -> None:
    submit(world, "ann1")
    with db.session_scope(world.engine) as session:
        ADJUDICATOR_CALLS[name](world, session, world.accounts[who])


def test_an_import_by_an_account_is_logged_under_it(world: World) -> None:
    ingest.import_file(world.engine, world.pair_file(), study=STUDY, account=world.accounts["boss"])
    assert events(world.engine)[-1].action == "import"
    assert events(world.engine)[-1].user_id == world.accounts["boss"].id


def test_an_annotator_cannot_open_another_annotators_item(world: World) -> None:
    theirs = world.queues["ann2"][0]
    with pytest.raises(AuthError, match="not in your queue"), db.session_scope(world.engine) as session:
        labels.show(session, assignment_id=theirs, account=world.accounts["ann1"])
    with Session(world.engine) as session:
        assert session.get(Assignment, theirs).shown_at is None  # type: ignore[union-attr]


def test_an_annotator_cannot_see_another_annotators_answers(world: World) -> None:
    submit(world, "ann2")
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        labels.current_answers(session, assignment_id=world.queues["ann2"][0], account=world.accounts["ann1"])
    with db.session_scope(world.engine) as session:
        mine = labels.finished_items(session, account=world.accounts["ann1"], study_id=1)
    assert mine == []  # ann2's finished item is not in ann1's list


def test_an_annotator_cannot_change_another_annotators_item(world: World) -> None:
    theirs = world.queues["ann2"][0]
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        labels.submit(session, assignment_id=theirs, account=world.accounts["ann1"], submission=form("evil"))
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        labels.skip(session, assignment_id=theirs, account=world.accounts["ann1"], reason="mine now")
    with Session(world.engine) as session:
        assignment = session.get(Assignment, theirs)
        assert assignment is not None
        assert (assignment.status, assignment.skip_count) == ("pending", 0)
    assert n_rows(world.engine, Judgment) == 0


def test_a_resubmitted_id_of_another_annotator_does_not_reveal_their_judgment(world: World) -> None:
    submit(world, "ann2")
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        labels.submit(
            session,
            assignment_id=world.queues["ann1"][0],
            account=world.accounts["ann1"],
            submission=form("ann2-0"),
        )


# ------------------------------------------------------------------ what the pages pass to the services

GUARDED = {
    ("ingest", "import_file"),
    ("assign", "assign"),
    ("accounts", "add_user"),
    ("accounts", "set_active"),
    ("export", "build"),
    ("export", "export"),
    ("export", "record_export"),
    ("adjudicate", "auto_resolve"),
    ("adjudication_queue", "queue"),
    ("adjudication_queue", "pair_detail"),
    ("adjudicate", "decide"),
    ("dashboard", "reassign_open"),
    ("dashboard", "data_version"),
    ("dashboard", "annotator_progress"),
    ("dashboard", "pair_completion"),
    ("dashboard", "stalled_assignments"),
    ("dashboard", "judgments_over_time"),
    ("dashboard", "filter_options"),
    (None, "label_frame"),
}
PER_USER = {"show", "submit", "skip", "current_answers", "finished_items", "next_assignment", "progress"}


def _calls(path: Path) -> list[ast.Call]:
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]


def _name(call: ast.Call) -> tuple[str | None, str]:
    func_node = call.func
    if isinstance(func_node, ast.Attribute) and isinstance(func_node.value, ast.Name):
        return func_node.value.id, func_node.attr
    if isinstance(func_node, ast.Name):
        return None, func_node.id
    return None, ""


def _keyword(call: ast.Call, name: str) -> str | None:
    found = next((k for k in call.keywords if k.arg == name), None)
    return None if found is None else ast.unparse(found.value)


@pytest.mark.parametrize("page_file", PAGE_FILES)
def test_pages_pass_the_logged_in_account_to_guarded_services(page_file: str) -> None:
    """Every guarded service call passes `account=account`, and every per-annotator call the
    logged-in account too (`account=account`), never a bare id from a widget or the URL."""
    assert "rating_page/actions.py" in PAGE_FILES
    for call in _calls(ROOT / "annotator" / "app" / page_file):
        module, function = _name(call)
        where = f"{page_file}:{call.lineno} {module}.{function}"
        if (module, function) in GUARDED or (None, function) in GUARDED and module is None:
            # `_account`: an argument st.cache_* leaves out of its key (the page checked before)
            assert _keyword(call, "account") in ("account", "_account"), where
        if module in ("labels", "accounts", "drafts", "work_log", "sessions", "crowd", "training"):
            assert _keyword(call, "user_id") is None, where
            if _keyword(call, "account") is not None:
                assert _keyword(call, "account") in ("account", "_account"), where
        if module == "labels" and function in PER_USER:
            assert _keyword(call, "account") == "account", where


# ---------------------------------------------------------------------------- the audit log itself


def _one_event(engine: Engine) -> int:
    with db.session_scope(engine) as session:
        event = Event(action="test", detail={"n": 1})
        session.add(event)
        session.flush()
        return id_of(event)


def test_events_can_be_inserted(engine: Engine) -> None:
    first, second = _one_event(engine), _one_event(engine)
    assert second > first
    assert [e.action for e in events(engine)] == ["test", "test"]


@pytest.mark.parametrize(
    "statement",
    [
        lambda i: update(Event).where(Event.id == i).values(action="forged"),
        lambda i: update(Event).values(detail={}),
        lambda i: delete(Event).where(Event.id == i),
        lambda i: delete(Event),
    ],
    ids=["update one", "update all", "delete one", "delete all"],
)
def test_the_database_refuses_to_change_or_delete_an_event(engine: Engine, statement: Any) -> None:
    event_id = _one_event(engine)
    with pytest.raises(DatabaseError, match="append-only"), engine.begin() as connection:
        connection.execute(statement(event_id))
    assert [(e.id, e.action, e.detail) for e in events(engine)] == [(event_id, "test", {"n": 1})]


def test_the_orm_cannot_change_or_delete_an_event_either(engine: Engine) -> None:
    event_id = _one_event(engine)
    with pytest.raises(DatabaseError, match="append-only"), db.session_scope(engine) as session:
        event = session.get(Event, event_id)
        assert event is not None
        event.action = "forged"
        session.add(event)
    with pytest.raises(DatabaseError, match="append-only"), db.session_scope(engine) as session:
        session.delete(session.get(Event, event_id))
    assert events(engine)[0].action == "test"


def test_raw_sql_cannot_change_the_audit_log(engine: Engine) -> None:
    _one_event(engine)
    for sql in ("UPDATE event SET action = 'x'", "DELETE FROM event"):
        with pytest.raises(DatabaseError, match="append-only"), engine.begin() as connection:
            connection.execute(text(sql))
    assert len(events(engine)) == 1


def _alembic(engine: Engine, target: str, *, down: bool = False) -> None:
    from alembic import command

    config = db._alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, target)


def test_the_append_only_migration_downgrades_and_upgrades(engine: Engine) -> None:
    assert db.current_revision(engine) == db.head_revision()
    event_id = _one_event(engine)
    _alembic(engine, "0001", down=True)
    with engine.begin() as connection:
        connection.execute(update(Event).where(Event.id == event_id).values(action="changed"))
    _alembic(engine, "head")
    with pytest.raises(DatabaseError, match="append-only"), engine.begin() as connection:
        connection.execute(delete(Event))
    assert [e.action for e in events(engine)] == ["changed"]


# ------------------------------------------------------------------------------------------ rendering


@pytest.mark.parametrize(
    ("typed", "markdown"),
    [
        ("Costs $5 and $10", "Costs \\$5 and \\$10"),
        ("$x^2$", "\\$x^2\\$"),
        ("already \\$ escaped", "already \\\\\\$ escaped"),
        ("<b>html</b> stays for Streamlit to escape", "\\<b>html</b> stays for Streamlit to escape"),
        ("inline <b>html</b> too", "inline <b>html</b> too"),
        ("", ""),
    ],
)
def test_safe_md_escapes_every_dollar(typed: str, markdown: str) -> None:
    from annotator.app.common import safe_md

    assert safe_md(typed) == markdown


# ------------------------------------------------------------------------- sessions and login links


@pytest.fixture
def app_env(world: World, env_db: str, monkeypatch: pytest.MonkeyPatch) -> World:
    """The world's database in $ANNOTATOR_DB_URL."""
    return world


def _app() -> Any:
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(ROOT / "annotator" / "app" / "main.py"), default_timeout=120)


def _texts(at: Any) -> str:
    return "\n".join(str(e.value) for kind in (at.info, at.error, at.success, at.markdown) for e in kind)


@pytest.mark.parametrize(("hours", "expired"), [(11.9, False), (12.1, True), (24 * 30, True)])
def test_a_session_expires_after_twelve_hours(app_env: World, hours: float, expired: bool) -> None:
    from annotator.app.common import SESSION_HOURS

    assert SESSION_HOURS == 12
    at = _app()
    at.session_state["account"] = app_env.accounts["ann1"]
    at.session_state["login_at"] = datetime.now(UTC) - timedelta(hours=hours)
    at.run()
    assert not at.exception
    assert ("Your session expired" in _texts(at)) is expired
    assert ("account" in at.session_state) is not expired
    if expired:
        assert at.text_input(key="login_password").value == ""


def test_a_login_link_works_once(app_env: World) -> None:
    with db.session_scope(app_env.engine) as session:
        token = accounts.issue_login_token(session, username="ann1", account=SYSTEM)
    first = _app()
    first.query_params["token"] = token
    first.run()
    assert not first.exception
    assert first.session_state["account"].username == "ann1"
    assert "token" not in first.query_params  # the spent token leaves the address bar
    second = _app()
    second.query_params["token"] = token
    second.run()
    assert not second.exception
    assert "account" not in second.session_state
    assert "not valid or was already used" in _texts(second)
    actions = [(e.action, e.detail.get("via"), e.detail.get("reason")) for e in events(app_env.engine)[-3:]]
    assert actions == [
        ("token_issued", None, None),
        ("login", "token", None),
        ("login_failed", None, "bad token"),
    ]


def test_an_expired_login_link_is_refused(app_env: World) -> None:
    with db.session_scope(app_env.engine) as session:
        token = accounts.issue_login_token(
            session, username="ann1", valid_for=timedelta(seconds=-1), account=SYSTEM
        )
    at = _app()
    at.query_params["token"] = token
    at.run()
    assert "account" not in at.session_state
    assert "expired" in _texts(at)


def test_throttled_logins_show_the_wait_in_the_app(app_env: World) -> None:
    at = _app()
    at.run()
    for _ in range(accounts.FREE_ATTEMPTS + 1):
        at.text_input(key="login_username").input("ann1")
        at.text_input(key="login_password").input("wrong-password")
        at.button(key="login_submit").click().run()
    at.text_input(key="login_username").input("ann1")
    at.text_input(key="login_password").input(PASSWORD)
    at.button(key="login_submit").click().run()
    assert "account" not in at.session_state
    assert "too many failed attempts" in _texts(at)
    failed = [e for e in events(app_env.engine) if e.action == "login_failed"]
    assert [e.detail["reason"] for e in failed][-2:] == ["throttled", "throttled"]


# ------------------------------------------------------------------- what the audit log holds


def test_the_audit_log_covers_logins_imports_submissions_decisions_and_exports(world: World) -> None:
    with db.session_scope(world.engine) as session:
        accounts.authenticate(session, "ann1", PASSWORD)
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        accounts.authenticate(session, "ann1", "not-the-password")
    ingest.import_file(world.engine, world.pair_file(), study=STUDY, account=world.accounts["boss"])
    submit(world, "ann1", comment="nice", flag_reason="")
    submit(world, "ann2")
    with db.session_scope(world.engine) as session:
        adjudicate.auto_resolve(session, study=STUDY, account=world.accounts["judge"])
        pair_id = session.exec(
            select(Assignment.pair_id).where(Assignment.id == world.queues["ann1"][0])
        ).one()
    with db.session_scope(world.engine) as session:
        adjudicate.decide(
            session, pair_id=pair_id, account=world.accounts["judge"], preference="chosen", keep=True
        )
    with db.session_scope(world.engine) as session:
        export.export(
            session,
            export.ExportRequest(STUDY, "labels"),
            fmt="csv",
            path=world.folder / "l.csv",
            account=world.accounts["boss"],
        )
    by_action = {}
    for event in events(world.engine):
        by_action.setdefault(event.action, []).append(event)
    for action, who in [
        ("login", "ann1"),
        ("login_failed", "ann1"),
        ("import", "boss"),
        ("submit", "ann1"),
        ("submit", "ann2"),
        ("auto_resolve", "judge"),
        ("adjudicate", "judge"),
        ("export", "boss"),
    ]:
        assert any(e.user_id == world.accounts[who].id for e in by_action.get(action, [])), (action, who)
    assert all(isinstance(e.at, datetime) for e in events(world.engine))


def test_the_audit_log_never_holds_a_password_token_or_text(world: World) -> None:
    secret = "Very-Secret-Password-123"
    comment, reason, note = "COMMENT-TEXT-xyz", "FLAG-REASON-xyz", "NOTE-TEXT-xyz"
    with db.session_scope(world.engine) as session:
        accounts.add_user(
            session, username="carol", role="annotator", password=secret, account=world.accounts["boss"]
        )
    with db.session_scope(world.engine) as session:
        accounts.authenticate(session, "carol", secret)
    for wrong in (secret + "!", "ann1-typed-a-password-as-name"):
        with pytest.raises(AuthError), db.session_scope(world.engine) as session:
            accounts.authenticate(session, wrong, secret)  # a password typed into the username field
        with pytest.raises(AuthError), db.session_scope(world.engine) as session:
            accounts.authenticate(session, "carol", wrong)
    with db.session_scope(world.engine) as session:
        token = accounts.issue_login_token(session, username="carol", account=SYSTEM)
    with db.session_scope(world.engine) as session:
        accounts.redeem_login_token(session, token)
    with pytest.raises(AuthError), db.session_scope(world.engine) as session:
        accounts.redeem_login_token(session, token)
    submit(world, "ann1", comment=comment, flag_reason=reason)
    submit(world, "ann2", comment=comment)
    with db.session_scope(world.engine) as session:
        labels.skip(
            session, assignment_id=world.queues["ann1"][1], account=world.accounts["ann1"], reason=reason
        )
        pair_id = session.exec(
            select(Assignment.pair_id).where(Assignment.id == world.queues["ann1"][0])
        ).one()
    with db.session_scope(world.engine) as session:
        adjudicate.decide(
            session,
            pair_id=pair_id,
            account=world.accounts["judge"],
            preference="chosen",
            keep=True,
            note=note,
        )
    record = make_record(0)
    texts = [record["question"], record["chosen"], record["rejected"], record["narrative"]]
    texts += [post["text"] for post in record["profile"]] + [a["reason"] for a in record["rubric_aspects"]]
    logged = "\n".join(json.dumps(e.detail) for e in events(world.engine))
    assert "login_failed" in {e.action for e in events(world.engine)}
    for forbidden in (secret, "ann1-typed-a-password-as-name", token, comment, reason, note, *texts):
        assert forbidden not in logged, forbidden
    with Session(world.engine) as session:
        hashes = [u.password_hash for u in session.exec(select(User))] + [
            u.token_hash for u in session.exec(select(User)) if u.token_hash
        ]
    assert not any(h in logged for h in hashes)
