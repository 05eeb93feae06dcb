"""Adjudication in the database: evidence, automatic decisions, the queue, one pair, human decisions.

The rules themselves are pure (:mod:`analysis.adjudication`); this module reads what they need (the
current judgments and scores, the cleaning list), and records decisions. Every decision is an
:class:`~annotator.store.models.Adjudication` row (append-only: the latest counts); an automatic decision is
never recorded over a human one.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Select, insert, select
from sqlmodel import Session, col

from analysis.adjudication import (
    MIN_JUDGMENTS,
    PREFERENCES,
    RULE_LENGTH,
    UNRESOLVED,
    auto_decision,
    auto_rule,
    evaluate,
    json_number,
    keeps,
)
from analysis.vocabulary import RUBRIC_PREFIX, SUPPORT_PREFIX
from annotator import textguard
from annotator.errors import UserError
from annotator.people.accounts import SYSTEM, Account, require_role
from annotator.review import readers
from annotator.store.models import Adjudication, Event, Method, Pair, Study, User, id_of, utcnow
from annotator.study import StudyConfig, get_study, parse_config

__all__ = [
    "AUTO_METHODS",
    "PREFERENCES",
    "AutoSummary",
    "PairDetail",
    "auto_resolve",
    "decide",
    "pair_detail",
    "queue",
]

AUTO_METHODS: tuple[Method, ...] = ("unanimous", "majority")
HUMAN_METHOD: Method = "adjudicated"
PREFERENCE_LABELS = {
    2: "chosen much better",
    1: "chosen better",
    0: "tie",
    -1: "rejected better",
    -2: "rejected much better",
}


def _config(study: Study) -> StudyConfig:
    return parse_config(study.config, source=f"study {study.name!r}")


def _pairs(session: Session, study_id: int, pair_db_id: int | None = None) -> pd.DataFrame:
    query: Select = select(
        col(Pair.id).label("pair_db_id"), col(Pair.external_id).label("pair_id"), col(Pair.category)
    ).where(col(Pair.study_id) == study_id, col(Pair.control) == "")  # controls are never adjudicated
    if pair_db_id is not None:
        query = query.where(col(Pair.id) == pair_db_id)
    rows = session.connection().execute(query.order_by(col(Pair.external_id))).all()
    frame = pd.DataFrame(rows, columns=["pair_db_id", "pair_id", "category"]).astype({"pair_db_id": "int64"})
    return frame.astype({"pair_id": object, "category": object})


def _evaluation(
    session: Session, study: Study, pair_db_id: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluation of a study's pairs (or one pair) and the current judgments it was built on."""
    study_id = id_of(study)
    config = _config(study)
    judgments = readers.current_judgments(session, study_id=study_id, pair_db_id=pair_db_id)
    judgments = judgments[judgments["control"] == ""].reset_index(drop=True)  # controls never count
    evaluation = evaluate(
        _pairs(session, study_id, pair_db_id),
        judgments,
        readers.current_scores(session, study_id=study_id, pair_db_id=pair_db_id),
        dimensions=config.dimension_names,
        margin=config.analysis.margin,
        evidence=_evidence(session, study, config),
    )
    return evaluation, judgments


def _evidence(session: Session, study: Study, config: StudyConfig) -> pd.DataFrame:
    """The study's cleaning list (the same evidence as the report's), or empty when it cannot be
    computed (fewer than 10 pairs, or data the crossed fits cannot take)."""
    from analysis.cleaning import frame_cleaning
    from analysis.frames import split_controls

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
        )
    except (ValueError, np.linalg.LinAlgError):
        return pd.DataFrame()


def _judgment_ids(judgments: pd.DataFrame) -> dict[int, list[int]]:
    """The current judgment ids of every pair, sorted."""
    grouped = judgments.sort_values("judgment_id").groupby("pair_db_id")["judgment_id"].agg(list)
    return {int(pair): [int(i) for i in ids] for pair, ids in grouped.items()}


