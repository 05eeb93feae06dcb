"""A page that waits for a long computation without holding the visit.

In the served app a computation not done within :data:`WAIT_S` is left running in the server: the page
says what is being computed and since when, checks every :data:`POLL_S` seconds, and runs again once it
is done (then showing its result, or raising its error as a computation in the visit would). Pages run
in one process (AppTest, no browser to run them again) wait for the result as before. :func:`submit`
runs a computation once per key on the server's background thread.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

import streamlit as st

from annotator.app import stored_view

T = TypeVar("T")

WAIT_S = 0.5
POLL_S = 1.0
MAX_ENTRIES = 16

_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="page-compute")
_futures: "OrderedDict[Hashable, Future[Any]]" = OrderedDict()
_guard = threading.Lock()


def submit(key: Hashable, compute: Callable[[], T]) -> "Future[T]":
    """The running or finished computation of `key`, started now if there is none (a failed one is
    started again)."""
    with _guard:
        future = _futures.get(key)
        if future is not None and not (future.done() and future.exception() is not None):
            _futures.move_to_end(key)
            return future
        future = _pool.submit(compute)
        _futures[key] = future
        while len(_futures) > MAX_ENTRIES:
            _futures.popitem(last=False)
        return future


def outcome(future_of: Callable[[], "Future[T]"], name: str, what: str) -> T:
    """The result of the computation `future_of()` gives, waited for in this visit only briefly in the
    served app (see the module docstring); `name` tells this computation's waits apart in the session,
    `what` names it for the reader ("the validation report")."""
    waited: Future[T] | None = st.session_state.pop(_key(name), None)
    future = waited if waited is not None and waited.done() else future_of()
    if not future.done():
        with st.spinner(f"Computing {what}..."):
            try:
                return future.result(timeout=WAIT_S if stored_view.in_server() else None)
            except TimeoutError:
                pass
        _wait(future, name, what)
    return future.result()


def _wait(future: "Future[Any]", name: str, what: str) -> NoReturn:
    """Say that `what` is being computed, run the page again once it is done, and stop here."""
    started = st.session_state.setdefault(f"{_key(name)}_since", datetime.now(UTC))
    st.session_state[_key(name)] = future
    st.info(
        f"{what[:1].upper()}{what[1:]} of the current data is being computed (since "
        f"{stored_view.when(started)}; a large study takes a minute or more). It appears here by itself "
        "when it is ready; you can use the other pages meanwhile."
    )

    @st.fragment(run_every=POLL_S)
    def check() -> None:
        if future.done():
            st.rerun()

    check()
    st.stop()


def _key(name: str) -> str:
    return f"waiting_{name}"
