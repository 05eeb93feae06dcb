"""Results computed ahead of a visit on the Validation and Adjudicate pages: the stored result, read once
per stored version for the whole server; the line that says which data it covers; and the report worker
that keeps it up to date (started by the served app only, see :func:`enable_worker`)."""

from datetime import UTC, datetime
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app.common import engine, session
from annotator.people.authorization import Account
from annotator.review import report_worker, stored_results
from annotator.review.stored_results import Stored
from annotator.store import db

_worker_enabled = False


def enable_worker() -> None:
    """Let the pages start the report worker (the served app calls this; tests of pages in one
    process do not, so they start no process)."""
    global _worker_enabled
    _worker_enabled = True


def in_server() -> bool:
    """Whether the pages are served to browsers (the served app enabled the worker): a page may then
    wait for a long computation without holding the visit, since the browser reruns it."""
    return _worker_enabled


def keep_updated() -> None:
    """Start this server's report worker for its database unless it runs."""
    if _worker_enabled:
        report_worker.ensure_running(db.resolve_url())


def read(stored: Stored) -> Any:
    """The stored result itself, read now (None when it was replaced while being read)."""
    with session() as active:
        return stored_results.load(active, stored)


@st.cache_resource(max_entries=4, show_spinner="Reading the latest stored result...")
def _payload(url: str, stamp: str, _stored: Stored) -> Any:
    """The stored result with this stamp, read once for the whole server (never changed by a page)."""
    return read(_stored)


def latest(study: str, kind: str, account: Account) -> Stored | None:
    """The stored result of `kind` for `study`, without its payload (None: none yet)."""
    with session() as active:
        return stored_results.latest(active, study=study, kind=kind, account=account)


def payload(stored: Stored) -> Any:
    """The stored result itself, kept for the whole server (None when it was replaced while being read)."""
    return _payload(str(engine().url), stored.stamp, stored)


def store(server_engine: Engine, study: str, kind: str, version: str, value: Any) -> None:
    """Store a result computed on the server's background thread as the study's stored `kind` at
    `version`; from then on the report worker keeps it up to date."""
    with db.session_scope(server_engine) as active:
        stored_results.save(active, study=study, kind=kind, version=version, value=value)
    keep_updated()


def when(moment: datetime) -> str:
    """12:03 UTC today, else 2026-12-04 12:03 UTC."""
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    today = datetime.now(UTC).date() == moment.date()
    return moment.strftime("%H:%M UTC" if today else "%Y-%m-%d %H:%M UTC")


def coverage(stored: Stored, current: str, what: str) -> tuple[str, bool]:
    """The line that says which data the stored result covers ("Report of 12:03 UTC over 291,400
    judgments saved (revisions included); 37 judgments since; updating"), and whether the data changed
    since. Saved judgments count each revision, where the report counts each item's current answers."""
    saved = f"{stored.n_judgments:,} judgments saved (revisions included)"
    line = f"{what} of {when(stored.computed_at)} over {saved}"
    if stored.version == current:
        return line + "; up to date", False
    with session() as active:
        since = stored_results.judgments_since(active, stored=stored)
    changed = f"{since:,} judgment{'s' if since != 1 else ''} since" if since else "the data changed since"
    return f"{line}; {changed}; updating", True
