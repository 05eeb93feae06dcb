"""The main pairs a newcomer's queue gets under the study's registered adaptive design.

Reads what the rule needs (per main pair: assignments given out, those still pending, and every current
judgment's chosen - rejected gap per quality dimension in first-submission order) and asks
:func:`analysis.design_queue.plan_pairs`. The caller holds the study's turn
(:func:`annotator.store.db.study_turn`), so the counts read here are those the previous newcomer wrote.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from annotator.store.models import PENDING, Assignment, Judgment, Pair, Score
from annotator.study import StudyConfig

if TYPE_CHECKING:  # the statistics stack loads when a design plans a queue, never at a plain login
    import pandas as pd

__all__ = ["design_pairs"]


def design_pairs(session: Session, study_id: int, config: StudyConfig, items: int) -> list[int]:
    """Up to `items` main pair ids (Pair.id) for a newcomer under the registered two-stage or
    sequential design, most urgent first (empty when the design gives out nothing now)."""
    from analysis.design_queue import plan_pairs

    counts = session.exec(
        select(
            col(Pair.id),
            func.count(col(Assignment.id)),
            func.count(case((col(Assignment.status) == PENDING, 1))),
        )
        .join(Assignment, col(Assignment.pair_id) == col(Pair.id), isouter=True)
        .where(Pair.study_id == study_id, Pair.control == "")
        .group_by(col(Pair.id))
        .order_by(col(Pair.id))
    ).all()
    if not counts:
        return []
    ids = [int(pair_id or 0) for pair_id, _, _ in counts]
    position = {pair_id: k for k, pair_id in enumerate(ids)}
    dimensions = config.dimension_names
    first = (
        select(col(Judgment.assignment_id), func.min(col(Judgment.id)).label("first"))
        .group_by(col(Judgment.assignment_id))
        .subquery()
    )
    query = (
        sa_select(
            col(Assignment.pair_id), first.c.first, col(Score.item), col(Score.response), col(Score.value)
        )
        .join(first, first.c.assignment_id == col(Assignment.id))
        .join(Score, col(Score.judgment_id) == col(Assignment.current_judgment_id))
        .join(Pair, col(Pair.id) == col(Assignment.pair_id))
        .where(
            col(Assignment.study_id) == study_id,
            col(Pair.control) == "",
            col(Score.item).in_(dimensions),
        )
    )
    rows = [tuple(row) for row in session.execute(query).all()]
    judgments = _gaps(rows, position, dimensions)
    picked = plan_pairs(
        judgments,
        [int(n) for _, n, _ in counts],
        [int(n) for _, _, n in counts],
        config.design,
        dimensions=dimensions,
        margin=config.analysis.margin,
        max_share=config.validation.max_broken_share,
        limit=items,
    )
    return [ids[k] for k in picked]


def _gaps(rows: Sequence[tuple[Any, ...]], position: dict[int, int], dimensions: list[str]) -> "pd.DataFrame":
    """One row per judgment: pair (position), order (first submission) and the gap per dimension."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["pair_id", "order", "item", "response", "value"])
    if frame.empty:
        return pd.DataFrame({"pair": pd.Series(dtype="int64"), "order": pd.Series(dtype="int64")}).assign(
            **{d: pd.Series(dtype=float) for d in dimensions}
        )
    frame["value"] = frame["value"].astype(float) * frame["response"].map({"chosen": 1.0, "rejected": -1.0})
    wide = frame.pivot_table(index=["pair_id", "order"], columns="item", values="value", aggfunc="sum")
    wide = wide.reindex(columns=dimensions).fillna(0.0).reset_index()
    wide["pair"] = wide["pair_id"].map(position).astype("int64")
    return wide[["pair", "order", *dimensions]]
