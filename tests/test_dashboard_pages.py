"""Researcher and adjudicator pages: each renders for its role, shows the study, and acts on it."""

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select
from streamlit.testing.v1 import AppTest

from annotator.intake import ingest
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, Account
from annotator.review import adjudicate
from annotator.store import db
from annotator.store.models import Adjudication, Assignment, Pair, User, id_of
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.apphelpers import CHROMIUM_ARGS, app_for, log_in, running_app, shown_tables, wait_idle
from tests.utils.databases import built_once, copy_of, engine_on

pytestmark = pytest.mark.page  # pages in AppTest: the PostgreSQL pass leaves it out

ROOT = Path(__file__).resolve().parents[1]
MAIN = str(ROOT / "annotator" / "app" / "main.py")
SAMPLE = ROOT / "data" / "sample_pairs.jsonl"
RESEARCHER_PAGES = [
    "progress.py",
    "validation.py",
    "annotators.py",
    "adjudicate.py",
    "data.py",
    "settings.py",
    "downloads.py",
]


@pytest.fixture(scope="module")
def sample_study(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sample study with three simulated annotators, a researcher and an adjudicator, built once
    for the module (each test works on its own copy)."""
    return built_once(tmp_path_factory.mktemp("sample"), _sample_study)


def _sample_study(engine: Engine) -> None:
    ingest.import_file(engine, SAMPLE, study="sample", account=SYSTEM)
    simulate(engine, study="sample", spec=SimulationSpec(seed=3))
    with db.session_scope(engine) as session:
        accounts.add_user(
            session, username="boss", role="researcher", password="boss-password", account=SYSTEM
        )
        accounts.add_user(
            session, username="judge", role="adjudicator", password="judge-password", account=SYSTEM
        )


@pytest.fixture
def study_db(sample_study: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's copy of the sample study, its URL in $ANNOTATOR_DB_URL."""
    url = copy_of(sample_study, tmp_path)
    monkeypatch.setenv(db.ENV_VAR, url)
    return url


@pytest.fixture
def engine(study_db: str) -> Iterator[Engine]:
    with engine_on(study_db) as engine:
        yield engine


def _account(engine: Engine, username: str) -> Account:
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        return Account(id=id_of(user), username=user.username, role=user.role)


def _app(account: Account) -> AppTest:
    return app_for(account, timeout=120)


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.success] + [e.value for e in at.error]
    return "\n".join(str(p) for p in parts + [c.value for c in at.caption])


@pytest.mark.parametrize("page", RESEARCHER_PAGES)
def test_every_researcher_page_renders(study_db: str, engine: Engine, page: str) -> None:
    at = _app(_account(engine, "boss"))
    at.switch_page(f"views/{page}").run()
    assert not at.exception
    assert at.selectbox or at.text_input  # every page shows its controls (study picker or forms)


def test_progress_page_counts_the_study(study_db: str, engine: Engine) -> None:
    at = _app(_account(engine, "boss"))
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Pairs"] == "39"
    assert metrics["Judgments done (of 117)"] == "117"


def test_progress_draws_the_timeline_only_once_opened(study_db: str, engine: Engine) -> None:
    """The judgments-over-time chart (its browser module) is drawn only once its expander is opened."""
    at = _app(_account(engine, "boss"))
    running = "Each line is one annotator's running count"
    assert not any(c.value.startswith(running) for c in at.caption)
    at.session_state["progress_timeline_open"] = True
    at.run()
    assert not at.exception
    assert any(c.value.startswith(running) for c in at.caption)


def test_validation_page_shows_the_verdicts_of_analyze(study_db: str, engine: Engine) -> None:
    """The page calls the same report as `annotator analyze`: the same verdict lines appear."""
    from annotator.review.study_report import study_report

    with Session(engine) as session:
        report = study_report(session, study="sample", n_boot=1000, account=SYSTEM)
    at = _app(_account(engine, "boss"))
    at.switch_page("views/validation.py").run()
    assert not at.exception
    # PASS in a success box, FAIL in an error box, INCONCLUSIVE in a warning, NOT ASSESSED in an info
    shown = [e.value for e in (*at.success, *at.error, *at.warning, *at.info)]
    for verdict in report.verdicts:
        assert any(verdict.detail in text for text in shown)


