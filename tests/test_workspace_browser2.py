"""The workspace in headless Debian chromium, for what the AppTests cannot show: the study's theme,
switching study, flagging, hidden names, My work's wording, account actions, import errors, and a
submit button that waits for the whole form. One server for the module."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route
from sqlalchemy.orm.attributes import flag_modified
from sqlmodel import select

from annotator.rating import drafts, labels
from annotator.store import db
from annotator.store.models import Study, User, id_of
from tests.utils.apphelpers import (
    KEY_ANSWERS,
    PASSWORD,
    VIEWPORT,
    AppDB,
    add_study,
    annotators_page,
    build_app_db,
    item_tag,
    log_in,
    open_expander,
    running_app,
    wait_drawn,
    wait_for_session_cookie,
    wait_idle,
    wait_next_item,
)
from tests.utils.pagehelpers import choose, choose_study
from tests.utils.ratings import rate

pytestmark = pytest.mark.browser
BUTTON_GROUP_JS = "**/static/js/ButtonGroup.*.js"  # Streamlit's script of st.segmented_control
OTHER = "alpine"  # ann2's second study, listed first (by name), with a light theme


def set_theme(app_db: AppDB, study: str, theme: str) -> None:
    with db.session_scope(app_db.engine) as session:
        row = session.exec(select(Study).where(Study.name == study)).one()
        row.config = {**row.config, "display": {**row.config.get("display", {}), "theme": theme}}
        flag_modified(row, "config")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """study1 (dark theme): ann1 and ann2 have its 5 pairs, both already judged the last one (in
    disagreement, so it waits for an adjudicator); ann2 also has the light-themed study OTHER."""
    folder = tmp_path_factory.mktemp("workspace2")
    app_db = build_app_db(
        folder / "db", n_pairs=5, queues={"ann1": "ABABA", "ann2": "BABAB"}, acknowledged=["ann1", "ann2"]
    )
    add_study(app_db, folder / "other", OTHER, "ann2")
    set_theme(app_db, "study1", "dark")
    set_theme(app_db, OTHER, "light")
    rate(app_db.engine, "ann1", "EXT-00004-zq", preference=2)
    rate(app_db.engine, "ann2", "EXT-00004-zq", preference=-2)
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url, app_db


def new_tab(chrome: Browser, **options: str) -> Page:
    page = chrome.new_context(viewport=VIEWPORT, **options).new_page()  # type: ignore[arg-type]
    page.set_default_timeout(30_000)
    return page


def rating_page(page: Page, base_url: str, username: str) -> str:
    """Log in and wait until the rating form is drawn; returns the item's tag ("a12r0")."""
    log_in(page, base_url, username, PASSWORD)
    page.locator("[class*='_confidence'] [data-testid='stButtonGroup'] button").first.wait_for()
    wait_idle(page)
    return item_tag(page)


def brightness(page: Page) -> int:
    """The sum of the red, green and blue of the app's background (0 black ... 765 white)."""
    colour = page.evaluate("() => getComputedStyle(document.querySelector('.stApp')).backgroundColor")
    return sum(int(v) for v in colour.removeprefix("rgb(").rstrip(")").split(",")[:3])


def text(page: Page) -> str:
    return str(page.evaluate("() => document.body.innerText"))


# ------------------------------------------------------------------------------------------ theme


def test_a_dark_study_is_dark_on_a_light_system(live: tuple[str, AppDB], chrome: Browser) -> None:
    page = new_tab(chrome, color_scheme="light")
    rating_page(page, live[0], "ann1")
    assert brightness(page) < 3 * 80
    page.context.close()


def test_a_light_study_is_light_on_a_dark_system(live: tuple[str, AppDB], chrome: Browser) -> None:
    page = new_tab(chrome, color_scheme="dark")
    rating_page(page, live[0], "ann2")  # OTHER comes first
    assert OTHER in text(page)
    assert brightness(page) > 3 * 200
    page.context.close()


# ------------------------------------------------------------------------------------------ rating page


