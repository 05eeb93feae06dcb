"""A registered allocation design: fixed with the study at its first import, and followed by
`annotator assign --needs-more` (and the service the Validation page's button calls)."""

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from analysis.design import Design, pair_evidence
from analysis.vocabulary import PAIR_ID
from annotator import study as study_module
from annotator.cli import app
from annotator.errors import ConfigError, UserError
from annotator.intake.ingest import import_file
from annotator.people.authorization import SYSTEM
from annotator.review.study_report import standing, study_report
from annotator.store import db
from annotator.store.models import Assignment, Pair, Study
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.factories import make_annotators, make_records, write_jsonl

DEFAULT_TEXT = study_module.DEFAULT_CONFIG.read_text(encoding="utf-8")
FIXED = 'design = "fixed"\nfirst_stage = 2\nbudget = 3.0'


def _config(tmp_path: Path, design: str, budget: float = 3.0, name: str = "design.toml") -> Path:
    assert FIXED in DEFAULT_TEXT
    path = tmp_path / name
    text = DEFAULT_TEXT.replace(FIXED, f'design = "{design}"\nfirst_stage = 2\nbudget = {budget}', 1)
    path.write_text(text.replace("overlap = 3", "overlap = 2", 1), encoding="utf-8")
    return path


def test_a_registered_design_round_trips_through_the_first_import(engine: Engine, tmp_path: Path) -> None:
    config = study_module.load_config(_config(tmp_path, "sequential", 3.0))
    import_file(
        engine, write_jsonl(tmp_path / "p.jsonl", make_records(3)), study="s1", config=config, account=SYSTEM
    )
    with Session(engine) as session:
        stored = study_module.study_config(session, "s1")
    assert stored.allocation.design == "sequential"
    assert stored.design == Design("sequential", 2, 3.0, 8, 1)


def test_a_changed_design_is_refused_after_the_first_import(engine: Engine, tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "p.jsonl", make_records(3))
    first = study_module.load_config(_config(tmp_path, "two_stage"))
    import_file(engine, pairs, study="s1", config=first, account=SYSTEM)
    import_file(engine, pairs, study="s1", config=first, account=SYSTEM)  # the same config: a no-op
    other = study_module.load_config(_config(tmp_path, "sequential", name="other.toml"))
    with pytest.raises(UserError, match="already exists with another configuration"):
        import_file(engine, pairs, study="s1", config=other, account=SYSTEM)
    with Session(engine) as session:
        assert study_module.study_config(session, "s1").allocation.design == "two_stage"


def test_a_study_stored_before_the_section_existed_reads_it_as_fixed(engine: Engine, tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "p.jsonl", make_records(2))
    import_file(engine, pairs, study="s1", account=SYSTEM)
    with db.session_scope(engine) as session:
        row = session.exec(select(Study)).one()
        row.config = {k: v for k, v in row.config.items() if k != "allocation"}
        session.add(row)
    import_file(engine, pairs, study="s1", config=study_module.load_config(), account=SYSTEM)
    with Session(engine) as session:
        assert study_module.study_config(session, "s1").design.kind == "fixed"


def test_a_budget_below_the_first_stage_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"design.toml: allocation: budget 1 is below the first stage's 2"):
        study_module.load_config(_config(tmp_path, "two_stage", 1.0))


@pytest.fixture
def sequential(engine: Engine, tmp_path: Path) -> Engine:
    """30 pairs under a registered sequential design (2 first, 3 per pair on average): the first stage
    rated by 3 simulated annotators, and two more annotators with no work yet."""
    config = study_module.load_config(_config(tmp_path, "sequential"))
    import_file(
        engine, write_jsonl(tmp_path / "p.jsonl", make_records(30)), study="s1", config=config, account=SYSTEM
    )
    simulate(engine, study="s1", spec=SimulationSpec(annotators=3, overlap=2, seed=5, rubric_gap=1.5))
    make_annotators(engine, 2, prefix="extra")
    return engine


def _judges_per_pair(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        rows = session.exec(
            select(Pair.external_id)
            .join(Assignment, Assignment.pair_id == Pair.id)  # type: ignore[arg-type]
            .where(Pair.control == "")
        ).all()
    out: dict[str, int] = {}
    for pair in rows:
        out[pair] = out.get(pair, 0) + 1
    return out


def test_needs_more_follows_the_registered_sequential_rule(sequential: Engine, db_url: str) -> None:
    with db.session_scope(sequential) as session:
        report = study_report(session, study="s1", account=SYSTEM, n_boot=50)
    words, pairs = standing(report)
    assert words == "not settled: about 30 more judgments, one at a time; the next on this pair"
    # the rule on its own: the pair whose mean gap is most likely that of a broken pair (on the first
    # dimension: before a look no dimension is further from settled than another); one at a time, as
    # the sequential procedure is calibrated
    table = report.allocation
    assert (table["look"] == 0).all()  # 60 of 90 judgments: before the only registered look
    item = str(table["dimension"].iloc[0])
    d = report.validation.differences[item]
    grouped = d.groupby(PAIR_ID)["diff"]
    ev = pair_evidence(
        grouped.mean(), grouped.size(), float(table.set_index("dimension").loc[item, "noise_var"]), 0.5
    )
    expected = set(grouped.mean().index[np.argsort(-ev, kind="stable")[:1]].astype(str))
    assert set(pairs) == expected
    before = _judges_per_pair(sequential)
    result = CliRunner().invoke(app, ["assign", "--study", "s1", "--needs-more", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert "not settled: about 30 more judgments" in result.output
    after = _judges_per_pair(sequential)
    assert {p for p in after if after[p] == before[p] + 1} == expected
    assert all(after[p] == before[p] for p in after if p not in expected)
    # the next one waits for that judgment: nothing is added, one line says why
    again = CliRunner().invoke(app, ["assign", "--study", "s1", "--needs-more", "--db", db_url])
    assert again.exit_code == 1 and "1 judgment(s) given out are still to come" in again.output
    assert _judges_per_pair(sequential) == after
