"""What adjudication reads: the evaluation of a study's pairs, the recorded decisions and their state.

The one home of these reads: the decisions (:mod:`annotator.review.adjudicate`), the queue and one
pair (:mod:`annotator.review.adjudication_queue`) and the final labels
(:mod:`annotator.review.final_labels`) all start from them.
"""

import numpy as np
import pandas as pd
from sqlalchemy import Select, select
from sqlmodel import Session, col

from analysis.adjudication import evaluate
from annotator.errors import UserError
from annotator.people.authorization import SYSTEM
from annotator.review import readers
from annotator.store.models import Adjudication, Method, Pair, Study, User, id_of
from annotator.study import StudyConfig, parse_config

__all__ = [
    "ADJUDICATION_COLUMNS",
    "HUMAN_METHOD",
    "adjudications",
    "cleaning_evidence",
    "config_of",
    "current_evaluation",
    "decision_state",
    "is_human",
    "judgment_ids",
    "pair_and_study",
]

HUMAN_METHOD: Method = "adjudicated"
_MEDIAN_PREFIXES = ("chosen_", "rejected_")  # the evaluation's per-item median columns
#: The judgment columns the rules read (:func:`analysis.adjudication.evaluate` without medians).
EVALUATED = ("judgment_id", "pair_db_id", "preference", "flag", "submitted_at", "control")


def config_of(study: Study) -> StudyConfig:
    """The study's parsed config."""
    return parse_config(study.config, source=f"study {study.name!r}")


def pair_and_study(session: Session, pair_id: int) -> tuple[Pair, Study]:
    """The pair with Pair.id `pair_id` and its study (UserError when there is none)."""
    pair = session.get(Pair, pair_id)
    study = session.get(Study, pair.study_id) if pair is not None else None
    if pair is None or study is None:
        raise UserError(f"no pair with id {pair_id}")
    return pair, study


def _pairs(session: Session, study_id: int, pair_db_id: int | None = None) -> pd.DataFrame:
    query: Select = select(
        col(Pair.id).label("pair_db_id"), col(Pair.external_id).label("pair_id"), col(Pair.category)
    ).where(col(Pair.study_id) == study_id, col(Pair.control) == "")  # controls are never adjudicated
    if pair_db_id is not None:
        query = query.where(col(Pair.id) == pair_db_id)
    rows = [tuple(row) for row in session.connection().execute(query.order_by(col(Pair.external_id)))]
    frame = pd.DataFrame(rows, columns=["pair_db_id", "pair_id", "category"]).astype({"pair_db_id": "int64"})
    return frame.astype({"pair_id": object, "category": object})


