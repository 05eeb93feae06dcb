"""The profile owner's page in chromium (static/owner.js): after "Save and continue" the next pair
starts from its top with nothing ticked, and the keyboard focus is on its first question (the page
kept the scroll position of the Save button, far down, and the focus fell to the page); a pair is
answered with one digit per question and saved with Ctrl+Enter; answers ticked but not saved come
back after a reload of the same pair, and never on another pair."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from annotator.people.authorization import SYSTEM
from annotator.rating.owner_links import issue_owner_link
from annotator.review.owner_rows import owner_rows
from annotator.store import db
from annotator.study import load_config
from tests.utils.apphelpers import (
    PHONE,
    STUDY,
    VIEWPORT,
    AppDB,
    build_app_db,
    pair_record,
    running_app,
    wait_idle,
)

pytestmark = pytest.mark.browser

WAIT = 60_000  # ms: a run on a loaded machine
ASPECT_DIGITS = {2: 1, 1: 2, 0: 3}  # an aspect's stored answer -> its option's digit (Yes, Partly, No)


def _owner_db(tmp_path: Path, pairs: int) -> tuple[AppDB, str]:
    """A study whose `pairs` pairs are alice's, and an owner link for her."""
    app_db = build_app_db(tmp_path / "db", records=[pair_record(i, owner="alice") for i in range(pairs)])
    with db.session_scope(app_db.engine) as session:
        token = issue_owner_link(session, study=STUDY, owner="alice", account=SYSTEM)
    return app_db, token


def _questions(page: Page, slot: int) -> Locator:
    """The radio groups of the pair at `slot`, once each is drawn with its options and the run is over."""
    groups = page.locator(f".st-key-owner_questions_{slot} [role=radiogroup]")
    groups.last.locator("input[type=radio]").last.wait_for(state="attached", timeout=WAIT)
    wait_idle(page, timeout_ms=WAIT)
    return groups


def _keys(groups: Locator) -> list[str]:
    """The questions' widget keys, in page order (each radio group's element has the class st-key-KEY)."""
    return groups.evaluate_all(
        """groups => groups.map(g => [...g.closest('[data-testid=stElementContainer]').classList]
                                     .find(c => c.startsWith('st-key-')).slice('st-key-'.length))"""
    )


def _ticked(groups: Locator) -> list[int | None]:
    """Each question's ticked option as its digit (1 for the first), None when nothing is ticked."""
    return groups.evaluate_all(
        """groups => groups.map(g => [...g.querySelectorAll('input[type=radio]')]
                                     .findIndex(o => o.checked) + 1 || null)"""
    )


def _saved_digits(app_db: AppDB, pair_id: str, slot: int) -> dict[str, int]:
    """The answer stored for `pair_id` (read by the service layer), as the digits that tick it on the
    page: {widget key: digit}. The page shows chosen on side_chosen; its preference is -2..2 (A much
    better first) on A/B, stored as chosen's."""
    with db.session_scope(app_db.engine) as session:
        rows = owner_rows(session, study=STUDY, account=SYSTEM)
    rows = rows[rows["pair_id"] == pair_id]
    side = str(rows["side_chosen"].iloc[0])
    preference = int(rows["preference"].iloc[0])
    digits = {
        f"owner_pref_{slot}": (preference if side == "B" else -preference) + 3,
        f"owner_conf_{slot}": int(rows["confidence"].iloc[0]),
    }
    scales = load_config().quality.scales
    for row in rows.itertuples():
        item = str(row.item)
        if item.startswith("support:"):
            digits[f"owner_aspect_{slot}_{item.split(':')[1]}"] = ASPECT_DIGITS[int(row.value)]
        elif item in scales:
            shown = side if row.response == "chosen" else "AB".replace(side, "")
            digits[f"owner_quality_{slot}_{shown}_{item}"] = int(row.value) - scales[item].low + 1
    return digits


def test_the_next_pair_starts_at_its_top_unticked_with_its_first_question_focused(
    chrome: Browser, tmp_path: Path
) -> None:
    app_db = build_app_db(tmp_path / "db", records=[pair_record(i, owner="alice") for i in range(2)])
    with db.session_scope(app_db.engine) as session:
        token = issue_owner_link(session, study=STUDY, owner="alice", account=SYSTEM)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        page = chrome.new_context(viewport={"width": 390, "height": 844}).new_page()
        page.goto(f"{base_url}/?owner_token={token}")
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("0 of 2 done").wait_for()
        form = page.locator(".st-key-owner_questions_0")
        groups = form.locator('[class*="st-key-owner_"]:has(input[type=radio])')
        groups.last.wait_for()
        assert groups.count() >= 4  # quality for A and B, which answer, how sure, the rubric's points
        for group in groups.all():  # every question: its first answer
            group.locator("label:has(input[type=radio])").first.click()
        page.get_by_role("button", name="Save and continue").click()
        wait_idle(page, timeout_ms=120_000)
        done = page.get_by_text("1 of 2 done")
        done.wait_for()
        expect(done).to_be_in_viewport()
        nxt = page.locator(".st-key-owner_questions_1")
        expect(nxt.get_by_role("radio").first).to_be_focused(timeout=WAIT)
        assert nxt.get_by_role("radio").count() > 0
        assert nxt.locator("input[type=radio]:checked").count() == 0, "nothing carried from the last pair"


