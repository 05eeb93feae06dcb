"""The report's prediction-powered section: equivalence over every pair a judge rated.

Per judge and quality dimension, :func:`analysis.prediction_powered.prediction_powered_tost` on the
people's per-judgment differences and the judge's chosen - rejected gap (its ratings averaged over the
orders it saw a pair in); per judge the intersection-union over the dimensions, as in the people-only
equivalence verdict. The section exists only when a judge rated main pairs beyond the people's: a
study without a judge, or with a judge on the people's pairs only, gets none (its report is
unchanged). The people must have rated a uniform random sample of the judged pairs; the section says
so. The share of broken pairs gets its own prediction-powered bound per judge and dimension
(:func:`analysis.ppi_broken_share.ppi_broken_share`, Markov's bound over every judged pair). The preference
for chosen gets the same treatment: the per-judgment preference score (chosen 1, tie 0.5, rejected 0)
against the judge's preference mapped to 0..1, one-sided against 0.5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from analysis.active_ppi import weighted_ppi_tost, weighted_share, weighted_superiority
from analysis.aggregates import judgment_differences, judgments, replicated_pairs
from analysis.frames import ANNOTATOR, CHOSEN, ITEM, PAIR_ID, PREFERENCE, REJECTED, RESPONSE, VALUE
from analysis.judges import JUDGE, ORDER
from analysis.ppi_broken_share import ppi_broken_share
from analysis.prediction_powered import (
    PPIQuestion,
    PredictionPowered,
    PredictionPoweredMean,
    PredictionPoweredShare,
    prediction_powered_share,
    prediction_powered_superiority,
    prediction_powered_tost,
)
from analysis.scale import Margin, item_margin
from analysis.validation import preference_scores
from analysis.vocabulary import RUBRIC_ITEM, RUBRIC_PREFIX

__all__ = [
    "UNEQUAL_DRAW",
    "PredictionPoweredSection",
    "judge_item_gaps",
    "prediction_powered_section",
    "summary_sentences",
]

_R = TypeVar("_R")

UNEQUAL_DRAW = "unequal_draw"
"""The report parameter set when the tool drew the people's pairs with unequal inclusion probabilities:
the people-only verdicts then speak for the rated sample, not for every pair of the study."""
SAMPLING_UNIFORM = "uniform random sample of the judged pairs"
SAMPLING_WEIGHTED = (
    "the tool's drawn sample: each rated pair weighted by 1 / its inclusion probability recorded at the draw"
)
_COVERAGE = ["n_pairs", "n_rated", "effective_pairs", "lam", "correlation"]  # what the judge added
_INTERVAL = ["estimate", "ci_low", "ci_high"]
TABLE_COLUMNS = [
    *["judge", "dimension", *_COVERAGE, *_INTERVAL, "df", "pvalue", "equivalent"],
    *[f"people_{c}" for c in _INTERVAL],
    *["people_equivalent", "warnings"],
]


def _one_sided_columns(estimate: str) -> list[str]:
    """The columns of a one-sided prediction-powered test whose point estimate is called `estimate`."""
    test = [estimate, "ci_low", "ci_high", "p_greater"]
    return ["judge", "status", *_COVERAGE, *test, *[f"people_{c}" for c in test]]


PREFERENCE_COLUMNS = _one_sided_columns("share")
RUBRIC_COLUMNS = _one_sided_columns("estimate")
BROKEN_COLUMNS = [
    *["judge", "dimension", "n_pairs", "n_rated", "effective_pairs", "lam", "mean_square", "upper"],
    *["below", "people_mean_square", "people_upper", "people_below", "sentence"],
]
VERDICT_COLUMNS = [
    "judge",
    "status",
    "n_pairs",
    "n_rated",
    "effective_pairs",
    "lam_min",
    "lam_max",
    "sentence",
]


@dataclass(frozen=True)
class PredictionPoweredSection:
    """``table``: one row per (judge, dimension) (:data:`TABLE_COLUMNS`); ``verdicts``: one row per
    judge (:data:`VERDICT_COLUMNS`), the intersection-union over dimensions and its sentence."""

    table: pd.DataFrame
    verdicts: pd.DataFrame
    preference: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PREFERENCE_COLUMNS))
    rubric: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RUBRIC_COLUMNS))
    broken: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=BROKEN_COLUMNS))
    parameters: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name (the JSON report's keys)."""
        return {
            "prediction_powered": self.table,
            "prediction_powered_verdicts": self.verdicts,
            "prediction_powered_preference": self.preference,
            "prediction_powered_rubric": self.rubric,
            "prediction_powered_broken": self.broken,
        }


