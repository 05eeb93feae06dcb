"""`annotator power --study S --judge NAME`: the human sample needed when a judge rates every pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from analysis.ppi_power import judge_plan, ppi_design_power
from analysis.ppi_simulation import Design
from analysis.ppi_simulation import simulate as simulate_studies
from annotator.cli import app
from annotator.people.authorization import SYSTEM
from annotator.review import judges
from annotator.review.readers import label_frame
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.factories import make_study, write_csv

COMPONENTS = {"pair_var": 0.25, "annotator_var": 0.01, "residual_var": 0.36}


def test_a_useless_or_anti_correlated_judge_needs_the_people_only_sample() -> None:
    for rho in (0.0, -0.6):
        plan = judge_plan(n_total=3000, per_pair=5, pool=5, margin=0.3, correlation=rho, **COMPONENTS)
        assert plan.judge_pairs == plan.people_pairs
    good = judge_plan(n_total=3000, per_pair=5, pool=5, margin=0.3, correlation=0.7, **COMPONENTS)
    assert good.people_pairs is not None and good.judge_pairs is not None
    assert good.judge_pairs < 0.75 * good.people_pairs
    assert good.judge_power >= 0.8


def test_the_plan_is_not_reachable_when_the_annotator_term_dominates() -> None:
    plan = judge_plan(n_total=500, per_pair=3, pool=3, margin=0.3, correlation=0.9, pair_var=0.25,
                      annotator_var=0.5, residual_var=0.36)  # fmt: skip
    assert plan.judge_pairs is None and plan.people_pairs is None
    with pytest.raises(ValueError, match="n_rated"):
        ppi_design_power(n_rated=1, n_total=10, per_pair=1, pool=1, margin=0.3, correlation=0.5, **COMPONENTS)


def test_the_planned_sample_reaches_the_power_in_simulated_studies() -> None:
    plan = judge_plan(n_total=3000, per_pair=5, pool=5, margin=0.3, correlation=0.7, **COMPONENTS)
    assert plan.judge_pairs is not None
    design = Design(n_total=3000, n_rated=plan.judge_pairs, panel=5, mean_gap=0.0, judge="tracking",
                    judge_corr=0.7, pair_sd=0.5, annotator_sd=0.1, noise_sd=0.6, margin=0.3)  # fmt: skip
    power = float(np.mean(simulate_studies(design, 1000, np.random.default_rng(3))["ppi"]))
    assert 0.74 <= power <= 0.9


def _judged_study(engine: Engine, folder: Path) -> None:
    """Study s1: 40 pairs rated by 3 simulated annotators, 200 more no person rated, and a judge on all
    240 that rates the people's pairs like their mean."""
    make_study(engine, folder, 40)
    simulate(engine, study="s1", spec=SimulationSpec(annotators=3, overlap=3, seed=4))
    make_study(engine, folder, 200, start=40)
    with Session(engine) as session:
        means = label_frame(session, study="s1", account=SYSTEM).groupby(["pair_id", "response", "item"])
        values = means["value"].mean()
    rows = [
        {
            "pair_id": f"pair-{i}",
            "response": r,
            "item": item,
            "value": values.get((f"pair-{i}", r, item), 3.0),
        }
        for i in range(240)
        for item in ("correctness", "relevance", "helpfulness")
        for r in ("chosen", "rejected")
    ]
    judges.import_judges(engine, write_csv(folder / "j.csv", rows), study="s1", judge="close", account=SYSTEM)


def test_power_command_with_a_judge(env_db: str, engine: Engine, tmp_path: Path) -> None:
    _judged_study(engine, tmp_path)
    wide = {"COLUMNS": "200"}
    result = CliRunner().invoke(
        app, ["power", "--study", "s1", "--judge", "close", "--pairs", "5000"], env=wide
    )
    assert result.exit_code == 0, result.output
    assert "Pairs people must rate for power 0.8" in result.output
    assert "5000 pairs judged, 3 annotators per pair" in result.output
    for dimension in ("correctness", "relevance", "helpfulness"):
        assert dimension in result.output
    # helpfulness is reachable in this pilot, and the judge (correlation 1) needs fewer pairs than people
    row = next(line for line in result.output.splitlines() if "helpfulness" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[2] == "1.000" and cells[3] == "5000"
    people, judge = (int(c.split()[0]) for c in cells[4:6])
    assert judge < people
    unknown = CliRunner().invoke(app, ["power", "--study", "s1", "--judge", "nobody"])
    assert unknown.exit_code == 1
    assert "study 's1' has no ratings from judge 'nobody' (judges: close)" in unknown.output
    assert "Traceback" not in unknown.output
    alone = CliRunner().invoke(app, ["power", "--judge", "close"])
    assert alone.exit_code == 1 and "--judge needs --study" in alone.output
