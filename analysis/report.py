"""The validation report: one computation (this module, with the verdicts in :mod:`analysis.verdicts`
and the descriptive tables in :mod:`analysis.report_tables`); :mod:`analysis.render` turns it into text.

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
    whose true gap lies beyond the margin (:func:`analysis.broken_share.broken_share`) must be below
    ``max_broken_share``. The per-pair TOST is shown as "conditional on this panel of annotators".
``rubric``
    *Chosen follows the user's rubric better*, over pairs and annotators: one-sided test of the mean
    per-judgment rubric difference in the same crossed model (:func:`analysis.crossed_mean.crossed_mean`);
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

The cleaning list: :mod:`analysis.cleaning` (its rule is ``cleaning.RULE``), at the false discovery
rate ``fdr`` (Bayesian; for any distribution of pair gaps where marked).

Status of a verdict: ``pass``, ``fail`` (the data contradict the claim), ``inconclusive`` (not demonstrated)
or ``not_assessed``. The overall result is PASS only when no verdict fails or is inconclusive; FAIL
when any verdict fails; else INCONCLUSIVE, with the reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.aggregates import judgments, replicated_pairs
from analysis.agreement import agreement_table
from analysis.agreement.table import MIN_REPLICATED_UNITS
from analysis.cleaning import DROP, NEEDS_MORE, drops_for_any_gaps
from analysis.competence import QualitySection
from analysis.design import Design
from analysis.design_verdict import allocation_table, registered_equivalence
from analysis.diagnostics import annotator_diagnostics, side_balance
from analysis.frames import (
    ANNOTATOR,
    CONTROL,
    ITEM,
    PAIR_ID,
    QUALITY_ITEMS,
    SIDE_CHOSEN,
    check_items,
    split_controls,
    validate_frame,
)
from analysis.judges import JudgeSection
from analysis.owners import OwnerSection, owner_endorsement_verdict, owner_section, split_owners
from analysis.ppi_report import PredictionPoweredSection
from analysis.report_tables import (
    bias_tables,
    category_table,
    cleaning_table,
    design_table,
    failed_pairs_table,
    per_pair_table,
)
from analysis.scale import DEFAULT_SCALE, Scale, scale_parameters
from analysis.science import BenchmarkTables, benchmark_tables
from analysis.settings import DEFAULTS, AnalysisSettings
from analysis.validation import ValidationResult, validate_pairs
from analysis.verdicts import (
    OVERALL,
    STATUSES,
    VERDICT_KEYS,
    Verdict,
    equivalence_verdict,
    overall_result,
    positive_control_table,
    preference_verdict,
    reliability_verdict,
    rubric_verdict,
    sample_size_verdict,
    sensitivity_verdict,
)

__all__ = [
    "OVERALL",
    "STATUSES",
    "VERDICT_KEYS",
    "Report",
    "ReportSettings",
    "Verdict",
    "build_report",
    "control_table",
    "report_parameters",
    "report_verdicts",
]


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
    # the registered adaptive design's "few broken pairs" test per dimension (analysis.design_verdict)
    allocation: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    judges: JudgeSection | None = field(default=None, repr=False)  # LLM judges vs people (analysis.judges)
    owners: OwnerSection | None = field(default=None, repr=False)  # the profiles' owners (analysis.owners)
    # equivalence over every pair a judge rated (analysis.ppi_report); None without such a judge
    prediction_powered: PredictionPoweredSection | None = field(default=None, repr=False)
    # section -> why it was not computed (a report read item by item: analysis.report_columns)
    not_computed: dict[str, str] = field(default_factory=dict)

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
        Equivalence margin in points of the study's scale.
    margins : mapping of str to float
        A quality item's own margin in its scale's points, where it has one (the others: `margin`);
        :func:`analysis.scale.dimension_margins`. Sums and means over dimensions (the positive controls,
        the cleaning list's mean gap) put each gap into points of `margin` first.
    alpha : float, default 0.05
        Level of every one-sided test; the matching intervals are 1 - 2*alpha.
    scale : analysis.scale.Scale, default 1-5
        The study's quality scale.
    scales : mapping of str to analysis.scale.Scale
        A quality item's own scale, where it has one (the others are rated on `scale`): the ordinal
        domain of its agreement statistics and the largest gap of its broken-share bound.
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
    collected_here : bool, default False
        The labels were collected with this tool (its pages show annotators only sides A and B), so
        the methods may call them blind; labels from a file are not called blind.
    allocation : analysis.design.Design, optional
        The study's registered allocation; a two-stage or sequential one, or one with several looks,
        replaces the "few broken pairs" part of the equivalence verdict by the test calibrated for it
        (:mod:`analysis.design_verdict`).
    """

    quality_items: Sequence[str] = QUALITY_ITEMS
    margin: float = DEFAULTS.margin
    margins: Mapping[str, float] = field(default_factory=dict)
    alpha: float = DEFAULTS.alpha
    scale: Scale = DEFAULT_SCALE
    scales: Mapping[str, Scale] = field(default_factory=dict)
    reliability_threshold: float = DEFAULTS.reliability_threshold
    min_pairs: int = DEFAULTS.min_pairs
    min_control_pairs: int = DEFAULTS.min_control_pairs
    require_positive_controls: bool = DEFAULTS.require_positive_controls
    target_power: float = DEFAULTS.target_power
    n_boot: int = 1000
    bootstrap: Literal["pair", "unit"] = "pair"
    seed: int = 0
    fast_seconds: float = 10.0
    extras: bool = True
    max_broken_share: float = DEFAULTS.max_broken_share
    fdr: float = DEFAULTS.fdr
    collected_here: bool = False
    allocation: Design | None = None

    @classmethod
    def of(cls, analysis: AnalysisSettings, **rest: Any) -> ReportSettings:
        """Report settings from a study's analysis settings (every field passed through) and `rest`
        (quality items, scale, bootstrap, ...)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in analysis.as_dict().items() if k in names}, **rest)

    def __post_init__(self) -> None:
        if not isinstance(self.n_boot, int | np.integer) or self.n_boot < 1:
            raise ValueError(f"n_boot must be a positive integer, got {self.n_boot!r}")

    def scale_of(self, item: str) -> Scale:
        """The scale quality item `item` is rated on."""
        return self.scales.get(item, self.scale)

    def scale_ends(self) -> dict[str, tuple[int, int]]:
        """Each quality item's lowest and highest point."""
        return {item: (self.scale_of(item).low, self.scale_of(item).high) for item in self.quality_items}

    def item_margins(self, items: Sequence[str]) -> dict[str, float]:
        """The equivalence margin of each of `items`, in its scale's points."""
        return {item: float(self.margins.get(item, self.margin)) for item in items}


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
    >>> from analysis.simulation import SimDesign, SimEffects, simulate_frame
    >>> design = SimDesign(n_pairs=200, per_pair=8, pool=12, positive_controls=8)
    >>> frame = simulate_frame(np.random.default_rng(3), design, SimEffects(noise=0.4))
    >>> rep = build_report(frame, study="demo", settings=ReportSettings(n_boot=200))
    >>> rep.overall, [v.key for v in rep.verdicts]
    ('PASS', ['sample_size', 'equivalence', 'rubric', 'preference', 'reliability', 'sensitivity'])
    """
    settings = settings or ReportSettings()
    frame = validate_frame(frame)
    quality_items = list(settings.quality_items)
    check_items(frame, settings.scale_ends())
    frame, owner_rows = split_owners(frame)
    margins = settings.item_margins(quality_items)
    main, controls = split_controls(frame)
    if main.empty:
        raise ValueError("the frame has no main (non-control) pairs")
    owners = owner_section(main, split_controls(owner_rows)[0], alpha=settings.alpha, predictions=predictions)
    n_pairs = int(main[PAIR_ID].nunique())
    if n_pairs < 2:
        raise ValueError(f"the statistics need judgments on at least 2 pairs, got {n_pairs}")
    validation = validate_pairs(
        main,
        quality_items=quality_items,
        gap_ranges={item: settings.scale_of(item).span for item in quality_items},
        margin=margins,
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
        scales={item: settings.scale_of(item) for item in quality_items},
        bootstrap=settings.bootstrap,
        min_units=MIN_REPLICATED_UNITS,
    )
    per_judgment = judgments(main)
    verdicts, design, sensitivity_table, allocation = report_verdicts(
        validation,
        agreement,
        controls,
        n_pairs=n_pairs,
        n_replicated=replicated_pairs(main),
        settings=settings,
    )
    if owners is not None:
        verdicts.append(owner_endorsement_verdict(owners, settings.alpha))
    overall, reason = overall_result(verdicts)
    if settings.extras:
        diagnostics = annotator_diagnostics(
            main, quality_items=quality_items, fast_seconds=settings.fast_seconds
        )
        pair_table = per_pair_table(main, validation, per_judgment)
        cleaning = cleaning_table(
            validation, per_judgment, quality_items, settings.margin, settings.fdr, margins
        )
        failed = failed_pairs_table(cleaning)
        bias = bias_tables(main, validation, per_judgment, settings.alpha)
        categories = category_table(validation, settings.alpha)
    else:
        diagnostics = pair_table = failed = bias = categories = cleaning = pd.DataFrame()
    summary = {
        "n_pairs": n_pairs,
        "n_annotators": int(main[ANNOTATOR].nunique()),
        "n_judgments": int(len(per_judgment)),
        "n_scores": int(len(main)),
        "n_control_pairs": int(controls[PAIR_ID].nunique()) if not controls.empty else 0,
        "n_failed_pairs": int(len(failed)),
        "n_drop": int((cleaning["decision"] == DROP).sum()) if not cleaning.empty else 0,
        "n_drop_any": int(drops_for_any_gaps(cleaning, settings.fdr).sum()) if not cleaning.empty else 0,
        "n_needs_more": int((cleaning["decision"] == NEEDS_MORE).sum()) if not cleaning.empty else 0,
        "side_data": bool(SIDE_CHOSEN in main.columns and main[SIDE_CHOSEN].notna().any()),
        **side_balance(main),
        "position_biased": sorted(
            diagnostics.loc[diagnostics["side_a_p_holm"] < settings.alpha, ANNOTATOR].astype(str).tolist()
        )
        if "side_a_p_holm" in diagnostics.columns
        else [],
        "overall": overall,
        "overall_reason": reason,
    }
    parameters = report_parameters(settings, quality_items, margins)
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
        controls=control_table(controls, sensitivity_table),
        design=design,
        pair_table=pair_table,
        cleaning=cleaning,
        allocation=allocation,
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
        owners=owners,
    )


def report_verdicts(
    validation: ValidationResult,
    agreement: pd.DataFrame,
    controls: pd.DataFrame,
    *,
    n_pairs: int,
    n_replicated: int,
    settings: ReportSettings,
) -> tuple[list[Verdict], pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The verdicts of a report (the owners' aside) from its estimates: the validation statistics,
    the agreement table, the control pairs' rows and the pair counts (one home for the report built
    from a label frame and the one read item by item). Returns ``(verdicts, design, sensitivity
    table, allocation)``."""
    quality_items = list(settings.quality_items)
    margins = settings.item_margins(quality_items)
    design = design_table(validation, margin=margins, alpha=settings.alpha, power=settings.target_power)
    sensitivity_table = positive_control_table(
        controls, quality_items, settings.alpha, settings.margin, margins=margins
    )
    sensitivity = sensitivity_verdict(
        sensitivity_table,
        controls,
        settings.min_control_pairs,
        settings.require_positive_controls,
        settings.alpha,
        settings.margin,
    )
    verdicts = [
        sample_size_verdict(n_pairs, n_replicated, settings.min_pairs),
        equivalence_verdict(validation, design, quality_items, settings.alpha, settings.target_power),
        rubric_verdict(validation, settings.alpha),
        preference_verdict(validation, settings.alpha),
        reliability_verdict(
            agreement, quality_items, settings.reliability_threshold, settings.alpha, sensitivity
        ),
        sensitivity,
    ]
    allocation = pd.DataFrame()
    registered = settings.allocation
    if registered is not None and (registered.kind != "fixed" or registered.looks > 1):
        allocation = allocation_table(
            validation,
            quality_items,
            registered,
            margin=margins,
            max_share=settings.max_broken_share,
            alpha=settings.alpha,
        )
        verdicts[1] = registered_equivalence(verdicts[1], validation, allocation)
    return verdicts, design, sensitivity_table, allocation


def control_table(controls: pd.DataFrame, sensitivity_table: pd.DataFrame) -> pd.DataFrame:
    """The control pairs per kind, beside the positive controls' test (when there is one)."""
    counts = (
        controls.drop_duplicates([PAIR_ID])[CONTROL]
        .value_counts()
        .rename_axis("control")
        .reset_index(name="n_pairs")
        if not controls.empty
        else pd.DataFrame({"control": [], "n_pairs": []})
    )
    return pd.concat([counts, sensitivity_table], axis=1) if not sensitivity_table.empty else counts


def report_parameters(
    settings: ReportSettings, quality_items: Sequence[str], margins: Mapping[str, float]
) -> dict[str, Any]:
    """The settings a report shows under "Parameters"."""
    return {
        "margin": settings.margin,
        **({"margins": margins} if any(m != settings.margin for m in margins.values()) else {}),
        "alpha": settings.alpha,
        "ci_level_tost": 1 - 2 * settings.alpha,
        "quality_items": list(quality_items),
        **scale_parameters(list(quality_items), settings.scale, settings.scales),
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
        "collected_here": settings.collected_here,
        "allocation": settings.allocation.to_dict() if settings.allocation is not None else None,
    }
