"""Pair text cannot fetch from the network or imitate the page: images stay text,
Streamlit's directives stay text, headings stay below the page's own; one rule (app.common.safe_md)."""

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotator.app.common import safe_md
from tests.utils import apphelpers
from tests.utils.apphelpers import CHROMIUM_ARGS, one_pair_app, wait_idle

PASSWORD = "render-test-password-5521"
IMAGE = "![tracking pixel](http://tracker.invalid/pixel.png?who=annotator)"
REF_IMAGE = "![logo][ref]\n\n[ref]: http://tracker.invalid/ref.png"
BADGE = ":green-background[**Recommended answer**]"
COLOR = ":red[this is the better one]"
HEADING = "#### Response A is fake"
SETEXT = "Pick this one\n============="


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        (IMAGE, "!\\[tracking pixel](http://tracker.invalid/pixel.png?who=annotator)"),
        (BADGE, "\\:green-background[**Recommended answer**]"),
        (COLOR, "\\:red[this is the better one]"),
        (HEADING, "##### Response A is fake"),
        ("# Big", "##### Big"),
        ("##### small stays", "##### small stays"),
        (SETEXT, "Pick this one\n\\============="),
        ("at 10:30, see https://example.org", "at 10:30, see https://example.org"),
        ("a :material/home: icon", "a :\u2060material/home: icon"),
        ("<script>x</script> $5", "\\<script>x</script> \\$5"),  # an HTML block would show the \\
        ("line\n   <div>tag</div>\n    <pre>code", "line\n   \\<div>tag</div>\n    <pre>code"),
    ],
)
def test_safe_md_neutralizes_images_directives_and_headings(typed: str, shown: str) -> None:
    assert safe_md(typed) == shown


def test_every_page_renders_pair_text_through_safe_md() -> None:
    """No page passes a pair's texts to st.markdown without the one rule (a grep over the views)."""
    app = Path(__file__).resolve().parents[1] / "annotator" / "app"
    for page in [*app.glob("views/*.py"), *app.glob("rating_page/*.py")]:
        text = page.read_text(encoding="utf-8")
        for field in ("chosen", "rejected", "narrative", "question"):
            assert f"st.markdown(pair[{field!r}])" not in text, page.name
            assert f"st.markdown(item.{field})" not in text, page.name


def _hostile(name: str) -> str:
    return "\n\n".join((f"{name} marker.", IMAGE, REF_IMAGE, BADGE, COLOR, HEADING, SETEXT))


RECORD = {
    "id": "render-1",
    "question": _hostile("Question"),
    "profile": [{"id": "post-1", "category": "x", "text": _hostile("Post")}],
    "rubric_aspects": [{"aspect": f"Aspect {IMAGE}", "reason": _hostile("Reason"), "evidence": "e"}],
    "narrative": _hostile("Narrative"),
    "category": "cooking",
    "chosen": _hostile("Chosen"),
    "rejected": _hostile("Rejected"),
}


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with one_pair_app(tmp_path_factory.mktemp("render"), RECORD, password=PASSWORD) as base_url:
        yield base_url


@pytest.mark.browser
def test_the_rating_page_fetches_nothing_and_keeps_its_own_look(app_url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            apphelpers.log_in(page, app_url, "ann1", PASSWORD)
            page.get_by_text("Question marker.").wait_for(timeout=30_000)
            page.get_by_text("Chosen marker.").or_(page.get_by_text("Rejected marker.")).first.wait_for()
            wait_idle(page)
            assert [url for url in requested if "tracker.invalid" in url] == []
            assert page.evaluate("document.querySelectorAll('img[src*=\"tracker\"]').length") == 0
            body = page.inner_text("body")
            assert ":green-background[" in body and ":red[" in body
            for level in ("h1", "h2", "h3", "h4"):
                inside = page.evaluate(
                    f"[...document.querySelectorAll('{level}')].map(h => h.innerText).join('|')"
                )
                assert "is fake" not in inside and "Pick this one" not in inside, (level, inside)
        finally:
            browser.close()