def test_digits_answer_a_pair_and_ctrl_enter_saves_it(chrome: Browser, tmp_path: Path) -> None:
    """One digit per question (the first unanswered one, or the one in focus; a digit beyond its
    options does nothing), then Ctrl+Enter: k + 1 keys for k questions, and what is stored is what the
    digits ticked."""
    app_db, token = _owner_db(tmp_path, pairs=2)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        page = chrome.new_context(viewport=VIEWPORT).new_page()
        page.goto(f"{base_url}/?owner_token={token}")
        groups = _questions(page, 0)
        expect(groups.first.locator("input[type=radio]").first).to_be_focused(timeout=WAIT)  # set up
        keys = _keys(groups)
        sizes = [g.locator("input[type=radio]").count() for g in groups.all()]
        assert len(keys) >= 6 and min(sizes) == 3  # quality of A and B, which, how sure, the aspects
        digits = [k % size + 1 for k, size in enumerate(sizes)]  # every option position, within bounds
        assert keys.index("owner_conf_0") > 0
        for k, digit in enumerate(digits[:-1]):
            page.keyboard.press(str(digit))
            expect(groups.nth(k + 1).locator("input[type=radio]").first).to_be_focused()
        page.keyboard.press("9")  # beyond the last question's 3 options: nothing ticked, the focus stays
        page.keyboard.press("0")
        assert _ticked(groups)[-1] is None
        expect(groups.last.locator("input[type=radio]").first).to_be_focused()
        conf = keys.index("owner_conf_0")
        groups.nth(conf).locator("input[type=radio]").first.focus()  # the digit answers the question in focus
        page.keyboard.press("3")
        digits[conf] = 3
        expect(groups.last.locator("input[type=radio]").first).to_be_focused()  # the only one left
        page.keyboard.press(str(digits[-1]))
        expect(page.get_by_role("button", name="Save and continue")).to_be_focused()
        assert _ticked(groups) == digits
        page.keyboard.press("Control+Enter")
        expect(page.get_by_text("1 of 2 done")).to_be_visible(timeout=WAIT)
        assert _saved_digits(app_db, "EXT-00000-zq", 0) == dict(zip(keys, digits, strict=True))


def test_unsaved_answers_come_back_after_a_reload_of_their_pair_only(chrome: Browser, tmp_path: Path) -> None:
    """Answers ticked but not saved are ticked again after a reload (kept in the tab's sessionStorage;
    what is stored there is checked, not trusted), Save stores them, and the next pair starts empty,
    after a reload too."""
    app_db, token = _owner_db(tmp_path, pairs=2)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        page = chrome.new_context(viewport=PHONE).new_page()
        page.goto(f"{base_url}/?owner_token={token}")
        groups = _questions(page, 0)
        expect(groups.first.locator("input[type=radio]").first).to_be_focused(timeout=WAIT)  # set up
        keys = _keys(groups)
        for digit in "241":
            page.keyboard.press(digit)
        expect(groups.nth(3).locator("input[type=radio]").first).to_be_focused()
        page.wait_for_function(  # kept in the tab as ticked
            "() => Object.keys(JSON.parse(sessionStorage.getItem(sessionStorage.key(0)) || '{}')).length == 3"
        )
        kept = page.evaluate("() => Object.keys(sessionStorage)")
        assert len(kept) == 1 and "owner_questions_0" in kept[0]
        # What the tab's storage says is checked: a wrong index, a string or a fraction ticks nothing.
        stored = page.evaluate(f"() => JSON.parse(sessionStorage.getItem({kept[0]!r}))")
        stored |= {keys[3]: 5, keys[4]: -1, keys[5]: "1", keys[-1]: 1.5}
        page.evaluate(f"(s) => sessionStorage.setItem({kept[0]!r}, JSON.stringify(s))", stored)
        page.reload()
        groups = _questions(page, 0)
        restored = groups.nth(3).locator("input[type=radio]").first  # once restored: the first open one
        expect(restored).to_be_focused(timeout=WAIT)
        assert _ticked(groups) == [2, 4, 1] + [None] * (len(keys) - 3)
        rest = [1 if k == keys.index("owner_pref_0") else 2 for k in range(3, len(keys))]
        for digit in rest:
            page.keyboard.press(str(digit))
        expect(page.get_by_role("button", name="Save and continue")).to_be_focused()
        page.get_by_role("button", name="Save and continue").click()
        expect(page.get_by_text("1 of 2 done")).to_be_visible(timeout=WAIT)
        assert _saved_digits(app_db, "EXT-00000-zq", 0) == dict(zip(keys, [2, 4, 1, *rest], strict=True))
        nxt = _questions(page, 1)
        first = nxt.first.locator("input[type=radio]").first  # once the pair is drawn and set up
        expect(first).to_be_focused(timeout=WAIT)
        assert _ticked(nxt) == [None] * len(keys)
        assert page.evaluate("() => Object.keys(sessionStorage)") == [], (
            "the saved pair's answers are dropped"
        )
        page.reload()
        nxt = _questions(page, 1)
        expect(nxt.first.locator("input[type=radio]").first).to_be_focused(timeout=WAIT)
        assert _ticked(nxt) == [None] * len(keys)
