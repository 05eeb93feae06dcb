"""Per-annotator quality control of a study: gold accuracy, self-consistency, attention, competence,
and the pre-registered exclusion rule (the service; the statistics are in analysis/competence.py).

The exclusion rule lives in the study's `[exclusion]` config, which is fixed at the study's first
import (ingest refuses another config later), so the rule's registration time is the study's
`created_at`; the report shows it next to the first judgment's time, and says so plainly if the rule
was not registered before data collection.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from sqlalchemy import func
from sqlmodel import Session, col, select

from analysis.competence import QC_TERMINAL_COLUMNS, QualitySection, apply_exclusion, qc_table
from analysis.diagnostics import position_bias
from analysis.report import Report
from analysis.settings import DRIFT_BLOCK
from analysis.vocabulary import POSITIVE
from annotator.errors import UserError
from annotator.intake.controls import MIXED_KINDS, swap_sources
from annotator.people.authorization import Account, require_role
from annotator.review.readers import label_frame
from annotator.store.models import Assignment, Judgment, Pair, Study, id_of
from annotator.study import StudyConfig, get_study, parse_config

__all__ = ["QualityResult", "annotator_quality", "control_expectations", "quality_from_frame"]


@dataclass(frozen=True)
class QualityResult:
    """The per-annotator QC table (analysis.competence.QC_COLUMNS + excluded, reasons) and the rule."""

    study: str
    table: pd.DataFrame = field(repr=False)
    rule: str
    criteria: dict[str, Any]
    registered_at: datetime | None
    first_judgment_at: datetime | None

    @property
    def excluded(self) -> list[str]:
        if self.table.empty:
            return []
        return sorted(self.table.loc[self.table["excluded"], "annotator"].tolist())

    @property
    def registered_before_data(self) -> bool:
        if self.registered_at is None:
            return False
        if self.first_judgment_at is None:
            return True
        return _utc(self.registered_at) <= _utc(self.first_judgment_at)

    def summary(self) -> dict[str, Any]:
        """The exclusion summary, as the report shows it."""
        return {
            "rule": self.rule or "(no rule written)",
            "criteria": self.criteria,
            "registered_at": self.registered_at.isoformat() if self.registered_at else None,
            "first_judgment_at": self.first_judgment_at.isoformat() if self.first_judgment_at else None,
            "registered_before_data": self.registered_before_data,
            "annotators": int(len(self.table)),
            "excluded": self.excluded,
        }

    def to_text(self) -> str:
        """A plain-text rendering for the terminal."""
        lines = [f"Quality control of study {self.study!r}: {len(self.table)} annotators"]
        if not self.table.empty:
            shown = self.table[list(QC_TERMINAL_COLUMNS)]
            lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        when = self.registered_at.isoformat(timespec="seconds") if self.registered_at else "never"
        timing = "before the first judgment" if self.registered_before_data else "AFTER data collection began"
        lines.append(f"Exclusion rule (registered {when}, {timing}): {self.rule or '(no rule written)'}")
        active = {k: v for k, v in self.criteria.items() if v not in (None, False)}
        lines.append(f"Criteria: {active or 'none: nobody is excluded'}")
        lines.append(f"Excluded: {', '.join(self.excluded) or 'nobody'}")
        return "\n".join(lines)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def control_expectations(session: Session, *, study_id: int) -> dict[str, dict[str, Any]]:
    """What is known about each gold, positive and duplicate control pair, by external id."""
    rows = session.exec(
        select(Pair.external_id, Pair.control, Pair.meta).where(
            Pair.study_id == study_id, col(Pair.control).in_(MIXED_KINDS)
        )
    ).all()
    expected: dict[str, dict[str, Any]] = {}
    for external_id, control, meta in rows:
        known = dict(meta.get("expected") or {}) if isinstance(meta.get("expected"), dict) else {}
        if control == POSITIVE:
            names = meta.get("worse_on")
            known["worse_on"] = [str(d) for d in names] if isinstance(names, list) else []
        expected[str(external_id)] = known
    return expected


def quality_from_frame(
    frame: pd.DataFrame,
    config: StudyConfig,
    *,
    study: str,
    expected: dict[str, dict[str, Any]] | None = None,
    sources: dict[str, str] | None = None,
    registered_at: datetime | None = None,
    first_judgment_at: datetime | None = None,
    seed: int = 0,
) -> QualityResult:
    """The QC result of a label frame under a study config (no database)."""
    att, rule = config.attention, config.exclusion
    quality = config.quality
    expected = {key: dict(known) for key, known in (expected or {}).items()}
    for known in expected.values():  # a positive control without names is worse on every dimension
        if "worse_on" in known and not known["worse_on"]:
            known["worse_on"] = list(config.dimension_names)
    if frame.empty:
        table = pd.DataFrame(columns=["annotator", "excluded", "reasons"])
    else:
        table = qc_table(
            frame,
            expected=expected,
            sources=sources or {},
            tolerance=config.controls.gold_tolerance,
            quality_ranges={name: scale.span for name, scale in quality.scales.items()},
            min_seconds=att.min_seconds,
            max_fast_share=att.max_fast_share,
            max_same_share=att.max_same_share,
            min_judgments=att.min_judgments,
            seed=seed,
        )
        table = apply_exclusion(
            table,
            min_gold_accuracy=rule.min_gold_accuracy,
            min_self_consistency=rule.min_self_consistency,
            min_competence=rule.min_competence,
            exclude_too_fast=rule.exclude_too_fast,
            exclude_straight_lining=rule.exclude_straight_lining,
            min_checks=rule.min_checks,
            max_side_share=rule.max_side_share,
            position=position_bias(frame)
            if rule.max_side_share is not None and "side_chosen" in frame.columns
            else None,
        )
    criteria = rule.model_dump(exclude={"rule"})
    return QualityResult(study, table, rule.rule, criteria, registered_at, first_judgment_at)


def annotator_quality(session: Session, *, study: str, account: Account, seed: int = 0) -> QualityResult:
    """Per-annotator QC of a study from its current judgments; researchers only."""
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    config = parse_config(study_row.config, source=f"study {study!r}")
    frame = label_frame(session, study=study, account=account)
    return _study_quality(session, study_row, config, frame, study=study, seed=seed)


def _study_quality(
    session: Session, study_row: Study, config: StudyConfig, frame: pd.DataFrame, *, study: str, seed: int
) -> QualityResult:
    """The QC result of a study's label frame, with the study's control expectations, swap sources,
    registration time and first judgment's time read from the database."""
    study_id = id_of(study_row)
    first = session.exec(
        select(func.min(Judgment.submitted_at))
        .join(Assignment, col(Assignment.id) == col(Judgment.assignment_id))
        .where(Assignment.study_id == study_id)
    ).one()
    return quality_from_frame(
        frame,
        config,
        study=study,
        expected=control_expectations(session, study_id=study_id),
        sources=swap_sources(session, study_id=study_id),
        registered_at=study_row.created_at,
        first_judgment_at=first,
        seed=seed,
    )


