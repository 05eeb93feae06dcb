"""The validation report: one computation (this module); :mod:`analysis.render` turns it into text.

The app's Validation page, ``annotator analyze --study S`` and ``annotator analyze --labels FILE``
all call :func:`build_report`, so they show the same numbers. Control pairs (the frame's optional
``control`` column) never enter the main analysis. Verdicts (each with a stable ``key``):

``sample_size``
    At least ``min_pairs`` main pairs; no PASS below it.
``equivalence``
    *Equivalent on general quality, with few broken pairs*, generalizing over pairs and annotators:
    per dimension, a TOST on the crossed random-effects model of the per-judgment chosen - rejected
    differences (:mod:`analysis.mixed`, Satterthwaite df, the few-annotator guard), all dimensions
    must pass (intersection-union, Berger 1982); and the upper confidence bound of the share of pairs
    whose true gap lies beyond the margin (:func:`analysis.mixed.broken_share`) must be below
    ``max_broken_share``. The per-pair TOST is shown as "conditional on this panel of annotators".
``rubric``
    *Chosen follows the user's rubric better*, over pairs and annotators: one-sided test of the mean
    per-judgment rubric difference in the same crossed model (:func:`analysis.mixed.crossed_mean`);
    the paired t test on per-pair means is shown, conditional on the panel.
``preference``
    *Annotators prefer chosen*, over pairs and annotators: the per-judgment preference score (chosen
    1, tie 0.5, rejected 0) in the crossed model, one-sided against 0.5; rubric and preference are
    Holm-adjusted together. The per-pair share t test is shown, conditional on the panel.
``reliability``
    *The quality ratings are reliable enough to support an equivalence claim* (assay sensitivity
    without positive controls): for every quality dimension the lower end of the 1 - 2*alpha
    pair-bootstrap interval of Krippendorff's alpha lies above ``reliability_threshold``. When the
    positive controls pass, alpha is reported, not a gate (at the ceiling alpha is near 0 by
    construction).
``sensitivity``
    *A known quality defect of at least the margin's size is detected*: on the positive-control pairs,
    the chosen - rejected quality difference (summed over the dimensions, per pair: a planted defect
    lowers one of them) is > margin, one-sided
    at alpha, with at least ``min_control_pairs`` control pairs. Without positive controls it is "not
    assessed" (unless ``require_positive_controls``) and reliability is the gate. An inconclusive
    sensitivity verdict keeps the study from PASS whatever else holds.

The cleaning list (:mod:`analysis.cleaning`): per pair shrunken estimates and a probability of being
broken; "drop" at the false discovery rate ``fdr``, "needs more judgments", "keep".

Status of a verdict: ``pass``, ``fail`` (the data contradict the claim), ``inconclusive`` (not demonstrated)
or ``not_assessed``. The overall result is PASS only when no verdict fails or is inconclusive; FAIL
when any verdict fails; else INCONCLUSIVE, with the reasons.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from analysis.agreement import agreement_table
from analysis.cleaning import NEEDS_MORE, study_cleaning
from analysis.competence import QualitySection
from analysis.diagnostics import annotator_diagnostics
from analysis.frames import (
    ANNOTATOR,
    CATEGORY,
    CHOSEN_CHARS,
    CONTROL,
    ITEM,
    PAIR_ID,
    PREFERENCE,
    QUALITY_ITEMS,
    REJECTED_CHARS,
    RUBRIC_ITEM,
    SIDE_CHOSEN,
    judgment_differences,
    judgments,
    pair_majority,
    split_controls,
    validate_frame,
)
from analysis.judges import JudgeSection
from analysis.mixed import fit_crossed
from analysis.power import recommend_design
from analysis.science import BenchmarkTables, benchmark_tables
from analysis.validation import ValidationResult, preference_scores, validate_pairs
from analysis.vocabulary import DEFAULT_MARGIN, POSITIVE

__all__ = [
    "OVERALL",
    "STATUSES",
    "VERDICT_KEYS",
    "Report",
    "ReportSettings",
    "Verdict",
    "build_report",
]

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


@dataclass(frozen=True)
class Report:
    """Everything the report shows; every table has flat columns."""

    study: str
    parameters: dict[str, Any]
    summary: dict[str, Any]
    validation: ValidationResult
    agreement: pd.DataFrame
    diagnostics: pd.DataFrame
    failed_pairs: pd.DataFrame
    verdicts: list[Verdict]
    overall: str
    overall_reason: str
    bias: pd.DataFrame
    categories: pd.DataFrame
    controls: pd.DataFrame
    design: pd.DataFrame
    pair_table: pd.DataFrame = field(repr=False)
    benchmark: BenchmarkTables | None = field(default=None, repr=False)  # models, arms, rubric support
    quality: QualitySection | None = field(default=None, repr=False)  # annotator QC, exclusion
    cleaning: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)  # drop / needs more / keep
    judges: JudgeSection | None = field(default=None, repr=False)  # LLM judges vs people (analysis.judges)

    def verdict(self, key: str) -> Verdict:
        """The verdict with this key."""
        for v in self.verdicts:
            if v.key == key:
                return v
        raise KeyError(key)


@dataclass(frozen=True)
class ReportSettings:
    """What a validation report is computed with (a study's [analysis] and [validation] settings).

    Attributes
    ----------
    quality_items : sequence of str
        The quality dimensions that must be equivalent.
    margin : float, default 0.5
        Equivalence margin in scale points.
    alpha : float, default 0.05
        Level of every one-sided test; the matching intervals are 1 - 2*alpha.
    scale_min, scale_max : float, default 1 and 5
        The quality scale (for agreement statistics).
    reliability_threshold : float, default 0.1
        Krippendorff's alpha floor of the reliability verdict.
    min_pairs : int, default 20
        Fewer main pairs give no PASS.
    min_control_pairs : int, default 5
        Positive-control pairs needed for a sensitivity verdict.
    require_positive_controls : bool, default False
        Without positive controls the result cannot PASS.
    target_power : float, default 0.8
        Power used for the annotator-design recommendation and the rubric's minimum detectable effect.
    n_boot : int, default 1000
        Bootstrap resamples of the agreement intervals (the reliability verdict uses them; >= 1).
    bootstrap : {"pair", "unit"}, default "pair"
        Resampling unit of the agreement intervals (pair = cluster bootstrap).
    seed : int, default 0
        Bootstrap seed.
    fast_seconds : float, default 10.0
        A judgment faster than this counts as fast in the annotator diagnostics.
    extras : bool, default True
        Also compute the descriptive tables that no verdict uses (position and length bias, per
        category effects, annotator diagnostics, failed pairs, agreement of the rubric and the
        preference). The Monte Carlo benchmark passes False; every verdict is computed the same way
        either way.
    max_broken_share : float, default 0.1
        Equivalence also needs the upper confidence bound of the share of pairs beyond the margin
        below this.
    fdr : float, default 0.1
        False discovery rate of the cleaning list's "pairs to drop".
    """

    quality_items: Sequence[str] = QUALITY_ITEMS
    margin: float = DEFAULT_MARGIN
    alpha: float = 0.05
    scale_min: float = 1
    scale_max: float = 5
    reliability_threshold: float = 0.1
    min_pairs: int = 20
    min_control_pairs: int = 5
    require_positive_controls: bool = False
    target_power: float = 0.8
    n_boot: int = 1000
    bootstrap: Literal["pair", "unit"] = "pair"
    seed: int = 0
    fast_seconds: float = 10.0
    extras: bool = True
    max_broken_share: float = 0.1
    fdr: float = 0.1

    def __post_init__(self) -> None:
        if not isinstance(self.n_boot, int | np.integer) or self.n_boot < 1:
            raise ValueError(f"n_boot must be a positive integer, got {self.n_boot!r}")


def build_report(
    frame: pd.DataFrame,
    *,
    study: str,
    settings: ReportSettings | None = None,
    predictions: pd.DataFrame | None = None,
    final: pd.DataFrame | None = None,
) -> Report:
    """Compute the whole validation report from a label frame.

    Parameters
    ----------
    frame : pandas.DataFrame
        The long label frame (:mod:`analysis.frames`), from the database or any tool's file.
    study : str
        Name shown in the report.
    settings : ReportSettings, optional
        The study's analysis settings (the defaults when not given).
    predictions : pandas.DataFrame, optional
        Reward-model predictions (``pair_id, model, choice``) for the benchmark section
        (:func:`analysis.science.benchmark_tables`: model vs human accuracy, kappa, McNemar, the
        disagreement queue); study arms and rubric-support answers in `frame` are reported there too.
    final : pandas.DataFrame, optional
        The final labels (``pair_id, preference, keep``): models and people are compared on the kept pairs.

    Returns
    -------
    Report

    Raises
    ------
    ValueError
        An invalid frame, a quality item without scores, fewer than 2 main pairs, or bad parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.simulation import simulate_frame
    >>> frame = simulate_frame(np.random.default_rng(3), n_pairs=60, pool=12, positive_controls=8, noise=0.4)
    >>> rep = build_report(frame, study="demo", settings=ReportSettings(n_boot=200))
    >>> rep.overall, [v.key for v in rep.verdicts]
    ('PASS', ['sample_size', 'equivalence', 'rubric', 'preference', 'reliability', 'sensitivity'])
    """
    settings = settings or ReportSettings()
    frame = validate_frame(frame)
    quality_items = list(settings.quality_items)
    main, controls = split_controls(frame)
    if main.empty:
        raise ValueError("the frame has no main (non-control) pairs")
    n_pairs = int(main[PAIR_ID].nunique())
    if n_pairs < 2:
        raise ValueError(f"the statistics need judgments on at least 2 pairs, got {n_pairs}")
    validation = validate_pairs(
        main,
        quality_items=quality_items,
        margin=settings.margin,
        alpha=settings.alpha,
        max_broken_share=settings.max_broken_share,
    )
    # without extras only the quality items (the reliability verdict); rubric and preference rows are
    # descriptive
    agreement_rows = main if settings.extras else main[main[ITEM].isin(quality_items)]
    agreement = agreement_table(
        agreement_rows,
        quality_items=quality_items,
        n_boot=int(settings.n_boot),
        seed=settings.seed,
        confidence=1 - 2 * settings.alpha,
        scale_min=settings.scale_min,
        scale_max=settings.scale_max,
        bootstrap=settings.bootstrap,
    )
    per_judgment = judgments(main)
    design = _design(validation, margin=settings.margin, alpha=settings.alpha, power=settings.target_power)
    sensitivity_table = _positive_controls(controls, quality_items, settings.alpha, settings.margin)
    sensitivity = _sensitivity(
        sensitivity_table,
        controls,
        settings.min_control_pairs,
        settings.require_positive_controls,
        settings.alpha,
        settings.margin,
    )
    verdicts = [
        _sample_size(n_pairs, settings.min_pairs),
        _equivalence(validation, design, quality_items, settings.alpha, settings.target_power),
        _rubric(validation, settings.alpha),
        _preference(validation, settings.alpha),
        _reliability(agreement, quality_items, settings.reliability_threshold, settings.alpha, sensitivity),
        sensitivity,
    ]
    overall, reason = _overall(verdicts)
    if settings.extras:
        diagnostics = annotator_diagnostics(
            main, quality_items=quality_items, fast_seconds=settings.fast_seconds
        )
        pair_table = _pair_table(main, validation, per_judgment)
        cleaning = _cleaning(validation, per_judgment, quality_items, settings.margin, settings.fdr)
        failed = _failed_pairs(cleaning)
        bias = _bias(main, validation, per_judgment, settings.alpha)
        categories = _categories(validation, settings.alpha)
    else:
        diagnostics = pair_table = failed = bias = categories = cleaning = pd.DataFrame()
    control_counts = (
        controls.drop_duplicates([PAIR_ID])[CONTROL]
        .value_counts()
        .rename_axis("control")
        .reset_index(name="n_pairs")
        if not controls.empty
        else pd.DataFrame({"control": [], "n_pairs": []})
    )
    summary = {
        "n_pairs": n_pairs,
        "n_annotators": int(main[ANNOTATOR].nunique()),
        "n_judgments": int(len(per_judgment)),
        "n_scores": int(len(main)),
        "n_control_pairs": int(controls[PAIR_ID].nunique()) if not controls.empty else 0,
        "n_failed_pairs": int(len(failed)),
        "n_drop": int((cleaning["decision"] == "drop").sum()) if not cleaning.empty else 0,
        "n_needs_more": int((cleaning["decision"] == NEEDS_MORE).sum()) if not cleaning.empty else 0,
        "side_data": bool(SIDE_CHOSEN in main.columns and main[SIDE_CHOSEN].notna().any()),
        "position_biased": sorted(
            diagnostics.loc[diagnostics["side_a_p_holm"] < settings.alpha, ANNOTATOR].astype(str).tolist()
        )
        if "side_a_p_holm" in diagnostics.columns
        else [],
        "overall": overall,
        "overall_reason": reason,
    }
    parameters = {
        "margin": settings.margin,
        "alpha": settings.alpha,
        "ci_level_tost": 1 - 2 * settings.alpha,
        "quality_items": quality_items,
        "scale_min": settings.scale_min,
        "scale_max": settings.scale_max,
        "reliability_threshold": settings.reliability_threshold,
        "min_pairs": settings.min_pairs,
        "min_control_pairs": settings.min_control_pairs,
        "require_positive_controls": settings.require_positive_controls,
        "target_power": settings.target_power,
        "n_boot": int(settings.n_boot),
        "seed": settings.seed,
        "bootstrap": "percentile bootstrap over "
        + ("pairs (cluster)" if settings.bootstrap == "pair" else "units"),
        "agreement_ci_level": 1 - 2 * settings.alpha,
        "fast_seconds": settings.fast_seconds,
        "ties": "a tie counts as half a preference for each response (per-pair share)",
        "max_broken_share": settings.max_broken_share,
        "fdr": settings.fdr,
    }
    return Report(
        study=study,
        parameters=parameters,
        summary=summary,
        validation=validation,
        agreement=agreement,
        diagnostics=diagnostics,
        failed_pairs=failed,
        verdicts=verdicts,
        overall=overall,
        overall_reason=reason,
        bias=bias,
        categories=categories,
        controls=pd.concat([control_counts, sensitivity_table], axis=1)
        if not sensitivity_table.empty
        else control_counts,
        design=design,
        pair_table=pair_table,
        cleaning=cleaning,
        benchmark=benchmark_tables(
            main,
            predictions=predictions,
            final=final,
            quality_items=quality_items,
            n_boot=int(settings.n_boot),
            seed=settings.seed,
            alpha=settings.alpha,
        )
        if settings.extras
        else None,
    )


# ------------------------------------------------------------------------------------------ verdicts


def _sample_size(n_pairs: int, min_pairs: int) -> Verdict:
    ok = n_pairs >= min_pairs
    return Verdict(
        "sample_size",
        f"the study has at least {min_pairs} pairs",
        "count of main (non-control) pairs with judgments",
        "pass" if ok else "inconclusive",
        f"{n_pairs} pairs"
        + ("" if ok else f": at least {min_pairs} pairs are needed before any result can PASS"),
    )


def _design(validation: ValidationResult, *, margin: float, alpha: float, power: float) -> pd.DataFrame:
    """Per dimension: variance components and the annotator pool the crossed TOST would need."""
    rows = []
    for row in validation.crossed.to_dict("records"):
        n_pairs, n_obs = int(row["n_pairs"]), int(row["n_obs"])
        per_pair = max(1, round(n_obs / max(n_pairs, 1)))
        out = {
            "dimension": row["dimension"],
            "n_pairs": n_pairs,
            "n_annotators": int(row["n_annotators"]),
            "per_pair": per_pair,
            "pair_var": row["pair_var"],
            "annotator_var": row["annotator_var"],
            "residual_var": row["residual_var"],
            "pool_needed": math.nan,
            "power_at_pool_needed": math.nan,
        }
        comps = [row["pair_var"], row["annotator_var"], row["residual_var"]]
        if all(isinstance(v, float) and math.isfinite(v) for v in comps) and n_pairs >= 2:
            try:
                rec = recommend_design(
                    margin=margin,
                    pair_var=row["pair_var"],
                    annotator_var=row["annotator_var"],
                    residual_var=row["residual_var"],
                    power=power,
                    alpha=alpha,
                    per_pair=per_pair,
                    n_pairs=n_pairs,
                    max_pool=1000,
                )
                out["pool_needed"], out["power_at_pool_needed"] = rec.pool, rec.power
            except ValueError:
                pass
        rows.append(out)
    return pd.DataFrame(rows)


def _equivalence(
    validation: ValidationResult,
    design: pd.DataFrame,
    quality_items: Sequence[str],
    alpha: float,
    power: float,
) -> Verdict:
    crossed = validation.crossed
    level = round(100 * (1 - 2 * alpha))
    parts = [
        f"{r['dimension']} {r['estimate']:+.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] df {r['df']:.1f}"
        for r in crossed.to_dict("records")
    ]
    detail = f"crossed model, {level}% CI: " + "; ".join(parts) + f"; max p = {validation.iut.pvalue:.4g}"
    broken = validation.broken
    share_parts = [
        f"{b['dimension']} {b['share']:.3f} (bound {b['upper']:.3f}; pair SD {b['pair_sd']:.2f}, bound "
        f"{b['pair_sd_upper']:.2f}, vs margin {b['margin']:g})"
        for b in broken.to_dict("records")
    ]
    max_share = float(broken["max_share"].iloc[0]) if not broken.empty else 0.1
    if share_parts:
        detail += "; share of pairs beyond the margin: " + "; ".join(share_parts)
    test = (
        "TOST on a crossed random-effects model (pair and annotator effects on the chosen - rejected "
        f"difference, Satterthwaite df), intersection-union over {len(quality_items)} dimension(s); and "
        f"the upper confidence bound of the share of pairs whose true gap lies beyond the margin (normal "
        f"pair gaps with the fitted pair SD) below {max_share:g}"
    )
    claim = (
        "chosen and rejected are equivalent on general quality (for pairs and annotators in general), "
        f"with fewer than {max_share:.0%} of pairs beyond the margin"
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
    if not not_few.empty:
        why += (
            f"; fewer than {max_share:.0%} broken pairs not demonstrated for: "
            f"{', '.join(not_few['dimension'])} (the data cannot exclude that many pairs have a gap "
            "beyond the margin; more judgments per pair narrow the bound)"
        )
    return Verdict("equivalence", claim, test, "inconclusive", detail + why)


def _population(row: pd.Series) -> str:
    return (
        f"{int(row['n_pairs'])} pairs, {int(row['n_annotators'])} annotators, df {row['df']:.1f}"
        if row["annotator_estimable"]
        else f"{int(row['n_pairs'])} pairs, 1 annotator (conditional on that annotator)"
    )


def _rubric(validation: ValidationResult, alpha: float) -> Verdict:
    claim = "chosen follows the user's rubric better (for pairs and annotators in general)"
    test = (
        "one-sided test of the mean per-judgment rubric difference in a crossed random-effects model "
        "(pair and annotator effects, Satterthwaite df; Holm-adjusted with the preference test)"
    )
    if validation.rubric_crossed.empty:
        return Verdict("rubric", claim, test, "not_assessed", "no rubric ratings in the data")
    row = validation.rubric_crossed.iloc[0]
    sup = validation.superiority.iloc[0]
    level = round(100 * (1 - 2 * alpha))
    detail = (
        f"difference {row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] ({level}% CI), "
        f"Holm p = {row['p_holm']:.4g} ({_population(row)}); conditional on this panel (paired t over "
        f"pair means): {sup['estimate']:.3f} [{sup['ci_low']:.3f}, {sup['ci_high']:.3f}], d_z = "
        f"{sup['dz']:.2f}, minimum detectable effect at 80% power {sup['mde']:.3f}"
    )
    if not row["annotator_estimable"]:
        return Verdict(
            "rubric", claim, test, "inconclusive",
            detail + "; one annotator: no claim about annotators in general",
        )  # fmt: skip
    if row["p_holm"] < alpha:
        return Verdict("rubric", claim, test, "pass", detail)
    if row["ci_high"] < 0:
        return Verdict("rubric", claim, test, "fail", detail + "; rejected follows the rubric better")
    return Verdict("rubric", claim, test, "inconclusive", detail + "; not demonstrated")


def _preference(validation: ValidationResult, alpha: float) -> Verdict:
    row = validation.preference_crossed.iloc[0]
    pref = validation.preference.iloc[0]
    claim = "annotators in general prefer chosen for this user (over pairs and annotators)"
    test = (
        "one-sided test of the mean per-judgment preference score (chosen 1, tie 0.5, rejected 0) > 0.5 "
        "in a crossed random-effects model (pair and annotator effects, Satterthwaite df; Holm-adjusted "
        "with the rubric test)"
    )
    level = round(100 * (1 - 2 * alpha))
    detail = (
        f"share {0.5 + row['estimate']:.3f} [{0.5 + row['ci_low']:.3f}, {0.5 + row['ci_high']:.3f}] "
        f"({level}% CI), Holm p = {row['p_holm']:.4g} ({_population(row)}; {int(pref['n_judgments'])} "
        f"judgments, {int(pref['n_ties'])} ties counted half); conditional on this panel ({pref['method']}): "
        f"{pref['rate']:.3f} [{pref['ci_low']:.3f}, {pref['ci_high']:.3f}]"
    )
    if not row["annotator_estimable"]:
        return Verdict(
            "preference", claim, test, "inconclusive",
            detail + "; one annotator: no claim about annotators in general",
        )  # fmt: skip
    if row["p_holm"] < alpha:
        return Verdict("preference", claim, test, "pass", detail)
    if row["ci_high"] < 0:
        return Verdict("preference", claim, test, "fail", detail + "; annotators prefer rejected")
    return Verdict("preference", claim, test, "inconclusive", detail + "; not demonstrated")


CEILING_ADVICE = (
    "at the ceiling (both responses excellent) alpha is near 0 by construction, so positive controls are "
    "the way to certify such a study: `annotator controls make --kind degrade` makes them"
)


def _reliability(
    agreement: pd.DataFrame,
    quality_items: Sequence[str],
    threshold: float,
    alpha: float,
    sensitivity: Verdict | None = None,
) -> Verdict:
    level = round(100 * (1 - 2 * alpha))
    claim = "the quality ratings are reliable enough to support an equivalence claim (assay sensitivity)"
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
            parts.append(f"{row['item']} alpha n/a")
            continue
        parts.append(f"{row['item']} alpha {a:.3f} [{lo:.3f}, {hi:.3f}]")
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


def _positive_controls(
    controls: pd.DataFrame, quality_items: Sequence[str], alpha: float, margin: float = 0.0
) -> pd.DataFrame:
    """One row: the positive-control test of gap > margin (empty without positive controls)."""
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
        per_item.append(d.groupby(PAIR_ID)["diff"].mean().rename(item))
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


def _sensitivity(
    table: pd.DataFrame,
    controls: pd.DataFrame,
    min_pairs: int,
    required: bool,
    alpha: float,
    margin: float = 0.0,
) -> Verdict:
    claim = "annotators detect a known quality defect of at least the margin's size (positive controls)"
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


def _overall(verdicts: Sequence[Verdict]) -> tuple[str, str]:
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


# ------------------------------------------------------------------------------------ descriptive


def _pair_table(main: pd.DataFrame, validation: ValidationResult, per_judgment: pd.DataFrame) -> pd.DataFrame:
    """Per pair: chosen - rejected mean difference per item and rubric, and the majority preference."""
    table = None
    for item, means in validation.pair_means.items():
        col = means.set_index(PAIR_ID)[["diff"]].rename(columns={"diff": f"diff_{item}"})
        table = col if table is None else table.join(col, how="outer")
    assert table is not None  # validate_pairs needs at least one quality item
    votes = (per_judgment[PREFERENCE] > 0).astype("float64").groupby(per_judgment[PAIR_ID])
    table["share_prefer_chosen"] = votes.mean()
    table["n_judgments"] = votes.size()
    table["majority"] = pair_majority(per_judgment).set_index(PAIR_ID)["majority"]
    if CATEGORY in main.columns:
        table["category"] = main.groupby(PAIR_ID)[CATEGORY].first()
    return table.reset_index()


def _cleaning(
    validation: ValidationResult,
    per_judgment: pd.DataFrame,
    quality_items: Sequence[str],
    margin: float,
    fdr: float,
) -> pd.DataFrame:
    """The cleaning list (:mod:`analysis.cleaning`) from the crossed fits' variance components."""

    def parts(row: Any) -> tuple[float, float, float]:
        return float(row["pair_var"]), float(row["annotator_var"]), float(row["residual_var"])

    components = {row["dimension"]: parts(row) for row in validation.crossed.to_dict("records")}
    if not validation.rubric_crossed.empty:
        components[RUBRIC_ITEM] = parts(validation.rubric_crossed.iloc[0])
    differences = {item: validation.differences[item] for item in components}
    scores = per_judgment[[PAIR_ID, ANNOTATOR]].assign(score=preference_scores(per_judgment) - 0.5)
    return study_cleaning(
        differences,
        components,
        scores,
        parts(validation.preference_crossed.iloc[0]),
        quality_items=quality_items,
        margin=margin,
        fdr=fdr,
    )


def _failed_pairs(cleaning: pd.DataFrame) -> pd.DataFrame:
    """The pairs of the cleaning list that are not kept (to drop, or needing more judgments), with
    ``reasons`` saying the decision, the defect and the pair's evidence."""
    if cleaning.empty:
        return pd.DataFrame(columns=[PAIR_ID, "decision", "reasons"])
    out = cleaning[cleaning["decision"] != "keep"].copy()
    out["reasons"] = [
        f"{d}: {r or 'uncertain'} ({e})"
        for d, r, e in zip(out["decision"], out["reason"], out["evidence"], strict=True)
    ]
    return out.reset_index(drop=True)


def _bias(
    main: pd.DataFrame, validation: ValidationResult, per_judgment: pd.DataFrame, alpha: float
) -> pd.DataFrame:
    """Position and length bias: the rate of preferring side A, and side / length as covariates."""
    rows: list[dict[str, Any]] = []
    z = float(stats.norm.ppf(1 - alpha / 2))
    level = 1 - alpha
    if SIDE_CHOSEN in per_judgment.columns and per_judgment[SIDE_CHOSEN].notna().any():
        j = per_judgment[(per_judgment[PREFERENCE] != 0) & per_judgment[SIDE_CHOSEN].notna()]
        if len(j) >= 2:
            prefers_a = ((j[PREFERENCE] > 0) == (j[SIDE_CHOSEN] == "A")).to_numpy(dtype=float)
            rate = float(prefers_a.mean())
            # cluster-robust (by pair) SE of a mean
            resid = pd.Series(prefers_a - rate).groupby(j[PAIR_ID].to_numpy()).sum().to_numpy()
            n = len(prefers_a)
            g = len(resid)
            se = math.sqrt(g / max(g - 1, 1) * float((resid**2).sum())) / n
            rows.append(
                {
                    "bias": "position",
                    "item": "preference",
                    "term": "rate of preferring side A (non-tied judgments)",
                    "estimate": rate,
                    "se": se,
                    "ci_low": rate - z * se,
                    "ci_high": rate + z * se,
                    "ci_level": level,
                    "df": math.nan,
                    "p_value": float(2 * stats.norm.sf(abs(rate - 0.5) / se)) if se > 0 else math.nan,
                    "n": n,
                }
            )
    for item, d in validation.differences.items():
        cols, names = [np.ones(len(d))], ["intercept"]
        if SIDE_CHOSEN in d.columns and d[SIDE_CHOSEN].notna().all() and d[SIDE_CHOSEN].nunique() == 2:
            side = np.where(d[SIDE_CHOSEN] == "A", 0.5, -0.5)
            cols.append(side - side.mean())
            names.append("side: chosen shown as A")
        if CHOSEN_CHARS in d.columns and REJECTED_CHARS in d.columns:
            length = ((d[CHOSEN_CHARS] - d[REJECTED_CHARS]) / 1000.0).to_numpy(dtype=float)
            if np.isfinite(length).all() and np.ptp(length) > 0:
                cols.append(length - length.mean())
                names.append("length: chosen - rejected, per 1000 characters")
        if len(cols) == 1 or float(np.ptp(d["diff"])) == 0:
            continue
        start = None
        crossed = validation.crossed[validation.crossed["dimension"] == item]
        if not crossed.empty and crossed.iloc[0]["residual_var"] > 0:
            row = crossed.iloc[0]
            start = (row["pair_var"] / row["residual_var"], row["annotator_var"] / row["residual_var"])
        try:
            fit = fit_crossed(
                d["diff"].to_numpy(),
                np.column_stack(cols),
                d[PAIR_ID].to_numpy(),
                d[ANNOTATOR].to_numpy(),
                start=start,
            )
        except (ValueError, np.linalg.LinAlgError):
            continue
        for k in range(1, len(names)):
            variance = float(fit.cov_params[k, k])  # below 0 only by rounding in a near-singular fit
            est, se, df = (
                float(fit.params[k]),
                math.sqrt(variance) if variance > 0 else math.nan,
                float(fit.df[k]),
            )
            t = float(stats.t.ppf(1 - alpha / 2, df))
            rows.append(
                {
                    "bias": "position" if names[k].startswith("side") else "length",
                    "item": item,
                    "term": names[k],
                    "estimate": est,
                    "se": se,
                    "ci_low": est - t * se,
                    "ci_high": est + t * se,
                    "ci_level": level,
                    "df": df,
                    "p_value": float(2 * stats.t.sf(abs(est) / se, df)) if se > 0 else math.nan,
                    "n": fit.n_obs,
                }
            )
    return pd.DataFrame(rows)


def _categories(validation: ValidationResult, alpha: float) -> pd.DataFrame:
    """Per category and item: mean per-pair difference with its 1 - 2*alpha t interval (forest plot)."""
    rows: list[dict[str, Any]] = []
    for item, d in validation.differences.items():
        if CATEGORY not in d.columns:
            return pd.DataFrame()
        per_pair = d.groupby(PAIR_ID).agg(diff=("diff", "mean"), category=(CATEGORY, "first"))
        for category, g in per_pair.groupby("category", sort=True):
            n = len(g)
            mean = float(g["diff"].mean())
            se = float(g["diff"].std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
            half = float(stats.t.ppf(1 - alpha, n - 1)) * se if n > 1 else math.nan
            rows.append(
                {
                    "category": str(category),
                    "item": item,
                    "n_pairs": n,
                    "estimate": mean,
                    "ci_low": mean - half,
                    "ci_high": mean + half,
                }
            )
    return pd.DataFrame(rows)
