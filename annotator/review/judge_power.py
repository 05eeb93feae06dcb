"""Planning with a judge: the human sample a study needs for the target power when a judge rates
every pair (``annotator power --study S --judge NAME``). Reads the pilot (the people's labels and the
judge's ratings on the same pairs) and calls :func:`analysis.ppi_power.judge_plan`; nothing here
computes a statistic beyond reading the pilot's variance components and correlation."""

import math

import numpy as np
import pandas as pd
from sqlmodel import Session

from annotator.errors import UserError
from annotator.people.authorization import Account
from annotator.review.judges import judge_frame
from annotator.review.readers import label_frame
from annotator.study import StudyConfig, study_config

__all__ = ["judge_power"]

MIN_SHARED_PAIRS = 10


def judge_power(
    session: Session,
    *,
    study: str,
    judge: str,
    account: Account,
    n_total: int | None = None,
    pool: int | None = None,
) -> tuple[StudyConfig, pd.DataFrame]:
    """Per quality dimension: the pilot's correlation between the judge's gap and the people's
    pair-mean gap, and the pairs people must rate (out of `n_total` judged; default the pairs the
    judge rated) for the study's target power, people only and with the judge, each pair rated by the
    pilot's number of annotators per pair from a pool of `pool` (default the pilot's annotators).

    Returns
    -------
    tuple
        The study's config and a table with columns ``dimension, pilot_pairs, correlation, n_total,
        per_pair, pool, people_pairs, judge_pairs, people_verdict_pairs, judge_verdict_pairs, pair_var,
        annotator_var, residual_var``: ``*_pairs`` for the mean gap's TOST, ``*_verdict_pairs`` for the
        whole verdict (with the broken-share bound and the study's ``min_pairs``); NaN when not reached
        with ``n_total`` pairs.
    """
    from analysis.aggregates import judgment_differences
    from analysis.frames import ANNOTATOR, PAIR_ID, split_controls
    from analysis.mixed import fit_crossed
    from analysis.power import Plan
    from analysis.ppi_power import judge_plan
    from analysis.ppi_report import judge_item_gaps

    config = study_config(session, study)
    frame = label_frame(session, study=study, account=account)
    ratings = judge_frame(session, study=study, account=account)
    mine = ratings[ratings["judge"] == judge]
    if mine.empty:
        known = ", ".join(sorted(ratings["judge"].unique())) or "none"
        raise UserError(f"study {study!r} has no ratings from judge {judge!r} (judges: {known})")
    if frame.empty:
        raise UserError(f"study {study!r} has no judgments yet: the pilot needs people's ratings")
    main, controls = split_controls(frame)
    mine = mine[~mine["pair_id"].isin(set(controls["pair_id"]))] if not controls.empty else mine
    settings = config.analysis
    rows = []
    for item in config.dimension_names:
        try:
            d = judgment_differences(main, item)
        except ValueError:
            continue
        gap = judge_item_gaps(mine, item)
        people = d.groupby(PAIR_ID)["diff"].mean()
        shared = people.index.intersection(gap.index)
        if len(shared) < MIN_SHARED_PAIRS:
            raise UserError(
                f"judge {judge!r} and the people share {len(shared)} pairs rated on {item!r}; the pilot "
                f"needs at least {MIN_SHARED_PAIRS}"
            )
        h, f = people.loc[shared].to_numpy(float), gap.loc[shared].to_numpy(float)
        rho = float(np.corrcoef(h, f)[0, 1]) if np.ptp(h) > 0 and np.ptp(f) > 0 else 0.0
        try:
            fit = fit_crossed(d["diff"].to_numpy(), np.ones((len(d), 1)), d[PAIR_ID], d[ANNOTATOR])
        except ValueError as exc:
            raise UserError(f"cannot fit the pilot's variance components on {item!r}: {exc}") from None
        per_pair = max(1, round(len(d) / fit.n_pairs))
        if pool is not None and pool < per_pair:
            raise UserError(
                f"--pool {pool} is smaller than the {per_pair} annotators per pair of the pilot on {item!r}"
            )
        planned_pool = pool if pool is not None else max(int(d[ANNOTATOR].nunique()), per_pair)
        total = int(n_total) if n_total else max(len(gap), len(people))
        pilot = Plan(
            n_pairs=total,
            per_pair=per_pair,
            pool=planned_pool,
            margin=config.margins[item],
            pair_var=fit.pair_var,
            annotator_var=fit.annotator_var,
            residual_var=fit.residual_var,
            alpha=settings.alpha,
        )
        plan = judge_plan(
            pilot,
            correlation=0.0 if math.isnan(rho) else rho,
            power=settings.target_power,
            max_share=config.validation.max_broken_share,
            min_pairs=settings.min_pairs,
        )
        rows.append(
            {
                "dimension": item,
                "pilot_pairs": len(shared),
                "correlation": rho,
                "n_total": total,
                "per_pair": per_pair,
                "pool": planned_pool,
                "people_pairs": _pairs(plan.people_pairs),
                "judge_pairs": _pairs(plan.judge_pairs),
                "people_verdict_pairs": _pairs(plan.people_verdict_pairs),
                "judge_verdict_pairs": _pairs(plan.judge_verdict_pairs),
                "pair_var": fit.pair_var,
                "annotator_var": fit.annotator_var,
                "residual_var": fit.residual_var,
            }
        )
    if not rows:
        raise UserError(f"study {study!r} has no people's scores on its quality dimensions")
    return config, pd.DataFrame(rows)


def _pairs(n: int | None) -> float:
    """A planned number of pairs as a table cell (NaN: not reached)."""
    return math.nan if n is None else float(n)
