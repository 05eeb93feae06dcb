"""Every database table of the project, and nothing else."""

from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

from sqlalchemy import JSON, Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

Role = Literal["annotator", "adjudicator", "researcher"]
ROLES: tuple[Role, ...] = ("annotator", "adjudicator", "researcher")
#: Where an item stands in an annotator's queue (Assignment.status).
Status = Literal["pending", "done", "flagged"]
PENDING: Final[Status] = "pending"
DONE: Final[Status] = "done"
FLAGGED: Final[Status] = "flagged"
#: How a pair's final label was reached (Adjudication.method).
Method = Literal["unanimous", "majority", "adjudicated"]
#: The side a response is shown on.
Side = Literal["A", "B"]


class _HasId(Protocol):
    id: int | None


def id_of(row: _HasId) -> int:
    """The primary key of a row that has been flushed; raises if it has none yet."""
    if row.id is None:
        raise RuntimeError(f"{type(row).__name__} has no id yet: flush the session first")
    return row.id


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (SQLModel stores it as UTC on every engine)."""
    return datetime.now(UTC)


# A study: one rating schema (the TOML config as JSON) and its pairs.
class Study(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, max_length=200)
    config: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    pseudonym_key: str | None = Field(default=None, max_length=64)  # per-study secret for pseudonyms (0004)
    archived_at: datetime | None = None  # set: hidden from every picker, data kept, restorable (0013)


# A preference pair: one user, one question, a chosen and a rejected response.
class Pair(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("study_id", "external_id"),
        Index("ix_pair_id_n_done", "id", "n_done"),  # the queue order reads n_done from here (0003)
        Index("ix_pair_study_id_control", "study_id", "control"),  # training and control counts (0008)
        Index("ix_pair_study_id_owner", "study_id", "owner"),  # an owner's pairs (0012)
    )
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    external_id: str = Field(max_length=500)
    question: str = Field(sa_column=Column(Text, nullable=False))
    profile: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    rubric: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    narrative: str = Field(default="", sa_column=Column(Text, nullable=False))
    category: str = Field(default="", max_length=200)
    chosen: str = Field(sa_column=Column(Text, nullable=False))
    rejected: str = Field(sa_column=Column(Text, nullable=False))
    meta: dict[str, Any] = Field(sa_column=Column("metadata", JSON, nullable=False))
    content_hash: str = Field(max_length=64)
    is_gold: bool = Field(default=False)
    n_done: int = Field(default=0)
    control: str = Field(default="", max_length=20)  # "" or gold|positive|swap|duplicate|training (0006)
    control_of: int | None = Field(
        default=None, foreign_key="pair.id"
    )  # the pair a control derives from (0006)
    owner: str = Field(default="", max_length=200)  # the profile's owner the pairs file names, or "" (0012)
    # the human sample drawn for a judged study: the pair's inclusion probability recorded at the draw
    # and whether the draw took it; None without a drawn sample (0015)
    sample_probability: float | None = None
    in_sample: bool | None = None
    created_at: datetime = Field(default_factory=utcnow)


# A person with a role; the password is stored only as a salted scrypt hash.
class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=100)
    role: str = Field(max_length=20)
    password_hash: str = Field(max_length=300)
    active: bool = Field(default=True)
    created_at: datetime = Field(default_factory=utcnow)
    failed_logins: int = Field(default=0)
    last_failed_at: datetime | None = None
    token_hash: str | None = Field(default=None, max_length=128, index=True)
    token_expires_at: datetime | None = None
    guidelines_ack_at: datetime | None = None


# One pair in one annotator's queue, with the side on which `chosen` is shown (fixed at assignment).
class Assignment(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("pair_id", "annotator_id"),
        Index("ix_assignment_queue", "annotator_id", "study_id", "status", "position"),
    )
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    annotator_id: int = Field(foreign_key="user.id")
    chosen_side: str = Field(max_length=1)
    position: int
    status: str = Field(default=PENDING, max_length=20)  # a Status
    skip_count: int = Field(default=0)
    skip_reason: str | None = Field(default=None, sa_column=Column(Text))
    shown_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    current_judgment_id: int | None = None
    revisions: int = Field(default=0)
    arm: str = Field(default="", max_length=100)  # the study arm of the annotator, "" without arms (0007)
    flag_reason: str | None = Field(default=None, sa_column=Column(Text))  # status "flagged" (0005)


# One submitted judgment (append-only: a revision adds a row, the highest revision is current).
class Judgment(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("assignment_id", "revision"),)
    id: int | None = Field(default=None, primary_key=True)
    assignment_id: int = Field(foreign_key="assignment.id", index=True)
    revision: int
    submission_id: str = Field(max_length=64, unique=True)
    submitted_at: datetime = Field(default_factory=utcnow)
    time_on_task_s: float
    preference: int
    confidence: int | None = None
    comment: str = Field(default="", sa_column=Column(Text, nullable=False))
    flag: bool = Field(default=False)
    flag_reason: str = Field(default="", sa_column=Column(Text, nullable=False))
    opened_posts: list[int] | None = Field(default=None, sa_column=Column(JSON))  # posts opened (0005)
    guideline_version: str = Field(default="", max_length=50)  # the guidelines it was made under (0006)


# The Progress page's counts per study and annotator (store/tallies.py: its kinds and buckets), kept in
# the same transaction as every write they count (0017). No foreign keys: a foreign key's check in the
# submit's transaction would take a share lock on the study's row, which study-wide steps hold for
# update (lock_study) while they wait for the submit's assignment row, a lock cycle on PostgreSQL.
# Deleting a study deletes its tallies itself.
class Tally(SQLModel, table=True):
    __table_args__ = (Index("ix_tally_study_kind_bucket", "study_id", "kind", "bucket"),)  # first, last bin
    study_id: int = Field(primary_key=True)
    annotator_id: int = Field(primary_key=True)
    kind: str = Field(max_length=10, primary_key=True)
    bucket: int = Field(default=0, primary_key=True)
    n: int = Field(default=0)
    total: float = Field(default=0.0)


# One rating inside a judgment: a quality dimension or a rubric aspect ("rubric:<k>") of one response.
class Score(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    judgment_id: int = Field(foreign_key="judgment.id", index=True)
    response: str = Field(max_length=10)
    item: str = Field(max_length=100)
    value: float


# A final decision on a pair, automatic (with its rule) or by an adjudicator; revisions append rows.
class Adjudication(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    adjudicator_id: int | None = Field(default=None, foreign_key="user.id")
    method: str = Field(max_length=20)
    rule: str = Field(default="", max_length=200)
    preference: str = Field(max_length=10)
    keep: bool
    decision: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    note: str = Field(default="", sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


# The append-only audit log: logins, imports, submissions, decisions, exports.
class Event(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, index=True)
    user_id: int | None = Field(default=None, foreign_key="user.id")
    action: str = Field(max_length=50, index=True)
    detail: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


# A browser login: only the sha256 of its random token is stored; sliding expiry, revocable (0004).
class UserSession(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    revoked_at: datetime | None = None


# Failed logins per client (a hash of its address), counted atomically to slow down guessing (0004).
class LoginThrottle(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    client_key: str = Field(max_length=64, unique=True, index=True)
    failures: int = Field(default=0)
    last_failed_at: datetime | None = None


# A reward model's prediction on one pair: a score per response, or a choice with a confidence (0007).
class ModelPrediction(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("pair_id", "model"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    model: str = Field(max_length=200)
    score_chosen: float | None = None
    score_rejected: float | None = None
    choice: str = Field(max_length=10)  # chosen | rejected | tie (from the scores when they are given)
    confidence: float | None = None
    created_at: datetime = Field(default_factory=utcnow)


# The unsaved answers on an item, kept while the annotator works (one per assignment; 0005).
class Draft(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    assignment_id: int = Field(foreign_key="assignment.id", unique=True, index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    answers: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    opened_posts: list[int] = Field(sa_column=Column(JSON, nullable=False))
    updated_at: datetime = Field(default_factory=utcnow)


# A crowd worker's link entry (Prolific, MTurk, ...): only a keyed hash of the worker id is stored (0006).
class CrowdLink(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("study_id", "worker_hash"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    platform: str = Field(max_length=20)
    worker_hash: str = Field(max_length=64)
    platform_study: str = Field(default="", max_length=200)
    platform_session: str = Field(default="", max_length=200)
    started_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None


# One answer in an annotator's training or comprehension check, with whether it was right (0006).
class TrainingAnswer(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    phase: str = Field(max_length=20)  # training | comprehension
    attempt: int = Field(default=1)
    item: str = Field(max_length=200)
    answer: str = Field(default="", max_length=200)
    correct: bool
    created_at: datetime = Field(default_factory=utcnow)


# One LLM judge's rating of one response on one item, or its pair-level preference (response and item
# ""), as the judge saw the pair in one order ("" not recorded, chosen_first, rejected_first). Judge rows
# never enter the human label frame; the report compares them with it (migration 0009_judges).
class JudgeRating(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("pair_id", "judge", "order_shown", "response", "item"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    judge: str = Field(max_length=200)
    order_shown: str = Field(default="", max_length=20)
    response: str = Field(default="", max_length=10)
    item: str = Field(default="", max_length=100)
    value: float | None = None
    preference: float | None = None  # pair level: -2..2, positive = chosen better
    confidence: float | None = None  # pair level: 0..1
    created_at: datetime = Field(default_factory=utcnow)


# The profile owner's own judgment of a pair of their profile: preference (-2..2, positive = chosen), the
# side chosen was shown on, and per rubric aspect whether it describes what they want (0 no, 1 partly,
# 2 yes). Kept apart from the third-party judgments: no annotator's service reads it; the report adds
# it as the owners' rows (migration 0010_owners).
class OwnerJudgment(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("pair_id", "owner"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    pair_id: int = Field(foreign_key="pair.id", index=True)
    owner: str = Field(max_length=200)
    preference: int
    confidence: int | None = None
    side_chosen: str = Field(default="", max_length=1)
    aspects: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # the owner's quality ratings: {"chosen" | "rejected": {dimension: point}} (migration 0014)
    scores: dict[str, dict[str, int]] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    submitted_at: datetime = Field(default_factory=utcnow)


# A single-use link for a profile's owner to rate their own pairs of one study: only the sha256 of its
# token is stored; it expires, can be revoked, and is spent on first use (migration 0011_owner_links).
class OwnerLink(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    owner: str = Field(max_length=200)
    token_hash: str | None = Field(default=None, max_length=64, index=True, unique=True)
    expires_at: datetime
    created_at: datetime = Field(default_factory=utcnow)
    used_at: datetime | None = None
    revoked_at: datetime | None = None


# The newest result computed ahead of a visit for one study (kind "report": the validation report;
# "adjudication": the cleaning list and the adjudication queue), with the data version it covers: the
# pages open with it at once and say which data it covers (pickled by the server's own code; 0016).
class StoredResult(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("study_id", "kind"),)
    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    kind: str = Field(max_length=20)
    version: str = Field(sa_column=Column(Text, nullable=False))
    newest_judgment: int
    n_judgments: int  # the study's judgments up to newest_judgment
    computed_at: datetime = Field(default_factory=utcnow)
    payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