def current_evaluation(
    session: Session,
    study: Study,
    pair_db_id: int | None = None,
    evidence: pd.DataFrame | None = None,
    *,
    medians: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluation of a study's pairs (or one pair) and the current judgments it was built on;
    `evidence` is the study's :func:`cleaning_evidence` when the caller already has it (it reads the
    whole study). Without `medians` the per-item median columns are left out, the scores are read
    only when a rule needs them (the quality_gap rule, when there is no cleaning list) and the
    judgments only in the columns the rules read (:data:`EVALUATED`): every other column of the
    evaluation is the same."""
    study_id = id_of(study)
    config = config_of(study)
    judgments = readers.current_judgments(
        session, study_id=study_id, pair_db_id=pair_db_id, columns=None if medians else EVALUATED
    )
    judgments = judgments[judgments["control"] == ""].reset_index(drop=True)  # controls never count
    evidence = cleaning_evidence(session, study) if evidence is None else evidence
    scores = (
        readers.current_scores(session, study_id=study_id, pair_db_id=pair_db_id)
        if medians or evidence.empty
        else pd.DataFrame(columns=["judgment_id", "response", "item", "value"])
    )
    evaluation = evaluate(
        _pairs(session, study_id, pair_db_id),
        judgments,
        scores,
        dimensions=config.dimension_names,
        margin=config.quality_margin,
        evidence=evidence,
    )
    if not medians:
        evaluation = evaluation.drop(
            columns=[c for c in evaluation.columns if c.startswith(_MEDIAN_PREFIXES)]
        )
    return evaluation, judgments


def cleaning_evidence(session: Session, study: Study) -> pd.DataFrame:
    """The study's cleaning list (the same evidence as the report's), or empty when it cannot be
    computed (fewer than 10 pairs, or data the crossed fits cannot take)."""
    from analysis.cleaning import frame_cleaning
    from analysis.frames import split_controls

    config = config_of(study)
    frame = readers.label_frame(session, study=study.name, account=SYSTEM)
    if frame.empty:
        return pd.DataFrame()
    main, _ = split_controls(frame)
    try:
        return frame_cleaning(
            main,
            quality_items=config.dimension_names,
            margin=config.analysis.margin,
            fdr=config.validation.fdr,
            margins=config.margins,
        )
    except (ValueError, np.linalg.LinAlgError):
        return pd.DataFrame()


def judgment_ids(judgments: pd.DataFrame) -> dict[int, list[int]]:
    """The current judgment ids of every pair, sorted."""
    grouped = judgments.sort_values("judgment_id").groupby("pair_db_id")["judgment_id"].agg(list)
    return {int(pair): [int(i) for i in ids] for pair, ids in grouped.items()}


ADJUDICATION_COLUMNS = [
    "adjudication_id",
    "pair_db_id",
    "adjudicator_id",
    "adjudicator",
    "method",
    "rule",
    "preference",
    "keep",
    "decision",
    "note",
    "created_at",
]


def adjudications(session: Session, study_id: int, pair_db_id: int | None = None) -> pd.DataFrame:
    """Every adjudication of the study's pairs (oldest first), with the adjudicator's username."""
    query = (
        select(
            col(Adjudication.id),
            col(Adjudication.pair_id),
            col(Adjudication.adjudicator_id),
            col(User.username),
            col(Adjudication.method),
            col(Adjudication.rule),
            col(Adjudication.preference),
            col(Adjudication.keep),
            col(Adjudication.decision),
            col(Adjudication.note),
            col(Adjudication.created_at),
        )
        .join(Pair, col(Pair.id) == col(Adjudication.pair_id))
        .outerjoin(User, col(User.id) == col(Adjudication.adjudicator_id))
        .where(col(Pair.study_id) == study_id)
        .order_by(col(Adjudication.id))
    )
    if pair_db_id is not None:
        query = query.where(col(Adjudication.pair_id) == pair_db_id)
    frame = pd.DataFrame(session.connection().execute(query).all(), columns=ADJUDICATION_COLUMNS)
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame


def is_human(frame: pd.DataFrame) -> pd.Series:
    """Per adjudication row: whether a person decided it."""
    return frame["adjudicator_id"].notna() | (frame["method"] == HUMAN_METHOD)


def decision_state(evaluation: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """Per pair (indexed by pair_db_id): the latest adjudication, the latest human one, and whether a
    human decision was reopened by a judgment submitted after it."""
    latest = adjudications.groupby("pair_db_id").tail(1).set_index("pair_db_id")
    human = adjudications[is_human(adjudications)].groupby("pair_db_id").tail(1).set_index("pair_db_id")
    state = pd.DataFrame(index=pd.Index(evaluation["pair_db_id"].to_numpy(), name="pair_db_id"))
    state["has_human"] = state.index.isin(human.index)
    decided_at = human["created_at"].reindex(state.index)
    last = pd.Series(evaluation["last_submitted_at"].to_numpy(), index=state.index)
    last = pd.to_datetime(last, utc=True)
    state["reopened"] = (state["has_human"] & (last > decided_at)).fillna(False).astype(bool)
    state["latest_id"] = latest["adjudication_id"].reindex(state.index)
    return state
