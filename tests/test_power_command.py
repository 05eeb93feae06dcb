"""`annotator power --study`: the achieved power of a study in the database and of its overall PASS."""

import re
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from annotator.cli import app
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.synthetic import SimulationSpec, simulate

pytestmark = pytest.mark.derived


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


def test_power_compares_designs_from_a_pilot(env_db: str, engine: Engine) -> None:
    """`--compare-designs`: one table with fixed, two-stage and sequential designs for the planned pairs,
    pool and budget: expected judgments within the budget and the power of the overall PASS."""
    sample = Path(__file__).resolve().parents[1] / "data" / "sample_pairs.jsonl"
    ingest.import_file(engine, sample, study="sample", account=SYSTEM)
    simulate(engine, study="sample", spec=SimulationSpec(seed=1))
    args = ["power", "--study", "sample", "--compare-designs", "--pairs", "80", "--pool", "20"]
    result = CliRunner().invoke(app, [*args, "--budget", "3", "--simulations", "200"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Designs for 80 pairs, a pool of 20, 3 judgments per pair" in text
    rows = {
        name: re.search(re.escape(name) + r"\s*│\s*(\d+)\s*│\s*([\d.]+)\s*│\s*([\d.]+)\s*│\s*([\d.]+)", text)
        for name in ("fixed 3", "two-stage 2", "sequential 1")
    }
    for name, found in rows.items():
        assert found is not None, (name, result.output)
        judgments, equivalence, rest, overall = found.groups()
        assert int(judgments) <= 240
        assert 0.0 <= float(overall) <= min(float(equivalence), float(rest)) + 1e-9
    assert int(rows["fixed 3"].group(1)) == 240  # type: ignore[union-attr]
    assert "two-stage 2 + blocks of 8; sequential 1 + one at a time" in text
    assert "200 simulated studies per design and item" in text and "sample_size" in text
    alone = CliRunner().invoke(app, ["power", "--compare-designs", "--no-check"])
    assert alone.exit_code == 1 and "--compare-designs needs --study" in alone.output
    assert len(alone.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        (["--pairs", "50"], "--pairs goes with --judge or --compare-designs"),
        (["--pool", "5"], "--pool goes with --judge or --compare-designs"),
        (["--budget", "4"], "--budget goes with --compare-designs"),
        (["--study", "s", "--judge", "j", "--budget", "5"], "--budget goes with --compare-designs"),
        (
            ["--study", "s", "--judge", "j", "--compare-designs"],
            "give --judge or --compare-designs, not both (they plan different designs)",
        ),
    ],
)
def test_an_option_of_another_plan_is_refused_not_ignored(options: list[str], refusal: str) -> None:
    result = CliRunner().invoke(app, ["power", "--no-check", *options])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"error: {refusal}"]


def test_the_planner_says_what_its_power_covers_and_marks_designs_that_cannot_pass() -> None:
    """The design table plans the mean gap's TOST: it says the equivalence PASS also needs the broken
    share bounded and 20 pairs rated by two or more annotators, and marks the designs short of that;
    a simulation of rounded ratings well below the plan says why."""
    from typer.testing import CliRunner

    from annotator.cli import app

    result = CliRunner().invoke(app, ["power", "--margin", "0.5", "--sd", "0.5"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "The power of the mean gap's TOST only" in text and "at least 20 pairs rated by two" in text
    assert "16 pairs, 3 annotators per pair from a pool of 3 reach power 0.810 (too few pairs to PASS" in text
    assert "│ 1 │ 38* │" in text and "│ 5 │ 6* │" in text
    assert "below the plan: rounding ratings to whole points" in text


def test_a_design_out_of_reach_is_an_answer_not_an_error() -> None:
    """A true difference just inside the margin: the per-pair TOST needs about 20,000 pairs, and no
    crossed design within the planner's limits reaches the power; that is said, with exit 0."""
    from typer.testing import CliRunner

    from annotator.cli import app

    result = CliRunner().invoke(app, ["power", "--sd", "1", "--true-diff", "0.49", "--no-check"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "20610 pairs with 3 annotators each reach power 0.800" in text
    assert "generalizing over annotators (crossed model): not reached: no design with up to" in text


@pytest.mark.parametrize(
    "options",
    [["--margin", "1e150"], ["--sd", "1e150"], ["--annotator-sd", "1e150"], ["--pair-sd", "1e150"]],
)
def test_a_margin_or_sd_beyond_any_scale_is_refused_not_an_overflow(options: list[str]) -> None:
    """The planner squares variances: --annotator-sd or --pair-sd 1e150 (and --margin 1e308) ended in
    "unexpected error: OverflowError"; no rating scale comes near 1e6 points."""
    result = CliRunner().invoke(app, ["power", "--no-check", *options])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{options[0]}'" in " ".join(result.output.split())
    assert "unexpected error" not in result.output


def test_more_annotators_per_pair_than_the_planner_s_pool_is_an_answer() -> None:
    """The crossed plan for 1,000 annotators per pair said "error: need n_pairs >= 2, per_pair >= 1 and
    pool >= per_pair" (the plan's own check) after the per-pair plan, with exit 1."""
    result = CliRunner().invoke(app, ["power", "--no-check", "--annotators", "1000"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "2 pairs with 1000 annotators each reach power" in text
    assert (
        "not reached: 1000 annotators per pair are more than the largest pool the planner searches (500)"
        in text
    )
