"""The validation report of a label file or dataset too large for one long frame, read item by item.

:func:`build_columns_report` computes what every verdict rests on without the long frame: per
quality item (read alone, :class:`analysis.label_columns.LabelColumns`) the per-judgment differences
and the agreement row; the per-response rubric score summed aspect by aspect; one row per judgment
(the preference). From these the report's own functions give the same numbers as
:func:`analysis.report.build_report`: :func:`analysis.validation.validate_differences` (equivalence in
the crossed model, the broken-share bound, rubric, preference), :func:`analysis.agreement.agreement_table`
(reliability) and :func:`analysis.report.report_verdicts` (every verdict and its sentence). The
sections that need the whole frame (:data:`NOT_COMPUTED`) are named in the report as not computed at
this size, with the reason, and the overall result says which verdicts it rests on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.aggregates import judgment_differences, replicated_pairs
from analysis.agreement import agreement_table
from analysis.agreement.table import MIN_REPLICATED_UNITS
from analysis.frames import check_items, check_rated, split_controls, unknown_item
from analysis.label_columns import Judgments, LabelColumns, aspects, release_memory
from analysis.report import (
    Report,
    ReportSettings,
    control_table,
    report_parameters,
    report_verdicts,
)
from analysis.validation import validate_differences
from analysis.verdicts import overall_result
from analysis.vocabulary import ANNOTATOR, CHOSEN, ITEM, PAIR_ID, PREFERENCE, RESPONSE, RUBRIC_ITEM, VALUE

__all__ = ["NOT_COMPUTED", "build_columns_report", "not_computed_reason"]

#: The sections that need the whole long frame (a pair's or an annotator's rows over every item).
NOT_COMPUTED = {
    "cleaning": "the cleaning list (pairs to drop, pairs that need more judgments)",
    "pair_table": "the per-pair table",
    "diagnostics": "the per-annotator diagnostics (agreement with the others, speed, straight-lining)",
    "bias": "position and length bias",
    "categories": "the effects by category",
    "benchmark": "models, arms and rubric support",
}
OWNERS = "the profiles' owners and the owner-endorsement verdict"


def not_computed_reason(n_rows: int, limit: int) -> str:
    """Why a section is missing from a report read item by item."""
    return (
        f"not computed at this size: the labels hold {n_rows:,} score rows (over {limit:,}), so the report "
        "was read one item at a time and this section needs every item of a pair at once"
    )


def build_columns_report(
    source: LabelColumns, *, study: str, settings: ReportSettings | None = None, limit: int
) -> Report:
    """The validation report of `source`, read one item at a time (see the module docstring).

    `limit` is the row count above which a report is read this way (shown in the reason).
    Raises ValueError as :func:`analysis.report.build_report` does (a bad value names its column and
    row within the item's rows)."""
    settings = settings or ReportSettings()
    quality_items = list(settings.quality_items)
    margins = settings.item_margins(quality_items)

    differences, agreement, per_judgment, n_scores = _read_items(source, settings)
    n_pairs = int(per_judgment[PAIR_ID].nunique())
    if n_pairs < 2:
        raise ValueError(f"the statistics need judgments on at least 2 pairs, got {n_pairs}")
    validation = validate_differences(
        differences,
        per_judgment,
        quality_items=quality_items,
        margin=margins,
        alpha=settings.alpha,
        max_broken_share=settings.max_broken_share,
        gap_ranges={item: settings.scale_of(item).span for item in quality_items},
    )
    controls = split_controls(source.controls())[1]
    n_replicated = replicated_pairs(per_judgment)
    verdicts, design, sensitivity_table, allocation = report_verdicts(
        validation, agreement, controls, n_pairs=n_pairs, n_replicated=n_replicated, settings=settings
    )
    overall, reason = overall_result(verdicts)
    reason_missing = not_computed_reason(source.count_rows(), limit)
    missing = dict.fromkeys(NOT_COMPUTED, reason_missing)
    if source.has_owners():
        missing["owners"] = reason_missing
    reason = (
        f"{reason}; read one item at a time, it rests on the verdicts "
        f"{', '.join(v.key for v in verdicts)}"
        + ("; the owner-endorsement verdict was not computed at this size" if "owners" in missing else "")
    )
    summary: dict[str, Any] = {
        "n_pairs": n_pairs,
        "n_annotators": int(per_judgment[ANNOTATOR].nunique()),
        "n_judgments": len(per_judgment),
        "n_scores": n_scores,
        "n_control_pairs": int(controls[PAIR_ID].nunique()) if not controls.empty else 0,
        "n_failed_pairs": None,
        "n_drop": None,
        "n_drop_any": None,
        "n_needs_more": None,
        "side_data": False,
        "position_biased": [],
        "overall": overall,
        "overall_reason": reason,
    }
    empty = pd.DataFrame()
    return Report(
        study=study,
        parameters=report_parameters(settings, quality_items, margins),
        summary=summary,
        validation=validation,
        agreement=agreement,
        diagnostics=empty,
        failed_pairs=empty,
        verdicts=verdicts,
        overall=overall,
        overall_reason=reason,
        bias=empty,
        categories=empty,
        controls=control_table(controls, sensitivity_table),
        design=design,
        pair_table=empty,
        allocation=allocation,
        not_computed=missing,
    )


def _read_items(
    source: LabelColumns, settings: ReportSettings
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, pd.DataFrame, int]:
    """Every item's rows in turn (one in memory at a time): per quality item and the rubric the
    per-judgment differences and the agreement rows; one row per judgment; the score rows read.
    Returns ``(differences, agreement, judgments, n_scores)``."""
    quality_items = list(settings.quality_items)

    def agree(rows: pd.DataFrame, items: list[str]) -> pd.DataFrame:
        """The agreement rows of `rows` (as build_report computes them over the whole frame)."""
        return agreement_table(
            rows,
            quality_items=items,
            n_boot=int(settings.n_boot),
            seed=settings.seed,
            confidence=1 - 2 * settings.alpha,
            scales={item: settings.scale_of(item) for item in items},
            bootstrap=settings.bootstrap,
            min_units=MIN_REPLICATED_UNITS,
        )

    items = source.items()
    ends = settings.scale_ends()
    _check_items_fit(source, items, quality_items, ends)
    judged = Judgments()
    differences: dict[str, pd.DataFrame] = {}
    agreement: list[pd.DataFrame] = []
    n_scores = 0
    rubric = pd.DataFrame()
    rubric_aspects = [] if RUBRIC_ITEM in items else aspects(items)
    for item in [*quality_items, *(i for i in items if i not in quality_items)]:
        frame = _checked(source.item_frame(item), item, ends)  # one item's rows in memory at a time
        n_scores += len(frame)
        judged.add(frame)
        if item in quality_items:
            differences[item] = shared_pairs(judgment_differences(frame, item), judged)
            agreement.append(agree(frame.drop(columns=[PREFERENCE]), [item]))
        elif item in rubric_aspects:
            judged.add_aspect(frame)
        elif item == RUBRIC_ITEM:
            rubric = frame
        del frame
        release_memory()
    if rubric_aspects:
        rubric = judged.rubric_rows()
    per_judgment = judged.table()
    if not rubric.empty:
        differences[RUBRIC_ITEM] = shared_pairs(judgment_differences(rubric, RUBRIC_ITEM), judged)
        if settings.extras:
            agreement.append(agree(rubric, []))
    if settings.extras:
        agreement.append(agree(_preference_rows(per_judgment), []))
    return differences, pd.concat(agreement, ignore_index=True), per_judgment, n_scores


def _check_items_fit(
    source: LabelColumns, items: list[str], quality_items: list[str], ends: dict[str, tuple[int, int]]
) -> None:
    """Before the long read of the study's own items: the labels hold scores, of no item the study
    does not have (its first row named), and of every quality item the study rates."""
    unknown = unknown_item(items, quality_items)
    if unknown is not None:
        _checked(source.item_frame(unknown), unknown, ends)
    if not items:
        raise ValueError("no judgments to analyse yet")
    check_rated(items, quality_items)


def _checked(frame: pd.DataFrame, item: str, ends: dict[str, tuple[int, int]]) -> pd.DataFrame:
    """`frame` (the rows of `item`) once :func:`analysis.frames.check_items` finds nothing wrong."""
    try:
        check_items(frame, ends)
    except ValueError as exc:
        raise type(exc)(f"item '{item}' (rows counted within that item's rows): {exc}") from None
    return frame


def shared_pairs(differences: pd.DataFrame, judged: Judgments) -> pd.DataFrame:
    """`differences` with its pair ids coded over the judgments' sorted pairs (one categories index
    for every item instead of one per item; the values and their order are unchanged)."""
    pairs = judged.pairs.sorted()
    return differences.assign(**{PAIR_ID: differences[PAIR_ID].cat.set_categories(pairs)})


def _preference_rows(per_judgment: pd.DataFrame) -> pd.DataFrame:
    """The judgments as the rows :func:`analysis.agreement.agreement_table` reads the preference from
    (no rated value: only its preference row)."""
    return per_judgment[[PAIR_ID, ANNOTATOR, PREFERENCE]].assign(
        **{RESPONSE: CHOSEN, ITEM: "", VALUE: np.nan}
    )
