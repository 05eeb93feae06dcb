"""Training: practice items with feedback, then the comprehension check; the real queue opens after."""

import streamlit as st

from analysis.wording import counted
from annotator.app.assets import filled
from annotator.app.common import (
    CURRENT_STUDY_KEY,
    require,
    safe_md,
    scroll_to_top,
    session,
    show_rubric,
    two_texts,
)
from annotator.errors import UserError
from annotator.people import training
from annotator.people.authorization import Account
from annotator.rating import labels
from annotator.study import study_config

KEY_HINT_KEY = "training_keys"
FEEDBACK_KEY = "training_feedback"  # (feedback, the item answered, the answer) until "Next"
COMPREHENSION_RESULT_KEY = "comprehension_result"  # a failed attempt's message, above the next form


def show_pair(pair: training.PracticePair) -> None:
    """A training pair: the user's question, profile and rubric, then responses A and B (plain text)."""
    st.markdown("**The user's question**")
    st.markdown(safe_md(pair.question))
    if pair.narrative:
        st.caption(safe_md(pair.narrative))
    if pair.profile:
        with st.expander(f"The user's past posts ({len(pair.profile)})"):
            for post in pair.profile:
                st.markdown(safe_md(post.get("text", "")))
    if pair.rubric:
        st.markdown("**What this user cares about**")
        show_rubric(pair.rubric)
    two_texts("Response", pair.response_a, pair.response_b)


def practice(account: Account, study_id: int, state: training.TrainingStatus) -> None:
    """One training item at a time; after an answer, the expected answer, its explanation and the item
    with the annotator's answer, so the explanation can be checked against the text."""
    answered = st.session_state.get(FEEDBACK_KEY)
    if answered is not None:
        feedback, item, choice = answered
        scroll_to_top(state.attempt * 1000 + state.answered)  # the answer was given below the item
        show_feedback(feedback, choice)
        if st.button("Next", type="primary", key="training_next"):
            del st.session_state[FEEDBACK_KEY]
            st.rerun()
        st.divider()
        st.caption("The item you answered")
        show_item(item)
        return
    with session() as active:
        item = training.practice_items(active, account=account, study_id=study_id)[state.answered]
    st.caption(f"Practice item {state.answered + 1} of {state.items} · attempt {state.attempt}")
    show_item(item)
    choice = st.radio(
        "Your answer",
        range(len(item.options)),
        format_func=item.options.__getitem__,
        index=None,
        key=f"training_choice_{state.attempt}_{state.answered}",
    )
    with st.container(key=KEY_HINT_KEY):  # hidden on a phone (no keys to press)
        st.caption("Keys: a digit picks an answer (1 the first), Ctrl+Enter checks it and goes on.")
    marker = state.attempt * 1000 + state.answered  # a new script per item: the browser runs it
    st.html(
        f"<style>@media (max-width: 640px) {{ .st-key-{KEY_HINT_KEY} {{ display: none; }} }}</style>"
        f"<script>/* {marker} */{filled('training.js')}</script>",
        unsafe_allow_javascript=True,
    )
    if st.button("Check my answer", type="primary", key="training_check", disabled=choice is None):
        try:
            with session() as active:
                feedback = training.answer_training(
                    active, account=account, study_id=study_id, choice=int(choice or 0)
                )
        except UserError as exc:
            st.error(str(exc))
            return
        st.session_state[FEEDBACK_KEY] = (feedback, item, item.options[int(choice or 0)])
        st.rerun()


def show_item(item: training.PracticeItem) -> None:
    """A practice item: its pair, or its question."""
    if item.pair is not None:
        show_pair(item.pair)
    else:
        st.markdown(safe_md(item.question))


def show_feedback(feedback: training.Feedback, choice: str) -> None:
    """Right or not, the expected answer and its explanation; at an attempt's end, its score."""
    if feedback.correct:
        st.success(safe_md(f"Right: {choice}."), icon=":material/check:")
    else:
        st.error(
            safe_md(f"Not quite. Your answer: {choice}. The expected answer: {feedback.expected}."),
            icon=":material/close:",
        )
    if feedback.explanation:
        st.info(safe_md(feedback.explanation))
    if feedback.attempt_done:
        score = f"{feedback.right} of {feedback.items} right"
        st.markdown(
            f"Training passed: {score}."
            if feedback.attempt_passed
            else f"Not passed yet: {score}, {feedback.needed} needed. Let's go through it again."
        )


def comprehension(account: Account, study_id: int, state: training.TrainingStatus) -> None:
    """The comprehension check: every question at once, no feedback, a limited number of attempts."""
    with session() as active:
        questions = study_config(active, study_id).training.comprehension
    left = state.comprehension_attempts - state.comprehension_attempts_used
    st.subheader("Comprehension check")
    failed = st.session_state.pop(COMPREHENSION_RESULT_KEY, None)
    if failed:
        st.error(failed)
    st.caption(f"Answer every question. Attempts left: {left}.")
    with st.form(f"comprehension_{state.comprehension_attempts_used}"):
        choices = [
            st.radio(
                safe_md(q.question),
                range(len(q.options)),
                format_func=q.options.__getitem__,
                index=None,
                key=f"comprehension_{state.comprehension_attempts_used}_{k}",
            )
            for k, q in enumerate(questions)
        ]
        submitted = st.form_submit_button("Submit", type="primary")
    if not submitted:
        return
    try:
        with session() as active:
            result = training.submit_comprehension(
                active, account=account, study_id=study_id, choices=choices
            )
    except UserError as exc:
        st.error(str(exc))
        return
    if not result.passed:  # a fresh form for the next attempt, the result above it
        left = result.attempts_left
        more = f"You have {counted(left, 'more attempt')}." if left else "No attempts are left."
        st.session_state[COMPREHENSION_RESULT_KEY] = f"Not all answers were right. {more}"
    st.rerun()


def working_on(account: Account, studies: list[tuple[int, str]]) -> tuple[int, str]:
    """The study whose training this page gives: the one the annotator works on (the rating page's
    choice), else the first that still asks for training, else the first; a choice among several."""
    current = st.session_state.get(CURRENT_STUDY_KEY)
    chosen = next((s for s in studies if s[0] == current), None)
    if chosen is None:
        with session() as active:
            chosen = next(
                (s for s in studies if not training.status(active, account=account, study_id=s[0]).qualified),
                studies[0],
            )
    if len(studies) > 1:
        chosen = st.selectbox(
            "Study", studies, index=studies.index(chosen), format_func=lambda s: s[1], key="training_study"
        )
        st.session_state[CURRENT_STUDY_KEY] = chosen[0]
    return chosen


def main() -> None:
    account = require("annotator")
    st.title("Training")
    with session() as active:
        studies = labels.annotator_studies(active, account=account)
    if not studies:
        st.info("You have no study yet.")
        return
    study_id, name = working_on(account, studies)
    with session() as active:
        state = training.status(active, account=account, study_id=study_id)
    if not state.required or state.qualified:
        st.success("You are qualified: your items are open.", icon=":material/verified:")
        st.page_link("views/annotate.py", label="Start rating", icon=":material/rate_review:")
        return
    if state.comprehension_failed:
        st.error(
            "The comprehension check was not passed; the study cannot continue. Thank you for your time."
        )
        return
    if not state.training_passed or st.session_state.get(FEEDBACK_KEY) is not None:
        practice(account, study_id, state)
    else:
        comprehension(account, study_id, state)


main()
