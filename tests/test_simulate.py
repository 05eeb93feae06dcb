"""The simulator: deterministic, saves through the real assignment and submit code, and its known truth
comes out of the validation report (equivalence, rubric superiority, the sample's flawed pairs)."""

import json
import statistics
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from analysis.report import Report
from annotator.demo import SAMPLE
from annotator.errors import UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Assignment, Judgment, Pair, Score, User
from annotator.synthetic import SimulationSpec, SimulationSummary, simulate
from tests.utils.databases import fresh_db_url

STUDY = "sample"
SIM_USERS = ["sim_01", "sim_02", "sim_03"]
FLAWED = sorted(
    record["id"]
    for record in map(json.loads, SAMPLE.read_text(encoding="utf-8").splitlines())
    if record.get("construction_note")
)


def _engine(tmp_path: Path, name: str = "t") -> Engine:
    engine = db.make_engine(fresh_db_url(tmp_path, name, migrated=True))
    ingest.import_file(engine, SAMPLE, study=STUDY, account=SYSTEM)
    return engine


def _simulated(tmp_path: Path, name: str = "t", **spec: float) -> tuple[Engine, SimulationSummary]:
    engine = _engine(tmp_path, name)
    summary = simulate(engine, study=STUDY, spec=SimulationSpec(**spec))  # type: ignore[arg-type]
    return engine, summary


def _scores(engine: Engine) -> list[tuple[str, str, str, str, float]]:
    """Every score as (pair, annotator, response, item, value), in a database-independent order."""
    query = (
        select(Pair.external_id, User.username, Score.response, Score.item, Score.value)
        .join(Judgment, col(Judgment.id) == col(Score.judgment_id))
        .join(Assignment, col(Assignment.id) == col(Judgment.assignment_id))
        .join(Pair, col(Pair.id) == col(Assignment.pair_id))
        .join(User, col(User.id) == col(Assignment.annotator_id))
    )
    with Session(engine) as session:
        return sorted(tuple(row) for row in session.exec(query))  # type: ignore[misc]


def _report(engine: Engine) -> Report:
    with db.session_scope(engine) as session:
        return study_report(session, study=STUDY, n_boot=50, account=SYSTEM)


def test_sample_has_enough_pairs_and_six_flawed_ones() -> None:
    assert len(SAMPLE.read_text(encoding="utf-8").splitlines()) >= 36
    assert len(FLAWED) == 6


def test_same_seed_gives_identical_scores(tmp_path: Path) -> None:
    first, _ = _simulated(tmp_path, "a", seed=5)
    second, _ = _simulated(tmp_path, "b", seed=5)
    other, _ = _simulated(tmp_path, "c", seed=6)
    scores = _scores(first)
    assert len(scores) > 1000
    assert scores == _scores(second)
    assert scores != _scores(other)


def test_goes_through_assignment_and_submit(tmp_path: Path) -> None:
    engine, summary = _simulated(tmp_path, seed=1)
    with Session(engine) as session:
        n_pairs = session.exec(select(func.count()).select_from(Pair)).one()
        sim_ids = list(session.exec(select(User.id).where(col(User.username).in_(SIM_USERS))))
        assignments = list(session.exec(select(Assignment).where(col(Assignment.annotator_id).in_(sim_ids))))
        revisions = list(session.exec(select(Judgment.revision)))
    assert summary.annotators == SIM_USERS
    assert summary.judgments == 3 * n_pairs
    assert len(assignments) == 3 * n_pairs
    assert {a.status for a in assignments} == {"done"}
    assert all(a.current_judgment_id is not None and a.revisions == 1 for a in assignments)
    assert len(revisions) == 3 * n_pairs and set(revisions) == {1}
    sides: dict[int, Counter[str]] = {}
    for a in assignments:
        sides.setdefault(a.pair_id, Counter())[a.chosen_side] += 1
    assert len(sides) == n_pairs
    assert all(abs(count["A"] - count["B"]) <= 1 for count in sides.values())


def test_rerun_adds_nothing(tmp_path: Path) -> None:
    engine, _ = _simulated(tmp_path, seed=2)
    before = _scores(engine)
    with Session(engine) as session:
        judgments = session.exec(select(func.count()).select_from(Judgment)).one()
    again = simulate(engine, study=STUDY, spec=SimulationSpec(seed=2))
    assert again.judgments == 0
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Judgment)).one() == judgments
    assert _scores(engine) == before


@pytest.mark.derived
def test_time_on_task_is_plausible(tmp_path: Path) -> None:
    engine, _ = _simulated(tmp_path, seed=3)
    with Session(engine) as session:
        seconds = list(session.exec(select(Judgment.time_on_task_s)))
    assert min(seconds) > 5
    assert 30 <= statistics.median(seconds) <= 300


