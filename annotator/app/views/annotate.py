"""Rate pairs: the question and the user's context on top, responses A and B side by side (paragraph
beside paragraph, as long as their text: the page scrolls, no box does) with each response's questions
under it, the preference last. On a phone one response shows at a time, with a sticky A/B switch.

Every answer is kept as a server-side draft as soon as it is given (a reload brings it back). One key
per answer: a digit answers the focused question and moves on to the next unanswered one, Ctrl+Enter
submits from anywhere (static/annotate.js; the page's style is static/annotate.css).
"""

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import streamlit as st

from analysis.vocabulary import CONFIDENCE_DOMAIN, RUBRIC_DOMAIN
from annotator.app.assets import filled, static_text
from annotator.app.common import (
    ACCOUNT_KEY,
    CURRENT_STUDY_KEY,
    ITEM_KEY,
    PREFILL_KEY,
    REOPEN_KEY,
    SUBMISSION_KEY,
    current_account,
    require,
    safe_md,
    session,
)
from annotator.app.theme import apply_theme
from annotator.errors import AuthError, LabelError, TimeOver, UserError
from annotator.people import accounts, training
from annotator.people.accounts import Account
from annotator.rating import crowd, drafts, labels, profile_search
from annotator.rating.guidelines import guidelines_text
from annotator.rating.labels import SUPPORT_PREFIX, ItemView, Submission
from annotator.store.models import id_of
from annotator.study import StudyConfig

SUBMIT_KEYS = "Ctrl+Enter"
SKIP_KEYS = "Ctrl+Shift+K"
KEY_HINT = (
    "Keys: a **digit** answers the question in focus and moves to the next unanswered one "
    f"(1-5 scales, 0-2 rubric) · **{SUBMIT_KEYS}** submits · **Tab** / **Shift+Tab** move between "
    f"questions · **{SKIP_KEYS}** skips (after a reason). Answers are kept as a draft as you give them."
)
ERROR_KEY = "annotate_error"
SAVED_KEY = "annotate_saved"
STUDY_KEY = "annotate_study"
SUBMIT_BUTTON = "annotate_submit"
OPENED_KEY = "annotate_opened_posts"
INDEX_KEY = "annotate_profile_index"
REASON_KEY = "item_reason"  # why the item is skipped or flagged
LATE_KEY = "annotate_late"  # an answer sent after the time limit (kept as a draft): the message to show
LATE = (
    "Your time for this study ran out before this answer was sent, so it was not counted. "
    "Your answers are kept as a draft."
)
ACTIONS_KEY = "item_actions"  # the skip / flag expander (open while a reason is asked for)
REASON_MISSING_KEY = "item_reason_missing"
STUDIES_KEY = "annotate_studies"  # the annotator's studies, read once per page run (see choose_study)
REDRAW_KEY = "annotate_redraw"  # a question's callback asks for the whole page to run again
CONTEXT_KEY = "annotate_context"  # what the page reads once per item (see item_context)
FORM_PREFIX = "q"  # the rating form's widget keys: the same for every item (values reset per item)
MATCHES_SHOWN = 20
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


@dataclass(frozen=True)
class Question:
    """One question of the rating form, as drawn: its widget key suffix, the draft/answer key, the
    accessible label (which names the response it is about), the options and their labels."""

    name: str  # "A:correctness", "B:rubric:0", "preference", "confidence"
    label: str
    options: list[int]
    option_labels: dict[int, str]
    side: str = ""  # "A" or "B" for a question about one response
    aspect: dict[str, str] = field(default_factory=dict)  # for a rubric question: aspect, reason, evidence

    @property
    def widget(self) -> str:
        return self.name.replace(":", "_").replace("rubric_", "rubric")


def _unnumbered(value: int, label: str) -> str:
    """A scale label without its leading number ("2 - Mostly wrong" -> "Mostly wrong")."""
    return re.sub(rf"^\s*{value}\s*[-–.:)]?\s*", "", label)


def option_label(value: int, label: str) -> str:
    """A button label in full: the number, then the scale label's words ("2 Mostly wrong: several
    real errors"); the number comes first, as the key that chooses it."""
    return f"{value} {_unnumbered(value, label)}".strip()


def legend(values: list[int], texts: list[str]) -> str:
    """ "0 = does not cover · 1 = ..." for a scale whose buttons show only numbers."""
    return " · ".join(f"{v} = {_unnumbered(v, t)}" for v, t in zip(values, texts, strict=True))


