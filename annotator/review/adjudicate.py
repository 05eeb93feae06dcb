"""Adjudication: the rules that send a pair to a person, automatic decisions, the queue, human decisions.

A pair's current judgments are summarised by direction (sign of the preference: chosen > 0,
rejected < 0, tie = 0). A pair with fewer than two judgments is *unresolved* (not enough data). A pair
needs a person when any named rule fires (:data:`RULES`); every other pair is resolved automatically,
*unanimous* when all judgments share one direction, else *majority*. The quality rule uses the same
evidence as the report's cleaning list (:mod:`analysis.cleaning`, from 10 pairs on): a pair in "drop"
is settled automatically as not kept, a pair that "needs more judgments" goes to a person, a kept pair
passes the rule; with fewer pairs the median gap of its judgments decides. Every decision is an
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

from analysis.cleaning import NEEDS_MORE
from analysis.frames import pair_majority, rubric_scores
from analysis.vocabulary import RUBRIC_PREFIX, SUPPORT_PREFIX
from annotator import textguard
from annotator.errors import UserError
from annotator.people import pseudonyms
from annotator.people.accounts import SYSTEM, Account, require_role
from annotator.review import readers
from annotator.store.models import Adjudication, Event, Method, Pair, Study, User, id_of, utcnow
from annotator.study import StudyConfig, get_study, parse_config

__all__ = [
    "AUTO_METHODS",
    "MIN_JUDGMENTS",
    "PREFERENCES",
    "RULES",
    "AutoSummary",
    "PairDetail",
    "auto_resolve",
    "decide",
    "evaluate",
    "final_labels",
    "pair_detail",
    "queue",
]

#: The rules that send a pair to a person, by name.
RULES: dict[str, str] = {
    "no_majority": "no preference direction (chosen, rejected, tie) has more than half of the judgments",
    "majority_against_chosen": "more than half of the judgments prefer the rejected response",
    "quality_gap": "the median chosen - rejected difference on a quality dimension is beyond the margin "
    "(fewer than 10 pairs)",
    "uncertain": "the cleaning list's evidence cannot settle the pair (it needs more judgments)",
    "flagged": "an annotator flagged the item as broken",
}
MIN_JUDGMENTS = 2
AUTO_METHODS: tuple[Method, ...] = ("unanimous", "majority")
HUMAN_METHOD: Method = "adjudicated"
UNRESOLVED = "unresolved"
PREFERENCES = ("chosen", "rejected", "tie")
PREFERENCE_LABELS = {
    2: "chosen much better",
    1: "chosen better",
    0: "tie",
    -1: "rejected better",
    -2: "rejected much better",
}
_RULE_LENGTH = 200
_GAP_TOLERANCE = 1e-9


# ------------------------------------------------------------------------------------------ evaluation


def _score_columns(items: Sequence[str], dimensions: Sequence[str]) -> list[str]:
    ordered = [d for d in dimensions if d in items] + sorted(set(items) - set(dimensions) - {"rubric"})
    if "rubric" in items:
        ordered.append("rubric")
    return [f"{response}_{item}" for item in ordered for response in ("chosen", "rejected")]


def _medians(judgments: pd.DataFrame, scores: pd.DataFrame, dimensions: Sequence[str]) -> pd.DataFrame:
    """Per pair: the median over judgments of every quality item and of the rubric (per judgment the
    mean over aspects), as flat columns ``chosen_<item>`` / ``rejected_<item>``, indexed by pair_db_id."""
    if scores.empty:
        return pd.DataFrame(index=pd.Index([], name="pair_db_id"))
    pair_of = pd.Series(judgments["pair_db_id"].to_numpy(), index=judgments["judgment_id"].to_numpy())
    scores = scores[scores["judgment_id"].isin(pair_of.index)]  # one read may be newer than the other
    values = pd.DataFrame(
        {
            "pair_db_id": pair_of.reindex(scores["judgment_id"].to_numpy()).to_numpy(),
            "judgment_id": scores["judgment_id"].to_numpy(),
            "response": scores["response"].astype(object).to_numpy(),
            "item": scores["item"].astype(object).to_numpy(),
            "value": scores["value"].to_numpy(),
        }
    )
    aspect = values["item"].str.startswith(RUBRIC_PREFIX).to_numpy(dtype=bool)
    rubric = rubric_scores(values, ["pair_db_id", "judgment_id", "response"])
    quality = values[~aspect]
    both = pd.concat([quality, rubric[quality.columns]], ignore_index=True)
    wide = (
        both.groupby(["pair_db_id", "response", "item"], sort=False)["value"]
        .median()
        .unstack(["response", "item"])
    )
    wide.columns = [f"{response}_{item}" for response, item in wide.columns]
    columns = _score_columns(list(both["item"].unique()), dimensions)
    return wide.reindex(columns=columns)


def _objects(values: Sequence[Any]) -> pd.Series:
    """A column of Python objects (text or None), kept as such rather than inferred as a text dtype."""
    return pd.Series(list(values), dtype=object)


def evaluate(
    pairs: pd.DataFrame,
    judgments: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    dimensions: Sequence[str],
    margin: float,
    evidence: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Apply the adjudication rules to every pair.

    Parameters
    ----------
    pairs : DataFrame
        Columns pair_db_id, pair_id, category: every pair to evaluate.
    judgments, scores : DataFrame
        :func:`annotator.review.readers.current_judgments` and
        :func:`annotator.review.readers.current_scores`.
    dimensions : sequence of str
        The study's quality dimensions (checked by the ``quality_gap`` rule).
    margin : float
        The study's equivalence margin: a larger |median chosen - median rejected| needs a person.
    evidence : DataFrame, optional
        The cleaning list (:func:`analysis.cleaning.frame_cleaning`: pair_id, decision, p_broken,
        reason, evidence); when given (non-empty) it replaces the median rule: "drop" settles the pair
        as not kept (``evidence_decision``), "needs more judgments" fires ``uncertain``.

    Returns
    -------
    DataFrame
        One row per pair (in the order of `pairs`): pair_db_id, pair_id, category, n_judgments,
        n_chosen, n_rejected, n_tie, majority (chosen | rejected | tie | None), agreement (share of
        judgments in the most common direction; NaN without judgments), n_flags, last_submitted_at,
        status (unresolved | needs_person | auto), method (unanimous | majority | None), rules
        (comma-separated names of the rules hit), reasons (the same in words), then the median
        columns ``chosen_<item>`` / ``rejected_<item>``.
    """
    out = pairs[["pair_db_id", "pair_id", "category"]].reset_index(drop=True).copy()
    index = pd.Index(out["pair_db_id"].to_numpy(), name="pair_db_id")
    votes = (
        pair_majority(judgments[["pair_db_id", "preference"]], pair_col="pair_db_id")
        .set_index("pair_db_id")
        .reindex(index)
    )
    out["n_judgments"] = votes["n_votes"].fillna(0).astype("int64").to_numpy()
    for name in ("n_chosen", "n_rejected", "n_tie"):
        out[name] = votes[name].fillna(0).astype("int64").to_numpy()
    flags = judgments.groupby("pair_db_id")["flag"].sum().reindex(index, fill_value=0)
    out["n_flags"] = flags.astype("int64").to_numpy()
    last = judgments.groupby("pair_db_id")["submitted_at"].max().reindex(index)
    n = out["n_judgments"].to_numpy()
    counts = out[["n_chosen", "n_rejected", "n_tie"]].to_numpy()
    top = counts.max(axis=1) if len(out) else np.zeros(0, dtype="int64")
    out["agreement"] = votes["agreement"].to_numpy(dtype=float)
    has_majority = top * 2 > n
    out["majority"] = _objects(
        [m if m in PREFERENCES else None for m in votes["majority"].to_numpy(dtype=object)]
    )
    out["last_submitted_at"] = last.to_numpy()

    medians = _medians(judgments, scores, dimensions).reindex(index)
    hits: dict[str, np.ndarray] = {
        "no_majority": ~has_majority,
        "majority_against_chosen": has_majority & (out["majority"].to_numpy() == "rejected"),
        "flagged": out["n_flags"].to_numpy() > 0,
    }
    gap_words: list[list[str]] = [[] for _ in range(len(out))]
    gap_hit = np.zeros(len(out), dtype=bool)
    for dimension in dimensions:
        if f"chosen_{dimension}" not in medians.columns:
            continue
        gap = (medians[f"chosen_{dimension}"] - medians[f"rejected_{dimension}"]).to_numpy()
        beyond = np.abs(np.nan_to_num(gap)) > margin + _GAP_TOLERANCE
        gap_hit |= beyond
        for hit_at in np.flatnonzero(beyond):
            gap_words[hit_at].append(f"{dimension} {gap[hit_at]:+g}")
    use_evidence = evidence is not None and not evidence.empty
    decision = np.full(len(out), "", dtype=object)
    evidence_text = np.full(len(out), "", dtype=object)
    if use_evidence:
        assert evidence is not None
        by_pair = evidence.set_index("pair_id")
        found = out["pair_id"].map(by_pair["decision"]).fillna("")
        decision = found.to_numpy(dtype=object)
        evidence_text = out["pair_id"].map(by_pair["evidence"]).fillna("").to_numpy(dtype=object)
        hits["quality_gap"] = np.zeros(len(out), dtype=bool)
        hits["uncertain"] = decision == NEEDS_MORE
    else:
        hits["quality_gap"] = gap_hit
        hits["uncertain"] = np.zeros(len(out), dtype=bool)
    drop = decision == "drop"

    enough = n >= MIN_JUDGMENTS
    names, reasons = [], []
    for position in range(len(out)):
        if not enough[position]:
            names.append("")
            reasons.append(f"not enough judgments ({n[position]} of {MIN_JUDGMENTS})")
            continue
        hit = [name for name in RULES if hits[name][position]]
        words = []
        chosen, rejected, tie = counts[position]
        if "no_majority" in hit:
            words.append(f"no majority (chosen {chosen}, rejected {rejected}, tie {tie})")
        if "majority_against_chosen" in hit:
            words.append(f"majority prefers rejected ({rejected} of {n[position]})")
        if "quality_gap" in hit:
            words.append(f"quality gap beyond {margin:g}: {', '.join(gap_words[position])}")
        if "flagged" in hit:
            words.append(f"flagged by {out['n_flags'].iat[position]} annotator(s)")
        if "uncertain" in hit:
            words.append(f"uncertain, needs more judgments ({evidence_text[position]})")
        if drop[position]:
            words.append(f"broken: in the drop list ({evidence_text[position]})")
        names.append(",".join(hit))
        reasons.append("; ".join(words))
    out["rules"] = names
    out["reasons"] = reasons
    out["evidence_decision"] = decision
    settled = drop | (out["rules"] == "").to_numpy()
    out["status"] = np.where(~enough, UNRESOLVED, np.where(settled, "auto", "needs_person"))
    auto = (out["status"] == "auto").to_numpy()
    out["method"] = _objects(
        [("unanimous" if t == k else "majority") if a else None for t, k, a in zip(top, n, auto, strict=True)]
    )
    for name in medians.columns:
        out[name] = medians[name].to_numpy()
    return out


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


