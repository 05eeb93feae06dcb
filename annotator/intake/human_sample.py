"""The human sample of a judged study: which pairs people rate when an LLM judge rates them all.

The tool draws the sample once, before any assignment: each main pair the judge rated enters it
independently with a probability recorded on the pair at the draw (uniform ``n / N``, or, active, by
the judge's uncertainty: :func:`analysis.active_ppi.inclusion_probabilities`). Only the drawn pairs are
then assigned (here and by every later ``assign``), and the report's prediction-powered verdict weights
each rated pair by the inverse of its recorded probability. The draw is one serialized step per study.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import update
from sqlmodel import Session, col, func, select

from analysis.active_ppi import MIN_SHARE, inclusion_probabilities, judge_uncertainty
from annotator.errors import UserError
from annotator.intake.assign import AssignSummary, assign
from annotator.people.authorization import Account, record_event, require_role
from annotator.store.db import lock_study
from annotator.store.models import Assignment, JudgeRating, Pair, id_of
from annotator.study import get_study

__all__ = ["MIN_SHARE", "SampleSummary", "draw_human_sample", "preview_draw", "sample_choices"]


@dataclass(frozen=True)
class SampleSummary:
    """What a draw did: the judged pairs, the expected and the drawn sample size, the probabilities'
    range and the assignment it made."""

    study: str
    judge: str
    active: bool
    judged: int
    expected: float
    drawn: int
    lowest: float
    highest: float
    assigned: AssignSummary

    def __str__(self) -> str:
        how = "active (by the judge's uncertainty)" if self.active else "uniform"
        return (
            f"study {self.study!r}: human sample drawn {how} from the {self.judged} pairs judge "
            f"{self.judge!r} rated: {self.drawn} pairs (expected {self.expected:g}; inclusion probability "
            + (
                f"{self.lowest:.3f} for every pair"
                if f"{self.lowest:.3f}" == f"{self.highest:.3f}"
                else f"{self.lowest:.3f} to {self.highest:.3f}, recorded per pair"
            )
            + f"); {self.assigned}"
        )


def draw_human_sample(
    session: Session,
    *,
    study: str,
    judge: str,
    size: int,
    active: bool = False,
    overlap: int | None = None,
    annotators: list[str] | None = None,
    seed: int = 0,
    account: Account,
) -> SampleSummary:
    """Draw the human sample of `study` from the pairs `judge` rated, record each pair's inclusion
    probability, and assign the drawn pairs (:func:`annotator.intake.assign.assign`).

    ``size`` is the expected number of drawn pairs (each pair is drawn independently); ``active``
    draws by the judge's uncertainty (1 - its confidence), no pair below :data:`MIN_SHARE` of the
    uniform probability (lower floors broke the error rate in the benchmark). Refused when the study
    already has a drawn sample or any assignment (the sample must be the tool's own draw).
    Deterministic per seed.
    """
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    lock_study(session, study_id)  # two draws at once: the second sees the first's and is refused
    drawn_before = session.exec(
        select(func.count())
        .select_from(Pair)
        .where(Pair.study_id == study_id, col(Pair.in_sample).is_not(None))
    ).one()
    if drawn_before:
        raise UserError(f"study {study!r} already has a drawn human sample; it is drawn once")
    if session.exec(
        select(func.count()).select_from(Assignment).where(Assignment.study_id == study_id)
    ).one():
        raise UserError(
            f"study {study!r} already has assignments: the human sample is drawn before any pair is assigned"
        )
    rows = session.exec(
        select(col(Pair.id), col(JudgeRating.order_shown), col(JudgeRating.confidence))
        .join(JudgeRating, col(JudgeRating.pair_id) == col(Pair.id))
        .where(Pair.study_id == study_id, Pair.control == "", JudgeRating.judge == judge)
    ).all()
    if not rows:
        raise UserError(f"study {study!r} has no ratings of judge {judge!r} on its main pairs")
    ratings = pd.DataFrame([tuple(r) for r in rows], columns=["pair_id", "order", "confidence"])
    ratings["confidence"] = ratings["confidence"].astype(float)
    pair_ids = np.sort(ratings["pair_id"].unique())
    if not 2 <= size <= len(pair_ids):
        raise UserError(
            f"the sample size must be between 2 and the {len(pair_ids)} pairs the judge rated, got {size}"
        )
    if active:
        try:
            uncertainty = judge_uncertainty(ratings).reindex(pair_ids).to_numpy(float)
        except ValueError as exc:
            raise UserError(f"judge {judge!r}: {exc}; draw a uniform sample instead") from None
        probability = inclusion_probabilities(uncertainty, size, min_share=MIN_SHARE)
    else:
        probability = np.full(len(pair_ids), size / len(pair_ids))
    taken = np.random.default_rng(seed).random(len(pair_ids)) < probability
    session.execute(
        update(Pair).where(col(Pair.study_id) == study_id, col(Pair.control) == "").values(in_sample=False)
    )
    session.execute(
        update(Pair),
        [
            {"id": int(pair), "sample_probability": float(p), "in_sample": bool(t)}
            for pair, p, t in zip(pair_ids, probability, taken, strict=True)
        ],
    )
    record_event(
        session,
        account,
        "draw_human_sample",
        {"study": study, "judge": judge, "size": size, "active": active, "min_share": MIN_SHARE,
         "seed": seed, "drawn": int(taken.sum()), "judged": len(pair_ids)},
    )  # fmt: skip
    session.flush()
    assigned = assign(
        session, study=study, overlap=overlap, annotators=annotators, seed=seed, account=account
    )
    return SampleSummary(
        study, judge, active, len(pair_ids), float(size), int(taken.sum()), float(probability.min()),
        float(probability.max()), assigned,
    )  # fmt: skip


def sample_choices(session: Session, *, study: str) -> tuple[dict[str, int], bool]:
    """What the picker offers: the judges that rated main pairs of `study`, by name, with the number
    of main pairs each rated, and whether the study's human sample is drawn already."""
    study_id = id_of(get_study(session, study))
    judges = session.exec(
        select(JudgeRating.judge, func.count(func.distinct(JudgeRating.pair_id)))
        .join(Pair, col(Pair.id) == col(JudgeRating.pair_id))
        .where(JudgeRating.study_id == study_id, Pair.control == "")
        .group_by(col(JudgeRating.judge))
        .order_by(col(JudgeRating.judge))
    ).all()
    drawn = session.exec(
        select(func.count())
        .select_from(Pair)
        .where(Pair.study_id == study_id, col(Pair.in_sample).is_not(None))
    ).one()
    return {str(judge): int(pairs) for judge, pairs in judges}, bool(drawn)


def preview_draw(session: Session, **draw: Any) -> SampleSummary:
    """What :func:`draw_human_sample` with these arguments would do, without doing it: the very same
    draw runs and is rolled back (`session` must hold no other pending work)."""
    try:
        return draw_human_sample(session, **draw)
    finally:
        session.rollback()