def test_validation_filter_by_annotator(study_db: str, engine: Engine) -> None:
    at = _app(_account(engine, "boss"))
    at.switch_page("views/validation.py").run()
    at.multiselect(key="validation_annotators").select("sim_01").select("sim_02").run()
    assert not at.exception
    assert any("2 annotators" in c.value for c in at.caption)


def test_validation_gives_the_uncertain_pairs_one_more_annotator(study_db: str, engine: Engine) -> None:
    """The cleaning list's "needs more judgments" pairs each get one more annotator from the button."""
    from analysis.cleaning import pairs_needing_more
    from annotator.review.study_report import study_report

    with db.session_scope(engine) as session:
        accounts.add_user(
            session, username="fresh", role="annotator", password="fresh-password-1", account=SYSTEM
        )
        uncertain = pairs_needing_more(study_report(session, study="sample", account=SYSTEM).cleaning)
    assert uncertain
    at = _app(_account(engine, "boss"))
    at.switch_page("views/validation.py").run()
    at.button(key="validation_needs_more").click().run()
    assert not at.exception
    assert any(f"{len(uncertain)} new assignments" in e.value for e in at.success)
    with Session(engine) as session:
        fresh = session.exec(
            select(Pair.external_id)
            .join(Assignment, col(Assignment.pair_id) == col(Pair.id))
            .join(User, col(User.id) == col(Assignment.annotator_id))
            .where(User.username == "fresh")
        ).all()
    assert sorted(fresh) == sorted(uncertain)  # the only annotator not yet on these pairs


def _page(page: str, account: Account) -> AppTest:
    """One page run on its own (form submits are reliable this way in AppTest)."""
    at = AppTest.from_file(str(ROOT / "annotator" / "app" / "views" / page), default_timeout=120)
    at.session_state["account"] = account
    at.session_state["login_at"] = datetime.now(UTC)
    return at.run()


def test_data_page_creates_an_account(study_db: str, engine: Engine) -> None:
    at = _page("data.py", _account(engine, "boss"))
    at.text_input(key="account_username").input("newcomer")
    at.selectbox(key="account_role").select("annotator")
    at.button(key="FormSubmitter:account_form-Create").click().run()
    assert not at.exception
    with Session(engine) as session:
        assert session.exec(select(User).where(User.username == "newcomer")).one().role == "annotator"


def test_adjudicator_resolves_and_decides(study_db: str, engine: Engine) -> None:
    at = _page("adjudicate.py", _account(engine, "judge"))
    assert not at.exception
    at.button(key="adjudicate_auto").click().run()
    assert not at.exception
    with Session(engine) as session:
        automatic = session.exec(select(func.count()).select_from(Adjudication)).one()
    assert automatic > 0
    said = next(s.value for s in at.success if s.value.startswith("Resolved automatically: "))
    assert f"{automatic} new decision" in said and "a person;" in said
    queue = at.selectbox(key="adjudicate_pick_0")
    assert queue.options, "the sample's flawed pairs need a person"
    pair = queue.value.pair_db_id
    first = queue.value
    assert queue.format_func(first).startswith(f"{first.pair_id} · {int(first.n_judgments)} judgment")
    at.radio(key=f"decide_pref_{pair}").set_value("rejected")
    at.checkbox(key=f"decide_keep_{pair}").uncheck()
    at.text_area(key=f"decide_note_{pair}").input("rejected fits better")
    submit = next(b for b in at.button if b.key and b.key.startswith("FormSubmitter:decide_"))
    submit.click().run()
    assert not at.exception
    with Session(engine) as session:
        human = session.exec(select(Adjudication).where(Adjudication.method == "adjudicated")).one()
    assert (human.preference, human.keep, human.note) == ("rejected", False, "rejected fits better")
    # the queue moved on, under a new picker (the old one kept showing the decided pair in the browser)
    assert at.selectbox(key="adjudicate_pick_1").value.pair_db_id != pair
    assert [t.value for t in at.toast] == [f"Decision recorded for {first.pair_id}."]


