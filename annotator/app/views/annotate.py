"""Rate pairs: the question and the user's context on top, responses A and B side by side (paragraph
beside paragraph, as long as their text: the page scrolls, no box does) with each response's questions
under it, the preference last. On a phone one response shows at a time, with a sticky A/B switch.

The questions, the comment and the submit button are one st.form: an answer runs nothing on the
server until the submit; the page script keeps every answer as a server-side draft through the draft
route (annotator/app/draft_route.py), and a reload brings it back. One key
per answer: a digit answers the focused question and moves on to the next unanswered one, Ctrl+Enter
submits from anywhere (static/annotate.js; the page's style is static/annotate.css).

This file is the page: it puts the parts together, which live in app/rating_page/ (form.py the form's
model, item.py the item on screen, render.py the drawing, actions.py the buttons, crowd_finish.py a
crowd worker's countdown and completion screen).
"""

import streamlit as st

from annotator.app.common import CURRENT_STUDY_KEY, current_account, require, safe_md, session
from annotator.app.rating_page.actions import SAVED_KEY
from annotator.app.rating_page.crowd_finish import config_warn_minutes, countdown, show_completion, time_over
from annotator.app.rating_page.form import FORM_KEY, item_questions
from annotator.app.rating_page.item import CONTEXT_KEY, STUDIES_KEY, choose_study, item_context, load_item
from annotator.app.rating_page.render import (
    KEY_HINT_KEY,
    key_hint,
    page_assets,
    page_script,
    show_context,
    show_decision,
    show_responses,
    side_actions,
)
from annotator.app.theme import apply_theme
from annotator.people import accounts
from annotator.people.authorization import Account
from annotator.rating import crowd
from annotator.rating.guidelines import guidelines_text


def all_done(account: Account, study_id: int, total: int) -> None:
    """The page once the queue is empty: a thank-you, then a crowd worker's completion code (or the
    "no credit" screen when nothing was rated), else the way to "My work"."""
    with session() as active:
        finished_crowd = crowd.completion(active, account=account, study_id=study_id)
    if finished_crowd is not None and not finished_crowd.credited:  # flagged all, rated nothing
        show_completion(finished_crowd)
        return
    st.success(
        f"All done: nothing is left in your queue ({total} items). Thank you!",
        icon=":material/celebration:",
    )
    if finished_crowd is not None:  # a crowd worker: the completion code, back to the platform
        show_completion(finished_crowd)
        return
    st.page_link("views/my_work.py", label="Review or revise your work", icon=":material/history:")


@st.fragment
def workspace_area() -> None:
    """Everything about the item: a submit, a skip, a flag or an opened post reruns only this part of the
    page (Streamlit fragment), not the navigation, the sidebar and the page's own checks."""
    account = current_account()
    if account is None or account.role != "annotator":  # logged out or deactivated meanwhile
        st.rerun(scope="app")
    message = st.session_state.pop(SAVED_KEY, None)
    if message:  # a skip or a flag (a submit needs none: the next item and the progress bar say it)
        st.toast(message, icon=":material/check:")
    top = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    with top:
        study = choose_study(account)
    if study is None:
        st.info("You have no items yet. Your researcher will assign some.")
        return
    study_id, study_name = study
    st.session_state[CURRENT_STUDY_KEY] = study_id  # the Training page follows it
    context = item_context(account, study_id)
    apply_theme(context.config.display.theme)  # the study's [display] theme
    done, left = context.progress, context.time_left()
    if not context.qualification.qualified:  # training and comprehension before the real queue
        st.info("Please complete the training first; your items open once you pass it.")
        st.page_link("views/training.py", label="Go to training", icon=":material/school:")
        return
    if left is not None and left.total_seconds() <= 0:
        time_over(account, study_id)
        return
    finished = done.done + done.flagged
    if left is not None and finished < done.total:  # no clock beside the completion screen
        with top:
            countdown(left, config_warn_minutes(study_id))
    with top:
        st.progress(
            finished / done.total if done.total else 1.0,
            text=f"Study **{safe_md(study_name)}** · {done.done} of {done.total} done"
            + (f" · {done.flagged} flagged" if done.flagged else ""),
        )
    loaded = load_item(account, study_id, study_name, context.config)
    if loaded is None:
        all_done(account, study_id, done.total)
        return
    item, config = loaded
    questions = item_questions(item, config)
    with top:
        page_script(item, questions)
    if item.revisions:
        st.warning(
            "You are revising an item you already submitted "
            + ("once." if item.revisions == 1 else f"{item.revisions} times.")
        )
    with st.container(key=KEY_HINT_KEY):  # hidden on a phone (no keyboard; static/annotate.css)
        st.caption(key_hint(config))
    show_context(item, config)
    with st.form(FORM_KEY, border=False, enter_to_submit=False):
        show_responses(item, config, questions)
        show_decision(item, config, questions)
    side_actions(item)


ACK_FAULT_KEY = "ack_fault"  # a fault in the acknowledgement's callback (the database down)


def acknowledge(account: Account) -> None:
    """The guidelines button's callback: record the acknowledgement before the page runs again, so
    that this one run draws the first item; a fault is raised again by the page's run (where the
    router says a database fault in one message)."""
    try:
        with session() as active:
            accounts.acknowledge_guidelines(active, account=account)
    except Exception as exc:
        st.session_state[ACK_FAULT_KEY] = exc


def main() -> None:
    account = require("annotator")
    fault = st.session_state.pop(ACK_FAULT_KEY, None)
    if fault is not None:
        raise fault
    page_assets()
    st.title("Rate pairs")
    with session() as active:
        acknowledged = accounts.has_acknowledged(active, account=account)
    if not acknowledged:
        st.warning("Please read the guidelines once before your first item.", icon=":material/menu_book:")
        st.markdown(safe_md(guidelines_text()))
        st.button(
            "I have read the guidelines: start rating",
            type="primary",
            key="ack_guidelines",
            on_click=acknowledge,
            args=(account,),
        )
        return
    for key in (STUDIES_KEY, CONTEXT_KEY):  # a page run reads the studies and the item's context afresh
        st.session_state.pop(key, None)
    workspace_area()


main()
