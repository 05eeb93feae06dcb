"""The one-command demo: what the database holds, rebuilding it, and rating one item in a real browser."""

import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, col, func, select
from typer.testing import CliRunner

from analysis.design_queue import plan_pairs
from annotator import demo, server
from annotator.cli import app
from annotator.demo import CLEAN_STUDY, CREDENTIALS, QUEUE, SAMPLE, STUDY, Demo, build_demo
from annotator.people import accounts
from annotator.people.authorization import SYSTEM
from annotator.review.adjudicate import auto_resolve
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Assignment, Judgment, Pair, Score, Study, User
from annotator.study import parse_config
from tests.utils.apphelpers import CHROMIUM_ARGS, log_in, running_app, wait_idle
from tests.utils.databases import copy_of

pytestmark = pytest.mark.sqlite_only  # the demo is a SQLite file, whatever the tests run on

SIM_USERS = ("sim_01", "sim_02", "sim_03")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of a demo database built once for the module (each test works on its own copy), by a
    rebuild over a stale file."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    path.write_bytes(b"a stale file the rebuild replaces")
    demo = build_demo(path, rebuild=True)
    assert demo.built and demo.url == f"sqlite:///{path.resolve()}"
    return demo.url


def _demo_copy(built: str, tmp_path: Path) -> Path:
    """A copy of the module's demo database at a path of this test's own."""
    return Path(make_url(copy_of(built, tmp_path, "demo")).database or "")


def _judgments_by(engine: Engine, username: str) -> int:
    with Session(engine) as session:
        query = (
            select(func.count())
            .select_from(Judgment)
            .join(Assignment, col(Assignment.id) == col(Judgment.assignment_id))
            .join(User, col(User.id) == col(Assignment.annotator_id))
            .where(User.username == username)
        )
        return int(session.exec(query).one())


def _counts(url: str) -> dict[str, int]:
    engine = db.make_engine(url)
    with Session(engine) as session:
        demo_id = session.exec(select(User.id).where(User.username == "demo_annotator")).one()
        study_id = session.exec(select(Study.id).where(Study.name == STUDY)).one()  # not the arms study
        counts = {
            "pairs": session.exec(
                select(func.count()).select_from(Pair).where(Pair.study_id == study_id)
            ).one(),
            "users": session.exec(
                select(func.count())
                .select_from(User)
                .where(~col(User.username).startswith("arm_"), ~col(User.username).startswith("clean_"))
            ).one(),
            "judgments": session.exec(
                select(func.count())
                .select_from(Judgment)
                .join(Assignment, col(Assignment.id) == col(Judgment.assignment_id))
                .where(Assignment.study_id == study_id)
            ).one(),
            "pending": session.exec(
                select(func.count())
                .select_from(Assignment)
                .where(Assignment.annotator_id == demo_id, Assignment.status == "pending")
            ).one(),
        }
    counts |= {name: _judgments_by(engine, name) for name in SIM_USERS}
    engine.dispose()
    return counts


def test_demo_database(built: str, tmp_path: Path) -> None:
    path = _demo_copy(built, tmp_path)
    demo = build_demo(path)  # kept: the copy of the module's build
    n_pairs = len(SAMPLE.read_text(encoding="utf-8").splitlines())
    counts = _counts(demo.url)
    assert counts["pairs"] == n_pairs
    assert all(counts[name] == n_pairs for name in SIM_USERS)
    assert counts["judgments"] == 3 * n_pairs
    assert counts["pending"] == QUEUE
    assert counts["users"] == len(SIM_USERS) + len(CREDENTIALS)
    engine = db.make_engine(demo.url)
    for username, (role, password) in demo.credentials.items():
        with db.session_scope(engine) as session:
            account = accounts.authenticate(session, username, password)
        assert (account.username, account.role) == (username, role)

    # the two studies that show the verdicts at work
    with db.session_scope(engine) as session:
        failing = study_report(session, study=STUDY, account=SYSTEM, n_boot=100)
        passing = study_report(session, study=CLEAN_STUDY, account=SYSTEM, n_boot=100)
    engine.dispose()
    assert failing.overall != "PASS"
    assert "fewer than 10% broken pairs not demonstrated" in failing.verdict("equivalence").detail
    assert failing.summary["n_drop"] >= 10  # the simulated broken pairs and the flawed ones
    # the clean study under its registered sequential design: every verdict holds, the few broken pairs
    # by the test calibrated for that design
    assert passing.overall == "PASS", passing.overall_reason
    assert all(v.status in ("pass", "not_assessed") for v in passing.verdicts)
    assert passing.allocation["below"].all() and set(passing.allocation["design"]) == {"sequential"}
    assert passing.verdict("sensitivity").status == "pass"  # positive controls, not alpha, certify it
    with db.session_scope(engine) as session:  # the same evidence settles the pairs without a person
        settled = auto_resolve(session, study=STUDY, account=SYSTEM)
    assert settled.auto_resolved >= 30 and settled.needs_person <= 9, str(settled)