def judge_item_gaps(judge_rows: pd.DataFrame, item: str) -> pd.Series:
    """One judge's chosen - rejected gap per pair on `item` (each response's rating averaged over the
    orders), indexed by pair id; pairs without both responses rated are left out."""
    rows = judge_rows[(judge_rows[ITEM] == item) & judge_rows[RESPONSE].isin([CHOSEN, REJECTED])]
    wide = rows.groupby([PAIR_ID, RESPONSE], observed=True)[VALUE].mean().unstack(RESPONSE)
    if CHOSEN not in wide.columns or REJECTED not in wide.columns:
        return pd.Series(dtype=float)
    return (wide[CHOSEN] - wide[REJECTED]).dropna().astype(float)


def judge_rubric_gaps(judge_rows: pd.DataFrame) -> pd.Series:
    """One judge's rubric gap per pair: its mean rating of the rubric aspects (``rubric:<k>``, or a
    ``rubric`` item) for chosen minus that for rejected, over the orders; indexed by pair id."""
    items = judge_rows[ITEM].astype(str)
    rows = judge_rows[(items == RUBRIC_ITEM) | items.str.startswith(RUBRIC_PREFIX)]
    rows = rows[rows[RESPONSE].isin([CHOSEN, REJECTED])]
    wide = rows.groupby([PAIR_ID, RESPONSE], observed=True)[VALUE].mean().unstack(RESPONSE)
    if CHOSEN not in wide.columns or REJECTED not in wide.columns:
        return pd.Series(dtype=float)
    return (wide[CHOSEN] - wide[REJECTED]).dropna().astype(float)


def _rubric_row(
    name: str, diffs: pd.DataFrame, judge_rows: pd.DataFrame, alpha: float, weights: pd.Series | None
) -> dict[str, Any] | None:
    """The prediction-powered rubric test of one judge (weighted by `weights`, the recorded inclusion
    probabilities, when the tool drew the sample), or None when it adds no pairs."""
    gap = judge_rubric_gaps(judge_rows)
    res = _tested(
        gap,
        diffs,
        lambda: (
            prediction_powered_superiority(diffs, gap, item=RUBRIC_ITEM, alpha=alpha, judge=name)
            if weights is None
            else weighted_superiority(diffs, gap, weights, item=RUBRIC_ITEM, alpha=alpha, judge=name)
        ),
    )
    if res is None:
        return None
    status = _one_sided_status(res, alpha, 0.0)
    return {"judge": name, "status": status} | {c: getattr(res, c) for c in RUBRIC_COLUMNS[2:]}


def _tested(predicted: pd.Series, people: pd.DataFrame, test: Callable[[], _R]) -> _R | None:
    """The test's result, or None when the judge's predictions (by pair id) do not cover at least 2 of
    the people's pairs and some more, or the test cannot be computed (ValueError)."""
    rated = predicted.index.isin(list(set(people[PAIR_ID])))
    if rated.sum() < 2 or rated.all():
        return None
    try:
        return test()
    except ValueError:
        return None


def _one_sided_status(res: PredictionPoweredMean | PredictionPoweredShare, alpha: float, null: float) -> str:
    """Pass when the one-sided test rejects (with at least 2 annotators), fail when the whole interval
    lies below `null`, else inconclusive."""
    if res.annotator_estimable and res.p_greater < alpha:
        return "pass"
    if res.ci_high < null:
        return "fail"
    return "inconclusive"


def _span(values: Sequence[float], digits: int) -> str:
    """One value, or the range of values, at `digits` decimals."""
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low} to {high}"


def judge_preference_scores(judge_rows: pd.DataFrame) -> pd.Series:
    """One judge's predicted preference score per pair: its preference (-2..2, averaged over the
    orders) mapped to 0..1 (1 = chosen much better), indexed by pair id."""
    per_order = judge_rows.drop_duplicates([PAIR_ID, ORDER]).dropna(subset=[PREFERENCE])
    return (per_order.groupby(PAIR_ID)[PREFERENCE].mean().astype(float) + 2.0) / 4.0


