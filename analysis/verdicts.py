"""The verdicts of the validation report: the :class:`Verdict` type, its keys and statuses, and the
builder of each verdict (sample size, equivalence, rubric, preference, reliability, positive controls,
sensitivity) and of the overall result. :func:`analysis.report.build_report` calls them in order."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from analysis.aggregates import judgment_differences
from analysis.frames import CONTROL, PAIR_ID
from analysis.lazy import stats
from analysis.scale import to_study_points
from analysis.validation import ValidationResult
from analysis.vocabulary import POSITIVE, SIDE_CHOSEN
from analysis.wording import counted

#: Stable keys of the verdicts, in report order.
VERDICT_KEYS: tuple[str, ...] = (
    "sample_size",
    "equivalence",
    "rubric",
    "preference",
    "reliability",
    "sensitivity",
)
STATUSES: tuple[str, ...] = ("pass", "fail", "inconclusive", "not_assessed")
OVERALL: tuple[str, ...] = ("PASS", "INCONCLUSIVE", "FAIL")
Status = Literal["pass", "fail", "inconclusive", "not_assessed"]
#: The model and population of the claims that generalize over pairs and annotators.
CROSSED_POPULATION = (
    "under the crossed pair x annotator model, for pairs like these and annotators like this panel"
)


def claims_in_words(claims: list[str]) -> str:
    """Claims joined by "; ", the model and population they share said once for a run of them."""
    scope = CROSSED_POPULATION + ": "
    parts: list[str] = []
    for claim in claims:
        if claim.startswith(scope) and parts and parts[-1].startswith(scope):
            parts[-1] += ", and " + claim.removeprefix(scope)
        else:
            parts.append(claim)
    return "; ".join(parts)


@dataclass(frozen=True)
class Verdict:
    """One claim, the test behind it, and what the data say.

    ``key`` is stable (one of :data:`VERDICT_KEYS`); ``status`` is pass, fail, inconclusive or
    not_assessed; ``passed`` is ``status == "pass"``; ``detail`` gives the numbers and, when it did
    not pass, the reason.
    """

    key: str
    claim: str
    test: str
    status: Status
    detail: str

    @property
    def passed(self) -> bool:
        """True when the claim is supported."""
        return self.status == "pass"

    def to_dict(self) -> dict[str, Any]:
        """The fields plus ``passed``, JSON-ready."""
        return {
            "key": self.key,
            "claim": self.claim,
            "test": self.test,
            "status": self.status,
            "passed": self.passed,
            "detail": self.detail,
        }


def sample_size_verdict(n_pairs: int, n_replicated: int, min_pairs: int) -> Verdict:
    """Enough pairs that can inform the verdicts: main pairs rated by two or more annotators (a pair
    rated once cannot tell its own gap from its one annotator's habit, nor show agreement)."""
    ok = n_replicated >= min_pairs
    return Verdict(
        "sample_size",
        f"the study has at least {min_pairs} pairs rated by two or more annotators (a count of this study's "
        "pairs; no model)",
        "count of main (non-control) pairs with judgments by at least two annotators",
        "pass" if ok else "inconclusive",
        f"{n_replicated} of {n_pairs} pairs rated by two or more annotators"
        + (f" ({n_pairs - n_replicated} rated once)" if n_pairs > n_replicated else "")
        + (
            ""
            if ok
            else f": at least {min_pairs} are needed before the study can PASS overall (each test below "
            "still shows its own result)"
        ),
    )


def equivalence_verdict(
    validation: ValidationResult,
    design: pd.DataFrame,
    quality_items: Sequence[str],
    alpha: float,
    power: float,
) -> Verdict:
    crossed = validation.crossed
    level = round(100 * (1 - 2 * alpha))
    parts = [
        f"{r['dimension']} {r['estimate']:+.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
        + (f"df {r['df']:.1f}" if math.isfinite(r["df"]) else f"p {r['pvalue']:.3g}, {UNANIMOUS_WORDS}")
        for r in crossed.to_dict("records")
    ]
    detail = f"crossed model, {level}% CI: " + "; ".join(parts) + f"; max p = {validation.iut.pvalue:.4g}"
    broken = validation.broken
    share_parts = [
        f"{b['dimension']} at most {b['upper']:.3f} (mean squared gap {b['mean_square']:.3f}"
        + (" (an unbiased estimate: below 0 by chance)" if b["mean_square"] < 0 else "")
        + f", upper bound {b['mean_square_upper']:.3f}, vs margin squared {b['margin'] ** 2:g})"
        if math.isfinite(b["upper"])
        else f"{b['dimension']}: no bound from {counted(int(b['n_pairs']), 'pair')} (it needs at least 3)"
        for b in broken.to_dict("records")
    ]
    max_share = float(broken["max_share"].iloc[0]) if not broken.empty else 0.1
    if share_parts:
        detail += "; share of pairs beyond the margin (any distribution of pair gaps): " + "; ".join(
            share_parts
        )
    test = (
        "TOST on a crossed random-effects model (pair and annotator effects on the chosen - rejected "
        "difference, Satterthwaite df), intersection-union over "
        f"{counted(len(quality_items), 'dimension')}; and "
        "the upper confidence bound of the share of pairs whose true gap lies beyond the margin below "
        f"{max_share:g}, valid for any distribution of pair gaps (share <= mean squared gap / margin^2; "
        "the mean squared gap from products of different annotators' judgments of a pair)"
    )
    claim = (
        f"{CROSSED_POPULATION}: chosen and rejected are equivalent on general quality (mean gap within the "
        f"margin), with fewer than {max_share:.0%} of pairs beyond the margin (for any distribution of "
        "pair gaps)"
    )
    n_annotators = int(crossed["n_annotators"].max())
    outside = crossed[(crossed["ci_low"] > crossed["high"]) | (crossed["ci_high"] < crossed["low"])]
    panel = validation.iut_panel.equivalent
    needed = design["pool_needed"].max() if not design.empty else math.nan
    need_text = (
        f"about {int(needed)} annotators (same pairs and overlap) would give {round(100 * power)}% power "
        "to generalize (from the estimated variance components, assuming a true gap of 0)"
        if pd.notna(needed) and math.isfinite(float(needed))
        else "the number of annotators needed could not be estimated"
    )
    if not crossed["annotator_estimable"].all():
        return Verdict(
            "equivalence",
            claim,
            test,
            "inconclusive",
            detail + "; only one annotator: the annotator variance cannot be estimated, so no claim about "
            f"annotators in general is possible; {need_text}",
        )
    many_broken = broken[broken["lower"] >= broken["max_share"]] if not broken.empty else broken
    not_few = broken[~broken["below"].astype(bool)] if not broken.empty else broken
    if not outside.empty:
        return Verdict(
            "equivalence",
            claim,
            test,
            "fail",
            detail + f"; the interval lies outside the margin for: {', '.join(outside['dimension'])}",
        )
    if not many_broken.empty:
        return Verdict(
            "equivalence",
            claim,
            test,
            "fail",
            detail + f"; even the lower confidence bound of the share of broken pairs is at least "
            f"{max_share:g} for: {', '.join(many_broken['dimension'])} (a mean inside the margin over many "
            "broken pairs is not equivalence)",
        )
    if validation.iut.equivalent and not_few.empty:
        return Verdict("equivalence", claim, test, "pass", detail)
    why = ""
    if not validation.iut.equivalent:
        failing = ", ".join(crossed.loc[~crossed["equivalent"].astype(bool), "dimension"])
        why += f"; mean gap within the margin not demonstrated for: {failing}"
        if panel:
            why += (
                f"; conditional on this panel of {n_annotators} annotators the per-pair TOST shows "
                f"equivalence, but it does not generalize to annotators in general: {need_text}"
            )
    bounded = not_few[not_few["upper"].notna()] if not not_few.empty else not_few
    if not bounded.empty:
        why += (
            f"; fewer than {max_share:.0%} broken pairs not demonstrated for: "
            f"{', '.join(bounded['dimension'])} (the data cannot exclude that many pairs have a gap "
            "beyond the margin; more judgments per pair narrow the bound)"
        )
    return Verdict("equivalence", claim, test, "inconclusive", detail + why)


def _population(row: pd.Series) -> str:
    df = f", df {row['df']:.1f}" if math.isfinite(row["df"]) else ""
    return (
        f"{int(row['n_pairs'])} pairs, {int(row['n_annotators'])} annotators{df}"
        if row["annotator_estimable"]
        else f"{int(row['n_pairs'])} pairs, 1 annotator (conditional on that annotator)"
    )


def _crossed_figures(name: str, row: pd.Series, alpha: float) -> str:
    """A one-sided crossed-model test's figures: `name`, estimate, interval, Holm p and the population
    (its closing parenthesis left to the caller)."""
    level = round(100 * (1 - 2 * alpha))
    return (
        f"{name} {row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] ({level}% CI), "
        f"Holm p = {row['p_holm']:.4g} ({_population(row)}{_unanimous(row)}"
    )


UNANIMOUS_WORDS = (
    "every judgment gave it the same gap: no variance to fit, so the exact bound for unanimous "
    "judgments (valid for any crossed model; it needs more annotators, each on pairs of their own)"
)


def _number(value: float) -> str:
    """A figure to 2 decimals, or "n/a" where it is undefined (no variation)."""
    return f"{value:.2f}" if math.isfinite(value) else "n/a"


def _unanimous(row: pd.Series) -> str:
    """What the test was when every judgment scored the same (the exact bound), else nothing."""
    matched = int(row.get("matched", 0) or 0)
    if not matched:
        return ""
    share = float(row["p_greater"]) ** (1 / matched)
    if share >= 1:
        return "; every judgment scored the same, not above the null: nothing to test"
    return (
        f"; every judgment scored the same: no variance to fit, so the exact bound for unanimous "
        f"judgments over {matched} annotators who each rated a different pair, p = {share:.3g}^{matched}, "
        f"valid for any crossed model; each further annotator on a pair of their own multiplies p by "
        f"{share:.3g}"
    )


def rubric_verdict(validation: ValidationResult, alpha: float) -> Verdict:
    claim = f"{CROSSED_POPULATION}: annotators judge that chosen follows the user's rubric better"
    test = (
        "one-sided test of the mean per-judgment rubric difference in a crossed random-effects model "
        "(pair and annotator effects, Satterthwaite df; Holm-adjusted with the preference test)"
    )
    if validation.rubric_crossed.empty:
        return Verdict("rubric", claim, test, "not_assessed", "no rubric ratings in the data")
    row = validation.rubric_crossed.iloc[0]
    sup = validation.superiority.iloc[0]
    detail = (
        f"{_crossed_figures('difference', row, alpha)}); conditional on this panel (paired t over "
        f"pair means): {sup['estimate']:.3f} [{sup['ci_low']:.3f}, {sup['ci_high']:.3f}], d_z = "
        f"{_number(sup['dz'])}, minimum detectable effect at 80% power {sup['mde']:.3f}"
    )
    return _one_sided("rubric", claim, test, row, detail, alpha, "rejected follows the rubric better")


def preference_verdict(validation: ValidationResult, alpha: float) -> Verdict:
    row = validation.preference_crossed.iloc[0]
    pref = validation.preference.iloc[0]
    claim = (
        f"{CROSSED_POPULATION}: annotators (not the user) prefer chosen as the better fit for the user's "
        "profile and rubric"
    )
    test = (
        "one-sided test of the mean per-judgment preference score (chosen 1, tie 0.5, rejected 0) > 0.5 "
        "in a crossed random-effects model (pair and annotator effects, Satterthwaite df; Holm-adjusted "
        "with the rubric test)"
    )
    detail = (
        f"{_crossed_figures('share', row, alpha)}; {int(pref['n_judgments'])} judgments, "
        f"{int(pref['n_ties'])} ties counted half); conditional on this panel ({pref['method']}): "
        f"{pref['rate']:.3f} [{pref['ci_low']:.3f}, {pref['ci_high']:.3f}]"
    )
    side = _one_side(validation)
    if side is not None:
        return Verdict(
            "preference",
            claim,
            test,
            "inconclusive",
            f"{detail}; chosen was shown on side {side} in every judgment, so a preference for chosen cannot "
            f"be told from a preference for side {side} (the sides must be counterbalanced)",
        )
    return _one_sided("preference", claim, test, row, detail, alpha, "annotators prefer rejected", null=0.5)


def _one_side(validation: ValidationResult) -> str | None:
    """The side chosen was shown on in every judgment that records one, if it was always the same."""
    for differences in validation.differences.values():
        if SIDE_CHOSEN in differences.columns:
            sides = differences[SIDE_CHOSEN].dropna().astype(str).unique()
            return str(sides[0]) if len(sides) == 1 else None
    return None


def _one_sided(
    key: str,
    claim: str,
    test: str,
    row: pd.Series,
    detail: str,
    alpha: float,
    reversed_words: str,
    *,
    null: float = 0.0,
) -> Verdict:
    """The status of a one-sided crossed-model claim: no claim about annotators in general from one
    annotator; pass at Holm p < alpha; fail when the whole interval lies on the other side of `null`."""
    if not row["annotator_estimable"]:
        return Verdict(
            key, claim, test, "inconclusive", detail + "; one annotator: no claim about annotators in general"
        )
    if row["p_holm"] < alpha:
        return Verdict(key, claim, test, "pass", detail)
    if row["ci_high"] < null:
        return Verdict(key, claim, test, "fail", f"{detail}; {reversed_words}")
    return Verdict(key, claim, test, "inconclusive", detail + "; not demonstrated")


CEILING_ADVICE = (
    "at the ceiling (both responses excellent) alpha is near 0 by construction, so positive controls are "
    "the way to certify such a study: `annotator controls make --kind degrade` makes them"
)


def reliability_verdict(
    agreement: pd.DataFrame,
    quality_items: Sequence[str],
    threshold: float,
    alpha: float,
    sensitivity: Verdict | None = None,
) -> Verdict:
    level = round(100 * (1 - 2 * alpha))
    claim = (
        "for these pairs as this panel rated them: the quality ratings are reliable enough to support an "
        "equivalence claim (assay sensitivity)"
    )
    test = (
        f"Krippendorff's alpha (ordinal) per quality dimension: the lower end of its {level}% pair-bootstrap "
        f"CI must exceed {threshold:g}"
    )
    rows = agreement[agreement["item"].isin(list(quality_items))]
    parts, low_items, fail_items, missing = [], [], [], []
    for row in rows.to_dict("records"):
        a, lo, hi = (
            row["krippendorff_alpha"],
            row["krippendorff_alpha_ci_low"],
            row["krippendorff_alpha_ci_high"],
        )
        if not (isinstance(lo, float) and math.isfinite(lo)):
            missing.append(str(row["item"]))
            parts.append(f"{row['item']}: {row.get('note') or 'alpha n/a'}")
            continue
        parts.append(f"{row['item']} alpha {a:.3f} [{lo:.3f}, {hi:.3f}] ({int(row['n_units'])} units)")
        if not lo > threshold:
            low_items.append(str(row["item"]))
        if hi < threshold:
            fail_items.append(str(row["item"]))
    detail = "; ".join(parts)
    if sensitivity is not None and sensitivity.passed:
        return Verdict(
            "reliability",
            claim,
            "reported, not a gate: the positive controls show that the raters see a defect of the "
            "margin's size (assay sensitivity)",
            "not_assessed",
            detail + "; reported only: assay sensitivity is shown by the positive controls",
        )
    advice = "; " + CEILING_ADVICE if sensitivity is None or sensitivity.status == "not_assessed" else ""
    if missing:
        return Verdict(
            "reliability",
            claim,
            test,
            "inconclusive",
            detail + f"; alpha cannot be computed for {', '.join(missing)} (at least two ratings per "
            "response and some variation are needed): an equivalence claim from unreplicated ratings "
            "cannot be checked for vacuity" + advice,
        )
    if fail_items:
        return Verdict(
            "reliability",
            claim,
            test,
            "fail",
            detail + f"; raters barely agree on {', '.join(fail_items)} (whole CI below {threshold:g}): "
            "equivalence from raters who cannot tell responses apart is vacuous" + advice,
        )
    if low_items:
        return Verdict(
            "reliability",
            claim,
            test,
            "inconclusive",
            detail
            + f"; reliability not demonstrated for {', '.join(low_items)} (CI reaches below {threshold:g})"
            + advice,
        )
    return Verdict("reliability", claim, test, "pass", detail)


def positive_control_table(
    controls: pd.DataFrame,
    quality_items: Sequence[str],
    alpha: float,
    margin: float = 0.0,
    *,
    margins: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """One row: the positive-control test of gap > margin (empty without positive controls). With
    `margins` (each dimension's own margin) a dimension's gap is summed in points of `margin`
    (:func:`analysis.scale.to_study_points`)."""
    if controls.empty:
        return pd.DataFrame()
    positive = controls[controls[CONTROL] == POSITIVE]
    if positive.empty:
        return pd.DataFrame()
    per_item = []
    for item in quality_items:
        try:
            d = judgment_differences(positive, item)
        except ValueError:
            continue
        factor = to_study_points(margin, margins, item) if margin > 0 else 1.0
        per_item.append((d.groupby(PAIR_ID)["diff"].mean() * factor).rename(item))
    if not per_item:
        return pd.DataFrame()
    # the sum over dimensions: a planted defect lowers one dimension (unknown here), so the summed gap
    # is the defect's size wherever it is, and stays unbiased (about 0) for a defect nobody sees
    gaps = pd.concat(per_item, axis=1).dropna().sum(axis=1)
    n = len(gaps)
    mean = float(gaps.mean())
    sd = float(gaps.std(ddof=1)) if n > 1 else math.nan
    se = sd / math.sqrt(n) if n > 1 else math.nan
    if n > 1 and se > 0:
        p = float(stats.t.sf((mean - margin) / se, n - 1))
        half = float(stats.t.ppf(1 - alpha, n - 1)) * se
        low, high = mean - half, mean + half
    elif n > 1:  # every control pair has the same gap: no sampling error to test against
        p = 0.0 if mean > margin else 1.0
        low = high = mean
    else:
        p, low, high = math.nan, math.nan, math.nan
    return pd.DataFrame(
        [
            {
                "positive_pairs": n,
                "gap": mean,
                "gap_ci_low": low,
                "gap_ci_high": high,
                "null_gap": margin,
                "p_greater": p,
            }
        ]
    )


def sensitivity_verdict(
    table: pd.DataFrame,
    controls: pd.DataFrame,
    min_pairs: int,
    required: bool,
    alpha: float,
    margin: float = 0.0,
) -> Verdict:
    claim = (
        "for positive-control pairs like these, rated by this panel (not annotators in general): the "
        "annotators detect a known quality defect of at least the margin's size"
    )
    test = (
        "one-sided t test over positive-control pairs: chosen (intact) - rejected (planted defect) quality, "
        f"summed over the dimensions, > {margin:g} (the equivalence margin); at least {min_pairs} control "
        "pairs"
    )
    if table.empty:
        return Verdict(
            "sensitivity",
            claim,
            test,
            "inconclusive" if required else "not_assessed",
            "no positive-control pairs in the data"
            + (
                " but the study requires them"
                if required
                else " (not required by the study; reliability still applies)"
            ),
        )
    row = table.iloc[0]
    n = int(row["positive_pairs"])
    level = round(100 * (1 - 2 * alpha))
    detail = (
        f"gap {row['gap']:+.3f} [{row['gap_ci_low']:.3f}, {row['gap_ci_high']:.3f}] ({level}% CI) over {n} "
        f"positive-control pairs, p = {row['p_greater']:.4g} (against a gap of {margin:g})"
    )
    if n < min_pairs:
        return Verdict(
            "sensitivity",
            claim,
            test,
            "inconclusive",
            detail + f"; too few control pairs ({n} of {min_pairs})",
        )
    if row["p_greater"] < alpha:
        return Verdict("sensitivity", claim, test, "pass", detail)
    if not row["gap"] > 0:
        return Verdict("sensitivity", claim, test, "fail", detail + "; the planted defect is not seen at all")
    return Verdict(
        "sensitivity",
        claim,
        test,
        "inconclusive",
        detail + f"; a defect of the margin's size ({margin:g}) is not demonstrated to be detected",
    )


def overall_result(verdicts: Sequence[Verdict]) -> tuple[str, str]:
    failing = [v for v in verdicts if v.status == "fail"]
    open_ = [v for v in verdicts if v.status == "inconclusive"]
    if failing:
        return "FAIL", "; ".join(f"{v.key}: failed" for v in failing) + (
            "; " + "; ".join(f"{v.key}: inconclusive" for v in open_) if open_ else ""
        )
    if open_:
        return "INCONCLUSIVE", "; ".join(f"{v.key}: not demonstrated" for v in open_)
    skipped = [v.key for v in verdicts if v.status == "not_assessed"]
    return "PASS", "every verdict passed" + (f" ({', '.join(skipped)} not assessed)" if skipped else "")
