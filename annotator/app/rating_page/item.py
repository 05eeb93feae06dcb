"""Which item is on the rating page: the annotator's study, what the page reads once per item (its
context), and the item itself: kept across reruns, resumed with its draft after a reload, forgotten
once it is submitted, skipped or flagged."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import streamlit as st

from annotator.app.common import ITEM_KEY, PREFILL_KEY, REOPEN_KEY, REOPEN_STUDY_KEY, STUDY_PARAM, session
from annotator.app.rating_page.form import COMMENT_KEY, OPENED_KEY, answers_from, start_item
from annotator.people import training
from annotator.people.authorization import Account
from annotator.rating import crowd, drafts, labels
from annotator.rating.labels import ItemView, Submission
from annotator.store.models import id_of
from annotator.study import StudyConfig, study_config

STUDY_KEY = "annotate_study"  # the study picker (static/annotate.js keeps digits out of it)
STUDIES_KEY = "annotate_studies"  # the annotator's studies, read once per page run (see choose_study)
CONTEXT_KEY = "annotate_context"  # what the page reads once per item (see item_context)
INDEX_KEY = "annotate_profile_index"  # the item's profile search index (render.show_profile)


def choose_study(account: Account) -> tuple[int, str] | None:
    """The study to work on (a choice only when the annotator has several), kept in the page's address
    (?study_name=...) so that a reload opens the same study. A new page opens, in this order: the study
    a reopened item belongs to (REOPEN_STUDY_KEY, set by My work), the address's study, else
    :func:`opening_study`. The list is read once per page run: an answer's or a submit's rerun of the
    item area reuses it."""
    studies: list[tuple[int, str]] | None = st.session_state.get(STUDIES_KEY)
    if studies is None:
        with session() as active:
            studies = labels.annotator_studies(active, account=account)
        st.session_state[STUDIES_KEY] = studies
    if not studies:
        return None
    by_name = {name: (study_id, name) for study_id, name in studies}
    reopened = st.session_state.pop(REOPEN_STUDY_KEY, None)
    addressed = by_name.get(st.query_params.get(STUDY_PARAM, ""))
    if reopened in studies:
        st.session_state[STUDY_KEY] = reopened
    elif addressed is not None and STUDY_KEY not in st.session_state:
        st.session_state[STUDY_KEY] = addressed
    if st.session_state.get(STUDY_KEY) not in studies:
        with session() as active:
            last = drafts.last_worked_study(active, account=account)
            open_ids = labels.studies_with_open_items(active, account=account)
        st.session_state[STUDY_KEY] = opening_study(studies, last, open_ids)
    if len(studies) == 1:
        chosen = studies[0]
    else:
        chosen = st.selectbox("Study", studies, format_func=lambda s: s[1], key=STUDY_KEY, width=280)
    if st.query_params.get(STUDY_PARAM) != chosen[1]:
        st.query_params[STUDY_PARAM] = chosen[1]
    return chosen


def opening_study(studies: list[tuple[int, str]], last: int | None, open_ids: set[int]) -> tuple[int, str]:
    """The study a new page opens without an address: the one last worked on if it still has items
    to rate, else the first with items to rate, else the one last worked on, else the first.

    >>> opening_study([(1, "a"), (2, "b")], 1, {2})
    (2, 'b')
    >>> opening_study([(1, "a"), (2, "b")], 2, set())
    (2, 'b')
    """
    ranked = sorted(studies, key=lambda s: (s[0] not in open_ids, s[0] != last))
    return ranked[0]


@dataclass(frozen=True)
class ItemContext:
    """What the rating page needs besides the item, read once per item: the study's config, the
    annotator's qualification and progress, and a crowd worker's deadline. An answer's rerun of the
    item area reuses it; a submit, skip or flag (a new item) and every page run read it again."""

    study_id: int
    config: StudyConfig
    qualification: training.TrainingStatus
    progress: labels.Progress
    deadline: datetime | None  # when a crowd worker's session time ends (None: no limit)

    def time_left(self) -> timedelta | None:
        return None if self.deadline is None else max(timedelta(0), self.deadline - datetime.now(UTC))


def item_context(account: Account, study_id: int) -> ItemContext:
    """The context of the item on screen (kept while it is on screen), else read in one session."""
    cached: ItemContext | None = st.session_state.get(CONTEXT_KEY)
    if cached is not None and cached.study_id == study_id and ITEM_KEY in st.session_state:
        return cached
    with session() as active:
        config = study_config(active, study_id)
        qualification = training.status(active, account=account, study_id=study_id)
        done = labels.progress(active, account=account, study_id=study_id)
        left = crowd.time_left(active, account=account, study_id=study_id)
    deadline = None if left is None else datetime.now(UTC) + left
    context = ItemContext(study_id, config, qualification, done, deadline)
    st.session_state[CONTEXT_KEY] = context
    return context


def load_item(
    account: Account, study_id: int, study_name: str, config: StudyConfig
) -> tuple[ItemView, StudyConfig] | None:
    """The item on screen: kept across reruns (its server-side clock starts once); after a reload the
    item with the newest draft comes back with its answers; switching study switches the item."""
    item: ItemView | None = st.session_state.get(ITEM_KEY)
    if item is not None and item.study != study_name:
        item = None
    if item is not None and COMMENT_KEY in st.session_state:
        return item, config
    with session() as active:
        if item is not None:  # the annotator was on another page: the form's values are gone, the draft not
            draft = drafts.load_draft(active, assignment_id=item.assignment_id, account=account)
            start_item(item, config, draft.answers if draft else {}, draft.opened_posts if draft else [])
            return item, config
        prefill: Submission | None = st.session_state.pop(PREFILL_KEY, None)
        reopen = st.session_state.pop(REOPEN_KEY, None)
        resumed = (
            int(reopen)
            if reopen is not None
            else drafts.resume_assignment(active, account=account, study_id=study_id)
        )
        if resumed is None:
            assignment = labels.next_assignment(active, account=account, study_id=study_id)
            if assignment is None:
                return None
            resumed_id = id_of(assignment)
        else:
            resumed_id = resumed
            if prefill is None:
                prefill = labels.current_answers(active, assignment_id=resumed_id, account=account)
        item = labels.show(active, assignment_id=resumed_id, account=account, resume=resumed is not None)
        draft = drafts.load_draft(active, assignment_id=resumed_id, account=account)
    answers = answers_from(prefill) | (draft.answers if draft else {})
    start_item(item, config, answers, draft.opened_posts if draft else [])
    return item, config


def forget_item() -> None:
    """Drop the item on screen and what was read for it, so the page's next run draws the next item."""
    for key in (ITEM_KEY, PREFILL_KEY, OPENED_KEY, INDEX_KEY, CONTEXT_KEY):
        st.session_state.pop(key, None)
