"""Final labels: one row per pair, the decision that counts and the evidence it rests on."""

from collections.abc import Mapping

import numpy as np
import pandas as pd
from sqlmodel import Session

from analysis.adjudication import UNRESOLVED
from analysis.aggregates import rubric_scores
from analysis.vocabulary import RUBRIC_PREFIX
from annotator.people import pseudonyms
from annotator.review import readers
from annotator.review.adjudication_reads import adjudications, current_evaluation, is_human, judgment_ids
from annotator.store.models import Study, id_of
from annotator.study import get_study

__all__ = ["FINAL_COLUMNS", "final_labels"]

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
    evaluation, judgments = current_evaluation(session, study_row)
    history = adjudications(session, id_of(study_row))
    latest = history.groupby("pair_db_id").tail(1).set_index("pair_db_id")
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
    human = is_human(decided.fillna({"method": ""})).to_numpy() & has
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
    current = judgment_ids(judgments)
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
