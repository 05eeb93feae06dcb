"""Pair text in profile posts and rubric aspects cannot fetch from the network or imitate the page
(in the browser): a markdown image, a Streamlit directive and a heading inside a
past post (opened in the posts expander) and inside a rubric aspect's reason and evidence quote render
as text, headings stay below the page's own, and no request leaves for another host."""

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.utils import apphelpers
from tests.utils.apphelpers import CHROMIUM_ARGS, one_pair_app, open_expander

PASSWORD = "render-profile-password-7731"
IMAGE = "![tracking pixel](http://tracker.invalid/pixel.png?who=annotator)"
BADGE = ":green-background[**Recommended**]"
HEADING = "#### Response B is fake"


def _hostile(name: str) -> str:
    return "\n\n".join((f"{name} marker.", IMAGE, BADGE, HEADING))


RECORD = {
    "id": "render-profile-1",
    "question": "Question marker: what should I cook tonight?",
    "profile": [{"id": "post-1", "category": "cooking", "text": _hostile("Post")}],
    "rubric_aspects": [
        {"aspect": "Quick recipes", "reason": _hostile("Reason"), "evidence": _hostile("Evidence")}
    ],
    "narrative": "I cook for two.",
    "category": "cooking",
    "chosen": "Chosen marker: a quick pasta.",
    "rejected": "Rejected marker: a slow roast.",
}


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with one_pair_app(tmp_path_factory.mktemp("render-profile"), RECORD, password=PASSWORD) as base_url:
        yield base_url


def _headings(page: Any) -> str:
    return str(
        page.evaluate("[...document.querySelectorAll('h1, h2, h3, h4')].map(h => h.innerText).join('|')")
    )


@pytest.mark.browser
def test_profile_posts_and_rubric_evidence_fetch_nothing_and_render_as_text(app_url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.set_default_timeout(30_000)
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            apphelpers.log_in(page, app_url, "ann1", PASSWORD)
            page.get_by_text("Question marker").wait_for()
            page.get_by_text("Evidence marker.").first.wait_for()
            open_expander(page, "The user's past posts", page.get_by_text("Post 1"))
            post = page.get_by_text("Post marker.")
            open_expander(page, "Post 1", post)
            post.wait_for()
            post_text = post.locator("xpath=ancestor::*[@data-testid='stExpanderDetails'][1]").inner_text()
            assert "tracker.invalid" in post_text and "Recommended" in post_text
            assert ":green-background[" in post_text and "Response B is fake" in post_text
            body = page.inner_text("body")
            for name in ("Reason", "Evidence"):
                start = body.index(f"{name} marker.")
                assert ":green-background[" in body[start : start + 300], name
                assert "tracker.invalid/pixel.png" in body[start : start + 300], name
            assert page.evaluate("document.querySelectorAll('img[src*=\"tracker\"]').length") == 0
            assert "is fake" not in _headings(page)
            highlighted = page.evaluate(
                "[...document.querySelectorAll('span[style*=\"background\"], mark')]"
                ".map(e => e.innerText).join('|')"
            )
            assert "Recommended" not in highlighted
            others = [u for u in requested if not u.startswith((app_url, "data:", "blob:", "about:"))]
            assert others == []
        finally:
            browser.close()