@pytest.mark.derived
def test_no_quality_gap_is_equivalent_and_rubric_superior(tmp_path: Path) -> None:
    engine, _ = _simulated(tmp_path, seed=0, quality_gap=0.0, rubric_gap=1.0)
    report = _report(engine)
    assert report.summary["n_pairs"] >= 36
    eq = report.validation.equivalence
    assert eq["equivalent"].all(), eq[["dimension", "estimate", "ci_low", "ci_high"]]
    # the per-pair TOST (conditional on this panel of 3 simulated annotators); the crossed-model
    # verdict, which generalizes to annotators in general, is rightly weak with 3 annotators
    assert bool(report.validation.iut_panel.equivalent)
    superiority = report.validation.superiority.iloc[0]
    assert superiority["estimate"] > 0
    assert superiority["p_holm"] < report.parameters["alpha"]


@pytest.mark.derived
def test_large_quality_gap_is_not_equivalent(tmp_path: Path) -> None:
    engine, _ = _simulated(tmp_path, seed=0, quality_gap=1.5)
    report = _report(engine)
    assert not bool(report.validation.iut.equivalent)
    assert not report.validation.equivalence["equivalent"].any()


@pytest.mark.derived
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flawed_pairs_fail_validation(tmp_path: Path, seed: int) -> None:
    """The deliberately flawed sample pairs are on the cleaning list (to drop or needing more
    judgments; seeds 0, 1, 2: the first three, not picked). The list has a stated error rate now, so a
    2-point defect on one dimension seen by three noisy raters may escape it (one of six at seed 0),
    and good pairs are rarely listed (the old list named a third of them)."""
    engine, _ = _simulated(tmp_path, seed=seed)
    report = _report(engine)
    failed = set(report.failed_pairs["pair_id"])
    assert len(set(FLAWED) - failed) <= 1, set(FLAWED) - failed
    n_good = len(report.pair_table) - len(FLAWED)
    assert len(failed - set(FLAWED)) <= 0.25 * n_good


def _times(engine: Engine) -> dict[str, list[float]]:
    query = (
        select(User.username, Judgment.time_on_task_s)
        .join(Assignment, col(Assignment.annotator_id) == col(User.id))
        .join(Judgment, col(Judgment.assignment_id) == col(Assignment.id))
    )
    times: dict[str, list[float]] = {}
    with Session(engine) as session:
        for name, seconds in session.exec(query):
            times.setdefault(name, []).append(seconds)
    return times


@pytest.mark.derived
def test_spammers_are_the_last_annotators_and_answer_fast(tmp_path: Path) -> None:
    engine, _ = _simulated(tmp_path, annotators=4, overlap=3, spammers=1, seed=1)
    median = {name: statistics.median(seconds) for name, seconds in _times(engine).items()}
    assert median["sim_04"] < 15 < min(median["sim_01"], median["sim_02"], median["sim_03"])


@pytest.mark.derived
def test_spammers_answer_at_random(tmp_path: Path) -> None:
    engine, _ = _simulated(tmp_path, annotators=4, overlap=3, spammers=1, seed=1)
    by_name: dict[str, list[int]] = {}
    query = (
        select(User.username, Judgment.preference)
        .join(Assignment, col(Assignment.annotator_id) == col(User.id))
        .join(Judgment, col(Judgment.assignment_id) == col(Assignment.id))
    )
    with Session(engine) as session:
        for name, preference in session.exec(query):
            by_name.setdefault(name, []).append(preference)
    careful = statistics.mean(by_name["sim_01"])  # chosen follows the rubric: mostly preferred
    careless = statistics.mean(by_name["sim_04"])
    assert careful > 0.5 and abs(careless) < 0.5


def test_cli_simulate_refuses_more_spammers_than_annotators(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from annotator.cli import app

    result = CliRunner().invoke(
        app, ["simulate", "--study", STUDY, "--annotators", "2", "--overlap", "2", "--spammers", "3"]
    )
    assert result.exit_code == 1 and "--spammers must be between 0 and --annotators (2)" in result.output


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("noise", float("nan"), "--noise must be a finite number"),
        ("quality_gap", float("inf"), "--quality-gap must be a finite number"),
        ("bias_sd", -0.1, "standard deviations"),
        ("broken_share", 1.5, "broken share"),
    ],
)
def test_a_simulation_spec_refuses_a_value_no_simulation_can_use(field: str, value: float, said: str) -> None:
    with pytest.raises(UserError, match=said):
        SimulationSpec(**{field: value})
