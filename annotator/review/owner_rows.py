"""The owners' rows of a study's label frame (``rater_kind = "owner"``), read for the report only."""

from __future__ import annotations

import pandas as pd
from sqlmodel import Session, select

from analysis.frames import REQUIRED_COLUMNS
from analysis.vocabulary import OWNER, RATER_KIND, support_item
from annotator.people.authorization import Account, require_role
from annotator.store.models import OwnerJudgment, Pair, id_of
from annotator.study import get_study

__all__ = ["owner_rows"]


def owner_rows(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """One row per owner judgment and rubric aspect (item ``support:<k>`` on ``chosen``; item
    ``preference`` when the owner answered no aspect), plus one per quality rating the owner gave (item
    the dimension, on ``chosen`` or ``rejected``), with ``rater_kind = "owner"``; empty without owner
    judgments. Only a researcher (or SYSTEM) may read it."""
    require_role(session, account, "researcher")
    study_id = id_of(get_study(session, study))
    rows = session.exec(
        select(OwnerJudgment, Pair.external_id, Pair.category)
        .join(Pair, Pair.id == OwnerJudgment.pair_id)  # type: ignore[arg-type]
        .where(OwnerJudgment.study_id == study_id)
    ).all()
    records = []
    for judgment, external_id, category in rows:
        answers = [("chosen", support_item(k), float(v)) for k, v in enumerate(judgment.aspects)]
        answers = answers or [("chosen", "preference", float(judgment.preference))]
        answers += [
            (response, name, float(point))
            for response, rated in sorted((judgment.scores or {}).items())
            for name, point in rated.items()
        ]
        for response, item, value in answers:
            records.append(
                {
                    "pair_id": external_id,
                    "annotator": judgment.owner,
                    "response": response,
                    "item": item,
                    "value": value,
                    "preference": judgment.preference,
                    "confidence": judgment.confidence,
                    "time_s": float("nan"),
                    "category": category,
                    "side_chosen": judgment.side_chosen or None,
                    RATER_KIND: OWNER,
                }
            )
    return pd.DataFrame(records, columns=[*REQUIRED_COLUMNS, "category", "side_chosen", RATER_KIND])
