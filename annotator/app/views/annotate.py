"""Rate pairs: the question and the user's context on top, responses A and B side by side in panes of
fixed height with each response's questions right under it, the preference last.

Every answer is kept as a server-side draft as soon as it is given (a reload brings it back); number
keys answer the focused question and Ctrl+Enter submits from anywhere (a small script, see KEYS_JS).
"""

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import streamlit as st

from annotator import accounts, crowd, labels, profile_search, training, workspace
from annotator.accounts import Account
from annotator.app.common import (
    ACCOUNT_KEY,
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
from annotator.errors import AuthError, LabelError, UserError
from annotator.guidelines import guidelines_text
from annotator.labels import SUPPORT_PREFIX, ItemView, Submission
from annotator.store.models import id_of
from annotator.study import StudyConfig

SUBMIT_KEYS = "Ctrl+Enter"
SKIP_KEYS = "Ctrl+Shift+K"
ERROR_KEY = "annotate_error"
SAVED_KEY = "annotate_saved"
STUDY_KEY = "annotate_study"
SUBMIT_BUTTON = "annotate_submit"
OPENED_KEY = "annotate_opened_posts"
INDEX_KEY = "annotate_profile_index"
REASON_KEY = "item_reason"  # why the item is skipped or flagged
STUDIES_KEY = "annotate_studies"  # the annotator's studies, read once per page run (see choose_study)
REDRAW_KEY = "annotate_redraw"  # a question's callback asks for the whole page to run again
CONTEXT_KEY = "annotate_context"  # what the page reads once per item (see item_context)
FORM_PREFIX = "q"  # the rating form's widget keys: the same for every item (values reset per item)
OPTION_CHARS = 9  # scale labels are cut to their first words on the buttons (full text in the help)
PANE_HEIGHT = 250  # px: the most a response pane takes; a longer response scrolls inside it
PANE_MIN = 110
NARRATIVE_HEIGHT = 110
LINE_PX, CHARS_PER_LINE = 25, 62  # a rough line height and width of a pane at 1440 px
MATCHES_SHOWN = 20


@dataclass(frozen=True)
class Question:
    """One question of the rating form, as drawn: its widget key suffix, the draft/answer key, the
    accessible label (which names the response it is about), the options and their labels."""

    name: str  # "A:correctness", "B:rubric:0", "preference", "confidence"
    label: str
    options: list[int]
    option_labels: dict[int, str]
    side: str = ""  # "A" or "B" for a question about one response
    help: str | None = None
    aspect: dict[str, str] = field(default_factory=dict)  # for a rubric question: aspect, reason, evidence

    @property
    def widget(self) -> str:
        return self.name.replace(":", "_").replace("rubric_", "rubric")


def short(label: str) -> str:
    """The part of a scale label before its colon, for compact buttons."""
    return label.split(":", 1)[0].strip()


def _unnumbered(value: int, label: str) -> str:
    """A scale label without its leading number ("2 - Mostly wrong" -> "Mostly wrong")."""
    return re.sub(rf"^\s*{value}\s*[-–.:)]?\s*", "", label)


def option_label(value: int, label: str, width: int = OPTION_CHARS) -> str:
    """A compact button label: the number, then the scale label's first words ("2 Mostly wrong")."""
    text = _unnumbered(value, short(label))
    if len(text) > width:
        text = text[:width].rsplit(" ", 1)[0] + "…"
    return f"{value} {text}".strip()


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
                    label=f"Response {side} · {dimension.name.capitalize()}",
                    options=list(quality.values),
                    option_labels={v: option_label(v, labels_by_value[v]) for v in quality.values},
                    side=side,
                    help=dimension.question + "\n\n" + "\n".join(f"- {label}" for label in dimension.labels),
                )
            )
        for k, aspect in enumerate(item.rubric):
            questions.append(
                Question(
                    name=f"{side}:rubric:{k}",
                    label=rubric_label(side, aspect if show_reasons else {"aspect": aspect["aspect"]}),
                    options=[0, 1, 2],
                    option_labels={v: str(v) for v in (0, 1, 2)},
                    side=side,
                    help=config.rubric.question + "\n\n" + legend([0, 1, 2], list(config.rubric.labels)),
                    aspect=aspect if show_reasons else {"aspect": aspect["aspect"]},
                )
            )
    if item.ask_support:  # rubric verification (issue 15): about the pair, asked once per aspect
        for k, aspect in enumerate(item.rubric):
            questions.append(
                Question(
                    name=f"{SUPPORT_PREFIX}{k}",
                    label=f"Aspect {k + 1} ({safe_md(aspect['aspect'])}): supported by what the user wrote?",
                    options=[0, 1, 2],
                    option_labels=dict(enumerate(config.rubric.support_labels)),
                    help=config.rubric.support_question,
                )
            )
    questions.append(
        Question(
            name="preference",
            label=config.preference.question,
            options=list(range(5)),
            option_labels={v: f"{v + 1} {config.preference.labels[v]}" for v in range(5)},
            help="Keys 1-5 choose from left to right.",
        )
    )
    questions.append(
        Question(
            name="confidence",
            label=config.preference.confidence_question,
            options=[1, 2, 3],
            option_labels={
                v: option_label(v, config.preference.confidence_labels[v - 1], 20) for v in (1, 2, 3)
            },
        )
    )
    return questions


