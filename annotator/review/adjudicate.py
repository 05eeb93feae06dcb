"""Adjudication decisions in the database: automatic resolution and a person's decision.

The rules themselves are pure (:mod:`analysis.adjudication`); what they need is read by
:mod:`annotator.review.adjudication_reads`, and the queue and one pair are shown by
:mod:`annotator.review.adjudication_queue`. Every decision is an
:class:`~annotator.store.models.Adjudication` row (append-only: the latest counts); an automatic decision is
never recorded over a human one.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import insert, select
from sqlmodel import Session, col

from analysis.adjudication import (
    MIN_JUDGMENTS,
    PREFERENCES,
    RULE_LENGTH,
    UNRESOLVED,
    auto_decision,
    auto_rule,
    json_number,
    keeps,
)
from analysis.vocabulary import RUBRIC_PREFIX
from analysis.wording import counted
from annotator import textguard
from annotator.errors import UserError
from annotator.people.authorization import Account, record_event, require_role
from annotator.review import adjudication_reads as reads
from annotator.review.adjudication_reads import HUMAN_METHOD
from annotator.store.models import Adjudication, Event, Method, id_of, utcnow
from annotator.study import StudyConfig, get_study

__all__ = [
    "AUTO_METHODS",
    "PREFERENCES",
    "AutoSummary",
    "auto_resolve",
    "decide",
]

AUTO_METHODS: tuple[Method, ...] = ("unanimous", "majority")


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

    def in_words(self) -> str:
        """The run for a page: sentences, counts agreeing with their nouns."""
        new = sum(self.decided.values())
        methods = ", ".join(f"{self.decided.get(m, 0)} {m}" for m in AUTO_METHODS)
        kept = f"{self.unchanged} already recorded as they are" + (
            f", {counted(self.revoked, 'earlier one')} withdrawn" if self.revoked else ""
        )
        return (
            f"Resolved automatically: {counted(new, 'new decision')} ({methods}); {kept}. "
            f"{counted(self.needs_person, 'pair needs', 'pairs need')} a person; "
            f"{counted(self.human, 'pair was', 'pairs were')} decided by a person before; "
            f"{counted(self.unresolved, 'pair has', 'pairs have')} fewer than {MIN_JUDGMENTS} judgments."
        )

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
    evaluation, judgments = reads.current_evaluation(session, study_row)
    adjudications = reads.adjudications(session, id_of(study_row))
    state = reads.decision_state(evaluation, adjudications).to_dict("index")
    latest = adjudications.groupby("pair_db_id").tail(1).set_index("pair_db_id").to_dict("index")
    ids = reads.judgment_ids(judgments)
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
    record_event(
        session,
        account,
        "auto_resolve",
        {
            "study": study,
            "decided": decided,
            "unchanged": unchanged,
            "revoked": revoked,
            "needs_person": needs_person,
            "unresolved": unresolved,
        },
    )
    session.flush()
    return summary


def score_range(item: str, config: StudyConfig, n_aspects: int) -> tuple[float, float] | None:
    """The range a final score of `item` may take: its quality scale, 0-2 for the rubric and each of
    the pair's `n_aspects` aspects; None for an item the study does not rate."""
    if item in config.quality.scales:
        scale = config.quality.scales[item]
        return float(scale.low), float(scale.high)
    suffix = item[len(RUBRIC_PREFIX) :]
    if item == "rubric" or (item.startswith(RUBRIC_PREFIX) and suffix.isdigit() and int(suffix) < n_aspects):
        return 0.0, 2.0
    return None


def _check_scores(
    scores: Mapping[str, Mapping[str, float]] | None, config: StudyConfig, n_aspects: int
) -> dict[str, dict[str, float]]:
    if scores is None:
        return {}
    clean: dict[str, dict[str, float]] = {}
    for response, items in scores.items():
        if response not in ("chosen", "rejected"):
            raise UserError(f"scores: unknown response {response!r}; use chosen or rejected")
        clean[response] = {}
        for item, value in items.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or np.isnan(value):
                raise UserError(f"scores: {response} {item} must be a number")
            bounds = score_range(item, config, n_aspects)
            if bounds is None:
                raise UserError(f"scores: unknown item {item!r} for {response}")
            low, high = bounds
            if not low <= value <= high:
                raise UserError(f"scores: {response} {item} must be within {low:g}-{high:g}, got {value:g}")
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
    pair, study = reads.pair_and_study(session, pair_id)
    if preference not in PREFERENCES:
        raise UserError(f"unknown preference {preference!r}; use one of {', '.join(PREFERENCES)}")
    if not isinstance(keep, bool):
        raise UserError("keep must be true or false")
    textguard.check_input(note, "The note")
    config = reads.config_of(study)
    clean = _check_scores(scores, config, len(pair.rubric))
    evaluated, judgments = reads.current_evaluation(session, study, pair_id)
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
                "judgment_ids": reads.judgment_ids(judgments).get(pair_id, []),
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
