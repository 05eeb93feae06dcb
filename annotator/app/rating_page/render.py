"""Drawing the item on the rating page: the question and the user's context, responses A and B
paragraph beside paragraph with each response's questions under it, the judgment with the submit
button, the skip/flag actions, and the page's script and style (static/annotate.js, annotate.css)."""

import json
import re
from datetime import UTC, datetime

import streamlit as st

from analysis.vocabulary import RUBRIC_DOMAIN
from annotator.app import draft_route
from annotator.app.assets import filled, static_text
from annotator.app.common import SUBMISSION_KEY, TOKEN_KEY, opened, safe_md
from annotator.app.rating_page.actions import flag_item, save, skip_item
from annotator.app.rating_page.form import (
    ACTIONS_KEY,
    COMMENT_KEY,
    ERROR_KEY,
    REASON_KEY,
    REASON_MISSING_KEY,
    Question,
    item_tag,
    legend,
    post_opened,
    widget_key,
)
from annotator.app.rating_page.item import INDEX_KEY
from annotator.rating import profile_search
from annotator.rating.labels import ItemView
from annotator.study import StudyConfig

SUBMIT_KEYS = "Ctrl+Enter"
SKIP_KEYS = "Ctrl+Shift+K"


def key_hint(config: StudyConfig) -> str:
    """The keyboard help above the form, naming the study's quality scales ("1-5 scales")."""
    ranges = list(dict.fromkeys(scale.text() for scale in config.quality.scales.values()))
    named = ", ".join(ranges[:-1]) + " and " + ranges[-1] if len(ranges) > 1 else ranges[0]
    return (
        "Keys: a **digit** answers the question in focus and moves to the next unanswered one "
        f"({named} scales, 0-2 rubric) · **{SUBMIT_KEYS}** submits · **Tab** / "
        f"**Shift+Tab** move between questions · **{SKIP_KEYS}** skips (after a reason). Answers are kept "
        "as a draft as you give them."
    )


KEY_HINT_KEY = "key_hint"  # the container of key_hint()
SUBMIT_BUTTON = "annotate_submit"
MATCHES_SHOWN = 20
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def show_context(item: ItemView, config: StudyConfig) -> None:
    """The question, the narrative and the profile (ranked by relevance, searchable)."""
    st.markdown("## Question")
    st.info(safe_md(item.question), icon=":material/help:")
    left, right = st.columns(2, gap="medium")
    if item.narrative:
        with left.expander("The user's own explanation", expanded=True, icon=":material/person:"):
            st.markdown(safe_md(item.narrative))  # as long as it is: the page scrolls, the box does not
    if item.rubric and config.display.rubric_for_preference and not config.display.rubric_for_ratings:
        with left.expander("What this user cares about (rubric)", expanded=False):
            for number, aspect in enumerate(item.rubric, start=1):
                st.markdown(f"{number}. **{safe_md(aspect['aspect'])}**")
    if item.profile:
        with right:
            show_profile(item, config)


def show_profile(item: ItemView, config: StudyConfig) -> None:
    """The user's past posts: the most relevant to the question first (BM25), a search over all."""
    total = len(item.profile)
    shown = min(item.profile_shown, total)
    posts = opened(
        f"The user's past posts (showing {shown} of {total})", f"profile_{item_tag(item)}", ":material/forum:"
    )
    if posts is None:
        return
    cached = st.session_state.get(INDEX_KEY)
    if cached is None or cached[0] != item.assignment_id:
        index = profile_search.build_index(item.profile)
        cached = (item.assignment_id, index, profile_search.rank(index, item.question))
        st.session_state[INDEX_KEY] = cached
    _, index, ranked = cached
    with posts:
        query = st.text_input(
            "Search all posts",
            key=f"{item_tag(item)}_profile_q",
            placeholder="words to look for in the user's posts",
            type="search",
        )
        if query and query.strip():
            matches = profile_search.search(index, query)
            more = f"; the first {MATCHES_SHOWN} shown" if len(matches) > MATCHES_SHOWN else ""
            st.caption(f"{len(matches)} of {total} posts match{more}")
            numbers = matches[:MATCHES_SHOWN]
        else:
            st.caption(f"Showing {shown} of {total} posts, the most relevant to the question first.")
            numbers = ranked[:shown]
        for number in numbers:
            post = item.profile[number]
            category = str(post.get("category") or "")
            title = f"Post {number + 1}" + (f" · {safe_md(category)}" if category else "")
            with st.expander(
                title,
                expanded=False,
                key=f"{item_tag(item)}_post{number}",
                on_change=post_opened,
                args=(item, config, number),
            ):
                st.markdown(safe_md(post.get("text", "")))


def ask(question: Question) -> None:
    """One question as a segmented control in the rating form: its label (the accessible name) says
    which response it is about and what it asks; every option shows its number and its words in
    full. No help button: it would be a Tab stop between two questions. An answer runs nothing on
    the server (the form sends its values with the submit); the page script keeps it as a draft."""
    st.segmented_control(
        question.label,
        question.options,
        format_func=question.option_labels.__getitem__,
        key=widget_key(question),
        required=True,  # a click on the chosen answer keeps it (a mis-click never clears an answer)
        width="stretch",
    )