def _preference_row(
    name: str, scores: pd.DataFrame, judge_rows: pd.DataFrame, alpha: float, weights: pd.Series | None
) -> dict[str, Any] | None:
    """The prediction-powered preference share of one judge (weighted as in :func:`_rubric_row`), or
    None when it adds no pairs."""
    predicted = judge_preference_scores(judge_rows)
    res = _tested(
        predicted,
        scores,
        lambda: (
            prediction_powered_share(scores, predicted, alpha=alpha, judge=name)
            if weights is None
            else weighted_share(scores, predicted, weights, alpha=alpha, judge=name)
        ),
    )
    if res is None:
        return None
    return (
        {"status": _one_sided_status(res, alpha, 0.5), "lam": res.lam}
        | {c: getattr(res, c) for c in PREFERENCE_COLUMNS if c not in ("status", "lam", "n_pairs")}
        | {"n_pairs": res.n_pairs, "judge": name}
    )


def summary_sentences(
    n_pairs: int, n_rated: int, effective: Sequence[float], lams: Sequence[float], *, drawn: bool = False
) -> str:
    """The section's sentences for one judge (`effective` and `lams` per dimension): coverage and the
    sample it rests on (`drawn`: the tool's draw with recorded probabilities, else assumed uniform),
    effective sample size, lambda, what the judge added."""
    added = [e - n_rated for e in effective]
    if max(lams) == 0.0:
        what = "nothing: its gaps do not track the people's (lambda 0), so the verdict is the people-only one"
    elif max(added) < 0.5:
        what = "less than one rated pair's worth of precision"
    else:
        what = (
            f"its ratings count as about {_span(added, 0)} more pairs rated by this panel "
            f"({_span([e / n_rated for e in effective], 2)} times the people's own precision)"
        )
    return (
        f"Verdict over {n_pairs} pairs, {n_rated} of them rated by people{_sample_words(drawn)}, "
        "effective sample size "
        f"{_span(effective, 0)} (over the dimensions: the rated pairs a people-only analysis with this panel "
        f"would need for the same precision). Lambda {_span(lams, 2)}: the weight of the judge's gap in the "
        "estimate, tuned to the data (0 = the judge is not used, 1 = fully). What the judge added: "
        f"{what}."
    )


def _sample_words(drawn: bool) -> str:
    """For which pairs the people's sample speaks: the tool's recorded draw, or an assumption."""
    if drawn:
        return " (drawn by the tool, each weighted by its recorded inclusion probability)"
    return (
        " (valid only if those are a uniform random sample of the judged pairs: no draw was recorded, "
        "so the data cannot show it)"
    )