def rubric_label(side: str, aspect: dict[str, str]) -> str:
    """A rubric question's label, read beside its 0/1/2 choice: the response, the aspect, its reason and
    its evidence quote, as plain text (it is also the question's accessible name)."""
    flat = {key: " ".join(str(aspect.get(key) or "").split()) for key in ("aspect", "reason", "evidence")}
    label = f"Response {side} · {flat['aspect']}"
    if flat["reason"]:
        label += f": {flat['reason']}"
    if flat["evidence"]:
        label += f" · Evidence: “{flat['evidence']}”"
    return safe_md(label)


def item_questions(item: ItemView, config: StudyConfig) -> list[Question]:
    """Every question of the item, built from the study config and the item's display settings:
    per response its quality dimensions then its rubric aspects, then the preference and confidence.
    (The one place to extend the form: a page draws what this returns, in this order.)"""
    questions: list[Question] = []
    quality = config.quality
    show_reasons = config.display.rubric_for_ratings
    for side in ("A", "B"):
        for dimension in quality.dimensions:
            labels_by_value = dict(zip(quality.values, dimension.labels, strict=True))
            questions.append(
                Question(
                    name=f"{side}:{dimension.name}",
                    label=f"Response {side} · {dimension.name.capitalize()}: {dimension.question}",
                    options=list(quality.values),
                    option_labels={v: option_label(v, labels_by_value[v]) for v in quality.values},
                    side=side,
                )
            )
        for k, aspect in enumerate(item.rubric):
            questions.append(
                Question(
                    name=f"{side}:rubric:{k}",
                    label=rubric_label(side, aspect if show_reasons else {"aspect": aspect["aspect"]}),
                    options=list(RUBRIC_DOMAIN),
                    option_labels={v: str(v) for v in RUBRIC_DOMAIN},
                    side=side,
                    aspect=aspect if show_reasons else {"aspect": aspect["aspect"]},
                )
            )
    if item.ask_support:  # rubric verification: about the pair, asked once per aspect
        for k, aspect in enumerate(item.rubric):
            questions.append(
                Question(
                    name=f"{SUPPORT_PREFIX}{k}",
                    label=f"Aspect {k + 1} ({safe_md(aspect['aspect'])}): supported by what the user wrote?",
                    options=list(RUBRIC_DOMAIN),
                    option_labels={v: f"{v} {t}" for v, t in enumerate(config.rubric.support_labels)},
                )
            )
    questions.append(
        Question(
            name="preference",
            label=config.preference.question,
            options=list(range(5)),
            option_labels={v: f"{v + 1} {config.preference.labels[v]}" for v in range(5)},
        )
    )
    questions.append(
        Question(
            name="confidence",
            label=config.preference.confidence_question,
            options=list(CONFIDENCE_DOMAIN),
            option_labels={
                v: option_label(v, config.preference.confidence_labels[v - 1]) for v in CONFIDENCE_DOMAIN
            },
        )
    )
    return questions


def item_tag(item: ItemView) -> str:
    """The item on screen, per display: a random token (labels.ItemView.token), never a database id,
    so the page says nothing about which item, pair or control it is. The page script knows a new item
    by it, and the profile's expanders are keyed by it (so that they open closed on every item)."""
    return item.token


def widget_key(question: Question) -> str:
    """A question's widget key. It is the same on every item, so that Streamlit updates the form in
    place rather than drawing it anew (a new key per item took a third of the time to the next item);
    `start_item` sets every value for the new item."""
    return f"{FORM_PREFIX}_{question.widget}"


COMMENT_KEY = f"{FORM_PREFIX}_comment"


# ------------------------------------------------------------------------------------------ loading


def choose_study(account: Account) -> tuple[int, str] | None:
    """The study to work on (a choice only when the annotator has several). The list is read once per
    page run: an answer's or a submit's rerun of the item area reuses it."""
    studies: list[tuple[int, str]] | None = st.session_state.get(STUDIES_KEY)
    if studies is None:
        with session() as active:
            studies = labels.annotator_studies(active, account=account)
        st.session_state[STUDIES_KEY] = studies
    if not studies:
        return None
    if len(studies) == 1:
        return studies[0]
    return st.selectbox("Study", studies, format_func=lambda s: s[1], key=STUDY_KEY, width=280)


def _answers_from(submission: Submission | None) -> dict[str, Any]:
    """A submitted judgment as draft answers (to prefill a revision)."""
    if submission is None:
        return {}
    answers: dict[str, Any] = {
        f"{side}:{name}": value for side, items in submission.scores.items() for name, value in items.items()
    }
    answers.update(
        preference=submission.preference, confidence=submission.confidence, comment=submission.comment
    )
    answers.update(submission.support)  # rubric support answers, "support:<k>"
    return answers


