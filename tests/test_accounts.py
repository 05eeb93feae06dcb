"""Users, roles, password hashing and login (annotator.people.accounts and `annotator users`)."""

import re
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import AuthError, UserError
from annotator.people import accounts, authorization, sessions
from annotator.people.authorization import SYSTEM
from annotator.store import db
from annotator.store.models import Event, User
from tests.utils.factories import make_user

runner = CliRunner()
PASSWORD = "s3cret-passw0rd"


def _add(engine: Engine, username: str = "alice", role: str = "annotator", password: str = PASSWORD) -> None:
    with db.session_scope(engine) as session:
        accounts.add_user(session, username=username, role=role, password=password, account=SYSTEM)


def _login(engine: Engine, username: str, password: str) -> authorization.Account:
    with db.session_scope(engine) as session:
        return accounts.authenticate(session, username, password)


@pytest.mark.parametrize("username", ["", "has space", "-dash-first", "x" * 101, "semi;colon"])
def test_a_bad_username_is_refused(engine: Engine, username: str) -> None:
    with pytest.raises(UserError, match="invalid username"):
        _add(engine, username=username)


def test_an_unknown_role_is_refused(engine: Engine) -> None:
    with pytest.raises(UserError, match=re.escape("unknown role 'admin'; use one of annotator, adjudicator")):
        _add(engine, role="admin")


def test_a_short_password_is_refused(engine: Engine) -> None:
    with pytest.raises(UserError, match="at least 8 characters"):
        _add(engine, password="short")


def test_a_taken_username_is_refused(engine: Engine) -> None:
    _add(engine)
    with pytest.raises(UserError, match="user 'alice' already exists"):
        _add(engine, role="researcher")


def test_the_password_is_stored_as_a_salted_argon2id_hash(engine: Engine, production_hashing: None) -> None:
    _add(engine, username="alice")
    _add(engine, username="bob")
    with Session(engine) as session:
        hashes = list(session.exec(select(User.password_hash)))
    assert all(h.startswith("$argon2id$v=19$m=47104,t=3,p=1$") for h in hashes)
    assert all(PASSWORD not in h for h in hashes)
    assert hashes[0] != hashes[1]  # different salts


def test_verify_password_rejects_a_malformed_hash() -> None:
    assert not accounts.verify_password(PASSWORD, "plain-text")
    assert not accounts.verify_password(PASSWORD, "md5$1$1$1$abc$def")


def test_authenticate_with_the_right_password(engine: Engine) -> None:
    _add(engine, role="researcher")
    account = _login(engine, "alice", PASSWORD)
    assert (account.username, account.role) == ("alice", "researcher")


def test_authenticate_with_a_wrong_password(engine: Engine) -> None:
    _add(engine)
    with pytest.raises(AuthError, match=re.escape(accounts.BAD_LOGIN)):
        _login(engine, "alice", PASSWORD + "x")


def test_an_unknown_user_looks_like_a_wrong_password(engine: Engine) -> None:
    with pytest.raises(AuthError, match=re.escape(accounts.BAD_LOGIN)):
        _login(engine, "nobody", PASSWORD)


def test_a_failed_login_is_counted_and_logged(engine: Engine) -> None:
    _add(engine)
    with pytest.raises(AuthError):
        _login(engine, "alice", "wrong-password")
    with Session(engine) as session:
        assert session.exec(select(User.failed_logins)).one() == 1
        reasons = [
            e.detail.get("reason") for e in session.exec(select(Event).where(Event.action == "login_failed"))
        ]
    assert reasons == ["wrong password"]


def test_repeated_failures_throttle_even_the_right_password(engine: Engine) -> None:
    _add(engine)
    for _ in range(accounts.FREE_ATTEMPTS):
        with pytest.raises(AuthError, match=re.escape(accounts.BAD_LOGIN)):
            _login(engine, "alice", "wrong-password")
    with pytest.raises(AuthError, match="too many failed attempts"):
        _login(engine, "alice", PASSWORD)


