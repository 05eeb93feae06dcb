"""Results computed ahead of a visit: the newest validation report and adjudication queue of a study,
stored with the data version they cover, so that a page opens at once with them and says which data
they cover.

Two kinds: ``report`` (:func:`annotator.review.study_report.study_report` over the whole study, the
same call as ``annotator analyze``, with its figures drawn as SVG, so that no visit draws them) and
``adjudication`` (the cleaning list and the queue built from
it). A study's first result is stored by the page that computed it; from then on the report worker
(:mod:`annotator.review.report_worker`) keeps it up to date. The result is pickled by this module and
read back only by it: in the table on PostgreSQL, in a file beside the database on SQLite (the table
then names the file). Every pickle is sealed with an HMAC under a key kept outside the database
(:func:`results_key`) and unpickled only when its seal holds: whoever can write the table or the folder
cannot make a server run code; a result that fails the check is treated as lost and computed anew.
"""

import contextlib
import functools
import hashlib
import hmac
import json
import os
import pickle
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from annotator.people.authorization import SYSTEM, Account, require_role
from annotator.store import db
from annotator.store.models import Assignment, Judgment, StoredResult, Study, id_of, utcnow
from annotator.study import get_study

if TYPE_CHECKING:
    from analysis.report import Report

Kind = Literal["report", "adjudication"]
KINDS: tuple[Kind, ...] = ("report", "adjudication")
#: Who may read each kind (the report is the researcher's; the queue also the adjudicator's).
READERS: dict[str, tuple[str, ...]] = {
    "report": ("researcher",),
    "adjudication": ("adjudicator", "researcher"),
}


@dataclass(frozen=True)
class Stored:
    """What a stored result covers (its payload is read apart, by :func:`load`)."""

    id: int
    study: str
    kind: str
    version: str
    newest_judgment: int
    n_judgments: int
    computed_at: datetime

    @property
    def stamp(self) -> str:
        """Changes whenever the stored result does (for keeping its payload in memory)."""
        return f"{self.id}:{self.computed_at.isoformat()}:{self.version}"


def encode_version(version: tuple[Any, ...]) -> str:
    """A data version as the text stored and compared, with the code that computes the result
    (:func:`code_fingerprint`, last): a result stored by other code is stale, like one of older data."""
    return json.dumps([*version, code_fingerprint()], default=str)


@functools.cache
def code_fingerprint() -> str:
    """A digest of the source of the code that computes a stored result (the analysis package and this
    tool's review services), read once per process: after an upgrade, or a change of the code, the
    pages never show a result computed by the code before as current, and the worker computes it anew."""
    import analysis
    import annotator.review

    digest = hashlib.sha256()
    for package in (analysis, annotator.review):
        root = Path(str(package.__file__)).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def current_version(session: Session, *, study: str, kind: str) -> str:
    """The data version `kind` of `study` is computed from now (a few cheap reads)."""
    from annotator.review import adjudication_queue, study_progress

    if kind == "report":
        return encode_version(study_progress.data_version(session, study, account=SYSTEM))
    return encode_version(adjudication_queue.queue_version(session, study=study, account=SYSTEM))


def compute(session: Session, *, study: str, kind: str) -> Any:
    """The result of `kind` on the current data: (the Report, its figures as SVG), or (cleaning list,
    queue)."""
    from analysis.render import svg_figures
    from annotator.review import adjudication_queue, study_report

    if kind == "report":
        report = study_report.study_report(session, study=study, account=SYSTEM)
        return report_value(report, svg_figures(report))
    evidence = adjudication_queue.study_evidence(session, study=study, account=SYSTEM)
    return evidence, adjudication_queue.queue(session, study=study, account=SYSTEM, evidence=evidence)


def report_value(report: "Report", figures: dict[str, str]) -> "tuple[Report, dict[str, str]]":
    """What a stored ``report`` holds: the Report and its figures as SVG (:func:`report_of` reads it)."""
    return report, figures