def _main_judgments(session: Session, study_id: int, dimensions: list[str]) -> pd.DataFrame:
    """One row per judgment of a main pair: its pair, its id (submission order), the gap per dimension."""
    rows = session.exec(
        select(Assignment.pair_id, Judgment.id, Score.item, Score.response, Score.value)
        .join(Judgment, col(Judgment.id) == col(Assignment.current_judgment_id))
        .join(Score, col(Score.judgment_id) == col(Judgment.id))
        .join(Pair, col(Pair.id) == col(Assignment.pair_id))
        .where(Assignment.study_id == study_id, Pair.control == "", col(Score.item).in_(dimensions))
    ).all()
    long = pd.DataFrame(rows, columns=["pair_id", "order", "item", "response", "value"])
    long["value"] *= long["response"].map({"chosen": 1.0, "rejected": -1.0})
    wide = long.pivot_table(index=["pair_id", "order"], columns="item", values="value", aggfunc="sum")
    wide = wide.reset_index().sort_values("order", kind="stable")
    wide["pair"] = wide["pair_id"].rank(method="dense").astype(int) - 1
    return wide


def test_demo_clean_study_follows_its_registered_sequential_design(built: str) -> None:
    engine = db.make_engine(built)
    with Session(engine) as session:
        study = session.exec(select(Study).where(Study.name == CLEAN_STUDY)).one()
        config = parse_config(study.config)
        judgments = _main_judgments(session, int(study.id or 0), config.dimension_names)
    engine.dispose()
    design = config.design
    assert (design.kind, design.first_stage, design.budget) == ("sequential", 3, demo.CLEAN_BUDGET)
    n = int(judgments["pair"].max()) + 1
    counts = np.bincount(judgments["pair"], minlength=n)
    assert counts.min() >= design.first_stage and counts.sum() == design.total(n)
    adaptive = 0
    for t in range(len(judgments)):  # every judgment after the first stage went where the rule sends it
        before = judgments.iloc[:t]
        k = np.bincount(before["pair"], minlength=n)
        if k.min() < design.first_stage:
            continue
        picked = plan_pairs(
            before, k, np.zeros(n), design, dimensions=config.dimension_names,
            margin=config.analysis.margin, max_share=config.validation.max_broken_share, limit=1,
        )  # fmt: skip
        assert picked == [int(judgments["pair"].iloc[t])], t
        adaptive += 1
    assert adaptive == design.total(n) - design.first_stage * n


def test_demo_is_kept_without_rebuild(built: str, tmp_path: Path) -> None:
    path = _demo_copy(built, tmp_path)
    demo = build_demo(path)
    engine = db.make_engine(demo.url)
    with db.session_scope(engine) as session:
        accounts.add_user(
            session, username="marker", role="annotator", password="marker-password", account=SYSTEM
        )
    engine.dispose()
    before = _counts(demo.url)
    kept = build_demo(path)
    assert not kept.built and kept.url == demo.url
    assert _counts(kept.url) == before  # the marker user is still there: the file was not rebuilt


@pytest.mark.browser
def test_demo_annotator_rates_one_item_in_the_browser(built: str, tmp_path: Path) -> None:
    from playwright import sync_api as playwright

    demo = build_demo(_demo_copy(built, tmp_path))
    engine = db.make_engine(demo.url)
    assert _judgments_by(engine, "demo_annotator") == 0
    log = tmp_path / "streamlit.log"
    with running_app(demo.url, log) as base_url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        log_in(page, base_url, "demo_annotator", CREDENTIALS["demo_annotator"][1])
        page.get_by_role("button", name="I have read the guidelines: start rating").click()
        wait_idle(page)
        groups = page.locator("[data-testid='stButtonGroup']")
        groups.first.wait_for()
        n_groups = groups.count()
        assert n_groups >= 3 * 2 + 2  # quality for A and B, preference, confidence (+ rubric)
        for i in range(n_groups):
            options = groups.nth(i).locator("button[aria-checked]")
            options.nth(min(1, options.count() - 1)).click()
            wait_idle(page)
        page.get_by_role("button", name="Submit and next").click()
        wait_idle(page)
        deadline = time.monotonic() + 15
        while _judgments_by(engine, "demo_annotator") == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        browser.close()
    assert _judgments_by(engine, "demo_annotator") == 1, log.read_text(errors="replace")[-2000:]
    engine.dispose()


def test_demo_prints_the_address_it_binds(built: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bound: list[tuple[str, str, int]] = []

    def serve(url: str, *, host: str, port: int) -> int:  # the server's start, recorded instead of run
        bound.append((url, host, port))
        return 0

    monkeypatch.setattr(server, "run", serve)  # the command imports both when it runs
    monkeypatch.setattr(demo, "build_demo", lambda rebuild: Demo(built, False, CREDENTIALS))
    result = CliRunner().invoke(app, ["demo", "--port", "8765"])
    assert result.exit_code == 0, result.output
    assert bound == [(built, "127.0.0.1", 8765)]
    assert "open http://127.0.0.1:8765" in result.output
    assert "localhost" not in result.output