def start_item(item: ItemView, config: StudyConfig, answers: dict[str, Any], opened: list[int]) -> None:
    """Put a freshly drawn item on screen with its answers so far (a revision's or a draft's)."""
    state = st.session_state
    state[ITEM_KEY] = item
    state[SUBMISSION_KEY] = uuid.uuid4().hex
    state[OPENED_KEY] = set(opened)
    for question in item_questions(item, config):
        value = answers.get(question.name)
        state[widget_key(question)] = (
            None if value is None or int(value) not in question.options else int(value)
        )
    state[COMMENT_KEY] = str(answers.get("comment") or "")
    state[REASON_KEY] = ""
    state[ACTIONS_KEY] = False
    state.pop(REASON_MISSING_KEY, None)


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
        config = labels.study_config(active, study_id)
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
    answers = _answers_from(prefill) | (draft.answers if draft else {})
    start_item(item, config, answers, draft.opened_posts if draft else [])
    return item, config


# ------------------------------------------------------------------------------------------ drafts


def current_answers(item: ItemView, config: StudyConfig) -> dict[str, Any]:
    """The answers given so far, read from the widgets' session state, as draft answers."""
    state = st.session_state
    answers: dict[str, Any] = {q.name: state.get(widget_key(q)) for q in item_questions(item, config)}
    answers["comment"] = state.get(COMMENT_KEY) or ""
    return {name: value for name, value in answers.items() if value not in (None, "")}


def keep_draft(item: ItemView, config: StudyConfig) -> None:
    """A widget's callback: keep the answers (and the posts opened) on the server."""
    account = current_account()
    if account is None:
        return
    try:
        with session() as active:
            drafts.save_draft(
                active,
                assignment_id=item.assignment_id,
                account=account,
                answers=current_answers(item, config),
                opened_posts=sorted(st.session_state.get(OPENED_KEY, set())),
            )
    except (AuthError, UserError) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        st.session_state[REDRAW_KEY] = True


def post_opened(item: ItemView, config: StudyConfig, number: int) -> None:
    """A post's expander callback: remember that the annotator opened it (saved with the judgment)."""
    opened: set[int] = st.session_state.setdefault(OPENED_KEY, set())
    if number not in opened:
        opened.add(number)
        keep_draft(item, config)


# ------------------------------------------------------------------------------------------ drawing


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
    posts = st.expander(
        f"The user's past posts (showing {shown} of {total})",
        expanded=False,
        key=f"profile_{item_tag(item)}",
        on_change="rerun",
        icon=":material/forum:",
    )
    if not posts.open:
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


