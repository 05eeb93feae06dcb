"""What `annotator power` prints beyond its first plan: the crossed model's designs, the check by
simulation, and the plans from a pilot study (designs side by side, the judge's human sample, the
whole verdict's power)."""

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.table import Column, Table
from rich.text import Text

from analysis.settings import DEFAULTS
from annotator.cli.common import open_db, out
from annotator.errors import UserError

if TYPE_CHECKING:
    from analysis.power import DesignResult, PowerResult


def crossed_designs(
    design_for: Callable[[int], "DesignResult"], *, annotators: int, annotator_sd: float, pair_sd: float
) -> None:
    """The crossed model's design for `annotators` per pair and the table by overlap, with what their
    power covers (`design_for(per_pair)` plans one)."""
    from analysis.power import MAX_POOL, NotReached

    if annotators > MAX_POOL:  # no pool the planner searches holds them (the plan's check said so obscurely)
        out.print(
            f"generalizing over annotators (crossed model): not reached: {annotators} annotators per pair "
            f"are more than the largest pool the planner searches ({MAX_POOL})",
            highlight=False,
        )
        return
    try:
        design = design_for(annotators)
    except NotReached as exc:
        out.print(f"generalizing over annotators (crossed model): not reached: {exc}", highlight=False)
        return
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out.print(
        f"generalizing over annotators (crossed model, annotator-gap SD {annotator_sd:g}, pair-gap SD "
        f"{pair_sd:g}): {design.n_pairs} pairs, {design.per_pair} annotators per pair from a pool of "
        f"{design.pool} reach power {design.power:.3f}"
        + ("" if can_pass(design.n_pairs, design.per_pair) else " (too few pairs to PASS: see below)"),
        highlight=False,
    )
    designs = Table(
        "overlap", "pairs", "pool", "judgments", "power", title="Designs by overlap (crossed model)"
    )
    for overlap in range(1, 6):
        try:
            option = design_for(overlap)
        except ValueError:
            continue
        designs.add_row(
            str(overlap),
            f"{option.n_pairs}{'' if can_pass(option.n_pairs, overlap) else '*'}",
            str(option.pool),
            str(option.n_pairs * overlap),
            f"{option.power:.3f}",
        )
    out.print(designs)
    out.print(
        f"The power of the mean gap's TOST only. The report's equivalence PASS also needs the share of "
        f"broken pairs bounded below {DEFAULTS.max_broken_share:g} and at least {DEFAULTS.min_pairs} pairs "
        f"rated by two or more annotators (* fewer: that design cannot PASS); `annotator power --study S` "
        f"simulates the whole verdict from a pilot's variance components.",
        highlight=False,
    )


def can_pass(n_pairs: int, per_pair: int) -> bool:
    """Whether a design has the pairs rated by two or more annotators the report asks for."""
    return per_pair >= 2 and n_pairs >= DEFAULTS.min_pairs


def check_by_simulation(
    result: "PowerResult", *, margin: float, sd: float, annotators: int, alpha: float, true_diff: float
) -> None:
    """The plan's power checked by simulating rounded 1-5 ratings, and what a shortfall means."""
    from analysis.power import simulated_power

    noise = sd / 2**0.5
    simulated = simulated_power(
        result.n_pairs,
        margin=margin,
        annotators=annotators,
        noise=noise,
        alpha=alpha,
        quality_gap=true_diff,
        bias_sd=0.0,
        n_sim=400,
    )
    out.print(
        f"simulation (rounded 1-5 ratings, noise SD {noise:.2f}, 400 studies): power {simulated:.3f}",
        highlight=False,
    )
    if result.power - simulated > 3 * (result.power * (1 - result.power) / 400) ** 0.5:
        out.print(
            "  below the plan: rounding ratings to whole points adds about 1/6 to the variance of a "
            "difference, which the plan's SD does not include; give --sd as the SD of rounded ratings' "
            "differences (a pilot's `--study`) or plan for the simulated power",
            highlight=False,
        )


