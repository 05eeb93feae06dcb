"""The Annotators page's account actions (AppTest): confirmation first, reactivate, reset, login link."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotator.people import accounts
from annotator.store import db
from tests.utils.apphelpers import ROOT, AppDB, build_app_db

pytestmark = pytest.mark.page  # pages in AppTest: the PostgreSQL pass leaves it out

PAGE = ROOT / "annotator" / "app" / "views" / "annotators.py"


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppDB]:
    built = build_app_db(tmp_path / "db", acknowledged=["ann1", "ann2"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    yield built
    built.engine.dispose()


def page(app_db: AppDB) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    at.session_state["account"] = app_db.account("res1")
    at.session_state["login_at"] = datetime.now(UTC)
    at.run()
    assert not at.exception
    at.selectbox(key="annotators_name").select("ann1").run()
    return at


def test_deactivate_waits_for_the_confirmation(app_db: AppDB) -> None:
    at = page(app_db)
    at.button(key="annotators_deactivate").click().run()
    assert not at.exception
    assert app_db.user("ann1").active, "nothing happens before the confirmation"
    at.button(key="annotators_confirm").click().run()
    assert not at.exception
    assert not app_db.user("ann1").active


def test_a_deactivated_account_can_be_reactivated(app_db: AppDB) -> None:
    with db.session_scope(app_db.engine) as session:
        accounts.set_active(session, username="ann1", active=False, account=app_db.account("res1"))
    at = page(app_db)
    at.button(key="annotators_reactivate").click().run()
    assert not at.exception
    assert app_db.user("ann1").active


def test_reassign_waits_for_the_confirmation(app_db: AppDB) -> None:
    before = len(app_db.queue("ann1"))
    at = page(app_db)
    at.button(key="annotators_reassign").click().run()
    assert len(app_db.queue("ann1")) == before, "nothing moves before the confirmation"
    assert any(b.key == "annotators_confirm" for b in at.button)


def test_reset_password_shows_the_new_one_once(app_db: AppDB) -> None:
    at = page(app_db)
    at.button(key="annotators_reset").click().run()
    at.button(key="annotators_confirm").click().run()
    assert not at.exception
    [shown] = [c.value for c in at.code]
    with app_db.session() as session:
        assert accounts.verify_password(shown, accounts.get_user(session, "ann1").password_hash)
    at.run()
    assert [c.value for c in at.code] == [shown], "another click on the page does not lose it"
    at.button(key="annotators_hide_secret").click().run()
    assert not at.code, "hidden for good: it is shown in no other place"


def test_a_login_link_is_issued_from_the_page(app_db: AppDB) -> None:
    at = page(app_db)
    at.button(key="annotators_link").click().run()
    assert not at.exception
    [link] = [c.value for c in at.code]
    token = link.split("?token=", 1)[1]
    with db.session_scope(app_db.engine) as session:
        assert accounts.redeem_login_token(session, token).username == "ann1"