def prediction_powered_section(
    main: pd.DataFrame,
    judges: pd.DataFrame,
    *,
    quality_items: Sequence[str],
    margin: float,
    alpha: float = 0.05,
    control_pairs: Sequence[str] = (),
    probability: pd.Series | None = None,
    margins: Mapping[str, float] | None = None,
    max_broken_share: float = 0.1,
    min_pairs: int = 2,
) -> PredictionPoweredSection | None:
    """The prediction-powered equivalence verdict of every judge that rated pairs beyond the people's.

    Parameters
    ----------
    main : pandas.DataFrame
        The label frame's main (non-control) rows.
    judges : pandas.DataFrame
        Judge ratings (:data:`analysis.judges.JUDGE_COLUMNS`) on any pairs of the study.
    quality_items : sequence of str
        The quality dimensions that must be equivalent.
    margin, alpha : float
        The equivalence margin and the level of each one-sided test.
    control_pairs : sequence of str
        Control pairs' ids: their judge ratings are left out.
    probability : pandas.Series, optional
        Each pair's inclusion probability recorded when the tool drew the human sample (by pair id):
        the verdicts then weight the people's correction by its inverse
        (:mod:`analysis.active_ppi`) and speak for the pairs with a probability. None or empty: a
        uniform sample is assumed.
    margins : mapping of str to float, optional
        A dimension's own margin in its scale's points (dimensions on different scales).
    max_broken_share : float, default 0.1
        The largest share of pairs beyond the margin the broken-share bound tolerates.
    min_pairs : int, default 2
        The study's minimum of pairs rated by two or more annotators before a verdict can PASS.

    Returns
    -------
    PredictionPoweredSection or None
        None when no judge rated a main pair beyond the people's (on a quality dimension or by a
        preference).
    """
    if judges.empty or main.empty:
        return None
    judges = judges[~judges[PAIR_ID].isin(set(control_pairs))]
    rated = set(main[PAIR_ID])
    replicated = replicated_pairs(main)
    differences = _differences(main, quality_items)
    rows: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    preference: list[dict[str, Any]] = []
    per_judgment = judgments(main)
    scores = pd.DataFrame(
        {
            PAIR_ID: per_judgment[PAIR_ID].to_numpy(),
            ANNOTATOR: per_judgment[ANNOTATOR].to_numpy(),
            "score": preference_scores(per_judgment).to_numpy(),
        }
    )
    weights = probability if probability is not None and not probability.empty else None
    items = main[ITEM].astype(str)
    has_rubric = bool((items == RUBRIC_ITEM).any() or items.str.startswith(RUBRIC_PREFIX).any())
    rubric_diffs = _differences(main, [RUBRIC_ITEM]).get(RUBRIC_ITEM) if has_rubric else None
    rubric: list[dict[str, Any]] = []
    broken: list[dict[str, Any]] = []
    for name in sorted(judges[JUDGE].unique()):
        mine = judges[judges[JUDGE] == name]
        share = _preference_row(name, scores, mine, alpha, weights)
        if share is not None:
            preference.append(share)
        rubric_row = None if rubric_diffs is None else _rubric_row(name, rubric_diffs, mine, alpha, weights)
        if rubric_row is not None:
            rubric.append(rubric_row)
        each = {**dict.fromkeys(differences, margin), **(margins or {})}
        bounds = _broken_rows(name, mine, differences, weights, each, alpha, max_broken_share)
        broken += bounds
        results = _dimension_results(name, mine, differences, rated, weights, each, alpha)
        for res in results:
            rows.append(
                {"judge": name, "dimension": res.item} | {c: getattr(res, c) for c in TABLE_COLUMNS[2:-1]}
            )
            rows[-1]["warnings"] = "; ".join(res.warnings)
        if not results:
            continue
        verdicts.append(
            _judge_verdict(
                name,
                results,
                bounds,
                n_items=len(differences),
                replicated=replicated,
                min_pairs=min_pairs,
                drawn=weights is not None,
            )
        )
    if not rows and not preference and not rubric:
        return None
    return PredictionPoweredSection(
        table=pd.DataFrame(rows, columns=TABLE_COLUMNS),
        verdicts=pd.DataFrame(verdicts, columns=VERDICT_COLUMNS),
        preference=pd.DataFrame(preference, columns=PREFERENCE_COLUMNS),
        rubric=pd.DataFrame(rubric, columns=RUBRIC_COLUMNS),
        broken=pd.DataFrame(broken, columns=BROKEN_COLUMNS),
        parameters={
            "margin": margin,
            "max_broken_share": max_broken_share,
            **({"margins": dict(margins)} if margins and set(margins.values()) != {margin} else {}),
            "alpha": alpha,
            "sampling": SAMPLING_WEIGHTED if weights is not None else SAMPLING_UNIFORM,
        },
    )


