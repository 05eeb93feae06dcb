"""The dataset from the browser (Downloads page) in chromium at 390 px: the folder
`annotator export dataset` writes comes as one .zip; the push to the Hub is offered only once a token is
configured, asks for a confirm, and goes through huggingface_hub to a fake Hub on 127.0.0.1 (no network);
a bad repository id, a bad token and no network are each one line; a hostile study name and repository
id render as text; axe finds nothing serious or critical."""

import io
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.store.models import Event
from tests.utils.apphelpers import PHONE, build_app_db, running_app, wait_idle
from tests.utils.fakehub import fake_hub
from tests.utils.pagehelpers import (
    HOSTILE_STUDY,
    choose_study,
    click,
    inert,
    log_in_as,
    one_line_error,
    serious,
)
from tests.utils.sciencehelpers import simulated_study

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/browser2")
TOKEN = "hf_browser_test_token"
HOSTILE_REPO = '<img src=x onerror="window.__xss=7">/$x^2$'


def _type(page: Page, label: str, text: str) -> None:
    box = page.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Enter")
    wait_idle(page, timeout_ms=120_000)


def _actions(engine: Engine) -> list[str]:
    """The audit log's actions, oldest first."""
    with Session(engine) as session:
        return list(session.exec(select(Event.action).order_by(Event.id)))


def _export_details(engine: Engine) -> list[dict[str, object]]:
    """The audit log's export events' details, oldest first."""
    with Session(engine) as session:
        return list(session.exec(select(Event.detail).where(Event.action == "export").order_by(Event.id)))


def test_dataset_zip_and_hub_push_in_the_browser(
    chrome: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    viewport = PHONE  # the flow once, at one width (every page is walked at both: test_researcher_browser)
    app_db = build_app_db(tmp_path / "db", n_pairs=3, queues={})
    simulated_study(app_db.engine, tmp_path, 6, study=HOSTILE_STUDY)
    width = viewport["width"]
    SHOTS.mkdir(exist_ok=True)
    home = tmp_path / "hf"
    home.mkdir()
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(home))  # no token file yet: the server has no token
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    with fake_hub(TOKEN) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        with running_app(app_db.url, tmp_path / "server.log") as base_url:
            context = chrome.new_context(viewport=viewport, accept_downloads=True)
            page = context.new_page()
            page.set_default_timeout(120_000)
            log_in_as(page, base_url, "res1")
            page.goto(f"{base_url}/downloads")
            page.get_by_role("heading", name="Dataset for the Hub").wait_for()
            wait_idle(page, timeout_ms=120_000)
            choose_study(page, HOSTILE_STUDY)
            page.get_by_text("No Hugging Face token is configured for this server").wait_for()
            assert page.get_by_role("button", name="Push to the Hub…").count() == 0

            click(page, "Build the dataset .zip")
            download_name = "S_img_src_x_onerror_window.__xss_2_x_2-dataset.zip"
            button = page.get_by_role("button", name=f"Download {download_name}", exact=False)
            button.wait_for()
            button.scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / f"dataset-zip-{width}.png", full_page=True)
            assert serious(page) == []
            inert(page)
            with page.expect_download() as download:
                button.click()
            assert download.value.suggested_filename == download_name
            archive = zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes()))
            folder = download_name.removesuffix(".zip")
            names = archive.namelist()
            assert f"{folder}/README.md" in names
            assert any(n.startswith(f"{folder}/pairs/test-") and n.endswith(".parquet") for n in names)
            assert b"configs:" in archive.read(f"{folder}/README.md")
            wait_idle(page, timeout_ms=120_000)  # the click's rerun ran its callback: the download is logged
            zipped = [d for d in _export_details(app_db.engine) if d["format"] == "zip"]
            assert [(d["study"], d["kind"], d["target"]) for d in zipped] == [
                (HOSTILE_STUDY, "dataset", "browser download")
            ]
            assert page.get_by_text("Traceback").count() == 0

            (home / "token").write_text(TOKEN)  # `hf auth login`: the push is offered from now on
            page.reload()
            page.get_by_role("heading", name="Dataset for the Hub").wait_for()
            wait_idle(page, timeout_ms=120_000)
            choose_study(page, HOSTILE_STUDY)
            push = page.get_by_role("button", name="Push to the Hub…")
            assert push.is_disabled()  # no repository named yet

            _type(page, "Hub dataset repository (OWNER/NAME)", HOSTILE_REPO)
            click(page, "Push to the Hub…")
            one_line_error(page, "invalid repository")
            page.get_by_text(HOSTILE_REPO, exact=False).first.wait_for()  # shown as typed
            inert(page)
            assert hub.requests == []

            _type(page, "Hub dataset repository (OWNER/NAME)", "lab/pairs")
            click(page, "Push to the Hub…")
            assert hub.requests == []  # nothing sent before the confirm
            question = page.get_by_text(f"Upload the dataset of study '{HOSTILE_STUDY}'")
            question.scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / f"hub-confirm-{width}.png", full_page=True)
            assert serious(page) == []
            inert(page)
            click(page, "Confirm: push to lab/pairs")
            done = page.get_by_text(f"Pushed to {hub.endpoint}/datasets/lab/pairs")
            done.scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / f"hub-pushed-{width}.png", full_page=True)
            assert "README.md" in hub.files["lab/pairs"]
            assert any(name.startswith("pairs/test-") for name in hub.files["lab/pairs"])

            hub.token = "hf_another_token"  # the server's token is now refused (401)
            click(page, "Push to the Hub…")
            click(page, "Confirm: push to lab/pairs")
            assert "401" in one_line_error(page, "upload to lab/pairs failed (the Hub refused the token")
            page.get_by_text("the Hub refused the token").first.scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / f"hub-bad-token-{width}.png", full_page=True)
            click(page, "Push to the Hub…")
            hub.stop()  # no network
            click(page, "Confirm: push to lab/pairs")
            one_line_error(page, "upload to lab/pairs failed (no connection to the Hub?)")
            assert serious(page) == []
            context.close()
    assert "export" in _actions(app_db.engine)