def test_a_successful_login_resets_the_failure_count(engine: Engine) -> None:
    _add(engine)
    with pytest.raises(AuthError):
        _login(engine, "alice", "wrong-password")
    _login(engine, "alice", PASSWORD)
    with Session(engine) as session:
        assert session.exec(select(User.failed_logins)).one() == 0


def test_a_deactivated_account_gets_its_own_message(engine: Engine) -> None:
    _add(engine)
    with db.session_scope(engine) as session:
        accounts.set_active(session, username="alice", active=False, account=SYSTEM)
    with pytest.raises(AuthError, match="deactivated") as info:
        _login(engine, "alice", PASSWORD)
    assert str(info.value) != accounts.BAD_LOGIN


def test_a_reactivated_account_can_log_in(engine: Engine) -> None:
    _add(engine)
    for active in (False, True):
        with db.session_scope(engine) as session:
            accounts.set_active(session, username="alice", active=active, account=SYSTEM)
    assert _login(engine, "alice", PASSWORD).username == "alice"


def test_a_login_token_works_once(engine: Engine) -> None:
    _add(engine)
    with db.session_scope(engine) as session:
        token = accounts.issue_login_token(session, username="alice", account=SYSTEM)
    with db.session_scope(engine) as session:
        assert accounts.redeem_login_token(session, token).username == "alice"
    with pytest.raises(AuthError, match="not valid or was already used"), db.session_scope(engine) as session:
        accounts.redeem_login_token(session, token)


def test_only_the_hash_of_a_token_is_stored(engine: Engine) -> None:
    _add(engine)
    with db.session_scope(engine) as session:
        token = accounts.issue_login_token(session, username="alice", account=SYSTEM)
    with Session(engine) as session:
        stored = session.exec(select(User.token_hash)).one()
    assert stored is not None and token not in stored


def test_an_expired_login_token_is_refused(engine: Engine) -> None:
    _add(engine)
    with db.session_scope(engine) as session:
        token = accounts.issue_login_token(
            session, username="alice", valid_for=timedelta(seconds=-1), account=SYSTEM
        )
    with pytest.raises(AuthError, match="expired"), db.session_scope(engine) as session:
        accounts.redeem_login_token(session, token)


def test_a_new_token_replaces_the_old_one(engine: Engine) -> None:
    _add(engine)
    with db.session_scope(engine) as session:
        old = accounts.issue_login_token(session, username="alice", account=SYSTEM)
        new = accounts.issue_login_token(session, username="alice", account=SYSTEM)
    with pytest.raises(AuthError), db.session_scope(engine) as session:
        accounts.redeem_login_token(session, old)
    with db.session_scope(engine) as session:
        assert accounts.redeem_login_token(session, new).username == "alice"


def test_require_role(engine: Engine) -> None:
    _add(engine)
    account = _login(engine, "alice", PASSWORD)
    with Session(engine) as session:
        authorization.require_role(session, account, "annotator", "researcher")
        with pytest.raises(AuthError, match="needs adjudicator or researcher"):
            authorization.require_role(session, account, "adjudicator", "researcher")


def test_list_users_by_name_and_role(engine: Engine) -> None:
    with db.session_scope(engine) as session:
        for name, role in [("zoe", "annotator"), ("adam", "researcher"), ("mia", "annotator")]:
            make_user(session, name, role=role)
    with Session(engine) as session:
        assert [u.username for u in accounts.list_users(session)] == ["adam", "mia", "zoe"]
        assert [u.username for u in accounts.list_users(session, role="annotator")] == ["mia", "zoe"]


# ---------------------------------------------------------------------------------------------- the CLI


def test_cli_users_add_prints_a_generated_password_that_works(env_db: str, engine: Engine) -> None:
    result = runner.invoke(app, ["users", "add", "alice", "--role", "adjudicator"])
    assert result.exit_code == 0, result.output
    match = re.search(r"password \(shown once\): (\S+)", result.stdout)
    assert match is not None
    assert _login(engine, "alice", match.group(1)).role == "adjudicator"


