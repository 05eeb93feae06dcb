"""Rate pairs: the question, the user's context, responses A and B, and one form for every answer."""

import uuid

import streamlit as st

from annotator import accounts, labels
from annotator.accounts import Account
from annotator.app.common import current_account, require, safe_md, session
from annotator.errors import AuthError, LabelError, UserError
from annotator.guidelines import guidelines_text
from annotator.labels import ItemView, Submission
from annotator.study import StudyConfig, study_config

SUBMIT_KEYS = "Ctrl+Enter"
SKIP_KEYS = "Ctrl+Shift+K"
ITEM_KEY = "annotate_item"
PREFILL_KEY = "annotate_prefill"
ERROR_KEY = "annotate_error"
SAVED_KEY = "annotate_saved"


def short(label: str) -> str:
    """The part of a scale label before its colon, for compact radio buttons."""
    return label.split(":", 1)[0].strip()


def choose_study(account: Account) -> tuple[int, str] | None:
    """The study to work on (a choice only when the annotator has several)."""
    with session() as active:
        studies = labels.annotator_studies(active, user_id=account.id)
    if not studies:
        return None
    if len(studies) == 1:
        return studies[0]
    return st.selectbox("Study", studies, format_func=lambda s: s[1], key="annotate_study")


def load_item(account: Account, study_id: int) -> tuple[ItemView, StudyConfig] | None:
    """The item on screen: kept across reruns, so its server-side clock starts only once."""
    item: ItemView | None = st.session_state.get(ITEM_KEY)
    with session() as active:
        config = study_config(active, study_id)
        if item is None:
            assignment = labels.next_assignment(active, user_id=account.id, study_id=study_id)
            if assignment is None:
                return None
            item = labels.show(active, assignment_id=int(assignment.id or 0), user_id=account.id)
            st.session_state[ITEM_KEY] = item
            st.session_state["submission_id"] = uuid.uuid4().hex
    return item, config


def show_context(item: ItemView, config: StudyConfig) -> None:
    """The question, the narrative, the rubric and the profile."""
    st.markdown("##### Question")
    st.info(safe_md(item.question), icon=":material/help:")
    if item.narrative:
        with st.expander("The user's own explanation", expanded=True):
            st.markdown(safe_md(item.narrative))
    if item.rubric and config.display.rubric_for_preference:
        with st.expander("What this user cares about (rubric)", expanded=True):
            for number, aspect in enumerate(item.rubric, start=1):
                reason = f": {aspect['reason']}" if aspect["reason"] else ""
                st.markdown(f"{number}. **{safe_md(aspect['aspect'])}**{safe_md(reason)}")
    if item.profile:
        # Lazy: the posts are drawn only while the expander is open (they are the page's heaviest part).
        posts = st.expander(
            f"The user's past posts ({len(item.profile)})",
            expanded=False,
            key=f"profile_{form_key(item)}",
            on_change="rerun",
        )
        if posts.open:
            with posts:
                for number, post in enumerate(item.profile):
                    category = str(post.get("category") or "")
                    title = f"Post {number + 1}" + (f" · {safe_md(category)}" if category else "")
                    with st.expander(title, expanded=number < config.display.profile_posts_open):
                        st.markdown(safe_md(post.get("text", "")))


def show_responses(item: ItemView) -> None:
    """Responses A and B side by side (Streamlit stacks the columns on a narrow window)."""
    left, right = st.columns(2, gap="medium")
    for column, side, text in ((left, "A", item.text_a), (right, "B", item.text_b)):
        with column, st.container(border=True):
            st.markdown(f"#### Response {side}")
            st.caption(f"{len(text.split())} words")
            st.markdown(safe_md(text))


def form_key(item: ItemView) -> str:
    """The prefix of the form's widget keys: a new one per item and per revision."""
    return f"a{item.assignment_id}r{item.revisions}"


def rating_form(item: ItemView, config: StudyConfig) -> None:
    """One form: quality and rubric per response, then the preference; saves nothing until complete."""
    prefill: Submission | None = st.session_state.get(PREFILL_KEY)
    key = form_key(item)
    quality = config.quality
    scale = quality.values

    def initial(side: str, name: str, options: list[int]) -> int | None:
        if prefill is None:
            return None
        value = prefill.scores.get(side, {}).get(name)
        return options.index(int(value)) if value is not None and int(value) in options else None

    with st.form(f"judgment_{key}", border=True):
        st.markdown("##### General quality")
        if quality.intro:
            st.caption(quality.intro)
        columns = st.columns(2, gap="medium")
        for column, side in zip(columns, ("A", "B"), strict=True):
            with column:
                st.markdown(f"**Response {side}**")
                for dimension in quality.dimensions:
                    labels_by_value = dict(zip(scale, dimension.labels, strict=True))
                    st.radio(
                        f"{dimension.name.capitalize()}: {dimension.question}",
                        scale,
                        index=initial(side, dimension.name, scale),
                        format_func=lambda v, m=labels_by_value: short(m[v]),
                        horizontal=True,
                        key=f"{key}_{side}_{dimension.name}",
                        help="\n".join(f"- {label}" for label in dimension.labels),
                    )
        if item.rubric:
            st.markdown("##### Fit with this user's rubric")
            st.caption(config.rubric.question)
            rubric_values = [0, 1, 2]
            columns = st.columns(2, gap="medium")
            for column, side in zip(columns, ("A", "B"), strict=True):
                with column:
                    st.markdown(f"**Response {side}**")
                    for k, aspect in enumerate(item.rubric):
                        st.radio(
                            f"Aspect {k + 1}: {safe_md(aspect['aspect'])}",
                            rubric_values,
                            index=initial(side, f"rubric:{k}", rubric_values),
                            format_func=lambda v: config.rubric.labels[v],
                            horizontal=True,
                            key=f"{key}_{side}_rubric{k}",
                        )
        st.markdown(f"##### {config.preference.question}")
        st.radio(
            config.preference.question,
            list(range(5)),
            index=prefill.preference if prefill is not None else None,
            format_func=lambda v: config.preference.labels[v],
            horizontal=True,
            label_visibility="collapsed",
            key=f"{key}_preference",
        )
        st.radio(
            config.preference.confidence_question,
            [1, 2, 3],
            index=(prefill.confidence - 1) if prefill is not None and prefill.confidence else None,
            format_func=lambda v: config.preference.confidence_labels[v - 1],
            horizontal=True,
            key=f"{key}_confidence",
        )
        st.text_area(
            "Comment (optional)", value=prefill.comment if prefill else "", key=f"{key}_comment", height=80
        )
        st.checkbox(
            "There is a problem with this item (broken text, offensive content, impossible to judge)",
            value=prefill.flag if prefill else False,
            key=f"{key}_flag",
        )
        st.text_input(
            "What is the problem?", value=prefill.flag_reason if prefill else "", key=f"{key}_flag_reason"
        )
        st.form_submit_button(
            "Submit and next",
            type="primary",
            icon=":material/send:",
            shortcut=SUBMIT_KEYS,
            key=f"{key}_submit",
            on_click=save,
            args=(item, config, st.session_state["submission_id"]),
        )
    error = st.session_state.pop(ERROR_KEY, None)
    if error:
        st.error(error, icon=":material/error:")


