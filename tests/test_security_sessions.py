"""Sessions and deactivation: revocable tokens, active re-checks, SYSTEM."""

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotator.errors import AuthError, UserError
from annotator.people import accounts, authorization, sessions
from annotator.people.authorization import SYSTEM, Account
from annotator.publish import export
from annotator.rating import drafts, labels, work_log
from annotator.store import db
from annotator.store.models import UserSession, id_of, utcnow
from tests.utils.factories import PASSWORD, make_study, make_user


def _account(engine: Engine, name: str, role: str = "annotator") -> Account:
    with db.session_scope(engine) as session:
        return authorization.account_of(make_user(session, name, role=role))


def _start(engine: Engine, account: Account) -> str:
    with db.session_scope(engine) as session:
        return sessions.start_session(session, account=account)


def _resume(engine: Engine, token: str) -> Account:
    with db.session_scope(engine) as session:
        return sessions.resume_session(session, token)


def _deactivate(engine: Engine, name: str) -> None:
    with db.session_scope(engine) as session:
        accounts.set_active(session, username=name, active=False, account=SYSTEM)


def test_a_session_token_resumes_its_account(engine: Engine) -> None:
    alice = _account(engine, "alice")
    assert _resume(engine, _start(engine, alice)) == alice


def test_only_the_sha256_of_a_session_token_is_stored(engine: Engine) -> None:
    token = _start(engine, _account(engine, "alice"))
    with Session(engine) as session:
        stored = session.exec(select(UserSession.token_hash)).one()
    assert token not in stored and stored == sessions.token_hash(token)


@pytest.mark.parametrize("token", ["", "not-a-token", 42])
def test_an_unknown_token_is_refused(engine: Engine, token: object) -> None:
    with pytest.raises(AuthError, match="session has ended"):
        _resume(engine, token)  # type: ignore[arg-type]


def test_a_logged_out_session_is_refused(engine: Engine) -> None:
    token = _start(engine, _account(engine, "alice"))
    with db.session_scope(engine) as session:
        sessions.end_session(session, token)
    with pytest.raises(AuthError, match="session has ended"):
        _resume(engine, token)


