"""The validation report of a study in the database (used by `annotator analyze` and the dashboard)."""

from collections.abc import Sequence

import pandas as pd
from sqlmodel import Session

from analysis.report import Report, build_report
from annotator.accounts import Account
from annotator.errors import UserError
from annotator.readers import label_frame
from annotator.study import study_config


def study_report(
    session: Session,
    *,
    study: str,
    n_boot: int = 1000,
    seed: int = 0,
    categories: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    mixed: bool = True,
    account: Account | None = None,
) -> Report:
    """Build the report from the study's current judgments with its own margin, alpha and dimensions.

    With an `account` (the app), only a researcher may read the labels.
    """
    config = study_config(session, study)
    frame = label_frame(session, study=study, account=account)
    return report_from_frame(
        frame,
        study=study,
        quality_items=config.dimension_names,
        margin=config.analysis.margin,
        alpha=config.analysis.alpha,
        n_boot=n_boot,
        seed=seed,
        categories=categories,
        annotators=annotators,
        mixed=mixed,
    )


def report_from_frame(
    frame: pd.DataFrame,
    *,
    study: str,
    quality_items: Sequence[str],
    margin: float,
    alpha: float,
    n_boot: int = 1000,
    seed: int = 0,
    categories: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    mixed: bool = True,
) -> Report:
    """Filter a label frame (by category and annotator) and build the report, or explain why not."""
    if categories:
        frame = frame[frame["category"].isin(list(categories))]
    if annotators:
        frame = frame[frame["annotator"].isin(list(annotators))]
    if frame.empty:
        raise UserError(
            f"study {study!r} has no judgments to analyse yet"
            + (" with these filters" if categories or annotators else "")
        )
    if frame["pair_id"].nunique() < 2:
        raise UserError(f"study {study!r} needs judgments on at least 2 pairs for the statistics")
    try:
        return build_report(
            frame,
            study=study,
            quality_items=quality_items,
            margin=margin,
            alpha=alpha,
            n_boot=n_boot,
            seed=seed,
            mixed=mixed,
        )
    except ValueError as exc:
        raise UserError(f"cannot analyse study {study!r}: {exc}") from None