def form_answers(item: ItemView, config: StudyConfig, submission_id: str) -> Submission:
    """The submitted form, read from its widgets' session state."""
    key = form_key(item)
    state = st.session_state
    scores: dict[str, dict[str, float | None]] = {}
    for side in ("A", "B"):
        scores[side] = {name: state.get(f"{key}_{side}_{name}") for name in config.dimension_names}
        for k in range(len(item.rubric)):
            scores[side][f"rubric:{k}"] = state.get(f"{key}_{side}_rubric{k}")
    return Submission(
        submission_id=submission_id,
        preference=state.get(f"{key}_preference"),
        scores=scores,
        confidence=state.get(f"{key}_confidence"),
        comment=state.get(f"{key}_comment") or "",
        flag=bool(state.get(f"{key}_flag")),
        flag_reason=state.get(f"{key}_flag_reason") or "",
    )


def save(item: ItemView, config: StudyConfig, submission_id: str) -> None:
    """The submit button's callback: save through labels.submit before the page runs again.

    Saving in the callback lets that one run show the next item (no second run after a save).
    `submission_id` was fixed when the form was drawn, so a repeated click is a no-op.
    """
    account = current_account()
    if account is None or account.role != "annotator":
        st.session_state[ERROR_KEY] = "Please log in as an annotator first."
        return
    try:
        with session() as active:
            labels.submit(
                active,
                assignment_id=item.assignment_id,
                user_id=account.id,
                submission=form_answers(item, config, submission_id),
            )
    except (LabelError, AuthError, UserError) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    st.session_state.pop(ITEM_KEY, None)
    st.session_state.pop(PREFILL_KEY, None)
    st.session_state[SAVED_KEY] = True


def skip_box(item: ItemView, account: Account) -> None:
    """Skip with a reason: the item moves to the end of the queue."""
    with st.expander("Skip this item"):
        reason = st.text_input("Why are you skipping it?", key=f"skip_reason_{item.assignment_id}")
        if st.button(
            "Skip", icon=":material/skip_next:", shortcut=SKIP_KEYS, key=f"skip_{item.assignment_id}"
        ):
            try:
                with session() as active:
                    labels.skip(active, assignment_id=item.assignment_id, user_id=account.id, reason=reason)
            except UserError as exc:
                st.error(str(exc))
                return
            st.session_state.pop(ITEM_KEY, None)
            st.session_state.pop(PREFILL_KEY, None)
            st.rerun()


def main() -> None:
    account = require("annotator")
    if st.session_state.pop(SAVED_KEY, False):
        st.toast("Saved.", icon=":material/check:")
    with session() as active:
        acknowledged = accounts.has_acknowledged(active, user_id=account.id)
    if not acknowledged:
        st.warning("Please read the guidelines once before your first item.", icon=":material/menu_book:")
        st.markdown(safe_md(guidelines_text()))
        if st.button("I have read the guidelines: start rating", type="primary", key="ack_guidelines"):
            with session() as active:
                accounts.acknowledge_guidelines(active, user_id=account.id)
            st.rerun()
        return
    study = choose_study(account)
    if study is None:
        st.info("You have no items yet. Your researcher will assign some.")
        return
    study_id, study_name = study
    with session() as active:
        done = labels.progress(active, user_id=account.id, study_id=study_id)
    st.caption(f"Study **{safe_md(study_name)}**")
    st.progress(done.done / done.total if done.total else 1.0, text=f"{done.done} of {done.total} done")
    loaded = load_item(account, study_id)
    if loaded is None:
        st.success(
            f"All done: you have rated all {done.total} items. Thank you!", icon=":material/celebration:"
        )
        st.page_link("views/my_work.py", label="Review or revise your work", icon=":material/history:")
        return
    item, config = loaded
    if item.revisions:
        st.warning(f"You are revising an item you already submitted ({item.revisions} revision(s) so far).")
    show_context(item, config)
    show_responses(item)
    rating_form(item, config)
    skip_box(item, account)
    st.caption(
        f"Shortcuts: **{SUBMIT_KEYS}** submit (not while an answer button has the keyboard focus: click "
        f"on empty space first) · **{SKIP_KEYS}** skip (after giving a reason)"
    )


main()