def test_a_decision_needs_a_chosen_final_preference(study_db: str, engine: Engine) -> None:
    at = _page("adjudicate.py", _account(engine, "judge"))
    at.button(key="adjudicate_auto").click().run()
    pair = at.selectbox(key="adjudicate_pick_0").value.pair_db_id
    assert at.radio(key=f"decide_pref_{pair}").value is None, "nothing is preselected"
    submit = next(b for b in at.button if b.key and b.key.startswith("FormSubmitter:decide_"))
    submit.click().run()
    assert any("final preference" in e.value for e in at.error)
    with Session(engine) as session:
        assert session.exec(select(Adjudication).where(Adjudication.method == "adjudicated")).first() is None


def test_hidden_names_are_hidden_in_the_score_table_too(study_db: str, engine: Engine) -> None:
    at = _page("adjudicate.py", _account(engine, "judge"))
    at.button(key="adjudicate_auto").click().run()
    assert at.toggle(key="adjudicate_names").value is False
    tables = shown_tables(at)
    judgments = next(t for t in tables if "Preference (words)" in t.columns)
    scores = next(t for t in tables if "Chosen − rejected (points)" in t.columns)
    assert set(judgments["Annotator"]) == set(scores["Annotator"])
    assert all(name.startswith("Annotator ") for name in scores["Annotator"])
    assert any(label.startswith("Aspect 1: ") for label in scores["Item"])


def test_adjudicator_sets_a_final_score(study_db: str, engine: Engine) -> None:
    """Final scores are recorded only where the adjudicator changed them from the median."""
    at = _page("adjudicate.py", _account(engine, "judge"))
    at.button(key="adjudicate_auto").click().run()
    pair = at.selectbox(key="adjudicate_pick_0").value.pair_db_id
    at.radio(key=f"decide_pref_{pair}").set_value("chosen")
    median = at.number_input(key=f"decide_{pair}_chosen_relevance").value
    at.number_input(key=f"decide_{pair}_rejected_correctness").set_value(9.0)
    at.number_input(key=f"decide_{pair}_chosen_relevance").set_value(-3.0)
    next(b for b in at.button if b.key and b.key.startswith("FormSubmitter:decide_")).click().run()
    assert [e.value for e in at.error] == [
        "Nothing recorded: final scores beyond their scale: rejected correctness 9 (its scale 1 to 5); "
        "chosen relevance -3 (its scale 1 to 5)."
    ]  # every one at once, beside the button (a bounded box refused a typed 9 without a word)
    with Session(engine) as session:
        assert session.exec(select(Adjudication).where(Adjudication.method == "adjudicated")).first() is None
    at.number_input(key=f"decide_{pair}_chosen_relevance").set_value(median)
    at.number_input(key=f"decide_{pair}_rejected_correctness").set_value(1.0)
    submit = next(b for b in at.button if b.key and b.key.startswith("FormSubmitter:decide_"))
    submit.click().run()
    assert not at.exception
    with Session(engine) as session:
        human = session.exec(select(Adjudication).where(Adjudication.method == "adjudicated")).one()
    assert human.decision["scores"] == {"rejected": {"correctness": 1.0}}


def test_the_whole_queue_is_drawn_only_once_opened(study_db: str, engine: Engine) -> None:
    """A visit to Adjudicate does not draw the whole queue's table until its expander is opened; then
    it lists every pair of the queue."""
    at = _page("adjudicate.py", _account(engine, "judge"))
    pairs = at.selectbox(key="adjudicate_pick_0").options
    assert pairs and not any("Why" in table.columns for table in shown_tables(at))
    at.session_state["adjudicate_queue_open"] = True
    at.run()
    assert not at.exception
    whole = next(table for table in shown_tables(at) if "Why" in table.columns)
    assert len(whole) == len(pairs)