def _differences(main: pd.DataFrame, items: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The people's per-judgment differences of each item that has scores."""
    out = {}
    for item in items:
        try:
            out[item] = judgment_differences(main, item)
        except ValueError:
            continue
    return out


def _dimension_results(
    name: str,
    mine: pd.DataFrame,
    differences: dict[str, pd.DataFrame],
    rated: set[str],
    weights: pd.Series | None,
    margin: Margin,
    alpha: float,
) -> list[PredictionPowered]:
    """One judge's prediction-powered TOST per dimension where it rated pairs beyond the people's
    (weighted by the recorded inclusion probabilities when given)."""
    results = []
    for item, diffs in differences.items():
        gap = judge_item_gaps(mine, item)
        if gap.index.isin(list(rated)).sum() < 2 or (~gap.index.isin(list(rated))).sum() == 0:
            continue
        question = PPIQuestion(item, item_margin(margin, item), alpha, name)
        try:
            if weights is not None:
                res = weighted_ppi_tost(diffs, gap, weights, question)
            else:
                res = prediction_powered_tost(diffs, gap, question)
        except ValueError:
            continue
        results.append(res)
    return results


def _broken_rows(
    name: str,
    mine: pd.DataFrame,
    differences: dict[str, pd.DataFrame],
    weights: pd.Series | None,
    margin: Margin,
    alpha: float,
    max_share: float,
) -> list[dict[str, Any]]:
    """One judge's prediction-powered bound on the share of broken pairs per dimension where it rated
    pairs beyond the people's."""
    rows = []
    for item, diffs in differences.items():
        m = item_margin(margin, item)
        try:
            res = ppi_broken_share(
                diffs,
                judge_item_gaps(mine, item),
                margin=m,
                max_share=max_share,
                alpha=alpha,
                probability=weights,
            )
        except ValueError:
            continue
        fields = {c: getattr(res, c) for c in BROKEN_COLUMNS[2:-1]}
        sentence = broken_sentence(res, alpha, drawn=weights is not None)
        rows.append({"judge": name, "dimension": item, **fields, "sentence": sentence})
    return rows


def _percent(share: float, limit: float) -> str:
    """`share` as a percentage with the digits that tell it from `limit` (10.0% is not below 10%).

    >>> _percent(0.0997, 0.1), _percent(0.0412, 0.1)
    ('9.97%', '4.1%')
    """
    for digits in range(1, 5):
        if round(100 * share, digits) != round(100 * limit, digits):
            break
    return f"{100 * share:.{digits}f}%"


def broken_sentence(res: Any, alpha: float, *, drawn: bool = False) -> str:
    """What the prediction-powered broken-share bound of one dimension says, in words (`drawn`: as for
    :func:`summary_sentences`)."""
    verdict = "below" if res.below else "not below"
    return (
        f"Verdict over {res.n_pairs} pairs, {res.n_rated} of them rated by people{_sample_words(drawn)}: "
        "at most "
        f"{_percent(res.upper, res.max_share)} of the pairs have a true gap beyond +-{res.margin:g} (upper "
        f"{100 * (1 - alpha):g}% bound; people only: {100 * res.people_upper:.1f}%), {verdict} the tolerated "
        f"{100 * res.max_share:g}%. Markov's bound on the mean squared gap (no model of the gaps), estimated "
        f"with the judge's squared gap (lambda {res.lam:.2f}, effective sample size "
        f"{res.effective_pairs:.0f}), "
        "for the pairs of the benchmark the judge rated and annotators in general."
    )


def _judge_verdict(
    name: str,
    results: list[Any],
    bounds: list[dict[str, Any]],
    *,
    n_items: int,
    replicated: int,
    min_pairs: int,
    drawn: bool,
) -> dict[str, Any]:
    """One judge's verdict over every judged pair, the claim of the people-only equivalence verdict:
    the mean gap within the margin on every dimension (intersection-union) and the share of broken
    pairs below its bound on every dimension, once the study has its minimum of pairs rated by two or
    more annotators; and its sentences."""
    held: list[str] = []
    if len(results) < n_items:
        held.append(f"the judge covers {len(results)} of the {n_items} dimensions beyond the people's pairs")
    if not all(r.equivalent for r in results):
        held.append("the mean gap is not shown within the margin on every dimension")
    below = {row["dimension"] for row in bounds if row["below"]}
    if len(below) < n_items:
        held.append(
            "the share of broken pairs is not shown below its bound on every dimension (next table; "
            "`annotator power --judge` plans the rated pairs it needs: mostly more annotators per pair, "
            "which no judge replaces)"
        )
    if replicated < min_pairs:
        held.append(f"{replicated} pairs are rated by two or more annotators, the study asks {min_pairs}")
    if any(r.ci_low > r.high or r.ci_high < r.low for r in results):
        status = "fail"
    else:
        status = "inconclusive" if held else "pass"
    effective = [r.effective_pairs for r in results]
    lams = [r.lam for r in results]
    n_pairs, n_rated = min(r.n_pairs for r in results), min(r.n_rated for r in results)
    sentence = summary_sentences(n_pairs, n_rated, effective, lams, drawn=drawn)
    if status != "pass" and held:
        sentence += " Not a PASS: " + "; ".join(held) + "."
    return {
        "judge": name,
        "status": status,
        "n_pairs": n_pairs,
        "n_rated": n_rated,
        "effective_pairs": min(effective),
        "lam_min": min(lams),
        "lam_max": max(lams),
        "sentence": sentence,
    }
