"""Planning: the power of the overall PASS for fixed, two-stage and sequential designs from a pilot."""

from dataclasses import replace

import pandas as pd
import pytest

from analysis.design_power import compare_designs, compare_overall
from analysis.power import PassPlan, Plan, overall_pass_power

pytestmark = pytest.mark.nodb

QUALITY = {"kind": "equivalence", "effect": 0.0, "pair_var": 0.0, "annotator_var": 0.01, "residual_var": 0.3}
PILOT = pd.DataFrame(
    [
        {"item": "correctness", **QUALITY},
        {"item": "relevance", **QUALITY, "residual_var": 0.4},
        {"item": "rubric", "kind": "superiority", "effect": 0.3, "pair_var": 0.05, "annotator_var": 0.01,
         "residual_var": 0.3},
    ]
)  # fmt: skip
PLAN = PassPlan(PILOT, n_pairs=40, per_pair=3.0, pool=10, margin=0.5)


def test_each_design_is_judged_by_the_reports_rule_for_it() -> None:
    """Fixed: the report's own rules simulated together (overall_pass_power); adaptive: the product of
    each dimension's calibrated procedure and the rubric/preference verdicts."""
    table = compare_overall(PLAN, n_sim=300, seed=3).set_index("kind")
    fixed = overall_pass_power(replace(PLAN, per_pair=3), n_sim=300, seed=3)
    assert table.loc["fixed", "power"] == pytest.approx(fixed["power_overall"])
    assert table.loc["fixed", "judgments"] == 120
    rest = overall_pass_power(replace(PLAN, components=PILOT.iloc[2:], per_pair=3), n_sim=300, seed=3)
    per_dimension = [
        compare_designs(Plan(40, 3.0, 10, 0.5, 0.0, 0.01, var), n_sim=300, seed=3 + 101 * k).set_index("kind")
        for k, var in enumerate((0.3, 0.4))
    ]
    for kind in ("two_stage", "sequential"):
        equivalence = per_dimension[0].loc[kind, "power"] * per_dimension[1].loc[kind, "power"]
        assert table.loc[kind, "power_equivalence"] == pytest.approx(equivalence)
        assert table.loc[kind, "power"] == pytest.approx(equivalence * rest["power_overall"])
        assert table.loc[kind, "judgments"] <= 120


def test_a_pilot_without_quality_dimensions_is_refused() -> None:
    with pytest.raises(ValueError, match="no quality dimension"):
        compare_overall(replace(PLAN, components=PILOT.iloc[2:]), n_sim=300, seed=3)


@pytest.mark.parametrize(
    ("n_pairs", "budget", "kinds"),
    [
        (80, 3.0, ["fixed", "two_stage", "sequential"]),
        (30, 6.0, ["fixed", "sequential"]),
        (80, 6.0, ["fixed"]),
        (120, 3.0, ["fixed"]),
    ],
)
def test_only_designs_shown_valid_at_this_size_and_budget_are_offered(
    n_pairs: int, budget: float, kinds: list[str]
) -> None:
    """Sequential 3 first at 5-8 per pair and two-stage at 12 per pair failed at 80 pairs; a design is
    offered only at a budget and size where its test was shown to hold."""
    plan = Plan(n_pairs, budget, pool=10, margin=0.5, pair_var=0.0, annotator_var=0.01, residual_var=0.3)
    table = compare_designs(plan, n_sim=50, seed=1)
    assert list(table["kind"]) == kinds
