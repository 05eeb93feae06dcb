"""What the item's buttons do: submit, skip and flag. Each is a callback that saves through the
rating services before the page runs again, so that this one run draws the next item (a revision
is a submit of an item reopened from "My work")."""

from collections.abc import Callable

import streamlit as st
from sqlmodel import Session

from annotator.app import draft_route
from annotator.app.common import current_account, session
from annotator.app.rating_page.form import (
    ACTIONS_KEY,
    ERROR_KEY,
    REASON_KEY,
    REASON_MISSING_KEY,
    form_answers,
    item_tag,
    keep_draft,
)
from annotator.app.rating_page.item import forget_item
from annotator.errors import AuthError, LabelError, TimeOver, UserError
from annotator.people.authorization import Account
from annotator.rating import drafts, labels
from annotator.rating.labels import ItemView
from annotator.study import StudyConfig

SAVED_KEY = "annotate_saved"
LATE_KEY = "annotate_late"  # an answer sent after the time limit (kept as a draft): the message to show
LATE = (
    "Your time for this study ran out before this answer was sent, so it was not counted. "
    "Your answers are kept as a draft."
)


def save(item: ItemView, config: StudyConfig, submission_id: str) -> None:
    """The submit button's callback: save through labels.submit (and drop the draft) in one
    transaction, before the page runs again, so that this one run draws the next item."""
    account = current_account()
    if account is None or account.role != "annotator":
        st.session_state[ERROR_KEY] = "Please log in as an annotator first."
        return
    draft_route.close(item_tag(item))  # no draft from the page after this: the submit clears it
    try:
        with session() as active:
            labels.submit(
                active,
                assignment_id=item.assignment_id,
                account=account,
                submission=form_answers(item, config, submission_id),
            )
            drafts.clear_draft(active, assignment_id=item.assignment_id, account=account)
    except TimeOver:  # after the limit: nothing counts, but the answers are kept as a draft
        keep_draft(item, config)
        st.session_state[LATE_KEY] = LATE
        return
    except LabelError as exc:  # an answer missing: the answers given are kept as the draft (the page
        st.session_state[ERROR_KEY] = str(exc)  # drops its waiting draft when the submit is pressed)
        keep_draft(item, config)
        return
    except (AuthError, UserError) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    forget_item()


def _act(action: Callable[[], None], message: str) -> None:
    try:
        action()
    except TimeOver:
        st.session_state[LATE_KEY] = LATE.replace("this answer was", "this was")
        return
    except UserError as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    forget_item()
    st.session_state[SAVED_KEY] = message


def _reason() -> str:
    return str(st.session_state.get(REASON_KEY) or "")


def _with_reason(
    item: ItemView, kind: str, write: Callable[[Session, Account, str], None], message: str
) -> None:
    """Skip or flag the item with the reason typed; without one nothing happens but a question: the
    reason field stays open, says what it needs and takes the focus."""
    account = current_account()
    reason = _reason()
    if not reason.strip():
        st.session_state[ACTIONS_KEY] = True
        st.session_state[REASON_MISSING_KEY] = kind
        return

    def run() -> None:
        if account is None:
            raise UserError("Please log in first.")
        draft_route.close(item_tag(item))
        with session() as active:
            write(active, account, reason)

    _act(run, message)


def skip_item(item: ItemView) -> None:
    """The skip button's callback: the item moves to the end of the queue (a reason is needed)."""

    def write(active: Session, account: Account, reason: str) -> None:
        labels.skip(active, assignment_id=item.assignment_id, account=account, reason=reason)
        drafts.clear_draft(active, assignment_id=item.assignment_id, account=account)

    _with_reason(item, "skip", write, "Skipped: the item moved to the end of your queue.")


def flag_item(item: ItemView) -> None:
    """The flag button's callback: only a reason is needed; the item leaves the queue."""

    def write(active: Session, account: Account, reason: str) -> None:
        drafts.flag_item(active, assignment_id=item.assignment_id, account=account, reason=reason)

    _with_reason(item, "flag", write, "Flagged: the item went to the researcher and left your queue.")