def test_the_drift_is_computed_only_once_opened(
    study_db: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Annotators page computes and draws the agreement over time only once its expander is open."""
    from annotator.review import quality

    calls: list[str] = []
    drift = quality.agreement_drift
    monkeypatch.setattr(quality, "agreement_drift", lambda *a, **k: calls.append(k["by"]) or drift(*a, **k))
    at = _page("annotators.py", _account(engine, "boss"))
    assert not at.exception and calls == []
    shown = len(shown_tables(at))
    at.session_state["annotators_drift_open"] = True
    at.run()
    assert not at.exception and calls == ["week"]
    assert len(shown_tables(at)) == shown + 2  # the agreement per week and the guideline versions


def test_annotator_is_refused_on_researcher_pages(study_db: str, engine: Engine) -> None:
    """A researcher page run for an annotator (e.g. opened by URL) shows a refusal, not data."""
    at = _page("validation.py", _account(engine, "sim_01"))
    assert [e.value for e in at.error] == ["This page is not available to the annotator role."]
    assert not at.dataframe and not at.table and not at.metric


@pytest.mark.browser
def test_one_adjudication_in_the_browser(study_db: str, engine: Engine, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with running_app(study_db, tmp_path / "server.log") as base_url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone: the form is far down
        log_in(page, base_url, "judge", "judge-password", timeout_ms=60_000)
        page.get_by_role("button", name="Resolve the clear cases automatically").click()
        wait_idle(page, timeout_ms=60_000)
        page.get_by_text("Chosen (built to follow the rubric)").wait_for()
        page.get_by_text("The user's rubric").wait_for()  # the whole context is there
        picker = page.get_by_role("combobox", name="Pair")
        decided = picker.input_value().split(" · ")[0]
        page.get_by_role("radio", name="tie").check(force=True)
        page.get_by_role("button", name="Record decision").click()
        wait_idle(page, timeout_ms=60_000)
        page.get_by_test_id("stToastText").get_by_text(f"Decision recorded for {decided}.").wait_for()
        # the picker names the pair the page now shows, not the one just decided
        shown = picker.input_value().split(" · ")[0]
        assert shown != decided
        page.get_by_role("heading", name=f"Pair {shown}").wait_for()
        # the next pair from its top, with the line that says what was recorded
        expect(
            page.get_by_test_id("stAlertContentSuccess").get_by_text("Decision recorded")
        ).to_be_in_viewport()
        browser.close()
    with Session(engine) as session:
        decided = session.exec(
            select(func.count()).select_from(Adjudication).where(col(Adjudication.method) == "adjudicated")
        ).one()
    assert decided == 1


def test_validation_does_not_hold_the_visit_while_a_long_report_is_computed(
    study_db: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served to a browser, a report that takes longer than a moment is computed while the page says
    so (the browser reruns it); once ready, the page shows its verdicts."""
    import threading

    from annotator.app import report_cache, stored_view

    release, finished = threading.Event(), threading.Event()
    request = report_cache.request

    def slow(engine: Engine, *args: object) -> report_cache.Published:
        assert release.wait(60)
        try:
            return report_cache._compute(engine, *args)  # type: ignore[arg-type]
        finally:
            finished.set()

    kept = threading.Event()  # the report worker is started once a result is stored
    monkeypatch.setattr(stored_view, "in_server", lambda: True)
    monkeypatch.setattr(stored_view, "keep_updated", kept.set)
    monkeypatch.setattr(
        report_cache,
        "request",
        lambda key, account, *, engine: request(key, account, engine=engine, compute=slow),
    )
    at = _app(_account(engine, "boss"))
    at.switch_page("views/validation.py").run()
    assert not at.exception
    assert any("is being computed" in str(box.value) for box in at.info)
    assert not at.success and not at.error and not at.warning  # no verdict yet
    release.set()
    assert finished.wait(120)
    # stored as the study's report when computed, before any page shows it (a page left meanwhile
    # finds it next time, and the report worker keeps it up to date from then on)
    assert _await_stored(engine, "report") == 1
    assert kept.wait(60), "the report worker keeps the stored report up to date from now on"
    at.run()
    assert not at.exception
    assert not any("is being computed" in str(box.value) for box in at.info)
    assert at.success or at.error or at.warning  # the verdicts, each in its box


def _await_stored(engine: Engine, kind: str, timeout_s: float = 60) -> int:
    """How many stored results of `kind` the database holds, once it holds one (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not _stored(engine, kind):
        time.sleep(0.05)
    return _stored(engine, kind)


def _stored(engine: Engine, kind: str) -> int:
    """How many stored results of `kind` the database holds."""
    from annotator.store.models import StoredResult

    with Session(engine) as session:
        return len(session.exec(select(StoredResult).where(StoredResult.kind == kind)).all())


def test_adjudicate_does_not_hold_the_visit_while_a_long_queue_is_computed(
    study_db: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served to a browser, the first visit's queue is computed while the page says so; it is stored
    as soon as it is ready, and the page then shows the queue."""
    import threading

    from annotator.app import stored_view
    from annotator.review import stored_results

    release, compute = threading.Event(), stored_results.compute

    def slow(session: Session, *, study: str, kind: str) -> object:
        assert release.wait(60)
        return compute(session, study=study, kind=kind)

    kept = threading.Event()  # the report worker is started once a result is stored
    monkeypatch.setattr(stored_view, "in_server", lambda: True)
    monkeypatch.setattr(stored_view, "keep_updated", kept.set)
    monkeypatch.setattr(stored_results, "compute", slow)
    at = _app(_account(engine, "judge"))
    at.switch_page("views/adjudicate.py").run()
    assert not at.exception
    assert any("adjudication queue of the current data is being computed" in str(b.value) for b in at.info)
    assert not any(h.value.startswith("Queue") for h in at.header)
    release.set()
    assert _await_stored(engine, "adjudication") == 1
    assert kept.wait(60), "the report worker keeps the stored queue up to date from now on"
    at.run()
    assert not at.exception
    assert not any("is being computed" in str(b.value) for b in at.info)
    assert any(h.value.startswith("Queue (") for h in at.header)


def test_an_opened_section_is_open_again_on_the_next_visit_and_a_closed_one_closed(
    study_db: str, engine: Engine
) -> None:
    """Progress's chart, opened and left for another page, is drawn again on return (Streamlit itself
    forgets an expander's state once a run does not draw it); closed, it stays closed."""
    at = _app(_account(engine, "boss"))
    running = "Each line is one annotator's running count"

    def drawn_after_a_visit_elsewhere() -> bool:
        at.switch_page("views/validation.py").run()
        at.switch_page("views/progress.py").run()
        assert not at.exception and not at.warning
        return any(c.value.startswith(running) for c in at.caption)

    at.session_state["progress_timeline_open"] = True
    at.run()
    assert drawn_after_a_visit_elsewhere()
    at.session_state["progress_timeline_open"] = False
    at.run()
    assert not drawn_after_a_visit_elsewhere()


def test_downloads_says_why_validated_files_are_empty_before_any_adjudication(
    study_db: str, engine: Engine
) -> None:
    """No adjudication yet: "Validated pairs only" (on by default) gives 0 rows in every file, and the
    page says why and what to do; after the automatic resolution it does not."""
    at = _app(_account(engine, "boss"))
    at.switch_page("views/downloads.py").run()
    assert not at.exception
    [note] = [i.value for i in at.info if "No pair is validated yet" in i.value]
    assert "Resolve the clear cases automatically" in note and "untick" in note
    buttons = at.get("download_button")
    assert len(buttons) == 3 and all(b.disabled for b in buttons), "0 rows: no file of a header alone"
    at.checkbox(key="downloads_valid").uncheck().run()
    assert not [i for i in at.info if "No pair is validated yet" in i.value]
    # every pair has a row in the adjudicated labels, decided or not: the button says how many are
    assert any(
        b.label.startswith("Adjudicated labels (") and b.label.endswith(", 0 decided)")
        for b in at.get("download_button")
    )
    with db.session_scope(engine) as session:
        adjudicate.auto_resolve(session, study="sample", account=_account(engine, "boss"))
    at.checkbox(key="downloads_valid").check().run()
    assert not [i for i in at.info if "No pair is validated yet" in i.value]