def report_of(value: Any) -> "tuple[Report, dict[str, str]]":
    """The Report and its figures (SVG) in a stored ``report`` value: the pair :func:`compute` gives, or
    a Report stored alone by an earlier version, its figures drawn now."""
    from analysis.render import svg_figures
    from analysis.report import Report

    if isinstance(value, Report):
        return value, svg_figures(value)
    report, figures = value
    return report, figures


def newest_judgment(version: str) -> int:
    """The newest judgment id a version covers (both kinds' versions start with count, newest id)."""
    return int(json.loads(version)[1])


def newest_decision(stored: Stored) -> int:
    """The newest decision id an adjudication result covers (its version's third number)."""
    return int(json.loads(stored.version)[2])


def latest(session: Session, *, study: str, kind: str, account: Account) -> Stored | None:
    """The stored result of `kind` for `study` (without its payload), or None when there is none yet."""
    require_role(session, account, *READERS[kind])
    study_id = id_of(get_study(session, study))
    row = session.execute(
        select(
            col(StoredResult.id),
            col(StoredResult.version),
            col(StoredResult.newest_judgment),
            col(StoredResult.n_judgments),
            col(StoredResult.computed_at),
        ).where(col(StoredResult.study_id) == study_id, col(StoredResult.kind) == kind)
    ).first()
    if row is None:
        return None
    return Stored(int(row[0]), study, kind, str(row[1]), int(row[2]), int(row[3]), row[4])


#: Environment variable with the key that seals stored results (set it to the same value on every server
#: that shares one database); without it, a key file in the user's state folder.
KEY_VAR = "ANNOTATOR_RESULTS_KEY"
#: A SQLite database's stored result: the table's payload names the file beside the database that
#: holds it (a report at 100,000 pairs is about 120 MB: written in the database it would hold the
#: write lock, and so every annotator's submit, for seconds).
FILE_PREFIX = b"file:"
_FILE_NAME = re.compile(r"[0-9]+-(report|adjudication)-[0-9a-f]{32}\.pickle")
_SEAL = hashlib.sha256().digest_size
_PROCESS_KEY = secrets.token_bytes(32)


def results_key() -> bytes:
    """The key that seals stored results: $ANNOTATOR_RESULTS_KEY, else 32 random bytes kept in
    ``$XDG_STATE_HOME/annotator/results.key`` (``~/.local/state`` by default; created once, owner-only),
    else (no writable home) this process's own key: its results are then read back by it alone."""
    given = os.environ.get(KEY_VAR)
    if given:
        return given.encode()
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "annotator"
    path = state / "results.key"
    try:
        if not path.exists():
            state.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # another process made it first
                handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(handle, "wb") as out:
                    out.write(secrets.token_bytes(32))
        return path.read_bytes()
    except OSError:
        return _PROCESS_KEY


def _seal(data: bytes) -> bytes:
    return hmac.new(results_key(), data, hashlib.sha256).digest() + data


def _unsealed(sealed: bytes) -> Any:
    """The value in `sealed`, or None when its seal does not hold (written by someone else)."""
    seal, data = sealed[:_SEAL], memoryview(sealed)[_SEAL:]  # no copy of a report of 100 MB
    if not hmac.compare_digest(seal, hmac.new(results_key(), data, hashlib.sha256).digest()):
        return None
    return pickle.loads(data)


def results_folder(session: Session) -> Path | None:
    """The folder beside a SQLite database's file that holds its stored results (None: PostgreSQL,
    where the result goes in the table: a large write there blocks no other writer)."""
    path = db.sqlite_file(session.get_bind())  # type: ignore[arg-type]
    return None if path is None else path.with_name(f"{path.name}-results")


