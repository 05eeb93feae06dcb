"""The validation report of a study, computed once per data version and filter set for the whole server.

One `build_report` call (through :func:`annotator.review.study_report.study_report`, the path of `annotator
analyze`) per key; the Validation page and its downloads read the same result. A computation runs on
the server's one background thread (:func:`annotator.app.waiting.submit`, shared with Adjudicate's
queue), started by the Validation page when it is opened (never by another page: at 100,000 pairs the
report is about a minute of CPU, which would slow every page of the process while it runs). Concurrent
callers of one key share one computation; the whole study's report is stored by the thread that made it.
"""

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from analysis.render import format_for, methods_paragraph, svg_figures
from analysis.report import Report
from annotator.app import stored_view, waiting
from annotator.people.authorization import Account
from annotator.review import stored_results
from annotator.review.study_report import study_report
from annotator.store import db

Key = tuple[str, str, tuple[int, ...], tuple[str, ...], tuple[str, ...]]


@dataclass
class Published:
    """A report with its figures and its publishable forms (each made once, when first asked for)."""

    report: Report
    plots: dict[str, str] = field(default_factory=dict)  # the figures as SVG, by name
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    _files: dict[str, bytes] = field(default_factory=dict, repr=False)

    def file(self, name: str) -> bytes:
        """The report in the registered format `name` (analysis.render.REPORT_FORMATS), made once."""
        with self._lock:
            if name not in self._files:
                fmt = format_for(name)
                text = fmt.render(self.report, self.plots) if fmt.takes_figures else fmt.render(self.report)
                self._files[name] = text.encode("utf-8")
            return self._files[name]

    @functools.cached_property
    def methods(self) -> str:
        return methods_paragraph(self.report)


def publish(report: Report) -> Published:
    """`report` with its figures drawn (SVG)."""
    return Published(report, svg_figures(report))


def _compute(
    engine: Engine, study: str, categories: tuple[str, ...], annotators: tuple[str, ...], account: Account
) -> Published:
    with db.session_scope(engine) as session:
        report = study_report(
            session, study=study, categories=categories, annotators=annotators, account=account
        )
    return publish(report)


def request(
    key: Key, account: Account, *, engine: Engine, compute: Callable[..., Published] = _compute
) -> "Future[Published]":
    """The (running or finished) computation of `key` = (database URL, study, data version,
    categories, annotators) on `engine`, on the server's background thread; started now if there is
    none (a failed one is started again)."""
    _, study, _, categories, annotators = key
    run = compute if categories or annotators else _stored(compute, key[2])
    job = functools.partial(run, engine, study, categories, annotators, account)
    return waiting.submit(("report", key), job)


def _stored(compute: Callable[..., Published], version: tuple[int, ...]) -> Callable[..., Published]:
    """`compute` of a whole study's report that also stores it as the study's stored report when done,
    so that every later visit (and a page left before it was ready) finds it and the report worker
    keeps it up to date."""

    def run(engine: Engine, study: str, *args: Any) -> Published:
        published = compute(engine, study, *args)
        value = stored_results.report_value(published.report, published.plots)
        stored_view.store(engine, study, "report", stored_results.encode_version(version), value)
        return published

    return run