def agreement_drift(
    session: Session, *, study: str, account: Account, by: str = "week", block_size: int = DRIFT_BLOCK
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Agreement over time on the main pairs and the guideline-version markers; researchers only."""
    from analysis.drift import agreement_over_time, version_markers

    if by not in ("week", "block"):
        raise UserError(f"agreement over time is per week or block, got {by!r}")
    require_role(session, account, "researcher")
    config = parse_config(get_study(session, study).config, source=f"study {study!r}")
    frame = label_frame(session, study=study, account=account)
    table = agreement_over_time(
        frame,
        by="week" if by == "week" else "block",
        block_size=block_size,
        quality_items=tuple(config.dimension_names),
    )
    return table, version_markers(frame)


def attach_quality(
    session: Session,
    *,
    study: str,
    report: Report,
    frame: pd.DataFrame,
    account: Account,
    build: Callable[[pd.DataFrame], Report],
    seed: int = 0,
) -> Report:
    """The report with its annotator quality-control section, when the study has controls or an
    exclusion rule (otherwise unchanged).

    `build` makes a report from a label frame with the same settings as `report`; it is run again on
    the frame without the excluded annotators, so the verdicts are shown with and without them.
    """
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    config = parse_config(study_row.config, source=f"study {study!r}")
    rule = config.exclusion
    has_controls = "control" in frame.columns and bool((frame["control"].fillna("") != "").any())
    has_rule = bool(rule.rule.strip()) or any(
        v not in (None, False) for v in rule.model_dump(exclude={"rule", "min_checks"}).values()
    )
    if frame.empty or not (has_controls or has_rule):
        return report
    result = _study_quality(session, study_row, config, frame, study=study, seed=seed)
    without: Report | None = report
    if result.excluded:
        try:
            without = build(frame[~frame["annotator"].isin(result.excluded)])
        except UserError:
            without = None  # too little is left to analyse
    rows: list[tuple[str, str, str]] = []
    for verdict in report.verdicts:
        other = without.verdict(verdict.key).status if without is not None else "not computed"
        rows.append((verdict.key, verdict.status, other))
    rows.append(("overall", report.overall, without.overall if without is not None else "not computed"))
    verdicts = pd.DataFrame(rows, columns=["key", "status_all", "status_without_excluded"])
    section = QualitySection(table=result.table, exclusion=result.summary(), verdicts=verdicts)
    return dataclasses.replace(report, quality=section)