def design_table(
    study: str,
    database: str | None,
    *,
    pairs: int | None,
    pool: int | None,
    budget: float | None,
    simulations: int,
) -> None:
    """Fixed, two-stage and sequential designs side by side from a pilot study's variance components."""
    from annotator.people import authorization
    from annotator.review import study_report
    from annotator.store import db

    engine = open_db(database)
    with db.session_scope(engine) as session:
        table, planned = study_report.study_design_comparison(
            session,
            study=study,
            account=authorization.SYSTEM,
            pairs=pairs,
            pool=pool,
            budget=budget,
            n_sim=simulations,
        )
    shown = Table(
        "design",
        "judgments",
        "equivalence",
        "rubric, preference",
        "overall PASS",
        title=(
            f"Designs for {planned['n_pairs']} pairs, a pool of {planned['pool']}, {planned['budget']:g} "
            f"judgments per pair (from {study}'s variance components; power at a true quality gap of 0)"
        ),
    )
    for row in table.to_dict("records"):
        shown.add_row(
            str(row["design"]).split(" + ")[0],
            f"{row['judgments']:.0f}",
            f"{row['power_equivalence']:.3f}",
            f"{row['power_rest']:.3f}",
            f"{row['power']:.3f}",
        )
    out.print(shown)
    pilot = planned["pilot"]
    assert isinstance(pilot, dict)
    out.print(
        "Designs: " + "; ".join(str(name) for name in table["design"]) + ". "
        f"{planned['n_sim']} simulated studies per design and item, each design judged by the report's "
        "rule for it: fixed, the crossed-model TOST and the few-broken bound for any distribution of pair "
        "gaps; two-stage and sequential, the registered procedure with its calibrated few-broken test "
        "(mean gap: TOST on the per-pair means). Rubric and preference at their estimated effects, at the "
        "fixed design with as many judgments. Register a design in the study's [allocation] before the "
        "first import. Not simulated, as they stand in this study: "
        + ", ".join(f"{k} {v}" for k, v in pilot.items()),
        highlight=False,
    )


def judge_power_table(
    study: str, judge: str, database: str | None, *, pairs: int | None, pool: int | None
) -> None:
    """The human sample for the study's target power when `judge` rates every pair, per dimension
    (`pool`: the annotators each pair's annotators come from; default the pilot's)."""
    from annotator.people import authorization
    from annotator.review.judge_power import judge_power
    from annotator.store import db

    engine = open_db(database)
    with db.session_scope(engine) as session:
        config, plan = judge_power(
            session, study=study, judge=judge, account=authorization.SYSTEM, n_total=pairs, pool=pool
        )
    settings = config.analysis
    target, margin = settings.target_power, settings.margin
    table = Table(
        Column("dimension", no_wrap=True),
        "pilot pairs",
        "r",
        "mean gap: people only",
        "mean gap: with judge",
        "whole verdict: people only",
        "whole verdict: with judge",
        title=f"Pairs people must rate for power {target:g} (margin +-{margin:g}, true gap 0)",
    )
    for row in plan.to_dict("records"):
        table.add_row(
            Text(str(row["dimension"])),
            str(row["pilot_pairs"]),
            f"{row['correlation']:.3f}",
            *(NOT_REACHED if math.isnan(row[key]) else str(int(row[key])) for key in JUDGE_PLAN_COLUMNS),
        )
    out.print(table)
    first = plan.iloc[0]
    judged = (
        f"{int(first['n_total'])} pairs judged, {int(first['per_pair'])} annotators per pair from a pool "
        f"of {int(first['pool'])}"
    )
    needed = float(plan["judge_pairs"].max(skipna=False))
    if math.isnan(needed):
        out.print(
            Text(
                f"with the judge, power {target:g} for the mean gap is not reached on every dimension "
                f"({judged}): where annotators differ in the gap they see, that term does not shrink with "
                "more pairs but with more annotators: plan a larger pool with --pool P"
            )
        )
    else:
        mean_gap = f"with the judge, {int(needed)} rated pairs reach power {target:g} for the mean gap"
        out.print(Text(f"{mean_gap} on every dimension ({judged})"))
    whole = float(plan["judge_verdict_pairs"].max(skipna=False))
    claim = (
        "the judge's whole verdict (the mean gap within the margin and the share of broken pairs below "
        f"{config.validation.max_broken_share:g} on every dimension, at least {settings.min_pairs} pairs "
        "rated by two or more annotators)"
    )
    if math.isnan(whole):
        out.print(
            Text(
                f"power {target:g} for {claim} is not reached with the judged pairs: most of the "
                "broken-share bound's variance is the people's judgment noise, which no judge predicts; "
                "more annotators per pair shrink it"
            )
        )
    else:
        out.print(Text(f"{int(whole)} rated pairs reach power {target:g} for {claim}"))
    out.print(
        f"Cells: rated pairs, each by {int(first['per_pair'])} annotators ({NOT_REACHED}: not reached with "
        "the judged pairs). From the pilot's crossed-model "
        "variance components and r, the correlation of the judge's chosen - rejected gap with the people's "
        "pair-mean gap on the pilot pairs both rated (prediction-powered TOST, power-tuned lambda, the "
        "few-annotator guard); the whole verdict adds the broken-share bound, planned as the people's own on "
        "the rated pairs (a judge adds nothing measurable to it), by simulation. People must rate a uniform "
        "random sample of the judged pairs.",
        highlight=False,
    )