def load(session: Session, stored: Stored) -> Any:
    """The payload of `stored` (None when it was replaced since it was read, its file is gone, e.g.
    after a restore from a backup, or its seal does not hold)."""
    query = select(col(StoredResult.payload)).where(col(StoredResult.id) == stored.id)
    payload = session.execute(query).scalar()
    if payload is None:
        return None
    if not payload.startswith(FILE_PREFIX):
        return _unsealed(payload)
    folder, name = results_folder(session), payload[len(FILE_PREFIX) :].decode("ascii", "replace")
    if folder is None or not _FILE_NAME.fullmatch(name):
        return None
    try:
        return _unsealed((folder / name).read_bytes())
    except FileNotFoundError:
        return None


def _write_file(folder: Path, prefix: str, data: bytes) -> str:
    """Write `data` to a new file in `folder` (whole or not at all) and remove that prefix's older files
    but the newest one (a page may be reading the result it replaces)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    name = f"{prefix}-{uuid.uuid4().hex}.pickle"
    partial = folder / f".{name}.partial"
    with partial.open("wb") as handle:
        os.chmod(partial, 0o600)
        handle.write(data)
    os.replace(partial, folder / name)
    older = sorted(
        (p for p in folder.glob(f"{prefix}-*.pickle") if p.name != name), key=lambda p: p.stat().st_mtime
    )
    for path in older[:-1]:
        path.unlink(missing_ok=True)
    return name


def save(session: Session, *, study: str, kind: str, version: str, value: Any) -> None:
    """Store `value` as the result of `kind` for `study` at data `version`, replacing the one before
    (one short write; on SQLite the result itself goes to a file beside the database)."""
    study_id = id_of(get_study(session, study))
    payload = _seal(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    folder = results_folder(session)
    if folder is not None:
        payload = FILE_PREFIX + _write_file(folder, f"{study_id}-{kind}", payload).encode("ascii")
    newest = newest_judgment(version)
    session.execute(
        delete(StoredResult).where(col(StoredResult.study_id) == study_id, col(StoredResult.kind) == kind)
    )
    session.add(
        StoredResult(
            study_id=study_id,
            kind=kind,
            version=version,
            newest_judgment=newest,
            n_judgments=_judgments(session, study_id, up_to=newest),
            computed_at=utcnow(),
            payload=payload,
        )
    )


def compute_and_save(engine: Engine, *, study: str, kind: str, version: str) -> None:
    """Compute `kind` of `study` and store it as covering `version`, read before the computation: a
    write made while it runs leaves the stored result stale (recomputed later), never mislabelled."""
    with db.session_scope(engine) as session:
        value = compute(session, study=study, kind=kind)
    with db.session_scope(engine) as session:
        save(session, study=study, kind=kind, version=version, value=value)


def watched(session: Session) -> list[tuple[str, str, str]]:
    """(study, kind, version) of every stored result: what the worker keeps up to date."""
    rows = session.execute(
        select(col(Study.name), col(StoredResult.kind), col(StoredResult.version))
        .join(Study, col(Study.id) == col(StoredResult.study_id))
        .where(col(Study.archived_at).is_(None))
        .order_by(col(Study.name), col(StoredResult.kind))
    ).all()
    return [(str(s), str(k), str(v)) for s, k, v in rows]


def _judgments(session: Session, study_id: int, *, up_to: int | None = None, after: int | None = None) -> int:
    """How many judgments (revisions included) the study has with an id up to `up_to` / after `after`."""
    query = (
        select(func.count(col(Judgment.id)))
        .join(Assignment, col(Assignment.id) == col(Judgment.assignment_id))
        .where(col(Assignment.study_id) == study_id)
    )
    if up_to is not None:
        query = query.where(col(Judgment.id) <= up_to)
    if after is not None:
        query = query.where(col(Judgment.id) > after)
    return int(session.execute(query).scalar() or 0)


def judgments_since(session: Session, *, stored: Stored) -> int:
    """How many judgments of the study were saved after the newest one `stored` covers (reads only those)."""
    return _judgments(session, id_of(get_study(session, stored.study)), after=stored.newest_judgment)