def test_a_session_idle_too_long_expires(engine: Engine) -> None:
    token = _start(engine, _account(engine, "alice"))
    with engine.begin() as connection:
        connection.execute(update(UserSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    with pytest.raises(AuthError, match="session has ended"):
        _resume(engine, token)


def test_use_slides_the_expiry_but_never_past_the_maximum_age(engine: Engine) -> None:
    token = _start(engine, _account(engine, "alice"))
    started = utcnow() - sessions.MAX_AGE + timedelta(hours=1)
    with engine.begin() as connection:
        connection.execute(
            update(UserSession).values(
                created_at=started, last_seen_at=started, expires_at=utcnow() + timedelta(hours=1)
            )
        )
    _resume(engine, token)
    with Session(engine) as session:
        expires = session.exec(select(UserSession.expires_at)).one()
    assert abs((expires - (started + sessions.MAX_AGE)).total_seconds()) < 2


def test_deactivation_ends_every_session_of_the_user(engine: Engine) -> None:
    alice = _account(engine, "alice")
    tokens = [_start(engine, alice) for _ in range(3)]
    bob_token = _start(engine, _account(engine, "bob"))
    _deactivate(engine, "alice")
    for token in tokens:
        with pytest.raises(AuthError):
            _resume(engine, token)
    assert _resume(engine, bob_token).username == "bob"


def test_end_all_sessions_counts_what_it_ended(engine: Engine) -> None:
    alice = _account(engine, "alice")
    for _ in range(2):
        _start(engine, alice)
    with db.session_scope(engine) as session:
        assert sessions.end_all_sessions(session, account=alice) == 2
    with db.session_scope(engine) as session:
        assert sessions.end_all_sessions(session, account=alice) == 0


def test_the_system_account_has_no_browser_session(engine: Engine) -> None:
    with pytest.raises(AuthError, match="system account"), db.session_scope(engine) as session:
        sessions.start_session(session, account=SYSTEM)


def test_a_login_then_a_session_works_end_to_end(engine: Engine) -> None:
    with db.session_scope(engine) as session:
        accounts.add_user(session, username="carol", role="researcher", password=PASSWORD, account=SYSTEM)
    with db.session_scope(engine) as session:
        carol = accounts.authenticate(session, "carol", PASSWORD)
    assert _resume(engine, _start(engine, carol)).role == "researcher"


# ----------------------------------------------------- deactivation reaches open pages (point 2)


def test_a_deactivated_annotator_cannot_submit_from_an_open_page(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    alice = _account(engine, "alice")
    from annotator.intake.assign import assign

    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, account=SYSTEM)
    with db.session_scope(engine) as session:
        study_id = labels.annotator_studies(session, account=alice)[0][0]
        item = labels.next_assignment(session, account=alice, study_id=study_id)
        assert item is not None
        assignment_id = id_of(item)
    _deactivate(engine, "alice")
    with pytest.raises(AuthError, match="deactivated"), db.session_scope(engine) as session:
        labels.show(session, assignment_id=assignment_id, account=alice)
    with pytest.raises(AuthError, match="deactivated"), db.session_scope(engine) as session:
        labels.next_assignment(session, account=alice, study_id=study_id)


# What an open rating or "My work" page reads next: each refuses an account deactivated meanwhile.
OPEN_PAGE_READS = {
    "progress": lambda s, account, study_id: labels.progress(s, account=account, study_id=study_id),
    "finished_items": lambda s, account, study_id: labels.finished_items(
        s, account=account, study_id=study_id
    ),
    "resume_assignment": lambda s, account, study_id: drafts.resume_assignment(
        s, account=account, study_id=study_id
    ),
    "my_work": lambda s, account, study_id: work_log.my_work(s, account=account),
}


@pytest.mark.parametrize("read", sorted(OPEN_PAGE_READS))
def test_a_deactivated_annotators_open_page_is_refused_at_its_next_read(
    engine: Engine, tmp_path: Path, read: str
) -> None:
    make_study(engine, tmp_path, 2)
    alice = _account(engine, "alice")
    from annotator.intake.assign import assign

    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, account=SYSTEM)
    with db.session_scope(engine) as session:
        study_id = labels.annotator_studies(session, account=alice)[0][0]
        OPEN_PAGE_READS[read](session, alice, study_id)  # works while alice is active
    _deactivate(engine, "alice")
    with pytest.raises(AuthError, match="deactivated"), db.session_scope(engine) as session:
        OPEN_PAGE_READS[read](session, alice, study_id)


def test_a_deactivated_researchers_account_can_no_longer_export(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    rita = _account(engine, "rita", role="researcher")
    with db.session_scope(engine) as session:
        export.build(session, export.ExportRequest("s1", "pairs"), account=rita)
    _deactivate(engine, "rita")
    with pytest.raises(AuthError, match="deactivated"), db.session_scope(engine) as session:
        export.export(
            session, export.ExportRequest("s1", "pairs"), fmt="jsonl", path=tmp_path / "p.jsonl", account=rita
        )
    assert not (tmp_path / "p.jsonl").exists()


# ------------------------------------------------------------- authorization is explicit (point 3)


def test_a_missing_account_is_an_error_not_trust(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 1)
    with pytest.raises(TypeError, match="account"), db.session_scope(engine) as session:
        export.build(session, export.ExportRequest("s1", "pairs"))  # type: ignore[call-arg]


def test_none_is_not_an_account(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 1)
    with pytest.raises(AuthError, match="no account"), db.session_scope(engine) as session:
        export.build(session, export.ExportRequest("s1", "pairs"), account=None)  # type: ignore[arg-type]


def test_a_copy_of_the_system_account_is_not_trusted(engine: Engine, tmp_path: Path) -> None:
    """Only the SYSTEM object itself is trusted: an Account built with its fields (e.g. from a page's
    state) is checked like any other, and no user has role "system" or id 0."""
    make_study(engine, tmp_path, 1)
    forged = Account(id=0, username="system", role="system")
    with pytest.raises(AuthError), db.session_scope(engine) as session:
        export.build(session, export.ExportRequest("s1", "pairs"), account=forged)


def test_every_guarded_service_requires_an_account() -> None:
    """No service function that checks a role still has `account: Account | None = None`."""
    root = Path(accounts.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "account: Account | None" in path.read_text(encoding="utf-8")
        and "app" not in path.relative_to(root).parts
    ]
    assert offenders == []


def test_revoked_rows_stay_for_the_audit(engine: Engine) -> None:
    token = _start(engine, _account(engine, "alice"))
    _deactivate(engine, "alice")
    with Session(engine) as session:
        row = session.exec(
            select(UserSession).where(col(UserSession.token_hash) == sessions.token_hash(token))
        ).one()
    assert row.revoked_at is not None


# ------------------------------------------------------------------------- the page (point 2, AppTest)


def test_deactivation_ends_the_open_page_at_its_next_run(env_db: str, engine: Engine) -> None:
    from streamlit.testing.v1 import AppTest

    with db.session_scope(engine) as session:
        accounts.add_user(session, username="rita", role="researcher", password=PASSWORD, account=SYSTEM)
    main = Path(__file__).resolve().parents[1] / "annotator" / "app" / "main.py"
    at = AppTest.from_file(str(main), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input("rita")
    at.text_input(key="login_password").input(PASSWORD)
    at.button(key="login_submit").click().run()
    assert not at.exception
    assert at.session_state["account"].username == "rita"
    _deactivate(engine, "rita")
    at.run()
    assert not at.exception
    assert "account" not in at.session_state or at.session_state["account"] is None


def test_an_account_whose_role_differs_from_the_database_is_refused(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 1)
    ann = _account(engine, "ann")
    promoted = Account(id=ann.id, username=ann.username, role="researcher")
    with pytest.raises(AuthError, match="role has changed"), db.session_scope(engine) as session:
        export.build(session, export.ExportRequest("s1", "pairs"), account=promoted)


def test_a_researcher_cannot_deactivate_themselves(engine: Engine) -> None:
    rita = _account(engine, "rita", role="researcher")
    with pytest.raises(UserError, match="your own account"), db.session_scope(engine) as session:
        accounts.set_active(session, username="rita", active=False, account=rita)
