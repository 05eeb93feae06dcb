"""The judgment readers: current judgments and scores, and the tidy long label frame (one home).

Every consumer of labels (analysis, export, adjudication, the dashboard) reads them through here,
with a few set-based queries and no per-row ORM loads.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Select, func, select
from sqlmodel import Session, col

from analysis.frames import coded
from annotator.people.authorization import Account, require_role
from annotator.people.pseudonyms import pseudonymize_names, study_secret
from annotator.store.models import Assignment, Judgment, Pair, Score, User, id_of
from annotator.study import get_study

__all__ = [
    "LABEL_COLUMNS",
    "current_judgments",
    "current_scores",
    "label_frame",
]

#: The columns of :func:`label_frame`, in order (the first eight are the analysis contract).
LABEL_COLUMNS: tuple[str, ...] = (
    "pair_id",
    "annotator",
    "response",
    "item",
    "value",
    "preference",
    "confidence",
    "time_s",
    "category",
    "judgment_id",
    "side_chosen",
    "chosen_chars",
    "rejected_chars",
    "revision_count",
    "submitted_at",
    "flag",
    "flag_reason",
    "comment",
    "control",
    "guideline_version",
    "arm",
)


#: The label frame's text columns: categorical codes over sorted categories (a judgment's text is
#: repeated on each of its scores; codes keep one copy per distinct value). The optional ones always
#: have "" among their categories, so that `== ""` and `fillna("")` work as on text.
_CODED_KEYS = ("pair_id", "annotator")
_CODED_OPTIONAL = ("category", "side_chosen", "flag_reason", "comment", "control", "guideline_version", "arm")
#: Rows fetched at a time by :func:`current_scores` (the driver's rows are converted chunk by chunk).
SCORE_CHUNK = 200_000


@contextmanager
def _cursor(session: Session, query: Select[Any]) -> Iterator[Any]:
    """The database driver's own cursor on a read-only query, executed and closed after use.

    The ORM's row processing costs several seconds on a million scores; the raw cursor is a few times
    faster. The query only carries integer ids as parameters, so they are rendered inline; it runs on
    the session's connection, inside its transaction (pending changes are flushed first). Values come
    back as the driver gives them (SQLite: 0/1 booleans and ISO text datetimes), so callers convert.
    """
    session.flush()
    connection = session.connection()
    sql = str(query.compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql)
        yield cursor
    finally:
        cursor.close()


def _fetch(session: Session, query: Select[Any]) -> list[tuple[Any, ...]]:
    """The rows of a read-only query, fetched with the driver's own cursor (see :func:`_cursor`)."""
    with _cursor(session, query) as cursor:
        return list(cursor.fetchall())


