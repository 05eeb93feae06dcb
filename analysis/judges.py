"""LLM judges against people: the alternative annotator test, agreement, accuracy and a bias card.

A judge's ratings never enter the human analysis; they are compared with it here.

The kernel of the alternative annotator test lives in :mod:`analysis.alttest`; this module runs it
per judge and item on the label frame, with a content-blind baseline (:mod:`analysis.judge_baseline`).

Choices the paper leaves open (README "LLM judges"): the instance is the **pair** (both responses'
ratings form one annotation, scored by negative RMSE over both), because the t test needs independent
instances and the two responses of a pair share a question, a profile and the annotator's reading;
the preference is scored by **accuracy on its direction** (chosen, tie, rejected), as the paper scores
pairwise labels (MT-Bench); the rubric item is the per-response mean over aspects (the one rubric
score of :func:`analysis.aggregates.rubric_scores`); a pair the judge saw in both orders counts with the
mean of the two; Benjamini-Yekutieli runs per (judge, item) over the annotators, at ``q = alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.aggregates import judgments, pair_majority, rubric_scores
from analysis.agreement import alpha_ci, krippendorff_alpha
from analysis.alttest import (
    EPSILON,
    MIN_ANNOTATORS,
    MIN_ITEMS,
    AltTest,
    Scoring,
    alt_test,
    benjamini_yekutieli,
)
from analysis.equivalence import wilson_interval
from analysis.frames import (
    ANNOTATOR,
    CHOSEN,
    CHOSEN_CHARS,
    CONFIDENCE,
    ITEM,
    PAIR_ID,
    PREFERENCE,
    REJECTED,
    REJECTED_CHARS,
    RESPONSE,
    RUBRIC_ITEM,
    RUBRIC_PREFIX,
    VALUE,
)
from analysis.judge_baseline import (
    BASELINE_MARGIN,
    FIRST_POSITION,
    LONGER,
    BlindJudge,
    ReplaceVerdict,
    constant_ratings,
    exact_binomial_p,
    length_preference,
    longer_ratings,
    preference_blind,
    replace_verdict,
)

__all__ = [
    "AGREEMENT_COLUMNS",
    "ALT_TEST_COLUMNS",
    "BASELINE_COLUMNS",
    "EPSILON",
    "JUDGE",
    "JUDGE_COLUMNS",
    "MIN_ANNOTATORS",
    "MIN_ITEMS",
    "ORDER",
    "ORDERS",
    "PREFERENCE_ITEM",
    "AltTest",
    "JudgeSection",
    "alt_test",
    "benjamini_yekutieli",
    "calibration",
    "disagreement_queue",
    "judge_section",
]

JUDGE = "judge"
ORDER = "order"
CHOSEN_FIRST = "chosen_first"
REJECTED_FIRST = "rejected_first"
#: The orders a judge may have been shown a pair in ("" = not recorded).
ORDERS = ("", CHOSEN_FIRST, REJECTED_FIRST)
PREFERENCE_ITEM = "preference"
#: The judge frame: one row per (pair, judge, order, response, item) rating; `preference` (-2..2,
#: positive = chosen) and `confidence` (0..1) are pair level, repeated on the pair's rows; a row with
#: empty response and item carries only the preference.
JUDGE_COLUMNS = (PAIR_ID, JUDGE, ORDER, RESPONSE, ITEM, VALUE, PREFERENCE, CONFIDENCE)
# ----------------------------------------------------------------------------- frames -> arrays


def _judge_values(judge_rows: pd.DataFrame, item: str) -> pd.DataFrame:
    """The judge's rating per (pair, response) for a rated item, the mean over orders."""
    rows = judge_rows[judge_rows[RESPONSE].isin([CHOSEN, REJECTED])]
    if item == RUBRIC_ITEM:
        rows = rubric_scores(rows, [PAIR_ID, ORDER, RESPONSE])
    else:
        rows = rows[rows[ITEM] == item]
    return rows.groupby([PAIR_ID, RESPONSE], observed=True)[VALUE].mean().reset_index()