_ADJUDICATION_COLUMNS = [
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


def _adjudications(session: Session, study_id: int, pair_db_id: int | None = None) -> pd.DataFrame:
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
    frame = pd.DataFrame(session.connection().execute(query).all(), columns=_ADJUDICATION_COLUMNS)
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame


def _is_human(frame: pd.DataFrame) -> pd.Series:
    return frame["adjudicator_id"].notna() | (frame["method"] == HUMAN_METHOD)


def _decision_state(evaluation: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """Per pair (indexed by pair_db_id): the latest adjudication, the latest human one, and whether a
    human decision was reopened by a judgment submitted after it."""
    latest = adjudications.groupby("pair_db_id").tail(1).set_index("pair_db_id")
    human = adjudications[_is_human(adjudications)].groupby("pair_db_id").tail(1).set_index("pair_db_id")
    state = pd.DataFrame(index=pd.Index(evaluation["pair_db_id"].to_numpy(), name="pair_db_id"))
    state["has_human"] = state.index.isin(human.index)
    decided_at = human["created_at"].reindex(state.index)
    last = pd.Series(evaluation["last_submitted_at"].to_numpy(), index=state.index)
    last = pd.to_datetime(last, utc=True)
    state["reopened"] = (state["has_human"] & (last > decided_at)).fillna(False).astype(bool)
    state["latest_id"] = latest["adjudication_id"].reindex(state.index)
    return state


# ------------------------------------------------------------------------------------------ auto-resolve


@dataclass(frozen=True)
class AutoSummary:
    """What one automatic resolution run did."""

    study: str
    decided: dict[str, int] = field(default_factory=dict)  # new automatic decisions, by method
    unchanged: int = 0  # automatic decisions already recorded as they are
    revoked: int = 0  # earlier automatic decisions withdrawn (the pair now needs a person or more data)
    human: int = 0  # pairs left alone because a person decided them
    needs_person: int = 0  # pairs in the adjudication queue
    unresolved: int = 0  # pairs with fewer than MIN_JUDGMENTS judgments

    @property
    def auto_resolved(self) -> int:
        return sum(self.decided.values()) + self.unchanged

    def __str__(self) -> str:
        methods = ", ".join(f"{self.decided.get(m, 0)} {m}" for m in AUTO_METHODS)
        return (
            f"study {self.study!r}: {sum(self.decided.values())} new automatic decisions ({methods}), "
            f"{self.unchanged} unchanged, {self.revoked} withdrawn; {self.human} decided by a person; "
            f"{self.needs_person} need a person; {self.unresolved} unresolved (fewer than "
            f"{MIN_JUDGMENTS} judgments)"
        )


def auto_resolve(session: Session, *, study: str, account: Account) -> AutoSummary:
    """Resolve every pair that needs no person, recording each decision as an Adjudication row.

    The method is "unanimous" (all judgments share a direction) or "majority"; keep is True when the
    majority prefers chosen. Idempotent: a decision equal to the pair's latest one is not recorded
    again. A pair decided by a person is never touched. A pair whose latest automatic decision no
    longer holds (a revision now hits a rule, or judgments were withdrawn) gets an "unresolved" row
    that withdraws it. With an `account` (the app), only an adjudicator or researcher may run it.
    """
    require_role(session, account, "adjudicator", "researcher")
    study_row = get_study(session, study)
    evaluation, judgments = _evaluation(session, study_row)
    adjudications = _adjudications(session, id_of(study_row))
    state = _decision_state(evaluation, adjudications).to_dict("index")
    latest = adjudications.groupby("pair_db_id").tail(1).set_index("pair_db_id").to_dict("index")
    ids = _judgment_ids(judgments)
    score_columns = [c for c in evaluation.columns if c.startswith(("chosen_", "rejected_"))]
    now = utcnow()
    rows: list[dict[str, Any]] = []
    decided: dict[str, int] = {}
    unchanged = revoked = human = needs_person = unresolved = 0
    for row in evaluation.to_dict("records"):
        pair_db_id = int(row["pair_db_id"])
        pair_state = state[pair_db_id]
        previous = latest.get(pair_db_id)
        judgment_ids = ids.get(pair_db_id, [])
        if row["status"] == "needs_person" and (not pair_state["has_human"] or pair_state["reopened"]):
            needs_person += 1
        if pair_state["has_human"]:
            if not (row["status"] == "needs_person" and pair_state["reopened"]):
                human += 1
            continue
        if row["status"] != "auto":
            unresolved += row["status"] == UNRESOLVED
            if previous is not None and previous["method"] in AUTO_METHODS:
                rows.append(
                    {
                        "pair_id": pair_db_id,
                        "adjudicator_id": None,
                        "method": UNRESOLVED,
                        "rule": f"withdrawn: {row['reasons']}"[:RULE_LENGTH],
                        "preference": "none",
                        "keep": False,
                        "decision": {
                            "status": row["status"],
                            "rules": [r for r in row["rules"].split(",") if r],
                            "reasons": row["reasons"],
                            "n_judgments": int(row["n_judgments"]),
                            "judgment_ids": judgment_ids,
                        },
                        "note": "",
                        "created_at": now,
                    }
                )
                revoked += 1
            continue
        decision = auto_decision(row, judgment_ids, score_columns)
        new = {
            "pair_id": pair_db_id,
            "adjudicator_id": None,
            "method": row["method"],
            "rule": auto_rule(row),
            "preference": row["majority"] or "none",
            "keep": keeps(row),
            "decision": decision,
            "note": "",
            "created_at": now,
        }
        if previous is not None and all(
            previous[key] == new[key] for key in ("method", "rule", "preference", "keep", "decision")
        ):
            unchanged += 1
            continue
        rows.append(new)
        decided[row["method"]] = decided.get(row["method"], 0) + 1
    if rows:
        session.execute(insert(Adjudication), rows)
    summary = AutoSummary(
        study=study,
        decided=decided,
        unchanged=unchanged,
        revoked=revoked,
        human=human,
        needs_person=needs_person,
        unresolved=unresolved,
    )
    session.add(
        Event(
            user_id=account.id or None,
            action="auto_resolve",
            detail={
                "study": study,
                "decided": decided,
                "unchanged": unchanged,
                "revoked": revoked,
                "needs_person": needs_person,
                "unresolved": unresolved,
            },
        )
    )
    session.flush()
    return summary


# ------------------------------------------------------------------------------------------------ queue


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


def queue(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """The pairs that need a person, lowest agreement first (then most flags, then pair id).

    A pair is in the queue when a rule fires (:data:`analysis.adjudication.RULES`, named in ``rules``
    and explained in ``reasons``) and no person has decided it yet, or a judgment was submitted after
    the latest human decision (``reopened``). ``pair_db_id`` is the Pair.id to pass to :func:`pair_detail` and
    :func:`decide`; ``pair_id`` is the external id. With an `account` (the app), only an adjudicator
    or a researcher may see it.
    """
    require_role(session, account, "adjudicator", "researcher")
    study_row = get_study(session, study)
    evaluation, _ = _evaluation(session, study_row)
    state = _decision_state(evaluation, _adjudications(session, id_of(study_row)))
    reopened = state["reopened"].to_numpy()
    waiting = (evaluation["status"] == "needs_person").to_numpy() & (
        ~state["has_human"].to_numpy() | reopened
    )
    out = evaluation.assign(reopened=reopened)[waiting]
    out = out.sort_values(["agreement", "n_flags", "pair_id"], ascending=[True, False, True], kind="stable")
    return out[QUEUE_COLUMNS].reset_index(drop=True)


# ------------------------------------------------------------------------------------------ one pair


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
    defaults: pd.DataFrame = field(default_factory=pd.DataFrame)  # item, label, chosen, rejected: medians

    @property
    def latest(self) -> dict[str, Any] | None:
        """The decision that counts (the latest adjudication), or None."""
        return None if self.history.empty else self.history.iloc[-1].to_dict()


def _pair_and_study(session: Session, pair_id: int) -> tuple[Pair, Study]:
    pair = session.get(Pair, pair_id)
    study = session.get(Study, pair.study_id) if pair is not None else None
    if pair is None or study is None:
        raise UserError(f"no pair with id {pair_id}")
    return pair, study


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
        return pd.DataFrame(columns=["item", "label", "chosen", "rejected"])
    medians = long.pivot_table(index="item", columns="response", values="value", aggfunc="median")
    medians = medians.reindex(columns=["chosen", "rejected"])
    medians.columns.name = None
    rank = {name: k for k, name in enumerate(order)}
    out = medians.reset_index()
    out["item"] = out["item"].astype(str)
    out = out.sort_values("item", key=lambda s: s.map(lambda v: (rank.get(v, len(rank)), v)), kind="stable")
    out.insert(1, "label", out["item"].map(labels))
    return out.reset_index(drop=True)


def pair_detail(session: Session, *, pair_id: int, account: Account, hide_names: bool = False) -> PairDetail:
    """Everything an adjudicator needs about one pair (`pair_id` is Pair.id, ``pair_db_id`` in the queue).

    Unblinded: chosen and rejected are named, and so are the annotators unless `hide_names` (then
    "Annotator 1", "Annotator 2", ... in every table). Score items carry a readable ``label`` (the
    rubric aspect's name); ``defaults`` holds the per-item medians a decision starts from. Only an
    adjudicator or a researcher may see it.
    """
    require_role(session, account, "adjudicator", "researcher")
    pair, study = _pair_and_study(session, pair_id)
    study_id = id_of(study)
    config = _config(study)
    evaluated, judgments = _evaluation(session, study, pair_id)
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
    history = _adjudications(session, study_id, pair_id).drop(columns=["pair_db_id", "adjudicator_id"])
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


def _check_scores(
    scores: Mapping[str, Mapping[str, float]] | None, config: StudyConfig, n_aspects: int
) -> dict[str, dict[str, float]]:
    if scores is None:
        return {}
    clean: dict[str, dict[str, float]] = {}
    quality = config.quality
    for response, items in scores.items():
        if response not in ("chosen", "rejected"):
            raise UserError(f"scores: unknown response {response!r}; use chosen or rejected")
        clean[response] = {}
        for item, value in items.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or np.isnan(value):
                raise UserError(f"scores: {response} {item} must be a number")
            if item in config.dimension_names:
                low, high = quality.scale_min, quality.scale_max
            elif item == "rubric" or (
                item.startswith(RUBRIC_PREFIX) and item[7:].isdigit() and int(item[7:]) < n_aspects
            ):
                low, high = 0, 2
            else:
                raise UserError(f"scores: unknown item {item!r} for {response}")
            if not low <= value <= high:
                raise UserError(f"scores: {response} {item} must be within {low}-{high}, got {value:g}")
            clean[response][item] = float(value)
    return clean


def decide(
    session: Session,
    *,
    pair_id: int,
    account: Account,
    preference: str,
    keep: bool,
    scores: Mapping[str, Mapping[str, float]] | None = None,
    note: str = "",
) -> Adjudication:
    """Record a person's decision on a pair (`pair_id` is Pair.id): method "adjudicated".

    `preference` is chosen | rejected | tie; `keep` whether the pair stays in the validated set;
    `scores` optionally final scores as {"chosen"|"rejected": {item: value}} (quality dimensions on
    the study's scale, "rubric" or "rubric:<k>" 0-2). Revisable: each call appends a row, the latest
    counts; who and when are recorded, and an "adjudicate" event is logged. Only an adjudicator or a
    researcher may decide (AuthError otherwise).
    """
    require_role(session, account, "adjudicator", "researcher")
    pair, study = _pair_and_study(session, pair_id)
    if preference not in PREFERENCES:
        raise UserError(f"unknown preference {preference!r}; use one of {', '.join(PREFERENCES)}")
    if not isinstance(keep, bool):
        raise UserError("keep must be true or false")
    textguard.check_input(note, "The note")
    config = _config(study)
    clean = _check_scores(scores, config, len(pair.rubric))
    evaluated, judgments = _evaluation(session, study, pair_id)
    evaluation = evaluated.iloc[0]
    earlier = session.connection().execute(
        select(col(Adjudication.id)).where(
            col(Adjudication.pair_id) == pair_id, col(Adjudication.method) == HUMAN_METHOD
        )
    )
    revision = len(earlier.all()) + 1
    adjudication = Adjudication(
        pair_id=pair_id,
        adjudicator_id=account.id,
        method=HUMAN_METHOD,
        rule=f"decided by {account.username}"[:RULE_LENGTH],
        preference=preference,
        keep=keep,
        decision={
            "preference": preference,
            "keep": keep,
            "scores": clean,
            "revision": revision,
            "basis": {
                "n_judgments": int(evaluation["n_judgments"]),
                "majority": evaluation["majority"],
                "agreement": json_number(evaluation["agreement"]),
                "rules": [r for r in evaluation["rules"].split(",") if r],
                "judgment_ids": _judgment_ids(judgments).get(pair_id, []),
            },
        },
        note=note.strip(),
        created_at=utcnow(),
    )
    session.add(adjudication)
    session.flush()
    session.add(
        Event(
            user_id=account.id,
            action="adjudicate",
            detail={
                "study": study.name,
                "pair": pair.external_id,
                "adjudication": adjudication.id,
                "preference": preference,
                "keep": keep,
                "revision": revision,
            },
        )
    )
    session.flush()
    return adjudication