def item_tag(item: ItemView) -> str:
    """The item on screen, per revision ("a12r0"): the page script knows a new item by it, and the
    profile's expanders are keyed by it (so that they open closed on every item)."""
    return f"a{item.assignment_id}r{item.revisions}"


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
            studies = labels.annotator_studies(active, user_id=account.id)
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
    answers.update(submission.support)  # rubric support answers, "support:<k>" (issue 15)
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
        done = labels.progress(active, user_id=account.id, study_id=study_id)
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
            draft = workspace.load_draft(active, assignment_id=item.assignment_id, user_id=account.id)
            start_item(item, config, draft.answers if draft else {}, draft.opened_posts if draft else [])
            return item, config
        prefill: Submission | None = st.session_state.pop(PREFILL_KEY, None)
        reopen = st.session_state.pop(REOPEN_KEY, None)
        resumed = (
            int(reopen)
            if reopen is not None
            else workspace.resume_assignment(active, user_id=account.id, study_id=study_id)
        )
        if resumed is None:
            assignment = labels.next_assignment(active, user_id=account.id, study_id=study_id)
            if assignment is None:
                return None
            resumed_id = id_of(assignment)
        else:
            resumed_id = resumed
            if prefill is None:
                prefill = labels.current_answers(active, assignment_id=resumed_id, user_id=account.id)
        item = labels.show(active, assignment_id=resumed_id, user_id=account.id, resume=resumed is not None)
        draft = workspace.load_draft(active, assignment_id=resumed_id, user_id=account.id)
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
            workspace.save_draft(
                active,
                assignment_id=item.assignment_id,
                user_id=account.id,
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
        with (
            left.expander("The user's own explanation", expanded=True, icon=":material/person:"),
            st.container(height=text_height(item.narrative, NARRATIVE_HEIGHT), border=False, key="narrative"),
        ):
            st.markdown(safe_md(item.narrative))
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


@st.fragment
def ask(item: ItemView, config: StudyConfig, question: Question) -> None:
    """One question as a segmented control (its accessible name says which response it is about).

    Each question is its own fragment: an answer reruns only this question (its callback keeps the
    draft), not the whole item area. When the callback found the login ended, or could not keep the
    draft, the whole page runs again (the login page, or the item area with the error)."""
    if st.session_state.pop(REDRAW_KEY, False) or ACCOUNT_KEY not in st.session_state:
        st.rerun(scope="app")
    st.segmented_control(
        question.label,
        question.options,
        format_func=question.option_labels.__getitem__,
        key=widget_key(question),
        help=question.help,
        width="stretch" if question.aspect else "content",
        on_change=keep_draft,
        args=(item, config),
    )


def text_height(text: str, most: int, least: int = 60) -> int:
    """The height (px) a text needs in a half-width pane, within bounds (a longer text scrolls)."""
    lines = sum(len(line) // CHARS_PER_LINE + 1 for line in text.splitlines() or [""])
    return max(least, min(most, lines * LINE_PX + 40))


def pane_height(*texts: str) -> int:
    """One height for both panes (so their questions line up): the longer text's, within bounds."""
    return max(text_height(text, PANE_HEIGHT, PANE_MIN) for text in texts)


def show_responses(item: ItemView, config: StudyConfig, questions: list[Question]) -> None:
    """Responses A and B side by side, each in a scrollable pane with its own questions under it."""
    height = pane_height(item.text_a, item.text_b)
    columns = st.columns(2, gap="medium")
    for column, side, text in zip(columns, ("A", "B"), (item.text_a, item.text_b), strict=True):
        with column:
            st.markdown(f"### Response {side} :gray[({len(text.split())} words)]")
            with st.container(height=height, border=True, key=f"pane_{side}"):
                st.markdown(safe_md(text))
            first_aspect = True
            for question in questions:
                if question.side != side:
                    continue
                if question.aspect and first_aspect:
                    st.caption(f"**Rubric fit** · {safe_md(legend([0, 1, 2], list(config.rubric.labels)))}")
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
                user_id=account.id,
                submission=form_answers(item, config, submission_id),
            )
            workspace.clear_draft(active, assignment_id=item.assignment_id, user_id=account.id)
    except (LabelError, AuthError, UserError) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    _next_item()


def _act(action: Callable[[], None], message: str) -> None:
    try:
        action()
    except UserError as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    _next_item()
    st.session_state[SAVED_KEY] = message


def _reason() -> str:
    return str(st.session_state.get(REASON_KEY) or "")


def skip_item(item: ItemView) -> None:
    """The skip button's callback: the item moves to the end of the queue (a reason is needed)."""
    account = current_account()
    reason = _reason()

    def run() -> None:
        if account is None:
            raise UserError("Please log in first.")
        with session() as active:
            labels.skip(active, assignment_id=item.assignment_id, user_id=account.id, reason=reason)
            workspace.clear_draft(active, assignment_id=item.assignment_id, user_id=account.id)

    _act(run, "Skipped: the item moved to the end of your queue.")


def flag_item(item: ItemView) -> None:
    """The flag button's callback: only a reason is needed; the item leaves the queue."""
    account = current_account()
    reason = _reason()

    def run() -> None:
        if account is None:
            raise UserError("Please log in first.")
        with session() as active:
            workspace.flag_item(active, assignment_id=item.assignment_id, user_id=account.id, reason=reason)

    _act(run, "Flagged: the item went to the researcher and left your queue.")


def side_actions(item: ItemView) -> None:
    """Skip the item, or flag it as broken, with a reason (no rating needed): one expander."""
    with st.expander("Skip this item or report it as broken", icon=":material/flag:"):
        st.text_input(
            "Why? (needed to skip, or to report a broken text, offensive content, an impossible item)",
            key=REASON_KEY,
        )
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


KEYS_JS = """
<span class="ps-timer" aria-live="off">Time on this item: <b id="ps-timer">0:00</b></span>
<script>
(() => {
  const start = __START__;
  const doc = document;
  if (window.__psItem !== __ITEM__) {
    window.__psItem = __ITEM__;
    doc.body.dataset.psItem = __ITEM__;  // the item on screen, for scripts that drive the page
    delete doc.body.dataset.psReady;  // the submit button waits until this item's form is all there
    const top = () => {
      for (const el of [doc.scrollingElement, doc.querySelector('[data-testid="stMain"]'),
                        doc.querySelector('[data-testid="stAppScrollToBottomContainer"]')]) {
        if (el) el.scrollTop = 0;
      }
      window.scrollTo(0, 0);
    };
    top();
    requestAnimationFrame(top);
    setTimeout(top, 120);
  }
  clearInterval(window.__psTimer);
  if (window.__psReadyWatch) window.__psReadyWatch.disconnect();
  const need = __NEED__;
  const ready = () => {
    if (doc.body.dataset.psReady === __ITEM__) return true;
    const complete = doc.querySelector('.st-key-__SUBMIT__ button') && need.every(
      (key) => doc.querySelector('.st-key-' + key + ' [data-testid="stButtonGroup"] button'));
    if (complete) doc.body.dataset.psReady = __ITEM__;
    return Boolean(complete);
  };
  if (!ready()) {  // watch the page being drawn: ready as soon as the last question is there
    window.__psReadyWatch = new MutationObserver(() => {
      if (ready()) window.__psReadyWatch.disconnect();
    });
    window.__psReadyWatch.observe(doc.body, { childList: true, subtree: true });
  }
  const tick = () => {
    // Scrolling panes take the keyboard focus (arrows scroll them) and say what they hold.
    for (const [key, name] of [['pane_A', 'Response A'], ['pane_B', 'Response B'],
                               ['narrative', "The user's own explanation"]]) {
      const pane = doc.querySelector('.st-key-' + key);
      if (pane && !pane.hasAttribute('tabindex')) {
        pane.setAttribute('tabindex', '0');
        pane.setAttribute('role', 'region');
        pane.setAttribute('aria-label', name);
      }
    }
    const el = doc.getElementById('ps-timer');
    if (!el) return;
    const s = Math.max(0, Math.round((Date.now() - start) / 1000));
    el.textContent = Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  };
  tick();
  window.__psTimer = setInterval(tick, 1000);
  if (window.__psKeys) return;
  window.__psKeys = true;
  doc.addEventListener('keydown', (e) => {
    const early = !doc.body.dataset.psReady;  // the form is not all there yet: no submit
    if (early && (e.key === 'Enter' || e.key === ' ') && e.target && e.target.closest
        && e.target.closest('.st-key-__SUBMIT__')) {
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
      const button = doc.querySelector('.st-key-__SUBMIT__ button');
      if (button && !button.disabled && !early) {
        e.preventDefault();
        e.stopPropagation();
        button.click();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || !/^[0-9]$/.test(e.key)) return;
    const target = e.target;
    if (!target || !target.closest || target.closest('input, textarea, [contenteditable="true"]')) return;
    const group = target.closest('[data-testid="stButtonGroup"]');
    if (!group) return;
    for (const option of group.querySelectorAll('button')) {
      if (option.innerText.trim().split(/\\s/)[0] === e.key) {
        e.preventDefault();
        if (option.getAttribute('aria-checked') !== 'true') option.click();  // a key never unselects
        option.focus();
        return;
      }
    }
  }, true);
})();
</script>
"""


COMPACT_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; padding-bottom: 1rem; }
[data-testid="stMainBlockContainer"] h1 { font-size: 1.5rem; padding: 0.2rem 0; }
[data-testid="stMainBlockContainer"] h2 { font-size: 1.15rem; padding: 0.1rem 0; }
[data-testid="stMainBlockContainer"] h3 { font-size: 1.05rem; padding: 0.1rem 0; }
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p { margin-bottom: 0.2rem; }
.ps-timer { font-size: 0.9rem; }
/* The submit button takes no click until the page script has seen the whole form (see KEYS_JS). */
body:not([data-ps-ready]) .st-key-annotate_submit button { pointer-events: none; opacity: 0.55; }
/* A rubric row: the aspect, its reason and evidence (the label) beside the 0/1/2 choice. */
[class*="st-key-q_"][class*="_rubric"] [data-testid="stButtonGroup"] {
  display: flex; flex-direction: row; align-items: center; gap: 0.75rem; }
