"""`annotator power --study S --judge NAME`: the human sample needed when a judge rates every pair."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from analysis.power import Plan, tost_power_at
from analysis.ppi_power import JudgePlan, judge_plan, ppi_design_power
from analysis.ppi_simulation import Design
from analysis.ppi_simulation import simulate as simulate_studies
from annotator.cli import app
from annotator.people.authorization import SYSTEM
from annotator.review.judge_power import judge_power
from tests.utils.judgehelpers import judged_beyond_people

PILOT = Plan(
    n_pairs=3000, per_pair=5, pool=5, margin=0.3, pair_var=0.25, annotator_var=0.01, residual_var=0.36
)


def test_a_useless_or_anti_correlated_judge_needs_the_people_only_sample() -> None:
    for rho in (0.0, -0.6):
        plan = judge_plan(PILOT, correlation=rho)
        assert plan.judge_pairs == plan.people_pairs
    good = judge_plan(PILOT, correlation=0.7)
    assert good.people_pairs is not None and good.judge_pairs is not None
    assert good.judge_pairs < 0.75 * good.people_pairs
    assert good.judge_power >= 0.8


def test_a_pilot_whose_judgments_never_vary_plans_the_fewest_pairs() -> None:
    for pool in (3, 20):
        still = Plan(500, 3, pool, 0.3, pair_var=0.0, annotator_var=0.0, residual_var=0.0)
        assert ppi_design_power(replace(still, n_pairs=10), n_total=500, correlation=0.5) == (1.0, 0.0, 9.0)
        assert judge_plan(still, correlation=0.5).people_pairs == 2


def test_the_plan_is_not_reachable_when_the_annotator_term_dominates() -> None:
    plan = judge_plan(
        Plan(500, 3, 3, 0.3, pair_var=0.25, annotator_var=0.5, residual_var=0.36), correlation=0.9
    )
    assert plan.judge_pairs is None and plan.people_pairs is None
    with pytest.raises(ValueError, match="n_rated"):
        ppi_design_power(replace(PILOT, n_pairs=1, per_pair=1, pool=1), n_total=10, correlation=0.5)


def test_the_planned_sample_reaches_the_power_in_simulated_studies() -> None:
    plan = judge_plan(PILOT, correlation=0.7)
    assert plan.judge_pairs is not None
    design = Design(
        n_total=3000,
        n_rated=plan.judge_pairs,
        panel=5,
        mean_gap=0.0,
        judge="tracking",
        judge_corr=0.7,
        pair_sd=0.5,
        annotator_sd=0.1,
        noise_sd=0.6,
        margin=0.3,
    )
    power = float(np.mean(simulate_studies(design, 1000, np.random.default_rng(3))["ppi"]))
    assert 0.74 <= power <= 0.9


def test_the_pool_designs_power_is_its_model_averaged_over_the_estimated_annotator_variance() -> None:
    """In a pool design the estimate's spread is the model variance and the interval the guard's, its
    annotator part on pool - 1 df: the planned power equals a direct simulation of that model."""
    rng = np.random.default_rng(11)
    for pool, n, rho, margin in ((20, 40, 0.0, 0.3), (20, 30, 0.7, 0.3), (6, 60, 0.5, 0.25)):
        plan = Plan(n, 3, pool, margin, pair_var=0.25, annotator_var=0.02, residual_var=0.36)
        planned, _, _ = ppi_design_power(plan, n_total=5000, correlation=rho)
        va = plan.annotator_var / pool
        vr = (plan.pair_var + plan.residual_var / 3) * (1 - rho**2 * (5000 - n) / 5000) / n
        guard = va + plan.residual_var / (3 * n)
        draws = 400_000
        estimate = rng.normal(0.0, math.sqrt(va + vr), draws)
        a_part = guard * rng.chisquare(pool - 1, draws) / (pool - 1)
        df_draws = (a_part + vr) ** 2 / (a_part**2 / (pool - 1) + vr**2 / (n - 1))
        half = stats.t.ppf(0.95, df_draws) * np.sqrt(a_part + vr)
        simulated = float(np.mean((estimate - half > -margin) & (estimate + half < margin)))
        assert planned == pytest.approx(simulated, abs=0.004)
        _, se, df = ppi_design_power(plan, n_total=5000, correlation=rho)
        assert tost_power_at(plan, se, df) < planned - 0.02  # the guard's SE as the spread: too low


@pytest.mark.derived
def test_power_command_with_a_judge(env_db: str, engine: Engine, tmp_path: Path) -> None:
    judged_beyond_people(engine, tmp_path, rated=40, unrated=200)
    result = CliRunner().invoke(app, ["power", "--study", "s1", "--judge", "every-pair", "--pairs", "5000"])
    assert result.exit_code == 0, result.output
    assert "Pairs people must rate for power 0.8" in result.output
    assert "5000 pairs judged, 3 annotators per pair from a pool of 3" in result.output
    for dimension in ("correctness", "relevance", "helpfulness"):
        assert dimension in result.output
    with Session(engine) as session:
        _, plan = judge_power(session, study="s1", judge="every-pair", account=SYSTEM, n_total=5000)
    assert list(plan["dimension"]) == ["correctness", "relevance", "helpfulness"]
    assert (plan["pilot_pairs"] == 40).all() and (plan["correlation"] > 0.999).all()
    for row in plan.to_dict("records"):
        pilot = Plan(
            5000,
            row["per_pair"],
            row["pool"],
            0.5,
            row["pair_var"],
            row["annotator_var"],
            row["residual_var"],
        )
        expected = judge_plan(pilot, correlation=row["correlation"], min_pairs=20)
        planned = (expected.people_pairs, expected.judge_pairs, *_whole(expected))
        assert tuple(n or math.nan for n in planned) == pytest.approx(
            tuple(row[key] for key in PLANNED), nan_ok=True
        )
        line = next(line for line in result.output.splitlines() if row["dimension"] in line)
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        for cell, key in zip(cells[3:7], PLANNED, strict=True):
            assert cell == ("-" if math.isnan(row[key]) else str(int(row[key])))
    # the whole verdict needs the mean gap's pairs and the study's min_pairs at least
    for mean_gap, whole in (("people_pairs", "people_verdict_pairs"), ("judge_pairs", "judge_verdict_pairs")):
        both = plan[[mean_gap, whole]].dropna()
        assert (both[whole] >= both[mean_gap]).all() and (both[whole] >= 20).all()
    assert "for the mean gap on every dimension (5000 pairs judged" in result.output
    assert "the judge's whole verdict (the mean gap within the margin and the share of broken pairs" in (
        " ".join(result.output.split())
    )
    unknown = CliRunner().invoke(app, ["power", "--study", "s1", "--judge", "nobody"])
    assert unknown.exit_code == 1
    assert "study 's1' has no ratings from judge 'nobody' (judges: every-pair)" in unknown.output
    assert "Traceback" not in unknown.output
    alone = CliRunner().invoke(app, ["power", "--judge", "every-pair"])
    assert alone.exit_code == 1 and "--judge needs --study" in alone.output


@pytest.mark.derived
def test_power_with_a_judge_plans_a_pool_larger_than_the_pilots(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:
    """`--pool P`: each pair's annotators from a pool of P (the design where the annotator term
    shrinks); the plan is judge_plan's for that pool, and a pool below the annotators per pair is one
    line."""
    judged_beyond_people(engine, tmp_path, rated=40, unrated=200)
    args = ["power", "--study", "s1", "--judge", "every-pair", "--pairs", "5000"]
    result = CliRunner().invoke(app, [*args, "--pool", "20"])
    assert result.exit_code == 0, result.output
    assert "5000 pairs judged, 3 annotators per pair from a pool of 20" in result.output
    with Session(engine) as session:
        _, crossed = judge_power(session, study="s1", judge="every-pair", account=SYSTEM, n_total=5000)
        _, pooled = judge_power(
            session, study="s1", judge="every-pair", account=SYSTEM, n_total=5000, pool=20
        )
    assert (crossed["pool"] == 3).all() and (pooled["pool"] == 20).all()
    for row in pooled.to_dict("records"):
        pilot = Plan(5000, 3, 20, 0.5, row["pair_var"], row["annotator_var"], row["residual_var"])
        expected = judge_plan(pilot, correlation=row["correlation"], min_pairs=20)
        planned = (expected.people_pairs, expected.judge_pairs, *_whole(expected))
        assert tuple(n or math.nan for n in planned) == pytest.approx(
            tuple(row[key] for key in PLANNED), nan_ok=True
        )
    # the annotator term is spread over more annotators: never more pairs than the pilot's own panel
    assert (pooled["people_pairs"].fillna(1e9) <= crossed["people_pairs"].fillna(1e9)).all()
    small = CliRunner().invoke(app, [*args, "--pool", "2"])
    assert small.exit_code == 1
    assert small.output.strip().splitlines() == [
        "error: --pool 2 is smaller than the 3 annotators per pair of the pilot on 'correctness'"
    ]


PLANNED = ("people_pairs", "judge_pairs", "people_verdict_pairs", "judge_verdict_pairs")


def _whole(plan: JudgePlan) -> tuple[int | None, int | None]:
    return plan.people_verdict_pairs, plan.judge_verdict_pairs