def test_cli_users_add_with_a_password(env_db: str, engine: Engine) -> None:
    result = runner.invoke(app, ["users", "add", "bob", "--password"], input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "shown once" not in result.stdout
    assert _login(engine, "bob", PASSWORD).role == "annotator"


def test_cli_users_add_refuses_a_duplicate(env_db: str) -> None:
    runner.invoke(app, ["users", "add", "alice", "--password"], input=PASSWORD)
    result = runner.invoke(app, ["users", "add", "alice", "--password"], input=PASSWORD)
    assert result.exit_code == 1
    assert "already exists" in result.stderr and "Traceback" not in result.output


def test_cli_users_list(env_db: str) -> None:
    runner.invoke(app, ["users", "add", "alice", "--password", "--role", "researcher"], input=PASSWORD)
    runner.invoke(app, ["users", "add", "bob", "--password"], input=PASSWORD)
    result = runner.invoke(app, ["users", "list"])
    assert result.exit_code == 0, result.output
    assert re.search(r"alice\s.*researcher\s.*yes", result.stdout)
    assert re.search(r"bob\s.*annotator\s.*yes", result.stdout)


def test_cli_users_deactivate(env_db: str, engine: Engine) -> None:
    runner.invoke(app, ["users", "add", "alice", "--password"], input=PASSWORD)
    result = runner.invoke(app, ["users", "deactivate", "alice"])
    assert result.exit_code == 0, result.output
    with pytest.raises(AuthError, match="deactivated"):
        _login(engine, "alice", PASSWORD)
    assert re.search(r"alice\s.*annotator\s.*no", runner.invoke(app, ["users", "list"]).stdout)


def test_cli_users_deactivate_an_unknown_user(env_db: str) -> None:
    result = runner.invoke(app, ["users", "deactivate", "ghost"])
    assert result.exit_code == 1
    assert "no user called 'ghost'" in result.stderr


def test_cli_users_add_has_no_password_argument(env_db: str) -> None:
    """A password given as an argument would be visible to every user of the machine in `ps`."""
    result = runner.invoke(app, ["users", "add", "bob", "--password", PASSWORD])
    assert result.exit_code != 0


def test_cli_users_reactivate(env_db: str, engine: Engine) -> None:
    runner.invoke(app, ["users", "add", "alice", "--password"], input=PASSWORD)
    runner.invoke(app, ["users", "deactivate", "alice"])
    result = runner.invoke(app, ["users", "reactivate", "alice"])
    assert result.exit_code == 0, result.output
    assert _login(engine, "alice", PASSWORD).username == "alice"


def test_cli_users_reset_password_prints_one_that_works(env_db: str, engine: Engine) -> None:
    runner.invoke(app, ["users", "add", "alice", "--password"], input=PASSWORD)
    result = runner.invoke(app, ["users", "reset-password", "alice"])
    assert result.exit_code == 0, result.output
    match = re.search(r"\(shown once\): (\S+)", result.stdout)
    assert match is not None
    assert _login(engine, "alice", match.group(1)).username == "alice"
    with pytest.raises(AuthError, match=re.escape(accounts.BAD_LOGIN)):
        _login(engine, "alice", PASSWORD)


def test_cli_users_link_prints_a_single_use_link(env_db: str, engine: Engine) -> None:
    runner.invoke(app, ["users", "add", "alice", "--password"], input=PASSWORD)
    result = runner.invoke(app, ["users", "link", "alice", "--base-url", "https://studio.example/"])
    assert result.exit_code == 0, result.output
    match = re.search(r"^https://studio\.example/\?token=(\S+)$", result.stdout.strip())
    assert match is not None
    with db.session_scope(engine) as session:
        assert accounts.redeem_login_token(session, match.group(1)).username == "alice"


# ------------------------------------------------------------------------------------- passwords (#17.11)


def test_an_old_scrypt_hash_still_logs_in_and_is_upgraded(engine: Engine) -> None:
    salt, digest = b"0123456789abcdef", None
    import base64
    import hashlib

    digest = hashlib.scrypt(PASSWORD.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    old = f"scrypt$16384$8$1${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"
    with db.session_scope(engine) as session:
        make_user(session, "alice")
        user = session.exec(select(User)).one()
        user.password_hash = old
    assert _login(engine, "alice", PASSWORD).username == "alice"
    with Session(engine) as session:
        assert session.exec(select(User.password_hash)).one().startswith("$argon2id$")
    assert _login(engine, "alice", PASSWORD).username == "alice"


@pytest.mark.parametrize("password", ["password123", "Qwertyuiop", "iloveyou1", "corvette", "Q1W2E3R4T5"])
def test_a_common_password_is_refused(engine: Engine, password: str) -> None:
    with pytest.raises(UserError, match="most common"):
        _add(engine, password=password)


def test_a_password_equal_to_the_username_is_refused(engine: Engine) -> None:
    with pytest.raises(UserError, match="must not be the user name"):
        _add(engine, username="annotator07", password="ANNOTATOR07")


def test_usernames_are_unique_whatever_the_letter_case(engine: Engine) -> None:
    _add(engine, username="Alice")
    with pytest.raises(UserError, match="user 'Alice' already exists"):
        _add(engine, username="alice")


def test_login_ignores_the_letter_case_of_the_name(engine: Engine) -> None:
    _add(engine, username="Alice")
    assert _login(engine, "ALICE", PASSWORD).username == "Alice"


def test_a_non_utf8_password_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(UserError, match="not valid UTF-8"):
        _add(engine, password="abc\udcff" + "defgh")


def test_a_non_utf8_password_at_login_is_a_wrong_password(engine: Engine) -> None:
    _add(engine)
    with pytest.raises(AuthError, match=re.escape(accounts.BAD_LOGIN)):
        _login(engine, "alice", "abc\udcffdefgh")


def test_cli_users_add_refuses_a_non_utf8_password_on_stdin(env_db: str) -> None:
    result = runner.invoke(app, ["users", "add", "bob", "--password"], input=b"\xff\xfepassword-x\n")
    assert result.exit_code == 1
    assert "not valid UTF-8" in result.stderr and "Traceback" not in result.output


def test_reset_password_ends_the_users_sessions(engine: Engine) -> None:
    _add(engine)
    account = _login(engine, "alice", PASSWORD)
    with db.session_scope(engine) as session:
        token = sessions.start_session(session, account=account)
    with db.session_scope(engine) as session:
        accounts.reset_password(session, username="alice", account=SYSTEM)
    with pytest.raises(AuthError, match="session has ended"), db.session_scope(engine) as session:
        sessions.resume_session(session, token)


def test_only_a_researcher_may_reset_a_password(engine: Engine) -> None:
    _add(engine)
    _add(engine, username="bob", role="adjudicator")
    bob = _login(engine, "bob", PASSWORD)
    with pytest.raises(AuthError, match="needs researcher"), db.session_scope(engine) as session:
        accounts.reset_password(session, username="alice", account=bob)


def test_a_burst_of_password_checks_runs_at_most_the_hashing_bound_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Argon2id (46 MiB and a core each) never runs more than accounts.HASHING allows at the same time:
    each check waits inside until the bound is filled (or no other check is left to come)."""
    import threading

    total = 24
    bound = accounts.HASHING._initial_value  # type: ignore[attr-defined]
    state = {"running": 0, "done": 0, "most": 0}
    changed = threading.Condition()

    class CountingHasher:
        def verify(self, stored: str, raw: bytes) -> bool:
            with changed:
                state["running"] += 1
                state["most"] = max(state["most"], state["running"])
                changed.notify_all()
                changed.wait_for(
                    lambda: state["running"] >= bound or state["running"] + state["done"] == total
                )
                state["running"] -= 1
                state["done"] += 1
                changed.notify_all()
            return True

    monkeypatch.setattr(accounts, "HASHER", CountingHasher())
    check = accounts.verify_password
    threads = [threading.Thread(target=check, args=("pw", "$argon2id$x")) for _ in range(total)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert state["done"] == total
    assert state["most"] == bound < total
