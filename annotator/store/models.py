"""Every database table of the project, and nothing else."""

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

ROLES = ("annotator", "adjudicator", "researcher")


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (SQLModel stores it as UTC on every engine)."""
    return datetime.now(UTC)


# A study: one rating schema (the TOML config as JSON) and its pairs.
class Study(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, max_length=200)
    config: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


# A preference pair: one user, one question, a chosen and a rejected response.
class Pair(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("study_id", "external_id"),
        Index("ix_pair_id_n_done", "id", "n_done"),  # the queue order reads n_done from here (0003)
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
    status: str = Field(default="pending", max_length=20)
    skip_count: int = Field(default=0)
    skip_reason: str | None = Field(default=None, sa_column=Column(Text))
    shown_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    current_judgment_id: int | None = None
    revisions: int = Field(default=0)


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
