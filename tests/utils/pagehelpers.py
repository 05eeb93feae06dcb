"""Helpers for the researcher-page browser tests (Playwright): click and wait, pick a study, check that
nothing hostile ran, read a one-line error; and a hostile study name."""

import re
from typing import Any

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.utils.apphelpers import PASSWORD, log_in, wait_idle

#: A study name with HTML, an event handler and LaTeX: every page must show it as typed.
HOSTILE_STUDY = 'S <img src=x onerror="window.__xss=2"> $x^2$'


#: True once no element is stale from a rerun and no animation is running.
SETTLED = """() => !document.querySelector('[data-stale="true"]')
    && document.getAnimations().every((a) => a.playState !== 'running')"""


def serious(page: Page) -> list[str]:
    """The serious or critical axe-core violations on the settled page: "rule: first element"."""
    page.wait_for_function(SETTLED)
    results: Any = Axe().run(page)
    return [
        f"{v['id']}: {v['nodes'][0]['html'][:120]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def log_in_as(page: Page, base_url: str, username: str) -> None:
    """Log in and wait until the session cookie is written (the sidebar's Log out button is drawn)."""
    log_in(page, base_url, username, PASSWORD, timeout_ms=120_000)
    page.get_by_role("button", name="Log out").wait_for(timeout=120_000)
    wait_idle(page, timeout_ms=120_000)


def click(page: Page, name: str) -> None:
    """Click the button called exactly `name` and wait for the run it starts."""
    page.get_by_role("button", name=name, exact=True).click()
    wait_idle(page, timeout_ms=120_000)


def choose(page: Page, label: str, option: str) -> None:
    """Pick `option` in the select box or multiselect `label`: the first word of its name is typed into
    the box, which opens the list filtered to it (again if a rerun closed it; the filter is fuzzy and
    takes no markup), then the option is clicked."""
    box = page.get_by_role("combobox", name=label, exact=True)
    choice = page.get_by_role("option", name=option, exact=True)
    first_word = re.split(r"\W", option, maxsplit=1)[0]
    for _ in range(10):
        box.fill(first_word)
        try:
            choice.wait_for(timeout=3_000)
            choice.click(timeout=3_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        shown = page.get_by_role("option").all_inner_texts()
        raise AssertionError(f"no option {option!r} in {label!r} after 10 tries; the list shows {shown}")
    wait_idle(page, timeout_ms=120_000)


def pick(page: Page, label: str, option: str) -> None:
    """Add `option` in the multiselect `label`, then close its list."""
    choose(page, label, option)
    page.keyboard.press("Escape")


def choose_study(page: Page, name: str) -> None:
    """Pick `name` in the page's Study picker."""
    choose(page, "Study", name)


def inert(page: Page) -> None:
    """Nothing hostile ran or was drawn as HTML."""
    assert page.evaluate("() => window.__xss === undefined")
    assert page.locator("img[src=x]").count() == 0


def one_line_error(page: Page, starts: str) -> str:
    """The text of the error alert that starts with `starts`, which must be one line."""
    alert = page.locator(
        "[data-testid=stAlertContentError] [data-testid=stMarkdownContainer]", has_text=starts
    ).first
    alert.wait_for()
    text = alert.inner_text().strip()
    assert text.startswith(starts) and "\n" not in text, text
    return text
