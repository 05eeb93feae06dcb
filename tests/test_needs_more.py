"""Pairs the cleaning list cannot settle ("needs more judgments") get one more annotator each, from the
CLI (`annotator assign --needs-more`) or the service the Validation page's button calls."""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from analysis.cleaning import pairs_needing_more
from annotator.cli import app
from annotator.errors import UserError
from annotator.intake.assign import assign
from annotator.people.authorization import SYSTEM
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Assignment, Pair, User, id_of
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.databases import built_once, copy_of, engine_on
from tests.utils.factories import account_for, make_annotators, make_study, make_user


def _annotators_per_pair(engine: Engine) -> dict[str, list[str]]:
    with Session(engine) as session:
        rows = session.exec(
            select(Pair.external_id, User.username)
            .join(Assignment, Assignment.pair_id == Pair.id)  # type: ignore[arg-type]
            .join(User, User.id == Assignment.annotator_id)  # type: ignore[arg-type]
            .where(Pair.control == "")
        ).all()
    out: dict[str, list[str]] = {}
    for pair, name in rows:
        out.setdefault(pair, []).append(name)
    return {pair: sorted(names) for pair, names in out.items()}


@pytest.fixture(scope="module")
def rated_source(tmp_path_factory: pytest.TempPathFactory) -> str:
    """30 pairs (a fifth broken) rated by 3 simulated annotators, and two more annotators with no work
    yet: built once for the module."""
    folder = tmp_path_factory.mktemp("needs_more")

    def build(engine: Engine) -> None:
        make_study(engine, folder, 30, account=SYSTEM)
        spec = SimulationSpec(annotators=3, overlap=3, seed=5, rubric_gap=1.5, broken_share=0.2)
        simulate(engine, study="s1", spec=spec)
        make_annotators(engine, 2, prefix="extra")

    return built_once(folder, build)


@pytest.fixture
def rated_url(rated_source: str, tmp_path: Path) -> str:
    """The URL of this test's own copy of the rated study."""
    return copy_of(rated_source, tmp_path)


@pytest.fixture
def rated(rated_url: str) -> Iterator[Engine]:
    with engine_on(rated_url) as engine:
        yield engine


def test_each_named_pair_gets_one_more_annotator_and_no_other_pair_changes(rated: Engine) -> None:
    before = _annotators_per_pair(rated)
    named = ["pair-3", "pair-7", "pair-11"]
    with db.session_scope(rated) as session:
        summary = assign(session, study="s1", more_for=named, account=SYSTEM)
    after = _annotators_per_pair(rated)
    assert summary.created == 3 and summary.pairs == 3 and summary.unfilled == 0
    for pair, names in after.items():
        if pair in named:
            added = set(names) - set(before[pair])
            assert len(names) == len(before[pair]) + 1 and len(added) == 1
            assert added <= {"extra00", "extra01"}  # the annotators not on the pair, least loaded first
        else:
            assert names == before[pair]
    load = Counter(name for names in after.values() for name in names if name.startswith("extra"))
    assert sorted(load.values()) == [1, 2]  # the two free annotators share the three new slots


def test_an_unknown_pair_is_named_and_nothing_is_written(rated: Engine) -> None:
    before = _annotators_per_pair(rated)
    with pytest.raises(UserError, match=r"no main pair 'nope' \(1 unknown\)"):
        with db.session_scope(rated) as session:
            assign(session, study="s1", more_for=["pair-1", "nope"], account=SYSTEM)
    assert _annotators_per_pair(rated) == before


def test_a_pair_that_every_annotator_rates_is_counted_as_unfilled(rated: Engine) -> None:
    with db.session_scope(rated) as session:
        for _ in range(2):  # the two free annotators both join pair-4
            assign(session, study="s1", more_for=["pair-4"], account=SYSTEM)
        summary = assign(session, study="s1", more_for=["pair-4"], account=SYSTEM)
    assert summary.created == 0 and summary.unfilled == 1
    assert "1 pair found no further active annotator" in str(summary)
    assert len(_annotators_per_pair(rated)["pair-4"]) == 5


def test_the_cli_gives_the_report_s_uncertain_pairs_one_more_annotator(rated: Engine, rated_url: str) -> None:
    with db.session_scope(rated) as session:
        uncertain = pairs_needing_more(study_report(session, study="s1", account=SYSTEM, n_boot=50).cleaning)
    assert uncertain  # three noisy judgments on a fifth of broken pairs leave some unsettled
    before = _annotators_per_pair(rated)
    result = CliRunner().invoke(app, ["assign", "--study", "s1", "--needs-more", "--db", rated_url])
    assert result.exit_code == 0, result.output
    assert f"{len(uncertain)} new assignments ({len(uncertain)} pairs" in result.output
    # a fixed design: the pairs are the cleaning list's, not a number of judgments that settles the study
    said = " ".join(result.output.split())
    assert f"the cleaning list asks for more judgments on {len(uncertain)} pairs" in said
    assert "more judgments, on these pairs" not in said
    after = _annotators_per_pair(rated)
    grew = {pair for pair in after if len(after[pair]) == len(before[pair]) + 1}
    assert grew == set(uncertain)
    assert all(len(after[pair]) == len(before[pair]) for pair in after if pair not in uncertain)


def test_a_pair_a_person_decided_gets_no_more_judgments(rated: Engine, rated_url: str) -> None:
    """The Validation page's line and `assign --needs-more` leave out a pair a person decided: the
    adjudicator's decision settles it, whatever the cleaning list still says of its evidence."""
    from annotator.review import adjudicate
    from annotator.review.adjudication_queue import decided_pairs
    from annotator.review.study_report import standing

    with db.session_scope(rated) as session:
        report = study_report(session, study="s1", account=SYSTEM, n_boot=50)
        uncertain = pairs_needing_more(report.cleaning)
        first = session.exec(select(Pair).where(Pair.external_id == uncertain[0])).one()
        judge = account_for(session, id_of(make_user(session, "judge", role="adjudicator")))
        adjudicate.decide(session, pair_id=id_of(first), account=judge, preference="chosen", keep=True)
    with db.session_scope(rated) as session:
        decided = decided_pairs(session, study="s1", account=SYSTEM)
        assert decided == {uncertain[0]}
        assert standing(report, decided)[1] == uncertain[1:]
    before = _annotators_per_pair(rated)
    result = CliRunner().invoke(app, ["assign", "--study", "s1", "--needs-more", "--db", rated_url])
    assert result.exit_code == 0, result.output
    after = _annotators_per_pair(rated)
    assert len(after[uncertain[0]]) == len(before[uncertain[0]])  # decided: no one more
    assert {pair for pair in after if len(after[pair]) > len(before[pair])} == set(uncertain[1:])