def test_switching_study_switches_the_item(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    first = rating_page(tab, base_url, "ann2")
    assert "Other study question" in text(tab)
    choose_study(tab, "study1")
    wait_next_item(tab, first)
    assert app_db.assignment(app_db.on_screen("ann2")).study_id == app_db.study_id
    assert "Other study question" not in text(tab)


def test_an_item_flagged_with_only_a_reason_leaves_the_queue(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    tag = rating_page(tab, base_url, "ann1")
    flagged = app_db.on_screen("ann1")
    open_expander(
        tab, "Skip this item or report it as broken", tab.get_by_role("button", name="Flag as broken")
    )
    tab.get_by_role("textbox", name="Why?").fill("The responses are cut off.")
    tab.get_by_role("button", name="Flag as broken").click()
    wait_next_item(tab, tag)
    assert app_db.assignment(flagged).status == "flagged"
    assert app_db.judgments(flagged) == [], "no rating was needed"


def full_draft(app_db: AppDB, username: str) -> tuple[int, dict[str, int]]:
    """A draft answering every question of `username`'s next item in study1: (assignment, answers)."""
    annotator = app_db.account(username)
    with db.session_scope(app_db.engine) as session:
        found = labels.next_assignment(session, account=annotator, study_id=app_db.study_id)
        assert found is not None
        answers = {
            name.replace("_", ":").replace("rubric", "rubric:"): int(digit)
            for name, digit in KEY_ANSWERS.items()
        }
        answers["preference"] -= 1  # keys 1-5 choose preference 0-4
        drafts.save_draft(
            session, assignment_id=id_of(found), account=annotator, answers=answers, opened_posts=[]
        )
        return id_of(found), answers


def log_in_holding_the_answer_buttons(page: Page, base_url: str, username: str) -> list[Route]:
    """Log in while Streamlit's script of the answer buttons is held back (they stay placeholders,
    as under load); returns the held requests once the submit button is on the page."""
    page.goto(base_url)
    wait_idle(page)
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    held: list[Route] = []
    page.route(BUTTON_GROUP_JS, lambda route: held.append(route))
    with page.expect_request(lambda request: "/static/js/ButtonGroup." in request.url):
        page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name="Submit and next").wait_for(state="attached")
    assert held, "the answer buttons are placeholders"
    return held


def release(page: Page, held: list[Route]) -> None:
    for route in held:
        route.continue_()
    page.unroute(BUTTON_GROUP_JS)


def test_submit_right_after_login_waits_for_the_whole_form(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    assignment_id, answers = full_draft(app_db, "ann1")
    held = log_in_holding_the_answer_buttons(tab, base_url, "ann1")
    submit = tab.get_by_role("button", name="Submit and next")
    early = tab.evaluate(  # one snapshot: the questions drawn so far, and can the button be clicked?
        "() => ({questions: document.querySelectorAll('[data-testid=stButtonGroup]').length,"
        " clickable: getComputedStyle(document.querySelector('.st-key-annotate_submit button'))"
        ".pointerEvents !== 'none'})"
    )
    assert early["questions"] >= len(KEY_ANSWERS) or not early["clickable"], early
    release(tab, held)
    shown = item_tag(tab)
    submit.click()  # as soon as it takes a click
    wait_next_item(tab, shown)
    saved = app_db.judgments(assignment_id)
    assert len(saved) == 1
    assert saved[0].confidence == answers["confidence"]
    assert len(app_db.scores(id_of(saved[0]))) == 10, "every score of the draft"
    assert tab.locator("[data-testid='stAlertContentError']").count() == 0


def test_ctrl_enter_before_the_form_is_there_submits_nothing(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    assignment_id, _ = full_draft(app_db, "ann1")
    held = log_in_holding_the_answer_buttons(tab, base_url, "ann1")
    tab.keyboard.press("Control+Enter")
    wait_idle(tab)  # a run the key started (there must be none) has finished
    assert app_db.judgments(assignment_id) == []
    release(tab, held)
    tab.locator("[class*='_confidence'] [data-testid='stButtonGroup'] button").first.wait_for()
    assert app_db.judgments(assignment_id) == []


# ------------------------------------------------------------------------------------------ other pages


def test_my_work_says_submitted_once(live: tuple[str, AppDB], tab: Page) -> None:
    log_in(tab, live[0], "ann2", PASSWORD)
    tab.get_by_role("link", name="My work").click()
    wait_idle(tab)
    tab.get_by_role("heading", name="My work").wait_for()
    tab.get_by_text("submitted once").first.wait_for()
    assert "revision" not in text(tab)


def test_annotator_names_are_hidden_on_the_adjudicate_page(live: tuple[str, AppDB], tab: Page) -> None:
    log_in(tab, live[0], "adj1", PASSWORD)
    choose_study(tab, "study1")
    tab.get_by_role("heading", name="Judgments").wait_for()
    wait_drawn(tab)  # the tables draw their cells
    assert not tab.get_by_role("switch", name="Show annotator names").is_checked()
    page_text = text(tab) + str(tab.evaluate("() => document.body.innerHTML"))
    assert "ann1" not in page_text and "ann2" not in page_text


def make_active(app_db: AppDB, username: str) -> None:
    with db.session_scope(app_db.engine) as session:
        user = session.get(User, app_db.users[username])
        assert user is not None
        user.active = True


def test_reactivate_from_the_annotators_page(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    annotators_page(tab, base_url, "gone1")
    if app_db.user("gone1").active:
        pytest.fail("gone1 starts deactivated")
    tab.get_by_role("button", name="Reactivate").click()
    tab.get_by_text("gone1 can log in again.").wait_for()
    assert app_db.user("gone1").active


def test_a_reset_password_is_shown_once_and_works(
    live: tuple[str, AppDB], tab: Page, chrome: Browser
) -> None:
    base_url, app_db = live
    make_active(app_db, "gone1")
    annotators_page(tab, base_url, "gone1")
    tab.get_by_role("button", name="Reset password…").click()
    tab.get_by_role("dialog").get_by_role("button", name="Reset password").click()
    code = tab.locator("[data-testid='stCode'] code").first
    code.wait_for()
    new_password = code.inner_text().strip()
    assert new_password and new_password != PASSWORD
    choose(tab, "Account", "ann1")  # any next run: the secret is gone
    assert new_password not in text(tab)
    other = new_tab(chrome)
    log_in(other, base_url, "gone1", new_password)
    other.get_by_role("button", name="Log out").wait_for()
    other.context.close()


def test_a_login_link_logs_in_once(live: tuple[str, AppDB], tab: Page, chrome: Browser) -> None:
    base_url, app_db = live
    make_active(app_db, "gone1")
    annotators_page(tab, base_url, "gone1")
    tab.get_by_role("button", name="Login link").click()
    code = tab.locator("[data-testid='stCode'] code").first
    code.wait_for()
    link = code.inner_text().strip()
    assert "?token=" in link
    first = new_tab(chrome)
    first.goto(link)
    first.get_by_role("button", name="Log out").wait_for()
    assert "token=" not in first.url
    first.context.close()
    second = new_tab(chrome)
    second.goto(link)
    wait_idle(second)
    second.locator("[data-testid='stAlertContentError']").wait_for()
    assert second.get_by_role("button", name="Log out").count() == 0
    second.context.close()


def test_import_errors_keep_their_line_breaks(live: tuple[str, AppDB], tab: Page, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x1"}\nnot json\n', encoding="utf-8")  # a problem on each of two lines
    log_in(tab, live[0], "res1", PASSWORD)
    tab.get_by_role("heading", name="Progress").wait_for()
    wait_for_session_cookie(tab)  # the new page load logs in by the cookie
    tab.goto(f"{live[0]}/data")
    tab.get_by_role("heading", name="Import and assign").wait_for()
    wait_idle(tab)
    tab.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(bad))
    wait_idle(tab)
    tab.get_by_role("textbox", name="Study").first.fill("broken")
    tab.get_by_role("button", name="Import").first.click()
    code = tab.locator("[data-testid='stCode'] code").first
    code.wait_for()
    lines = [line for line in code.inner_text().splitlines() if line.strip()]
    assert len(lines) >= 2, lines
    assert any("line 1" in line for line in lines) and any("line 2" in line for line in lines)
