"""Pseudonyms: the study's secret key (set once, never exported) and the stable codes it gives
annotators and crowd workers in exports, so no real name or worker id leaves the tool."""

import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from annotator.store.models import Study

if TYPE_CHECKING:  # pandas loads with an export, never at a crowd worker's login
    import pandas as pd

__all__ = ["pseudonym", "pseudonymize_names", "study_secret"]


def study_secret(session: Session, study: Study) -> bytes:
    """The study's pseudonym secret (`Study.pseudonym_key`), created once; never exported.

    The first use sets it only if it is still empty (one conditional UPDATE: parallel first uses wait
    for each other's row lock or SQLite's write lock) and then re-reads it, so every caller hashes with
    the one key that was stored, never a key of its own.
    """
    if not study.pseudonym_key:
        session.execute(
            update(Study)
            .where(col(Study.id) == study.id, col(Study.pseudonym_key).is_(None))
            .values(pseudonym_key=secrets.token_hex(32))
            .execution_options(synchronize_session=False)
        )
        stored = session.execute(
            select(col(Study.pseudonym_key)).where(col(Study.id) == study.id)
        ).scalar_one()
        set_committed_value(study, "pseudonym_key", stored)
    return str(study.pseudonym_key).encode()


def pseudonym(secret: bytes, username: str) -> str:
    """A stable code for an annotator within a study: "R" + 10 hex digits of HMAC-SHA256(secret, name).

    The same study (secret) and name always give the same code; without the study's secret the code
    cannot be recomputed from a list of usernames.

    >>> pseudonym(b"k1", "alice") == pseudonym(b"k1", "alice") != pseudonym(b"k2", "alice")
    True
    """
    return "R" + hmac.new(secret, username.encode("utf-8"), hashlib.sha256).hexdigest()[:10]


def pseudonymize_names(names: "pd.Series", secret: bytes) -> "pd.Series":
    """Each name replaced by its pseudonym; a missing name (None/NaN) stays None, never gets a code."""
    import pandas as pd

    codes = {name: pseudonym(secret, name) for name in names.dropna().unique() if isinstance(name, str)}
    coded = [codes.get(name) if isinstance(name, str) else None for name in names]
    return pd.Series(coded, index=names.index, dtype=object)
