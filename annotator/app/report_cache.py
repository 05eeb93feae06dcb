"""The validation report of a study, computed once per data version and filter set for the whole server.

One `build_report` call (through :func:`annotator.review.study_report.study_report`, the path of `annotator
analyze`) per key; the Validation page and its downloads read the same result. A computation runs on a
background worker, started by the Validation page when it is opened (never by another page: at 100,000
pairs the report is about a minute of CPU, which would slow every page of the process while it runs).
Concurrent callers of one key share one computation.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlalchemy.engine import Engine

from analysis.render import figures, format_for, methods_paragraph
from analysis.report import Report
from annotator.people.authorization import Account
from annotator.review import stored_results
from annotator.review.study_report import study_report
from annotator.store import db

MAX_ENTRIES = 16
Key = tuple[str, str, tuple[int, ...], tuple[str, ...], tuple[str, ...]]


@dataclass
class Published:
    """A report with its figures and its publishable forms (each made once, when first asked for)."""

    report: Report
    plots: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    _files: dict[str, bytes] = field(default_factory=dict, repr=False)

    def file(self, name: str) -> bytes:
        """The report in the registered format `name` (analysis.render.REPORT_FORMATS), made once."""
        with self._lock:
            if name not in self._files:
                self._files[name] = format_for(name).render(self.report).encode("utf-8")
            return self._files[name]

    @cached_property
    def methods(self) -> str:
        return methods_paragraph(self.report)


_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="report")
_futures: "OrderedDict[Key, Future[Published]]" = OrderedDict()
_guard = threading.Lock()


def _compute(
    engine: Engine, study: str, categories: tuple[str, ...], annotators: tuple[str, ...], account: Account
) -> Published:
    with db.session_scope(engine) as session:
        report = study_report(
            session, study=study, categories=categories, annotators=annotators, account=account
        )
    return Published(report, figures(report))


def request(
    key: Key, account: Account, *, engine: Engine, compute: Callable[..., Published] = _compute
) -> "Future[Published]":
    """The (running or finished) computation of `key` = (database URL, study, data version,
    categories, annotators) on `engine`; started now if there is none. A failed one is forgotten, so
    the next call retries."""
    _, study, _, categories, annotators = key
    with _guard:
        future = _futures.get(key)
        if future is not None and not (future.done() and future.exception() is not None):
            _futures.move_to_end(key)
            return future
        run = compute if categories or annotators else _stored(compute, key[2])
        future = _pool.submit(run, engine, study, categories, annotators, account)
        _futures[key] = future
        while len(_futures) > MAX_ENTRIES:
            _futures.popitem(last=False)
        return future


def _stored(compute: Callable[..., Published], version: tuple[int, ...]) -> Callable[..., Published]:
    """`compute` of a whole study's report that also stores it as the study's stored report when done
    (so that a page left before it was ready finds it; a failure to store leaves that to the page)."""

    def run(engine: Engine, study: str, *args: Any) -> Published:
        published = compute(engine, study, *args)
        try:
            with db.session_scope(engine) as session:
                stored_results.save(
                    session,
                    study=study,
                    kind="report",
                    version=stored_results.encode_version(version),
                    value=published.report,
                )
        except Exception:  # noqa: BLE001 - the page stores it again and reports a failure in one line
            pass
        return published

    return run


def ready(key: Key) -> bool:
    """Whether the report of `key` is computed (successfully)."""
    with _guard:
        future = _futures.get(key)
    return future is not None and future.done() and future.exception() is None