[class*="st-key-q_"][class*="_rubric"] [data-testid="stWidgetLabel"] { flex: 1 1 auto; min-width: 0;
  margin-bottom: 0; }
[class*="st-key-q_"][class*="_rubric"] [role="radiogroup"] { flex: 0 0 auto; width: auto; }
[class*="st-key-q_"][class*="_rubric"] button { padding-left: 0.9rem; padding-right: 0.9rem; }
/* Five options fit a half-width column at 1440 px; a narrower one wraps them rather than cut them. */
[data-testid="stButtonGroup"] [role="radiogroup"] { flex-wrap: wrap; row-gap: 0.25rem; }
[data-testid="stButtonGroup"] button { padding-left: 0.6rem; padding-right: 0.6rem; }
</style>
"""


def page_script(item: ItemView, config: StudyConfig) -> None:
    """The timer, scroll-to-top for a new item, number keys and Ctrl+Enter (one small script); the
    submit button takes input only once every question of the item is drawn in the browser."""
    need = [widget_key(question) for question in item_questions(item, config)]
    start = item.shown_at or datetime.now(UTC)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    body = (
        KEYS_JS.replace("__START__", str(int(start.timestamp() * 1000)))
        .replace("__ITEM__", json.dumps(item_tag(item)))
        .replace("__SUBMIT__", SUBMIT_BUTTON)
        .replace("__NEED__", json.dumps(need))
    )
    st.html(body, unsafe_allow_javascript=True)


def show_completion(completion: crowd.Completion) -> None:
    """The crowd worker's completion code, and a redirect to the platform's completion URL."""
    if completion.code:
        st.markdown("Your completion code:")
        st.code(completion.code, language=None)
    if crowd.may_redirect(completion.url):  # https, or http to this machine (a local trial)
        st.link_button("Return to the platform", completion.url, type="primary")
        st.html(
            "<script>setTimeout(() => window.top.location.assign("
            f"{json.dumps(completion.url).replace('</', '<' + chr(92) + '/')}), 5000);</script>",
            unsafe_allow_javascript=True,
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
    context = item_context(account, study_id)
    apply_theme(context.config.display.theme)  # the study's [display] theme
    done, left = context.progress, context.time_left()
    if not context.qualification.qualified:  # issue 14: training and comprehension before the real queue
        st.info("Please complete the training first; your items open once you pass it.")
        st.page_link("views/training.py", label="Go to training", icon=":material/school:")
        return
    if left is not None and left.total_seconds() <= 0:
        st.warning("The time for this study is over. Thank you for taking part.")
        return
    finished = done.done + done.flagged
    with top:
        st.progress(
            finished / done.total if done.total else 1.0,
            text=f"Study **{safe_md(study_name)}** · {done.done} of {done.total} done"
            + (f" · {done.flagged} flagged" if done.flagged else ""),
        )
    loaded = load_item(account, study_id, study_name, context.config)
    if loaded is None:
        st.success(
            f"All done: nothing is left in your queue ({done.total} items). Thank you!",
            icon=":material/celebration:",
        )
        with session() as active:
            finished_crowd = crowd.completion(active, account=account, study_id=study_id)
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
    show_context(item, config)
    show_responses(item, config, questions)
    show_decision(item, config, questions)
    side_actions(item)
    st.caption(
        f"Keys: **1-5** / **0-2** answer the focused question · **Tab** / **Shift+Tab** next / previous "
        f"question, **arrows** move within it · **{SUBMIT_KEYS}** submit from anywhere · "
        f"**{SKIP_KEYS}** skip (after giving a reason). Your answers are kept as a draft as you give them."
    )


def main() -> None:
    account = require("annotator")
    st.html(COMPACT_CSS)
    st.title("Rate pairs")
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
    for key in (STUDIES_KEY, CONTEXT_KEY):  # a page run reads the studies and the item's context afresh
        st.session_state.pop(key, None)
    workspace_area()


main()