def _json_number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _decision(
    row: Mapping[str, Any], judgment_ids: list[int], score_columns: Sequence[str]
) -> dict[str, Any]:
    scores: dict[str, dict[str, float]] = {"chosen": {}, "rejected": {}}
    for name in score_columns:
        value = _json_number(row.get(name))
        if value is not None:
            response, item = name.split("_", 1)
            scores[response][item] = value
    return {
        "preference": row["majority"],
        "keep": _keeps(row),
        "evidence": row.get("evidence_decision") or "",
        "agreement": _json_number(row["agreement"]),
        "n_judgments": int(row["n_judgments"]),
        "votes": {
            "chosen": int(row["n_chosen"]),
            "rejected": int(row["n_rejected"]),
            "tie": int(row["n_tie"]),
        },
        "scores": scores,
        "judgment_ids": judgment_ids,
    }


def _keeps(row: Mapping[str, Any]) -> bool:
    return bool(row["majority"] == "chosen" and row.get("evidence_decision") != "drop")


def _auto_rule(row: Mapping[str, Any]) -> str:
    n, majority = int(row["n_judgments"]), row["majority"]
    if row.get("evidence_decision") == "drop":
        return f"dropped: the cleaning list's evidence says broken; {row['reasons']}"[:_RULE_LENGTH]
    if row["method"] == "unanimous":
        text = f"unanimous: all {n} judgments prefer {majority}; no rule needs a person"
    else:
        count = int(row[f"n_{majority}"])
        text = f"majority: {count} of {n} judgments prefer {majority}; no rule needs a person"
    return text[:_RULE_LENGTH]


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
                        "rule": f"withdrawn: {row['reasons']}"[:_RULE_LENGTH],
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
        decision = _decision(row, judgment_ids, score_columns)
        new = {
            "pair_id": pair_db_id,
            "adjudicator_id": None,
            "method": row["method"],
            "rule": _auto_rule(row),
            "preference": row["majority"] or "none",
            "keep": _keeps(row),
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

    A pair is in the queue when a rule fires (:data:`RULES`, named in ``rules`` and explained in
    ``reasons``) and no person has decided it yet, or a judgment was submitted after the latest human
    decision (``reopened``). ``pair_db_id`` is the Pair.id to pass to :func:`pair_detail` and
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
        rule=f"decided by {account.username}"[:_RULE_LENGTH],
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
                "agreement": _json_number(evaluation["agreement"]),
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


# ------------------------------------------------------------------------------------------ final labels


FINAL_COLUMNS = [
    "pair_id",
    "category",
    "preference",
    "keep",
    "method",
    "rule",
    "agreement",
]
_TAIL_COLUMNS = ["n_judgments", "adjudicator", "note", "decided_at", "stale"]


def _decided_rubric(
    session: Session, study: Study, pair_db_id: int, given: Mapping[str, Mapping[str, float]]
) -> dict[str, float]:
    """The rubric score of each response whose aspects a person decided ("rubric:<k>"): the mean over
    aspects of the decided value, or else the aspect's median over the current judgments."""
    decided = {
        r: {i: v for i, v in items.items() if i.startswith(RUBRIC_PREFIX)} for r, items in given.items()
    }
    decided = {r: items for r, items in decided.items() if items}
    if not decided:
        return {}
    scores = readers.current_scores(session, study_id=id_of(study), pair_db_id=pair_db_id)
    aspects = scores[scores["item"].astype(str).str.startswith(RUBRIC_PREFIX)]
    medians = aspects.groupby(["response", "item"], observed=True)["value"].median()
    out = {}
    for response, items in decided.items():
        values = {str(item): float(v) for (r, item), v in medians.items() if r == response}
        values.update({item: float(v) for item, v in items.items()})
        rows = pd.DataFrame({"key": 0, "item": list(values), "value": list(values.values())})
        out[response] = float(rubric_scores(rows, ["key"])["value"].iloc[0])
    return out


def final_labels(session: Session, *, study: str, pseudonymize: bool = False) -> pd.DataFrame:
    """One row per pair: the latest decision and its evidence (see :func:`export.adjudicated_frame`).

    ``stale`` is True when the decision was taken on other judgments than the current ones (an
    automatic decision: re-run auto_resolve; a human one: the pair is back in the queue).
    """
    study_row = get_study(session, study)
    evaluation, judgments = _evaluation(session, study_row)
    adjudications = _adjudications(session, id_of(study_row))
    latest = adjudications.groupby("pair_db_id").tail(1).set_index("pair_db_id")
    score_columns = [c for c in evaluation.columns if c.startswith(("chosen_", "rejected_"))]
    out = evaluation.set_index("pair_db_id")
    decided = latest.reindex(out.index)
    has = decided["method"].notna().to_numpy()
    method = decided["method"].where(decided["method"].notna(), UNRESOLVED)
    pending = np.where(
        out["status"] == "auto", "not yet auto-resolved (run annotator adjudicate --auto)", out["reasons"]
    )
    frame = pd.DataFrame(
        {
            "pair_id": out["pair_id"],
            "category": out["category"],
            "method": method,
            "rule": np.where(has, decided["rule"], pending),
            "agreement": out["agreement"],
        },
        index=out.index,
    )
    unresolved = (frame["method"] == UNRESOLVED).to_numpy()
    preference = [
        None if gone or not isinstance(p, str) or p == "none" else p
        for p, gone in zip(decided["preference"], unresolved, strict=True)
    ]
    keep = [None if gone else bool(k) for k, gone in zip(decided["keep"], unresolved, strict=True)]
    frame["preference"] = pd.Series(preference, index=frame.index, dtype=object)
    frame["keep"] = pd.Series(keep, index=frame.index, dtype=object)
    frame = frame[["pair_id", "category", "preference", "keep", "method", "rule", "agreement"]]
    for name in score_columns:
        frame[name] = out[name]
    human = _is_human(decided.fillna({"method": ""})).to_numpy() & has
    for position in np.flatnonzero(human):
        given = decided["decision"].iat[position].get("scores") or {}
        for response, value in _decided_rubric(session, study_row, int(frame.index[position]), given).items():
            if f"{response}_rubric" in frame.columns:
                frame.iat[position, frame.columns.get_loc(f"{response}_rubric")] = value
        for response, items in given.items():
            for item, value in items.items():
                if f"{response}_{item}" in frame.columns:
                    frame.iat[position, frame.columns.get_loc(f"{response}_{item}")] = value
    frame["n_judgments"] = out["n_judgments"]
    adjudicator = pd.Series(
        [name if isinstance(name, str) else None for name in decided["adjudicator"]],
        index=frame.index,
        dtype=object,
    )
    if pseudonymize:  # no real name in any column: the rule ("decided by NAME") too
        codes = pseudonyms.pseudonymize_names(adjudicator, pseudonyms.study_secret(session, study_row))
        frame["rule"] = [
            rule.replace(name, code) if isinstance(name, str) and isinstance(rule, str) else rule
            for rule, name, code in zip(frame["rule"], adjudicator, codes, strict=True)
        ]
        adjudicator = codes
    frame["adjudicator"] = adjudicator
    frame["note"] = decided["note"].where(has, "")
    frame["decided_at"] = decided["created_at"]
    current = _judgment_ids(judgments)
    stale = []
    for pair_db_id, decision, method_name in zip(
        frame.index, decided["decision"], frame["method"], strict=True
    ):
        if not isinstance(decision, dict) or method_name == UNRESOLVED:
            stale.append(False)
            continue
        recorded = decision.get("judgment_ids", (decision.get("basis") or {}).get("judgment_ids"))
        stale.append(recorded != current.get(int(pair_db_id), []))
    frame["stale"] = stale
    return frame[[*FINAL_COLUMNS, *score_columns, *_TAIL_COLUMNS]].reset_index(drop=True)