def paragraphs(text: str) -> list[str]:
    """A response's paragraphs (split at blank lines, never inside a fenced code block), each drawn on
    its own so that paragraph k of A sits beside paragraph k of B."""
    blocks: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if not line.strip() and not fenced:
            if blocks[-1]:
                blocks.append([])
            continue
        blocks[-1].append(line)
    return ["\n".join(block) for block in blocks if block] or [""]


SIDE_SWITCH = (
    '<div class="ps-switch" role="group" aria-label="Show response">'
    '<button type="button" data-side="A" aria-pressed="true">Response A</button>'
    '<button type="button" data-side="B" aria-pressed="false">Response B</button></div>'
)


def show_responses(item: ItemView, config: StudyConfig, questions: list[Question]) -> None:
    """Responses A and B in one grid, paragraph beside paragraph, as long as their texts; then each
    response's questions in its own column. On a phone (static/annotate.css) the sticky A/B switch
    shows one response and its questions at a time, at the same place on the page."""
    st.html(SIDE_SWITCH)
    with st.container(key="texts", gap=None):
        for side, text in (("A", item.text_a), ("B", item.text_b)):
            with st.container(key=f"pane_{side}", gap=None):
                st.markdown(f"### Response {side} :gray[({len(text.split())} words)]")
                for paragraph in paragraphs(text):
                    st.markdown(safe_md(paragraph))
    columns = st.columns(2, gap="medium")
    for column, side in zip(columns, ("A", "B"), strict=True):
        with column, st.container(key=f"questions_{side}"):
            st.markdown(f"#### Your rating of response {side}")
            first_aspect = True
            for question in questions:
                if question.side != side:
                    continue
                if question.aspect and first_aspect:
                    st.caption(
                        f"**Rubric fit** · {safe_md(legend(list(RUBRIC_DOMAIN), list(config.rubric.labels)))}"
                    )
                    first_aspect = False
                ask(question)


def show_decision(item: ItemView, config: StudyConfig, questions: list[Question]) -> None:
    """The preference, the confidence, an optional comment and the submit button."""
    st.markdown("### Your judgment")
    left, right = st.columns([3, 2], gap="medium")
    with left:
        for question in questions:
            if not question.side:
                ask(question)
    right.text_area(
        "Comment (optional)",
        key=COMMENT_KEY,
        height=68,
    )
    right.form_submit_button(
        "Submit and next",
        type="primary",
        icon=":material/send:",
        key=SUBMIT_BUTTON,
        on_click=save,
        args=(item, config, st.session_state[SUBMISSION_KEY]),
    )
    error = st.session_state.pop(ERROR_KEY, None)
    if error:
        st.error(error, icon=":material/error:")


REASON_LABEL = "Why? (needed to skip, or to report a broken text, offensive content, an impossible item)"
REASON_NEEDED = {
    "skip": "Please give a reason for skipping, then press Skip again.",
    "flag": "Please say what is wrong with the item, then press the button again.",
}


def side_actions(item: ItemView) -> None:
    """Skip the item, or flag it as broken, with a reason (no rating needed): one expander, which stays
    open and asks for the reason when Skip or Flag is pressed without one (static/focus_reason.js
    gives the reason field the focus)."""
    actions = opened("Skip this item or report it as broken", ACTIONS_KEY, ":material/flag:")
    if actions is None:
        return
    missing = st.session_state.pop(REASON_MISSING_KEY, None)
    with actions:
        st.text_input(REASON_LABEL, key=REASON_KEY)
        if missing:
            st.error(REASON_NEEDED[missing], icon=":material/edit:")
            st.html(f"<script>{filled('focus_reason.js')}</script>", unsafe_allow_javascript=True)
        with st.container(horizontal=True, gap="small"):
            st.button(
                "Skip",
                icon=":material/skip_next:",
                shortcut=SKIP_KEYS,
                key="skip",
                on_click=skip_item,
                args=(item,),
            )
            st.button("Flag as broken", icon=":material/flag:", key="flag", on_click=flag_item, args=(item,))


def page_assets() -> None:
    """The page's style and its script (installed once per browser tab; see static/annotate.js), in
    one element: each element drawn costs the browser's tab its own work on a first visit."""
    st.html(
        f"<style>{static_text('annotate.css')}</style><script>{static_text('annotate.js')}</script>",
        unsafe_allow_javascript=True,
    )


def page_script(item: ItemView, questions: list[Question]) -> None:
    """The item on screen for the page's script (static/item.js hands it to annotate.js): its tag, the
    clock's start, every question it waits for before the submit button takes input and those the
    item starts answered (the focus waits until the form shows them). The item is
    registered with the draft route under its tag, with its questions' options in page order."""
    token = st.session_state.get(TOKEN_KEY)
    if token:
        draft_route.show(
            item_tag(item),
            assignment_id=item.assignment_id,
            session_token=token,
            questions={widget_key(q): (q.name, tuple(q.options)) for q in questions},
        )
    need = [widget_key(question) for question in questions]
    answered = [key for key in need if st.session_state.get(key) is not None]  # a draft's or a revision's
    start = item.shown_at or datetime.now(UTC)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    data = json.dumps(
        {"item": item_tag(item), "start": int(start.timestamp() * 1000), "need": need, "answered": answered}
    )
    data = data.replace("</", "<\\/")
    st.html(
        '<span class="ps-timer" aria-live="off">Time on this item: <b id="ps-timer">0:00</b></span>'
        f"<script>{filled('item.js', item=data)}</script>",
        unsafe_allow_javascript=True,
    )
