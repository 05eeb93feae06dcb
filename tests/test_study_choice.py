"""The researcher's study, one choice for every page (AppTest): moving between pages or reloading (a new
session with the page's address) never switches it; a study name in the address that is no study is
ignored."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotator.intake import ingest
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, account_of
from annotator.store import db
from annotator.store.models import User
from tests.utils.apphelpers import MAIN, app_for
from tests.utils.factories import make_records, write_jsonl

pytestmark = pytest.mark.page


@pytest.fixture
def two_studies(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    for study in ("alpha", "beta"):
        path = write_jsonl(tmp_path / f"{study}.jsonl", make_records(2))
        ingest.import_file(engine, path, study=study, account=SYSTEM)
    with db.session_scope(engine) as session:
        accounts.add_user(
            session, username="res", role="researcher", password="a long enough pass 1", account=SYSTEM
        )
    monkeypatch.setenv(db.ENV_VAR, engine.url.render_as_string(hide_password=False))
    return engine


def _researcher(engine: Engine) -> object:
    with db.session_scope(engine) as session:
        return account_of(session.exec(select(User).where(User.username == "res")).one())


def test_the_study_chosen_on_one_page_is_the_study_of_the_next_and_of_a_reload(two_studies: Engine) -> None:
    at = app_for(_researcher(two_studies), timeout=120)  # type: ignore[arg-type]
    at.switch_page("views/progress.py").run()
    assert at.selectbox(key="progress_study").value == "alpha"  # the first, with nothing chosen yet
    at.selectbox(key="progress_study").set_value("beta").run()
    for page, key in [
        ("views/validation.py", "validation_study"),
        ("views/adjudicate.py", "adjudicate_study"),
    ]:
        at.switch_page(page).run()
        assert not at.exception
        assert at.selectbox(key=key).value == "beta", page
    address = at.query_params["study_name"]
    assert (address[0] if isinstance(address, list) else address) == "beta"
    reloaded = AppTest.from_file(str(MAIN), default_timeout=120)  # a new session with the address
    reloaded.session_state["account"] = _researcher(two_studies)
    reloaded.session_state["login_at"] = datetime.now(UTC)
    reloaded.query_params["study_name"] = "beta"
    reloaded.run()  # the researcher's start page: Progress
    assert reloaded.selectbox(key="progress_study").value == "beta"


def test_a_study_in_the_address_that_is_no_study_is_ignored(two_studies: Engine) -> None:
    at = app_for(_researcher(two_studies), timeout=120)  # type: ignore[arg-type]
    at.query_params["study_name"] = "<img src=x onerror=alert(1)>"
    at.switch_page("views/progress.py").run()
    assert not at.exception
    assert at.selectbox(key="progress_study").value == "alpha"
