"""Crowd-platform links (annotator/rating/crowd.py): pseudonymous accounts from a worker id, resume, places,
time limit, completion code; and the Prolific flow in headless chromium."""

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.errors import AuthError, UserError
from annotator.people import accounts, authorization
from annotator.rating import crowd, labels
from annotator.store import db
from annotator.store.models import Assignment, CrowdLink, Judgment, User, id_of
from annotator.study import PLATFORMS, get_study
from tests.utils.apphelpers import IDLE, answer_by_keys, running_app
from tests.utils.databases import fresh_db_url
from tests.utils.factories import make_form
from tests.utils.qchelpers import qc_study

PID = "5f9a1b2c3d4e5f6a7b8c9d0e"
PROLIFIC = {"platform": "prolific", "places": 2, "completion_code": "C1A2B3", "items": 3}
URL = "https://app.prolific.com/submissions/complete?cc=C1A2B3"


def _params(pid: str = PID) -> dict[str, str]:
    return {"study": "s1", "PROLIFIC_PID": pid, "STUDY_ID": "st123", "SESSION_ID": "se456"}


def _enter(engine: Engine, params: dict[str, str]) -> authorization.Account:
    with db.session_scope(engine) as session:
        return crowd.enter(session, study="s1", params=params)


def test_a_link_creates_a_pseudonymous_annotator_with_work(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    account = _enter(engine, _params())
    with Session(engine) as session:
        user = session.exec(select(User).where(User.id == account.id)).one()
        link = session.exec(select(CrowdLink)).one()
        items = session.exec(select(Assignment).where(Assignment.annotator_id == account.id)).all()
    assert account.role == "annotator" and PID not in user.username and PID not in link.worker_hash
    assert (len(items), link.platform_study, link.platform_session) == (3, "st123", "se456")


def test_the_same_link_resumes_the_same_account(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    assert _enter(engine, _params()) == _enter(engine, _params())


def test_a_crowd_account_cannot_log_in_with_a_password(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    account = _enter(engine, _params())
    with db.session_scope(engine) as session, pytest.raises(AuthError):
        accounts.authenticate(session, account.username, crowd.NO_PASSWORD)


def test_links_cannot_mint_more_accounts_than_places(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    _enter(engine, _params("worker1"))
    _enter(engine, _params("worker2"))
    with pytest.raises(UserError, match="all places in this study are taken"):
        _enter(engine, _params("worker3"))


def test_a_study_without_crowd_links_refuses_them(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5)
    with pytest.raises(UserError, match="does not take participants from a crowd platform"):
        _enter(engine, _params())


def test_a_malformed_worker_id_is_refused(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    with pytest.raises(UserError, match="PROLIFIC_PID is not valid"):
        _enter(engine, _params("<script>"))


def test_mturk_links_use_the_worker_id_parameter(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC | {"platform": "mturk"})
    account = _enter(engine, {"study": "s1", "workerId": "A1B2C3", "assignmentId": "x", "hitId": "h"})
    assert account.username.startswith("mt-")


def test_the_time_limit_closes_a_resumed_session(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC | {"session_minutes": 30})
    _enter(engine, _params())
    with db.session_scope(engine) as session:
        link = session.exec(select(CrowdLink)).one()
        link.started_at = link.started_at - timedelta(minutes=31)
        session.add(link)
    with pytest.raises(AuthError, match="time for this study is over"):
        _enter(engine, _params())


def _timed_item_on_screen(engine: Engine, tmp_path: Path) -> tuple[authorization.Account, int]:
    """A worker of a 30-minute Prolific study with its first item shown: the account, the assignment."""
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC | {"session_minutes": 30})
    account = _enter(engine, _params())
    with db.session_scope(engine) as session:
        item = labels.next_assignment(session, account=account, study_id=1)
        assert item is not None
        labels.show(session, assignment_id=id_of(item), account=account)
        return account, id_of(item)


def test_the_time_limit_refuses_a_submit_after_it(engine: Engine, tmp_path: Path) -> None:
    account, item = _timed_item_on_screen(engine, tmp_path)
    with db.session_scope(engine) as session:
        link = session.exec(select(CrowdLink)).one()
        link.started_at = link.started_at - timedelta(minutes=31)
        session.add(link)
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="time for this study is over"):
        labels.submit(session, assignment_id=item, account=account, submission=make_form("late", 0))
    with Session(engine) as session:
        assert session.exec(select(Judgment)).all() == []


def test_a_submit_within_the_time_limit_is_saved(engine: Engine, tmp_path: Path) -> None:
    account, item = _timed_item_on_screen(engine, tmp_path)
    with db.session_scope(engine) as session:
        labels.submit(session, assignment_id=item, account=account, submission=make_form("in-time", 0))
    with Session(engine) as session:
        assert len(session.exec(select(Judgment)).all()) == 1


def test_completion_comes_when_the_queue_is_done(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC | {"completion_url": URL})
    account = _enter(engine, _params())
    with db.session_scope(engine) as session:
        assert crowd.completion(session, account=account, study_id=1) is None
        for item in session.exec(select(Assignment).where(Assignment.annotator_id == account.id)):
            item.status = "done"
            session.add(item)
    with db.session_scope(engine) as session:
        assert crowd.completion(session, account=account, study_id=1) == crowd.Completion("C1A2B3", URL)


def _prolific_db(folder: Path, name: str) -> tuple[str, Engine]:
    """A database whose study s1 takes Prolific links (one item per worker): its URL and an engine."""
    url = fresh_db_url(folder, name, migrated=True, keep=True)
    engine = db.make_engine(url)
    qc_study(engine, folder, 1, crowd=PROLIFIC | {"items": 1})
    return url, engine


def _open_link(page: Page, base_url: str) -> None:
    """Follow the study link as a Prolific worker would (a tall page: the whole form in view)."""
    page.set_viewport_size({"width": 1400, "height": 2600})
    query = "&".join(f"{k}={v}" for k, v in _params().items())
    page.goto(f"{base_url}/?{query}")
    page.locator(IDLE).wait_for(state="attached")


#: How long the submit's run may take to draw the finished screen on a loaded machine.
SUBMIT_RUN_MS = 60_000


def _rate_the_item(page: Page) -> None:
    """Acknowledge the guidelines, answer every question by keys and submit."""
    page.locator(".st-key-ack_guidelines button").click()
    page.locator(IDLE).wait_for(state="attached")
    expect(page.locator("[class*='st-key-q_A_correctness']").first).to_be_visible()
    answer_by_keys(page)
    page.locator(".st-key-annotate_submit button").click()


@pytest.fixture(scope="module")
def prolific_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live server over a study that takes Prolific links (one item per worker, no redirect URL)."""
    folder = tmp_path_factory.mktemp("crowd")
    url, engine = _prolific_db(folder, "crowd")
    engine.dispose()
    with running_app(url, folder / "server.log") as base_url:
        yield base_url


@pytest.mark.browser
def test_prolific_link_to_completion_code_in_the_browser(prolific_app: str, tab: Page) -> None:
    _open_link(tab, prolific_app)
    expect(tab.get_by_text("Please read the guidelines once")).to_be_visible()
    assert PID not in tab.url and PID not in tab.content()
    _rate_the_item(tab)
    expect(tab.get_by_text("Your completion code:")).to_be_visible(timeout=SUBMIT_RUN_MS)
    expect(tab.get_by_text("C1A2B3")).to_be_visible()
    assert PID not in tab.content()


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        (URL, True),
        ("http://127.0.0.1:8501/?done=1", True),
        ("http://localhost:8501/done", True),
        ("http://example.org/done", False),
        ("http://localhost.example.org/done", False),
        ("javascript:alert(1)", False),
        ("", False),
    ],
)
def test_the_finished_screen_redirects_only_to_https_or_this_machine(url: str, allowed: bool) -> None:
    assert crowd.may_redirect(url) is allowed


@pytest.fixture(scope="module")
def prolific_redirect_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live server over a Prolific study whose completion URL is a path of the same server."""
    folder = tmp_path_factory.mktemp("crowd-redirect")
    url, engine = _prolific_db(folder, "crowd_redirect")
    with running_app(url, folder / "server.log") as base_url:
        with db.session_scope(engine) as session:  # the port is known only now; read on every page run
            study = get_study(session, "s1")
            config = dict(study.config)
            config["crowd"] = dict(config["crowd"]) | {"completion_url": f"{base_url}{DONE_PATH}"}
            study.config = config
            session.add(study)
        engine.dispose()
        yield base_url


DONE_PATH = "/_stcore/health?done=1"


@pytest.mark.browser
def test_the_finished_screen_sends_the_browser_to_the_completion_url(
    prolific_redirect_app: str, tab: Page
) -> None:
    base = prolific_redirect_app
    requested: list[str] = []
    tab.on("request", lambda request: requested.append(request.url))
    _open_link(tab, base)
    _rate_the_item(tab)
    expect(tab.get_by_text("C1A2B3")).to_be_visible(timeout=SUBMIT_RUN_MS)  # shown 5 s before the redirect
    tab.wait_for_url(f"{base}{DONE_PATH}", timeout=30_000)
    assert tab.url == f"{base}{DONE_PATH}"
    others = [u for u in requested if not u.startswith((base, "data:", "blob:", "about:"))]
    assert others == []


def test_every_platform_of_the_config_has_its_link_parameters() -> None:
    assert set(crowd.WORKER_PARAMS) == set(crowd.STUDY_PARAMS) == set(crowd.SESSION_PARAMS) == set(PLATFORMS)
