"""`annotator power --study`: the achieved power of a study in the database and of its overall PASS."""

import re
from pathlib import Path

from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from annotator.cli import app
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.synthetic import SimulationSpec, simulate


def test_power_command_reports_a_study(env_db: str, engine: Engine) -> None:
    sample = Path(__file__).resolve().parents[1] / "data" / "sample_pairs.jsonl"
    ingest.import_file(engine, sample, study="sample", account=SYSTEM)
    simulate(engine, study="sample", spec=SimulationSpec(seed=1))
    result = CliRunner().invoke(app, ["power", "--study", "sample", "--no-check", "--simulations", "200"])
    assert result.exit_code == 0, result.output
    assert "Achieved power of sample" in result.output
    for dimension in ("correctness", "relevance", "helpfulness"):
        assert dimension in result.output
    # the power of the overall PASS (every verdict), not only of equivalence
    found = re.search(r"overall PASS: power (\d\.\d{3})", result.output)
    assert found is not None, result.output
    assert 0.0 <= float(found.group(1)) <= 1.0
    assert "200 simulated studies" in result.output
    assert "true gap of 0" in result.output and "rubric" in result.output
    missing = CliRunner().invoke(app, ["power", "--study", "nope", "--no-check"])
    assert missing.exit_code == 1 and "no study called 'nope'" in missing.output