def _judge_preference(judge_rows: pd.DataFrame) -> pd.DataFrame:
    """Per pair: the judge's preference (mean over orders) and confidence (mean over orders)."""
    per_order = judge_rows.drop_duplicates([PAIR_ID, ORDER])
    per_order = per_order[per_order[PREFERENCE].notna()]
    return (
        per_order.groupby(PAIR_ID, observed=True)[[PREFERENCE, CONFIDENCE]]
        .mean()
        .reset_index()
        .rename(columns={PREFERENCE: "judge_preference", CONFIDENCE: "judge_confidence"})
    )


def _human_values(main: pd.DataFrame, item: str) -> pd.DataFrame:
    if item == RUBRIC_ITEM:
        return rubric_scores(main, [PAIR_ID, ANNOTATOR, RESPONSE])
    return main[main[ITEM] == item][[PAIR_ID, ANNOTATOR, RESPONSE, VALUE]]


def _arrays(
    humans: pd.DataFrame, judge: pd.DataFrame, components: Sequence[str] | None
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Annotators, pairs, humans (m, n, r) and judge (n, r) from long values (pair, annotator,
    [response,] value) and (pair, [response,] value)."""
    pairs = sorted(set(humans[PAIR_ID]) | set(judge[PAIR_ID]))
    annotators = sorted(set(humans[ANNOTATOR]))
    cols = [RESPONSE] if components else []
    names = list(components) if components else [VALUE]
    h_wide = humans.pivot_table(index=ANNOTATOR, columns=[PAIR_ID, *cols], values=VALUE, aggfunc="mean")
    index = pd.MultiIndex.from_product([pairs, names]) if components else pd.Index(pairs)
    h_wide = h_wide.reindex(index=annotators, columns=index)
    h = h_wide.to_numpy(dtype=np.float64).reshape(len(annotators), len(pairs), len(names))
    f_wide = judge.set_index([PAIR_ID, *cols])[VALUE].groupby(level=list(range(1 + len(cols)))).mean()
    f = f_wide.reindex(index).to_numpy(dtype=np.float64).reshape(len(pairs), len(names))
    return annotators, pairs, h, f


def _alpha_pair(
    x: np.ndarray, clusters: np.ndarray, n_boot: int, seed: int, confidence: float
) -> tuple[float, float, float]:
    """Krippendorff's alpha (interval) with its pair-bootstrap interval; NaN where undefined."""
    try:
        value = krippendorff_alpha(x, level="interval")
        low, high = alpha_ci(
            x, level="interval", n_boot=n_boot, seed=seed, confidence=confidence, clusters=clusters
        )
    except ValueError:
        return math.nan, math.nan, math.nan
    return value, low, high


# ----------------------------------------------------------------------------------- the section

#: The alternative annotator test's columns (the section's first table).
ALT_TEST_COLUMNS = ["n_tested", "winning_rate", "advantage_probability", "epsilon", "passes_alt_test"]
#: The content-blind baseline's columns (the section's second table).
BASELINE_COLUMNS = [
    "baseline",
    "baseline_advantage",
    "baseline_gap",
    "baseline_winning_rate",
    "epsilon_too_loose",
    "margin",
    "advantage_over_baseline",
    "advantage_over_baseline_ci_low",
    "baseline_p_value",
    "beats_baseline",
]
#: Krippendorff's alpha of the people alone and with the judge as one more rater (the third table).
AGREEMENT_COLUMNS = [
    f"alpha_{who}{end}" for who in ("people", "with_judge") for end in ("", "_ci_low", "_ci_high")
]
TABLE_COLUMNS = [
    "judge",
    "item",
    "scoring",
    "n_pairs",
    "n_annotators",
    *ALT_TEST_COLUMNS,
    *BASELINE_COLUMNS,
    "can_replace",
    "note",
    "baseline_note",
    *AGREEMENT_COLUMNS,
    "leniency",
]
TEST_COLUMNS = ["judge", "item", "annotator", "n_items", "rho_judge", "rho_annotator", "p_value", "beaten"]
CARD_COLUMNS = [
    "judge",
    "n_pairs",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "accuracy_pairs",
    "swap_pairs",
    "swap_consistency",
    "first_position_rate",
    "first_position_n",
    "first_position_p",
    "position_bias",
    "longer_rate_judge",
    "longer_rate_people",
    "length_pairs",
    "length_p",
    "length_bias",
    "length_slope_judge",
    "length_slope_people",
    "leniency_preference",
    "calibration_pairs",
    "ece",
    "brier",
]
QUEUE_COLUMNS = ["pair_id", "judge", "judge_preference", "majority", "human_agreement", "n_judgments"]


@dataclass(frozen=True)
class JudgeSection:
    """The judges part of the report: flat tables (see the ``*_COLUMNS`` lists) and the settings."""

    table: pd.DataFrame  # one row per (judge, item): the alt-test, agreement, leniency
    tests: pd.DataFrame  # one row per (judge, item, annotator): the leave-one-out comparisons
    cards: pd.DataFrame  # one row per judge: accuracy vs the majority and the bias card
    queue: pd.DataFrame = field(repr=False)  # pairs where a judge and the human majority disagree
    parameters: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name (the JSON report's keys)."""
        return {"judges": self.table, "judge_tests": self.tests, "judge_cards": self.cards}


def calibration(confidence: npt.ArrayLike, correct: npt.ArrayLike, *, bins: int = 10) -> tuple[float, float]:
    """Expected calibration error (``bins`` equal-width bins over 0..1, weighted by size; Guo et al.
    2017) and Brier score of a confidence against 0/1 outcomes. In the example, ECE = |1 - .9| / 2 +
    |.5 - .2| / 2 and Brier = (.01 + .01 + .04 + .64) / 4.

    >>> calibration([0.9, 0.9, 0.2, 0.2], [1, 1, 0, 1], bins=10)
    (0.2, 0.175)
    """
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if c.size == 0:
        return math.nan, math.nan
    which = np.minimum((c * bins).astype(int), bins - 1)
    ece = 0.0
    for b in np.unique(which):
        sel = which == b
        ece += sel.mean() * abs(y[sel].mean() - c[sel].mean())
    return round(float(ece), 12), round(float(((c - y) ** 2).mean()), 12)


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        return math.nan
    return float(np.polyfit(x[ok], y[ok], 1)[0])


def _direction(values: pd.Series) -> pd.Series:
    sign = np.sign(values.to_numpy(dtype=float))
    return pd.Series(np.select([sign > 0, sign < 0], [CHOSEN, REJECTED], "tie"), index=values.index)


def _length_signs(main: pd.DataFrame) -> pd.Series | None:
    """Per pair: +1 when chosen is the longer response, -1 when rejected is, 0 when equal; None
    when the label frame has no lengths."""
    if CHOSEN_CHARS not in main.columns or REJECTED_CHARS not in main.columns:
        return None
    per_pair = main.drop_duplicates(PAIR_ID).set_index(PAIR_ID)
    diff = (per_pair[CHOSEN_CHARS] - per_pair[REJECTED_CHARS]).astype(float)
    return None if diff.isna().all() else np.sign(diff)


def _position_picks(mine: pd.DataFrame, pairs: Sequence[str]) -> np.ndarray:
    """Per pair, what a judge that picks the response shown first answers in the judge's recorded
    orders: +1 (chosen shown first), -1, 0 (both orders: the mean is a tie), NaN (no order recorded)."""
    shown = mine[mine[ORDER].isin([CHOSEN_FIRST, REJECTED_FIRST])].drop_duplicates([PAIR_ID, ORDER])
    toward = np.where(shown[ORDER] == CHOSEN_FIRST, 1.0, -1.0)
    mean = pd.Series(toward, index=shown[PAIR_ID].to_numpy()).groupby(level=0).mean()
    return np.sign(mean.reindex(list(pairs)).to_numpy(dtype=float))


def _blinds(
    preference: bool, h: np.ndarray, mine: pd.DataFrame, lengths: pd.Series | None, pairs: Sequence[str]
) -> list[BlindJudge]:
    """The content-blind judges of one item (:mod:`analysis.judge_baseline`)."""
    signs = None if lengths is None else lengths.reindex(list(pairs)).to_numpy(dtype=float)
    if preference:
        blinds = [preference_blind(FIRST_POSITION, _position_picks(mine, pairs))]
        if signs is not None:
            blinds.append(preference_blind(LONGER, signs))
        return blinds
    blinds = constant_ratings(h)
    if signs is not None:
        blinds.append(longer_ratings(h, signs))
    return blinds


def _baseline_fields(
    verdicts: ReplaceVerdict, passes: bool | None, epsilon: float, margin: float, alpha: float
) -> dict[str, Any]:
    """The table's baseline columns: the best content-blind judge (highest advantage probability),
    its gap and winning rate, the judge's advantage over it, and the verdicts."""
    names = list(verdicts.blind_alt)
    best = max(names, key=lambda n: np.nan_to_num(float(verdicts.blind_alt[n].advantage_probability), nan=-1))
    alt = verdicts.blind_alt[best]
    test = verdicts.blind_test[best]
    tested = alt.tested
    gap = float((alt.rho_annotator - alt.rho_judge)[tested].mean()) if tested.any() else math.nan
    beats = bool(verdicts.beats_baseline)
    p_values = [float(verdicts.blind_test[n].p_value) for n in names]
    worst_p = max(np.nan_to_num(p_values, nan=1.0)) if any(math.isfinite(v) for v in p_values) else math.nan
    loose = bool(gap < epsilon) if math.isfinite(gap) else None
    can_replace = None if passes is None else bool(passes and beats)
    return {
        "baseline": best,
        "baseline_advantage": float(alt.advantage_probability),
        "baseline_gap": gap,
        "baseline_winning_rate": float(alt.winning_rate),
        "epsilon_too_loose": loose,
        "margin": margin,
        "advantage_over_baseline": float(test.advantage),
        "advantage_over_baseline_ci_low": float(test.ci_low),
        "baseline_p_value": worst_p,
        "beats_baseline": beats,
        "can_replace": can_replace,
        "baseline_note": baseline_sentence(
            best, gap, epsilon, float(test.advantage), float(test.ci_low), margin, beats, alpha
        ),
    }


def baseline_sentence(
    best: str,
    gap: float,
    epsilon: float,
    advantage: float,
    low: float,
    margin: float,
    beats: bool,
    alpha: float,
) -> str:
    """One sentence: the best content-blind judge against epsilon, and the judge against it."""
    if not math.isfinite(gap):
        return f"no baseline: too few annotators to score a content-blind judge ({best})"
    if gap < 0:
        where = f"agrees with the annotators better than they agree with each other (gap {gap:.2f})"
    else:
        where = f"comes within {gap:.2f} of the annotators"
    if gap < epsilon:
        where += (
            f", inside epsilon {epsilon:g}: at this epsilon the alt-test cannot tell a judge that reads "
            "from one that does not"
        )
    else:
        where = f"stays {gap:.2f} behind the annotators, beyond epsilon {epsilon:g}"
    versus = "beats it" if beats else "does not beat it"
    return (
        f"a content-blind judge ({best}) {where}; the judge {versus} by more than {margin:g} "
        f"(wins {advantage:+.2f} per comparison, {round(100 * (1 - alpha))}% lower bound {low:+.2f})"
    )


def judge_section(
    main: pd.DataFrame,
    judges: pd.DataFrame,
    *,
    quality_items: Sequence[str],
    epsilon: float,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
    min_annotators: int = MIN_ANNOTATORS,
    min_items: int = MIN_ITEMS,
    margin: float = BASELINE_MARGIN,
) -> JudgeSection:
    """Every judge against the people on the main pairs of a label frame.

    Parameters
    ----------
    main : pandas.DataFrame
        The label frame's main (non-control) rows (:mod:`analysis.frames`).
    judges : pandas.DataFrame
        Judge ratings (:data:`JUDGE_COLUMNS`); rows of pairs outside `main` are ignored.
    quality_items : sequence of str
        The quality dimensions; the rubric (when rated) and the preference are tested too.
    epsilon : float
        The alt-test's cost-benefit margin.
    alpha : float, default 0.05
        The FDR level of Benjamini-Yekutieli; intervals are 1 - 2*alpha (alpha) and 1 - alpha (Wilson).
    n_boot, seed : int
        Pair-bootstrap resamples and seed of the agreement intervals.
    min_annotators, min_items : int
        The paper's minimums (3 annotators, 30 pairs per annotator); below them, a note, no verdict.
    margin : float, default 0.05
        How much more often the judge must win than every content-blind judge
        (:mod:`analysis.judge_baseline`); "can replace" needs that and the alt-test.

    Returns
    -------
    JudgeSection
    """
    judges = judges[judges[PAIR_ID].isin(set(main[PAIR_ID]))]
    per_judgment = judgments(main)
    majority = pair_majority(per_judgment)
    items = [i for i in quality_items if (main[ITEM] == i).any()]
    if main[ITEM].astype(str).str.startswith(RUBRIC_PREFIX).any():
        items.append(RUBRIC_ITEM)
    rows: list[dict[str, Any]] = []
    tests: list[dict[str, Any]] = []
    cards: list[dict[str, Any]] = []
    queue: list[pd.DataFrame] = []
    lengths = _length_signs(main)
    human_pref = per_judgment[[PAIR_ID, ANNOTATOR, PREFERENCE]].rename(columns={PREFERENCE: VALUE})
    human_pref = human_pref.assign(**{VALUE: np.sign(human_pref[VALUE].astype(float))})
    for name in sorted(judges[JUDGE].unique()):
        mine = judges[judges[JUDGE] == name]
        pref = _judge_preference(mine)
        for item in [*items, PREFERENCE_ITEM]:
            if item == PREFERENCE_ITEM:
                values = pref.rename(columns={"judge_preference": VALUE})[[PAIR_ID, VALUE]]
                values = values.assign(**{VALUE: np.sign(values[VALUE])})
                humans, components, scoring = human_pref, None, "accuracy"
            else:
                values = _judge_values(mine, item)
                humans = _human_values(main, item)
                components, scoring = (CHOSEN, REJECTED), "neg_rmse"
            if values.empty:
                continue
            scoring_used: Scoring = "accuracy" if scoring == "accuracy" else "neg_rmse"
            annotators, pairs, h, f = _arrays(humans, values, components)
            blinds = _blinds(item == PREFERENCE_ITEM, h, mine, lengths, pairs)
            verdicts = replace_verdict(
                h, f, blinds, scoring=scoring_used, epsilon=epsilon, q=alpha, margin=margin,
                min_items=min_items, min_annotators=min_annotators,
            )  # fmt: skip
            result = verdicts.alt
            n_tested = int(result.n_tested)
            judged = ~np.isnan(f).any(-1)
            n_pairs = int((judged & ((~np.isnan(h).any(-1)).sum(0) >= 2)).sum())
            verdict: bool | None = None
            if n_tested >= min_annotators:
                verdict = bool(result.winning_rate >= 0.5)
                note = (
                    f"beats {int(result.beaten.sum())} of {n_tested} annotators "
                    f"(Benjamini-Yekutieli at {alpha:g}, epsilon {epsilon:g})"
                )
            else:
                note = (
                    f"no verdict: {n_tested} of {len(annotators)} annotators rated at least {min_items} "
                    f"pairs the judge rated too; the alternative annotator test needs at least "
                    f"{min_annotators} such annotators (Calderon et al. 2025)"
                )
            baseline = _baseline_fields(verdicts, verdict, epsilon, margin, alpha)
            # agreement: the judge as one more rater (units: pair x component), interval level
            flat_h = h.reshape(len(annotators), -1)
            flat_f = f.reshape(1, -1)
            clusters = np.repeat(np.asarray(pairs, dtype=object), h.shape[-1]).astype(str)
            people = _alpha_pair(flat_h, clusters, n_boot, seed, 1 - 2 * alpha)
            both = _alpha_pair(np.vstack([flat_h, flat_f]), clusters, n_boot, seed, 1 - 2 * alpha)
            if item == PREFERENCE_ITEM:
                raw = per_judgment.groupby(PAIR_ID)[PREFERENCE].mean()
                shared = pref.set_index(PAIR_ID)["judge_preference"].dropna()
                shared = shared[shared.index.isin(raw.index)]
                leniency = float((shared - raw.reindex(shared.index)).mean()) if len(shared) else math.nan
            else:
                with np.errstate(invalid="ignore"):
                    people_mean = np.nanmean(h, axis=0) if len(annotators) else np.full(f.shape, np.nan)
                ok = np.isfinite(people_mean) & np.isfinite(f)
                leniency = float((f[ok] - people_mean[ok]).mean()) if ok.any() else math.nan
            rows.append(
                {
                    "judge": name,
                    "item": item,
                    "scoring": "accuracy of the direction" if scoring == "accuracy" else "negative RMSE",
                    "n_pairs": n_pairs,
                    "n_annotators": len(annotators),
                    "n_tested": n_tested,
                    "winning_rate": float(result.winning_rate),
                    "advantage_probability": float(result.advantage_probability),
                    "epsilon": epsilon,
                    "passes_alt_test": verdict,
                    **baseline,
                    "note": note,
                    "alpha_people": people[0],
                    "alpha_people_ci_low": people[1],
                    "alpha_people_ci_high": people[2],
                    "alpha_with_judge": both[0],
                    "alpha_with_judge_ci_low": both[1],
                    "alpha_with_judge_ci_high": both[2],
                    "leniency": leniency,
                }
            )
            for j, annotator in enumerate(annotators):
                if result.n_items[j] == 0:
                    continue
                tests.append(
                    {
                        "judge": name,
                        "item": item,
                        "annotator": annotator,
                        "n_items": int(result.n_items[j]),
                        "rho_judge": float(result.rho_judge[j]),
                        "rho_annotator": float(result.rho_annotator[j]),
                        "p_value": float(result.p_value[j]),
                        "beaten": bool(result.beaten[j]),
                    }
                )
        cards.append(_card(name, mine, pref, main, per_judgment, majority, alpha))
        queue.append(_queue(name, pref, majority))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    for name in ("can_replace", "passes_alt_test", "beats_baseline", "epsilon_too_loose"):
        table[name] = table[name].astype(object)
    card_table = pd.DataFrame(cards, columns=CARD_COLUMNS)
    for name in ("position_bias", "length_bias"):
        card_table[name] = card_table[name].astype(object)
    return JudgeSection(
        table=table,
        tests=pd.DataFrame(tests, columns=TEST_COLUMNS),
        cards=card_table,
        queue=pd.concat(queue, ignore_index=True) if queue else pd.DataFrame(columns=QUEUE_COLUMNS),
        parameters={
            "epsilon": epsilon,
            "q": alpha,
            "min_annotators": min_annotators,
            "min_items": min_items,
            "margin": margin,
            "n_boot": n_boot,
        },
    )


def _card(
    name: str,
    mine: pd.DataFrame,
    pref: pd.DataFrame,
    main: pd.DataFrame,
    per_judgment: pd.DataFrame,
    majority: pd.DataFrame,
    alpha: float,
) -> dict[str, Any]:
    """Accuracy against the human majority and the bias card of one judge."""
    merged = pref.merge(majority, on=PAIR_ID, how="inner")
    decided = merged[merged["majority"] != "none"].dropna(subset=["judge_preference"])
    right = (_direction(decided["judge_preference"]) == decided["majority"]).to_numpy()
    low, high = wilson_interval(int(right.sum()), len(right), alpha)
    per_order = mine.drop_duplicates([PAIR_ID, ORDER]).dropna(subset=[PREFERENCE])
    both = per_order[per_order[ORDER] != ""].pivot_table(
        index=PAIR_ID, columns=ORDER, values=PREFERENCE, aggfunc="mean"
    )
    swap_pairs, consistency = 0, math.nan
    if CHOSEN_FIRST in both.columns and REJECTED_FIRST in both.columns:
        pairs = both.dropna(subset=[CHOSEN_FIRST, REJECTED_FIRST])
        swap_pairs = len(pairs)
        if swap_pairs:
            same = np.sign(pairs[CHOSEN_FIRST]) == np.sign(pairs[REJECTED_FIRST])
            consistency = float(same.mean())
    ordered = per_order[(per_order[ORDER] != "") & (per_order[PREFERENCE] != 0)]
    first = ((ordered[PREFERENCE] > 0) == (ordered[ORDER] == CHOSEN_FIRST)).to_numpy(dtype=float)
    first_p = exact_binomial_p(int(first.sum()), len(first))
    slope_judge = slope_people = math.nan
    length = _length_signs(main)
    longer = {"judge": math.nan, "people": math.nan, "n": 0, "p": math.nan}
    if length is not None:
        on = pref.set_index(PAIR_ID)["judge_preference"].dropna()
        on = on[on.index.isin(length.index)]
        people = per_judgment.groupby(PAIR_ID)[PREFERENCE].mean().reindex(on.index)
        chars = main.drop_duplicates(PAIR_ID).set_index(PAIR_ID)
        x = ((chars[CHOSEN_CHARS] - chars[REJECTED_CHARS]).astype(float) / 1000.0).reindex(on.index)
        slope_judge = _slope(x.to_numpy(dtype=float), on.to_numpy(dtype=float))
        slope_people = _slope(x.to_numpy(dtype=float), people.to_numpy(dtype=float))
        longer = _longer_test(decided, length)
    raw = per_judgment.groupby(PAIR_ID)[PREFERENCE].mean()
    shared = pref.set_index(PAIR_ID)["judge_preference"].dropna()
    shared = shared[shared.index.isin(raw.index)]
    sure = decided.dropna(subset=["judge_confidence"])
    ece, brier = calibration(
        sure["judge_confidence"].to_numpy(float),
        (_direction(sure["judge_preference"]) == sure["majority"]).to_numpy(float),
    )
    return {
        "judge": name,
        "n_pairs": int(mine[PAIR_ID].nunique()),
        "accuracy": float(right.mean()) if len(right) else math.nan,
        "accuracy_ci_low": low,
        "accuracy_ci_high": high,
        "accuracy_pairs": len(right),
        "swap_pairs": swap_pairs,
        "swap_consistency": consistency,
        "first_position_rate": float(first.mean()) if len(first) else math.nan,
        "first_position_n": len(first),
        "first_position_p": first_p,
        "position_bias": bool(first_p < alpha) if math.isfinite(first_p) else None,
        "longer_rate_judge": longer["judge"],
        "longer_rate_people": longer["people"],
        "length_pairs": longer["n"],
        "length_p": longer["p"],
        "length_bias": bool(longer["p"] < alpha) if math.isfinite(longer["p"]) else None,
        "length_slope_judge": slope_judge,
        "length_slope_people": slope_people,
        "leniency_preference": float((shared - raw.reindex(shared.index)).mean())
        if len(shared)
        else math.nan,
        "calibration_pairs": len(sure),
        "ece": ece,
        "brier": brier,
    }


def _longer_test(decided: pd.DataFrame, length: pd.Series) -> dict[str, Any]:
    """On pairs with unequal lengths where the judge and the people's majority both pick a response:
    how often each picks the longer one, and the exact McNemar p of "as often"."""
    rows = decided[decided["majority"].isin([CHOSEN, REJECTED])]
    sign = length.reindex(rows[PAIR_ID].to_numpy()).to_numpy(dtype=float)
    judge_dir = np.sign(rows["judge_preference"].to_numpy(dtype=float))
    people_dir = np.where(rows["majority"].to_numpy() == CHOSEN, 1.0, -1.0)
    keep = (np.nan_to_num(sign) != 0) & (judge_dir != 0)
    judge_longer = judge_dir[keep] == sign[keep]
    people_longer = people_dir[keep] == sign[keep]
    _, _, p = length_preference(judge_longer, people_longer)
    n = int(keep.sum())
    return {
        "judge": float(judge_longer.mean()) if n else math.nan,
        "people": float(people_longer.mean()) if n else math.nan,
        "n": n,
        "p": p,
    }


def disagreement_queue(main: pd.DataFrame, judges: pd.DataFrame) -> pd.DataFrame:
    """Per judge, the main pairs where its preference direction differs from the human majority (or
    the people have none): :data:`QUEUE_COLUMNS`, by judge and pair."""
    if main.empty or judges.empty:
        return pd.DataFrame(columns=QUEUE_COLUMNS)
    majority = pair_majority(judgments(main))
    judges = judges[judges[PAIR_ID].isin(set(main[PAIR_ID]))]
    parts = [
        _queue(name, _judge_preference(judges[judges[JUDGE] == name]), majority)
        for name in sorted(judges[JUDGE].unique())
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=QUEUE_COLUMNS)


def _queue(name: str, pref: pd.DataFrame, majority: pd.DataFrame) -> pd.DataFrame:
    """The pairs where the judge's direction differs from the human majority (or people have none)."""
    merged = pref.dropna(subset=["judge_preference"]).merge(majority, on=PAIR_ID, how="inner")
    off = merged[_direction(merged["judge_preference"]).to_numpy() != merged["majority"].to_numpy()]
    return pd.DataFrame(
        {
            "pair_id": off[PAIR_ID].to_numpy(),
            "judge": name,
            "judge_preference": off["judge_preference"].to_numpy(dtype=float),
            "majority": off["majority"].to_numpy(),
            "human_agreement": off["agreement"].to_numpy(dtype=float),
            "n_judgments": off["n_votes"].to_numpy(dtype=int),
        },
        columns=QUEUE_COLUMNS,
    )