def ask(item: ItemView, config: StudyConfig, question: Question) -> None:
    """One question as a segmented control: its label (the accessible name) says which response it is
    about and what it asks; every option shows its number and its words in full. No help button: it
    would be a Tab stop between two questions.

    An answer reruns the item area (a fragment; its callback keeps the draft). A question is not a
    fragment of its own: its rerun would redraw the control under the key handler, which then lost the
    next digits. When the callback found the login ended, or could not keep the draft, the whole page
    runs again (the login page, or the item area with the error)."""
    if st.session_state.pop(REDRAW_KEY, False) or ACCOUNT_KEY not in st.session_state:
        st.rerun(scope="app")
    st.segmented_control(
        question.label,
        question.options,
        format_func=question.option_labels.__getitem__,
        key=widget_key(question),
        width="stretch",
        on_change=keep_draft,
        args=(item, config),
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
                ask(item, config, question)


def show_decision(item: ItemView, config: StudyConfig, questions: list[Question]) -> None:
    """The preference, the confidence, an optional comment and the submit button."""
    st.markdown("### Your judgment")
    left, right = st.columns([3, 2], gap="medium")
    with left:
        for question in questions:
            if not question.side:
                ask(item, config, question)
    right.text_area(
        "Comment (optional)",
        key=COMMENT_KEY,
        height=68,
        on_change=keep_draft,
        args=(item, config),
    )
    right.button(
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


def form_answers(item: ItemView, config: StudyConfig, submission_id: str) -> Submission:
    """The submission built from the widgets' session state."""
    answers = current_answers(item, config)
    scores: dict[str, dict[str, float | None]] = {"A": {}, "B": {}}
    support: dict[str, float | None] = {}
    for question in item_questions(item, config):
        if question.side:
            scores[question.side][question.name.split(":", 1)[1]] = answers.get(question.name)
        elif question.name.startswith(SUPPORT_PREFIX):
            support[question.name] = answers.get(question.name)
    return Submission(
        submission_id=submission_id,
        preference=answers.get("preference"),
        scores=scores,
        support=support,
        confidence=answers.get("confidence"),
        comment=answers.get("comment", ""),
        opened_posts=tuple(sorted(st.session_state.get(OPENED_KEY, set()))),
    )


def _next_item() -> None:
    for key in (ITEM_KEY, PREFILL_KEY, OPENED_KEY, INDEX_KEY, CONTEXT_KEY):
        st.session_state.pop(key, None)


def save(item: ItemView, config: StudyConfig, submission_id: str) -> None:
    """The submit button's callback: save through labels.submit (and drop the draft) in one
    transaction, before the page runs again, so that this one run draws the next item."""
    account = current_account()
    if account is None or account.role != "annotator":
        st.session_state[ERROR_KEY] = "Please log in as an annotator first."
        return
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
    except (LabelError, AuthError, UserError) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    _next_item()


def _act(action: Callable[[], None], message: str) -> None:
    try:
        action()
    except TimeOver:
        st.session_state[LATE_KEY] = LATE.replace("this answer was", "this was")
        return
    except UserError as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    _next_item()
    st.session_state[SAVED_KEY] = message


def _reason() -> str:
    return str(st.session_state.get(REASON_KEY) or "")


def skip_item(item: ItemView) -> None:
    """The skip button's callback: the item moves to the end of the queue. Without a reason nothing
    happens but a question: the reason field stays open, says what it needs and takes the focus."""
    account = current_account()
    reason = _reason()
    if not reason.strip():
        st.session_state[ACTIONS_KEY] = True
        st.session_state[REASON_MISSING_KEY] = "skip"
        return

    def run() -> None:
        if account is None:
            raise UserError("Please log in first.")
        with session() as active:
            labels.skip(active, assignment_id=item.assignment_id, account=account, reason=reason)
            drafts.clear_draft(active, assignment_id=item.assignment_id, account=account)

    _act(run, "Skipped: the item moved to the end of your queue.")


def flag_item(item: ItemView) -> None:
    """The flag button's callback: only a reason is needed; the item leaves the queue."""
    account = current_account()
    reason = _reason()
    if not reason.strip():
        st.session_state[ACTIONS_KEY] = True
        st.session_state[REASON_MISSING_KEY] = "flag"
        return

    def run() -> None:
        if account is None:
            raise UserError("Please log in first.")
        with session() as active:
            drafts.flag_item(active, assignment_id=item.assignment_id, account=account, reason=reason)

    _act(run, "Flagged: the item went to the researcher and left your queue.")


REASON_LABEL = "Why? (needed to skip, or to report a broken text, offensive content, an impossible item)"
REASON_NEEDED = {
    "skip": "Please give a reason for skipping, then press Skip again.",
    "flag": "Please say what is wrong with the item, then press the button again.",
}


def side_actions(item: ItemView) -> None:
    """Skip the item, or flag it as broken, with a reason (no rating needed): one expander, which stays
    open and asks for the reason when Skip or Flag is pressed without one."""
    actions = st.expander(
        "Skip this item or report it as broken", icon=":material/flag:", key=ACTIONS_KEY, on_change="rerun"
    )
    if not actions.open:
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
    """The page's style and its script (installed once per browser tab; see static/annotate.js)."""
    st.html(f"<style>{static_text('annotate.css')}</style>")
    st.html(f"<script>{static_text('annotate.js')}</script>", unsafe_allow_javascript=True)


def page_script(item: ItemView, config: StudyConfig) -> None:
    """The item on screen for the page's script: its tag, the clock's start and every question it
    waits for before the submit button takes input."""
    need = [widget_key(question) for question in item_questions(item, config)]
    start = item.shown_at or datetime.now(UTC)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    data = json.dumps({"item": item_tag(item), "start": int(start.timestamp() * 1000), "need": need})
    data = data.replace("</", "<\\/")
    st.html(
        '<span class="ps-timer" aria-live="off">Time on this item: <b id="ps-timer">0:00</b></span>'
        f"<script>{filled('item.js', item=data)}</script>",
        unsafe_allow_javascript=True,
    )


def show_completion(completion: crowd.Completion) -> None:
    """The crowd worker's completion code, and a redirect to the platform's completion URL; or, for
    too little real work, the "no credit" screen with its reason."""
    if not completion.credited:
        st.error(
            f"No completion code: {safe_md(completion.reason)}. Please return the study on the platform.",
            icon=":material/block:",
        )
        return
    if completion.code:
        st.markdown("Your completion code:")
        st.code(completion.code, language=None)
    if crowd.may_redirect(completion.url):  # https, or http to this machine (a local trial)
        st.link_button("Return to the platform", completion.url, type="primary")
        url = json.dumps(completion.url).replace("</", "<" + chr(92) + "/")
        st.html(f"<script>{filled('redirect.js', url=url)}</script>", unsafe_allow_javascript=True)


COUNTDOWN = (
    '\n<span class="ps-countdown" role="timer" aria-live="off">'
    'Time left: <b id="ps-countdown">{left}</b></span>'
    "\n<script>\n{script}\n</script>"
    "\n<style>{style}</style>\n"
)


def config_warn_minutes(study_id: int) -> int:
    """How many minutes before the limit the countdown warns ([crowd] warn_minutes)."""
    with session() as active:
        return labels.study_config(active, study_id).crowd.warn_minutes


def countdown(left: timedelta, warn_minutes: int) -> None:
    """The time left in a timed crowd study, counting down in the browser; a warning once it is short."""
    seconds = int(left.total_seconds())
    body = COUNTDOWN.format(
        left=f"{seconds // 60}:{seconds % 60:02d}",
        script=filled("countdown.js", ms=str(seconds * 1000), warn=str(warn_minutes * 60)),
        style=filled("countdown.css"),
    )
    st.html(body, unsafe_allow_javascript=True)
    if seconds <= warn_minutes * 60:
        st.warning(
            f"Less than {max(1, -(-seconds // 60))} minute(s) left: please submit the item on screen soon. "
            "An answer sent after the limit is kept only as a draft.",
            icon=":material/timer:",
        )


@st.fragment
def workspace_area() -> None:
    """Everything about the item: a submit, a skip, a flag or an answer reruns only this part of the
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
        late = st.session_state.pop(LATE_KEY, None)
        if late:
            st.warning(late, icon=":material/timer_off:")
        with session() as active:
            earned = crowd.completion(active, account=account, study_id=study_id)
        if earned is not None:  # finished in time: the code (or no credit) stays on screen
            show_completion(earned)
            return
        st.warning("The time for this study is over. Thank you for taking part.")
        return
    if left is not None:
        with top:
            countdown(left, config_warn_minutes(study_id))
    finished = done.done + done.flagged
    with top:
        st.progress(
            finished / done.total if done.total else 1.0,
            text=f"Study **{safe_md(study_name)}** · {done.done} of {done.total} done"
            + (f" · {done.flagged} flagged" if done.flagged else ""),
        )
    loaded = load_item(account, study_id, study_name, context.config)
    if loaded is None:
        with session() as active:
            finished_crowd = crowd.completion(active, account=account, study_id=study_id)
        if finished_crowd is not None and not finished_crowd.credited:  # flagged all, rated nothing
            show_completion(finished_crowd)
            return
        st.success(
            f"All done: nothing is left in your queue ({done.total} items). Thank you!",
            icon=":material/celebration:",
        )
        if finished_crowd is not None:  # a crowd worker: the completion code, back to the platform
            show_completion(finished_crowd)
            return
        st.page_link("views/my_work.py", label="Review or revise your work", icon=":material/history:")
        return
    item, config = loaded
    with top:
        page_script(item, config)
    if item.revisions:
        st.warning(
            "You are revising an item you already submitted "
            + ("once." if item.revisions == 1 else f"{item.revisions} times.")
        )
    questions = item_questions(item, config)
    st.caption(KEY_HINT)
    show_context(item, config)
    show_responses(item, config, questions)
    show_decision(item, config, questions)
    side_actions(item)


def main() -> None:
    account = require("annotator")
    page_assets()
    st.title("Rate pairs")
    with session() as active:
        acknowledged = accounts.has_acknowledged(active, account=account)
    if not acknowledged:
        st.warning("Please read the guidelines once before your first item.", icon=":material/menu_book:")
        st.markdown(safe_md(guidelines_text()))
        if st.button("I have read the guidelines: start rating", type="primary", key="ack_guidelines"):
            with session() as active:
                accounts.acknowledge_guidelines(active, account=account)
            st.rerun()
        return
    for key in (STUDIES_KEY, CONTEXT_KEY):  # a page run reads the studies and the item's context afresh
        st.session_state.pop(key, None)
    workspace_area()


main()
