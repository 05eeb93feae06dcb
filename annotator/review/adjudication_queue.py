"""The adjudicator's reading: the queue of pairs that need a person, and one pair unblinded.

Decisions are written by :mod:`annotator.review.adjudicate`; both read through
:mod:`annotator.review.adjudication_reads`.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlmodel import Session, col

from analysis.vocabulary import RUBRIC_PREFIX, SUPPORT_PREFIX
from annotator.people.authorization import Account, require_role
from annotator.review import readers
from annotator.review.adjudicate import score_range
from annotator.review.adjudication_reads import (
    HUMAN_METHOD,
    adjudications,
    cleaning_evidence,
    config_of,
    current_evaluation,
    decision_state,
    pair_and_study,
)
from annotator.store.models import Adjudication, Judgment, Pair, id_of
from annotator.study import get_study

__all__ = [
    "PREFERENCE_LABELS",
    "QUEUE_COLUMNS",
    "PairDetail",
    "decided_after",
    "item_labels",
    "pair_detail",
    "queue",
    "queue_version",
    "study_evidence",
]

PREFERENCE_LABELS = {
    2: "chosen much better",
    1: "chosen better",
    0: "tie",
    -1: "rejected better",
    -2: "rejected much better",
}


QUEUE_COLUMNS = [
    "pair_db_id",
    "pair_id",
    "category",
    "n_judgments",
    "agreement",
    "majority",
    "rules",
    "reasons",
    "n_flags",
    "reopened",
    "last_submitted_at",
]


def queue_version(session: Session, *, study: str, account: Account) -> tuple[Any, ...]:
    """What the queue of `study` is computed from, in a few cheap reads: the judgments (count, newest
    id), the newest decision, and the study's settings. The queue is the same while this is, so a page
    may keep it for the whole server (judgments are append-only: a new one changes the count)."""
    require_role(session, account, "adjudicator", "researcher")
    study_row = get_study(session, study)
    count, newest = session.execute(select(func.count(col(Judgment.id)), func.max(Judgment.id))).one()
    decided = session.execute(select(func.max(Adjudication.id))).scalar()
    settings = json.dumps(study_row.config, sort_keys=True, default=str)
    return int(count or 0), int(newest or 0), int(decided or 0), settings


def decided_after(session: Session, *, study: str, after: int, account: Account) -> set[int]:
    """The pairs of `study` (Pair.id) a person decided after the decision with id `after`: a queue
    computed before them no longer waits for them (reads only the newer decisions)."""
    require_role(session, account, "adjudicator", "researcher")
    study_id = id_of(get_study(session, study))
    rows = session.execute(
        select(col(Adjudication.pair_id))
        .join(Pair, col(Pair.id) == col(Adjudication.pair_id))
        .where(
            col(Adjudication.id) > after,
            col(Adjudication.method) == HUMAN_METHOD,
            col(Pair.study_id) == study_id,
        )
    )
    return {int(pair_id) for (pair_id,) in rows}


def decided_pairs(session: Session, *, study: str, account: Account) -> set[str]:
    """The pairs of `study` (their ids in the pairs file) a person has decided."""
    require_role(session, account, "adjudicator", "researcher")
    study_id = id_of(get_study(session, study))
    rows = session.execute(
        select(col(Pair.external_id))
        .join(Adjudication, col(Adjudication.pair_id) == col(Pair.id))
        .where(col(Adjudication.method) == HUMAN_METHOD, col(Pair.study_id) == study_id)
        .distinct()
    )
    return {str(pair) for (pair,) in rows}


def study_evidence(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """The study's cleaning list, the evidence the queue's rules read (the whole study: pass it to
    :func:`queue` and :func:`pair_detail` to read it once per data version)."""
    require_role(session, account, "adjudicator", "researcher")
    return cleaning_evidence(session, get_study(session, study))


def queue(
    session: Session, *, study: str, account: Account, evidence: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The pairs that need a person, lowest agreement first (then most flags, then pair id).

    A pair is in the queue when a rule fires (:data:`analysis.adjudication.RULES`, named in ``rules``
    and explained in ``reasons``) and no person has decided it yet, or a judgment was submitted after
    the latest human decision (``reopened``). ``pair_db_id`` is the Pair.id to pass to
    :func:`pair_detail` and :func:`~annotator.review.adjudicate.decide`; ``pair_id`` is the external
    id. With an `account` (the app), only an adjudicator or a researcher may see it.
    """
    require_role(session, account, "adjudicator", "researcher")
    study_row = get_study(session, study)
    evaluation, _ = current_evaluation(session, study_row, evidence=evidence, medians=False)
    state = decision_state(evaluation, adjudications(session, id_of(study_row)))
    reopened = state["reopened"].to_numpy()
    waiting = (evaluation["status"] == "needs_person").to_numpy() & (
        ~state["has_human"].to_numpy() | reopened
    )
    out = evaluation.assign(reopened=reopened)[waiting]
    out = out.sort_values(["agreement", "n_flags", "pair_id"], ascending=[True, False, True], kind="stable")
    return out[QUEUE_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class PairDetail:
    """A pair unblinded for an adjudicator: the pair, every current judgment in chosen/rejected terms,
    the scores side by side, the rules it hits and its decision history."""

    study: str
    pair: dict[str, Any]
    evaluation: dict[str, Any]
    judgments: pd.DataFrame  # one row per annotator: preference in chosen/rejected words, time_s, ...
    scores: pd.DataFrame  # item, label, annotator, chosen, rejected, diff
    history: pd.DataFrame  # every adjudication, oldest first: adjudicator, method, rule, ...
    defaults: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # item, label, chosen, rejected (medians), low, high

    @property
    def latest(self) -> dict[str, Any] | None:
        """The decision that counts (the latest adjudication), or None."""
        return None if self.history.empty else self.history.iloc[-1].to_dict()


def item_labels(items: Sequence[str], rubric: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Readable names of score items: a quality dimension as is, "rubric:<k>" as "Aspect k+1: <name>"."""
    names = {}
    for item in items:
        name = str(item)
        if name.startswith(RUBRIC_PREFIX) and name[7:].isdigit():
            k = int(name[7:])
            aspect = str(rubric[k].get("aspect", "")) if k < len(rubric) else ""
            names[name] = f"Aspect {k + 1}: {aspect}" if aspect else f"Aspect {k + 1}"
        else:
            names[name] = name
    return names


def _final_defaults(long: pd.DataFrame, labels: Mapping[str, str], order: Sequence[str]) -> pd.DataFrame:
    """Per item: the median over the current judgments of chosen and rejected (the values a decision
    starts from), in the study's order, quality dimensions first."""
    if long.empty:
        return pd.DataFrame(columns=["item", "label", "chosen", "rejected", "low", "high"])
    medians = long.pivot_table(index="item", columns="response", values="value", aggfunc="median")
    medians = medians.reindex(columns=["chosen", "rejected"])
    medians.columns.name = None
    rank = {name: k for k, name in enumerate(order)}
    out = medians.reset_index()
    out["item"] = out["item"].astype(str)
    out = out.sort_values("item", key=lambda s: s.map(lambda v: (rank.get(v, len(rank)), v)), kind="stable")
    out.insert(1, "label", out["item"].map(labels))
    return out.reset_index(drop=True)


def pair_detail(
    session: Session,
    *,
    pair_id: int,
    account: Account,
    hide_names: bool = False,
    evidence: pd.DataFrame | None = None,
) -> PairDetail:
    """Everything an adjudicator needs about one pair (`pair_id` is Pair.id, ``pair_db_id`` in the queue).

    Unblinded: chosen and rejected are named, and so are the annotators unless `hide_names` (then
    "Annotator 1", "Annotator 2", ... in every table). Score items carry a readable ``label`` (the
    rubric aspect's name); ``defaults`` holds the per-item medians a decision starts from. Only an
    adjudicator or a researcher may see it.
    """
    require_role(session, account, "adjudicator", "researcher")
    pair, study = pair_and_study(session, pair_id)
    study_id = id_of(study)
    config = config_of(study)
    evaluated, judgments = current_evaluation(session, study, pair_id, evidence)
    evaluation = evaluated.iloc[0]
    scores = readers.current_scores(session, study_id=study_id, pair_db_id=pair_id)
    view = judgments.assign(
        preference_label=judgments["preference"].map(PREFERENCE_LABELS),
        direction=np.select(
            [judgments["preference"] > 0, judgments["preference"] < 0], ["chosen", "rejected"], "tie"
        ),
    )[
        [
            "annotator",
            "preference",
            "preference_label",
            "direction",
            "confidence",
            "time_s",
            "side_chosen",
            "revision",
            "revision_count",
            "submitted_at",
            "flag",
            "flag_reason",
            "comment",
            "judgment_id",
        ]
    ]
    if hide_names:
        by_time = judgments.sort_values("judgment_id")["annotator"].drop_duplicates()
        codes = {name: f"Annotator {k}" for k, name in enumerate(by_time, start=1)}
        judgments = judgments.assign(annotator=judgments["annotator"].map(codes))
        view = view.assign(annotator=view["annotator"].map(codes))
    names = dict(zip(judgments["judgment_id"], judgments["annotator"], strict=True))
    long = scores.assign(
        annotator=scores["judgment_id"].map(names),
        response=scores["response"].astype(object),
        item=scores["item"].astype(object),
    )
    side_by_side = long.pivot_table(
        index=["item", "annotator"], columns="response", values="value", aggfunc="first"
    ).reindex(columns=["chosen", "rejected"])
    side_by_side["diff"] = side_by_side["chosen"] - side_by_side["rejected"]
    side_by_side.columns.name = None
    order = {name: k for k, name in enumerate(config.dimension_names)}
    side_by_side = side_by_side.reset_index()
    side_by_side = side_by_side.sort_values(
        ["item", "annotator"],
        key=lambda s: s.map(lambda v: (order.get(v, len(order)), v)) if s.name == "item" else s,
        kind="stable",
    ).reset_index(drop=True)
    labels = item_labels(list(side_by_side["item"].astype(str).unique()), pair.rubric)
    side_by_side.insert(1, "label", side_by_side["item"].astype(str).map(labels))
    rated = long[~long["item"].astype(str).str.startswith(SUPPORT_PREFIX)]  # rubric support: about the pair
    defaults = _final_defaults(rated, labels, config.dimension_names)
    ranges = [
        score_range(str(item), config, len(pair.rubric or [])) or (np.nan, np.nan)
        for item in defaults["item"]
    ]
    defaults["low"], defaults["high"] = [r[0] for r in ranges], [r[1] for r in ranges]
    history = adjudications(session, study_id, pair_id).drop(columns=["pair_db_id", "adjudicator_id"])
    return PairDetail(
        study=study.name,
        pair={
            "pair_db_id": pair.id,
            "pair_id": pair.external_id,
            "question": pair.question,
            "profile": pair.profile,
            "rubric_aspects": pair.rubric,
            "narrative": pair.narrative,
            "category": pair.category,
            "chosen": pair.chosen,
            "rejected": pair.rejected,
            "metadata": pair.meta,
        },
        evaluation=evaluation.to_dict(),
        judgments=view.reset_index(drop=True),
        scores=side_by_side,
        history=history,
        defaults=defaults,
    )