def _fetch_chunks(session: Session, query: Select, size: int) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of a read-only query (as :func:`_fetch`), `size` rows at a time."""
    with _cursor(session, query) as cursor:
        while rows := cursor.fetchmany(size):
            yield list(rows)


def current_judgments(
    session: Session, *, study_id: int, pair_db_id: int | None = None, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """The current judgment of every assignment of a study (or of one pair): one row per judgment.

    Columns: judgment_id, pair_db_id (Pair.id), pair_id (the external id), category, annotator,
    preference (-2..2, positive = chosen), confidence, time_s, side_chosen, chosen_chars,
    rejected_chars, revision,
    revision_count, submitted_at (UTC), flag, flag_reason, comment, control, guideline_version, arm.
    Sorted by pair_id, annotator. With `columns`, only those (and pair_id, annotator) are read: the
    same rows in the same order.
    """
    query: Select = (
        select(
            col(Judgment.id).label("judgment_id"),
            col(Pair.id).label("pair_db_id"),
            col(Pair.external_id).label("pair_id"),
            col(Pair.category).label("category"),
            col(User.username).label("annotator"),
            col(Judgment.preference).label("preference"),
            col(Judgment.confidence).label("confidence"),
            col(Judgment.time_on_task_s).label("time_s"),
            col(Assignment.chosen_side).label("side_chosen"),
            func.length(Pair.chosen).label("chosen_chars"),
            func.length(Pair.rejected).label("rejected_chars"),
            col(Judgment.revision).label("revision"),
            col(Assignment.revisions).label("revision_count"),
            col(Judgment.submitted_at).label("submitted_at"),
            col(Judgment.flag).label("flag"),
            col(Judgment.flag_reason).label("flag_reason"),
            col(Judgment.comment).label("comment"),
            col(Pair.control).label("control"),
            col(Judgment.guideline_version).label("guideline_version"),
            col(Assignment.arm).label("arm"),
        )
        .select_from(Assignment)
        .join(Judgment, col(Judgment.id) == col(Assignment.current_judgment_id))
        .join(Pair, col(Pair.id) == col(Assignment.pair_id))
        .join(User, col(User.id) == col(Assignment.annotator_id))
        .where(col(Assignment.study_id) == study_id)
    )
    if pair_db_id is not None:
        query = query.where(col(Assignment.pair_id) == pair_db_id)
    if columns is not None:
        wanted = {"pair_id", "annotator", *columns}
        query = query.with_only_columns(*(c for c in query.selected_columns if c.key in wanted))
    frame = pd.DataFrame(_fetch(session, query), columns=list(query.selected_columns.keys()))
    types = {
        "judgment_id": "int64",
        "pair_db_id": "int64",
        "preference": "int64",
        "revision": "int64",
        "revision_count": "int64",
        "chosen_chars": "int64",
        "rejected_chars": "int64",
        "confidence": "float64",
        "time_s": "float64",
        "flag": "bool",
    }
    frame = frame.astype({name: kind for name, kind in types.items() if name in frame.columns})
    text_columns = ("pair_id", "category", "annotator", "side_chosen", "flag_reason", "comment")
    for name in (*text_columns, "control", "guideline_version", "arm"):
        if name in frame.columns:
            frame[name] = frame[name].astype(object)
    if "submitted_at" in frame.columns:
        frame["submitted_at"] = pd.to_datetime(frame["submitted_at"], utc=True)
    return frame.sort_values(["pair_id", "annotator"], kind="stable").reset_index(drop=True)


def current_scores(session: Session, *, study_id: int, pair_db_id: int | None = None) -> pd.DataFrame:
    """The scores of the current judgments of a study (or of one pair): judgment_id, response, item
    (categorical: "chosen"/"rejected", and the sorted item names), value.

    Read column by column in chunks of SCORE_CHUNK rows: each chunk of driver rows becomes four
    arrays (an id, two small codes, a float) before the next is fetched, so the driver's row objects
    never exist for the whole study at once."""
    query = (
        select(col(Score.judgment_id), col(Score.response), col(Score.item), col(Score.value))
        .select_from(Assignment)
        .join(Score, col(Score.judgment_id) == col(Assignment.current_judgment_id))
        .where(col(Assignment.study_id) == study_id)
    )
    if pair_db_id is not None:
        query = query.where(col(Assignment.pair_id) == pair_db_id)
    names: dict[str, int] = {}  # item name -> code, in order of appearance
    ids, responses, items, values = [], [], [], []
    for rows in _fetch_chunks(session, query, SCORE_CHUNK):
        ids.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        responses.append(np.fromiter((r[1] != "chosen" for r in rows), dtype=np.int8, count=len(rows)))
        items.append(
            np.fromiter((names.setdefault(r[2], len(names)) for r in rows), dtype=np.int32, count=len(rows))
        )
        values.append(np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows)))

    def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

    order = sorted(names)  # categories sorted by name; codes remapped to that order
    remap = np.empty(len(names), dtype=np.int32)
    for rank, name in enumerate(order):
        remap[names[name]] = rank
    item_codes = joined(items, np.int32)
    return pd.DataFrame(
        {
            "judgment_id": joined(ids, np.int64),
            "response": pd.Categorical.from_codes(
                joined(responses, np.int8), categories=["chosen", "rejected"]
            ),
            "item": pd.Categorical.from_codes(
                remap[item_codes] if len(item_codes) else item_codes, categories=order
            ),
            "value": joined(values, np.float64),
        }
    )


def label_frame(
    session: Session, *, study: str, pseudonymize: bool = False, account: Account
) -> pd.DataFrame:
    """Every score of every current judgment of `study` in the tidy long form (one row per score).

    Columns (see :data:`LABEL_COLUMNS`): pair_id (external id), annotator (username, or a stable
    pseudonym with `pseudonymize`), response (chosen | rejected), item (a quality dimension or
    "rubric:<k>"), value, preference (-2..2, positive = chosen preferred), confidence, time_s,
    category, judgment_id, side_chosen (the side chosen was shown on), chosen_chars and rejected_chars
    (the responses' lengths in characters), revision_count, submitted_at,
    flag, flag_reason, comment, control ("" for a main pair, else the control kind: such rows are
    left out of the main analysis), guideline_version, arm (the annotator's study arm, "" in a
    study without arms). Only the current revision of each judgment
    is included. Rows are sorted by pair_id, annotator, response, item.

    Two queries (judgments, scores) joined in pandas: about a million rows take a few seconds.
    Only a researcher (or SYSTEM) may read it.
    """
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    judgments = current_judgments(session, study_id=study_id)
    scores = current_scores(session, study_id=study_id)
    if pseudonymize:
        judgments["annotator"] = pseudonymize_names(judgments["annotator"], study_secret(session, study_row))
        judgments = judgments.sort_values(["pair_id", "annotator"], kind="stable").reset_index(drop=True)
    order = pd.Series(np.arange(len(judgments)), index=judgments["judgment_id"].to_numpy())
    rank = order.reindex(scores["judgment_id"].to_numpy(), fill_value=-1).to_numpy()
    if (rank < 0).any():  # a judgment submitted between the two reads: keep the consistent part
        scores, rank = scores[rank >= 0].reset_index(drop=True), rank[rank >= 0]
    item_codes = scores["item"].cat.codes.to_numpy()  # categories are sorted
    sort_key = np.lexsort((item_codes, scores["response"].cat.codes.to_numpy(), rank))
    scores = scores.iloc[sort_key]
    rank_sorted = rank[sort_key]
    judgments = judgments.drop(columns=["pair_db_id", "revision"])
    for name in _CODED_KEYS + _CODED_OPTIONAL:  # codes before the judgments are repeated per score
        judgments[name] = coded(judgments[name], with_empty=name in _CODED_OPTIONAL)
    per_judgment = judgments.iloc[rank_sorted].reset_index(drop=True)
    frame = per_judgment.assign(
        response=scores["response"].array,
        item=scores["item"].array,
        value=scores["value"].to_numpy(),
    )
    return frame[list(LABEL_COLUMNS)]