#: The planned pairs' columns of ``judge_power``'s table, in the CLI table's order.
JUDGE_PLAN_COLUMNS = ("people_pairs", "judge_pairs", "people_verdict_pairs", "judge_verdict_pairs")
#: A planned number of pairs not reached with the judged pairs.
NOT_REACHED = "-"


def study_power(study: str, database: str | None, simulations: int) -> None:
    """The achieved power of an existing study and the annotators its crossed-model test would need."""
    from annotator.people import authorization
    from annotator.review import study_report
    from annotator.store import db

    engine = open_db(database)
    with db.session_scope(engine) as session:
        config, power = study_report.study_power(session, study=study, account=authorization.SYSTEM)
    table = Table(
        "dimension",
        "pairs",
        "SD of per-pair differences",
        "power",
        title=f"Achieved power of {study} (margin +-{config.analysis.margin:g}, true difference 0)",
    )
    components = Table(
        "dimension",
        "pair var",
        "annotator var",
        "residual var",
        "annotators needed",
        title="Variance components",
    )
    for row in power.itertuples():
        table.add_row(row.dimension, str(row.n_pairs), f"{row.sd_diff:.3f}", f"{row.power:.3f}")
        needed = "n/a" if row.pool_needed != row.pool_needed else f"{int(row.pool_needed)}"
        components.add_row(
            row.dimension,
            f"{row.pair_var:.3f}",
            f"{row.annotator_var:.3f}",
            f"{row.residual_var:.3f}",
            needed,
        )
    out.print(table)
    out.print("power: the per-pair TOST, conditional on this panel of annotators", highlight=False)
    out.print(components)
    out.print(
        f"annotators needed: the smallest pool that gives the crossed-model TOST (pairs and annotators in "
        f"general) power {config.analysis.target_power:g} with these pairs and overlap, from the estimated "
        "variance components",
        highlight=False,
    )
    with db.session_scope(engine) as session:
        overall = study_report.study_overall_power(
            session, study=study, account=authorization.SYSTEM, n_sim=simulations
        )
    items = ", ".join(
        f"{key.removeprefix('power_')} {value:.3f}"
        for key, value in overall.items()
        if key.startswith("power_") and key != "power_overall" and isinstance(value, float)
    )
    pilot = overall["pilot"]
    assert isinstance(pilot, dict)
    out.print(
        f"overall PASS: power {overall['power_overall']:.3f} with {overall['n_pairs']} pairs, "
        f"{overall['per_pair']} annotators per pair from a pool of {overall['pool']} ({overall['n_sim']} "
        f"simulated studies from the estimated variance components; quality at a true gap of 0, rubric "
        f"and preference at their estimated effects; per verdict: {items}); not simulated, as they stand "
        "in this study: " + ", ".join(f"{k} {v}" for k, v in pilot.items()),
        highlight=False,
    )
