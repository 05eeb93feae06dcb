"""The per-annotator quality-control service (annotator/review/quality.py) and `annotator quality`, on
simulated crowds with careless annotators (`simulate --spammers`)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from analysis.render import to_json, to_markdown
from annotator.cli import app
from annotator.errors import AuthError
from annotator.intake import controls
from annotator.people.authorization import SYSTEM, Account
from annotator.review.quality import QualityResult, annotator_quality
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import id_of
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.apphelpers import app_for, shown_tables
from tests.utils.databases import built_once, copy_of, engine_on
from tests.utils.factories import make_user
from tests.utils.qchelpers import qc_study

runner = CliRunner()
RULE = "Exclude annotators whose MACE competence is below 0.4."
SPEC = SimulationSpec(annotators=6, overlap=3, spammers=2, seed=3)


@pytest.fixture(scope="module")
def crowd_study(tmp_path_factory: pytest.TempPathFactory) -> str:
    """30 pairs, 6 simulated annotators of whom sim_05 and sim_06 are spammers, then swapped repeats;
    built once for the module (each test works on its own copy)."""
    folder = tmp_path_factory.mktemp("crowd")
    return built_once(folder, lambda engine: _crowd(engine, folder))


@pytest.fixture
def crowd_url(crowd_study: str, tmp_path: Path) -> str:
    return copy_of(crowd_study, tmp_path, "crowd")


@pytest.fixture
def crowd(crowd_url: str) -> Iterator[Engine]:
    """This test's copy of the crowd study."""
    with engine_on(crowd_url) as engine:
        yield engine


def _crowd(engine: Engine, folder: Path) -> None:
    qc_study(
        engine,
        folder,
        30,
        exclusion={"rule": RULE, "min_competence": 0.4, "exclude_too_fast": True},
        controls={"rate": 0.1},
    )
    simulate(engine, study="s1", spec=SPEC)
    with db.session_scope(engine) as session:
        controls.make_controls(session, study="s1", kind="swap", n=2, account=SYSTEM)
        controls.make_controls(session, study="s1", kind="degrade", n=3, account=SYSTEM)
    simulate(engine, study="s1", spec=SPEC)


@pytest.fixture(scope="module")
def crowd_quality(crowd_study: str) -> QualityResult:
    """The quality result of the crowd study, read once for the module (reading writes nothing)."""
    engine = db.make_engine(crowd_study)
    try:
        with Session(engine) as session:
            return annotator_quality(session, study="s1", account=SYSTEM)
    finally:
        engine.dispose()


def test_spammers_have_the_lowest_competence(crowd_quality: QualityResult) -> None:
    table = crowd_quality.table.sort_values("competence")
    assert set(table["annotator"].iloc[:2]) == {"sim_05", "sim_06"}


def test_the_rule_excludes_the_spammers_only(crowd_quality: QualityResult) -> None:
    assert crowd_quality.excluded == ["sim_05", "sim_06"]


def test_swapped_repeats_and_positive_controls_feed_the_table(crowd_quality: QualityResult) -> None:
    table = crowd_quality.table.set_index("annotator")
    assert (table["swap_checks"] == 2).all() and (table["gold_checks"] > 0).any()


def test_the_rule_was_registered_before_the_first_judgment(crowd_quality: QualityResult) -> None:
    summary = crowd_quality.summary()
    assert summary["rule"] == RULE and summary["registered_before_data"] is True
    assert summary["registered_at"] < summary["first_judgment_at"]


def test_only_researchers_may_read_quality(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 2)
    with db.session_scope(engine) as session:
        user = make_user(session, "ann")
        annotator = Account(id=id_of(user), username="ann", role="annotator")
    with Session(engine) as session, pytest.raises(AuthError):
        annotator_quality(session, study="s1", account=annotator)


def test_cli_quality_prints_the_table_and_the_rule(crowd_url: str) -> None:
    result = runner.invoke(app, ["quality", "--study", "s1", "--db", crowd_url])
    assert result.exit_code == 0, result.output
    assert "sim_05" in result.output and RULE in result.output and "Excluded: sim_05, sim_06" in result.output


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--block-size", "5"], "--block-size goes with --drift block"),
        (["--drift", "week", "--block-size", "5"], "--block-size goes with --drift block"),
        (["--drift", "month"], "agreement over time is per week or block, got 'month'"),
        (["--drift", "block", "--block-size", "0"], "--block-size"),
    ],
)
def test_cli_quality_refuses_a_drift_option_it_could_not_use(
    crowd_url: str, options: list[str], said: str
) -> None:
    result = runner.invoke(app, ["quality", "--study", "s1", "--db", crowd_url, *options])
    assert result.exit_code != 0 and said in result.output and "Traceback" not in result.output
    assert "Excluded" not in result.output


def test_cli_quality_cuts_the_drift_into_blocks_of_the_given_size(crowd_url: str) -> None:
    small = runner.invoke(
        app, ["quality", "--study", "s1", "--db", crowd_url, "--drift", "block", "--block-size", "7"]
    )
    usual = runner.invoke(app, ["quality", "--study", "s1", "--db", crowd_url, "--drift", "block"])
    assert small.exit_code == 0 and usual.exit_code == 0, small.output + usual.output
    assert small.output.count("\n") > usual.output.count("\n")


@pytest.mark.page
def test_the_annotators_page_shows_competence_and_exclusion(
    crowd: Engine, crowd_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with db.session_scope(crowd) as session:
        user = make_user(session, "res", role="researcher")
        researcher = Account(id=id_of(user), username="res", role="researcher")
    monkeypatch.setenv("ANNOTATOR_DB_URL", crowd_url)
    at = app_for(researcher, timeout=60)
    at.switch_page("views/annotators.py").run()
    assert not at.exception
    assert "Quality control" in [h.value for h in at.header]
    tables = shown_tables(at)
    table = next(frame for frame in tables if "Competence, MACE (0-1)" in frame.columns)
    assert table.set_index("Annotator")["Excluded"].to_dict()["sim_05"]
    at.session_state["annotators_drift_open"] = True  # the drift is drawn once its expander is open
    at.run()
    assert any("Alpha preference" in frame.columns for frame in shown_tables(at))


def test_the_report_shows_qc_and_the_verdicts_with_and_without_the_excluded(crowd: Engine) -> None:
    with Session(crowd) as session:
        report = study_report(session, study="s1", n_boot=50, account=SYSTEM)
    assert report.quality is not None
    verdicts = report.quality.verdicts.set_index("key")
    assert "overall" in verdicts.index and set(verdicts.columns) == {"status_all", "status_without_excluded"}
    markdown = to_markdown(report)
    assert "## Annotator quality control" in markdown and RULE in markdown
    assert "## Verdicts with and without the excluded annotators" in markdown
    assert to_json(report)["quality"]["exclusion"]["excluded"] == ["sim_05", "sim_06"]
