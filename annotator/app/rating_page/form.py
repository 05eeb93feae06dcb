"""The rating form's model: which questions an item asks (from the study config and the item's
display), their widget keys and labels, the answers as the widgets hold them, the draft a button's
callback keeps, and the submission the answers make."""

import uuid
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from analysis.scale import unnumbered
from analysis.vocabulary import CONFIDENCE_DOMAIN, RUBRIC_DOMAIN, SUPPORT_PREFIX
from annotator.app.common import ITEM_KEY, SUBMISSION_KEY, current_account, safe_md, session
from annotator.errors import AuthError, UserError
from annotator.rating import drafts
from annotator.rating.labels import ItemView, Submission
from annotator.study import StudyConfig

ERROR_KEY = "annotate_error"
OPENED_KEY = "annotate_opened_posts"
REASON_KEY = "item_reason"  # why the item is skipped or flagged
ACTIONS_KEY = "item_actions"  # the skip / flag expander (open while a reason is asked for)
REASON_MISSING_KEY = "item_reason_missing"
FORM_KEY = "rating_form"  # the st.form that holds every question, the comment and the submit button
FORM_PREFIX = "q"  # the rating form's widget keys: the same for every item (values reset per item)


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


def option_label(value: int, label: str) -> str:
    """A button label in full: the number, then the scale label's words ("2 Mostly wrong: several
    real errors"); the number comes first, as the key that chooses it."""
    return f"{value} {unnumbered(value, label)}".strip()


def legend(values: list[int], texts: list[str]) -> str:
    """ "0 = does not cover · 1 = ..." for a scale whose buttons show only numbers."""
    return " · ".join(f"{v} = {unnumbered(v, t)}" for v, t in zip(values, texts, strict=True))


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
            scale = quality.scale_of(dimension)
            questions.append(
                Question(
                    name=f"{side}:{dimension.name}",
                    label=f"Response {side} · {dimension.name.capitalize()}: {dimension.question}",
                    options=list(scale.values),
                    option_labels={v: option_label(v, scale.label(v)) for v in scale.values},
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


# ------------------------------------------------------------------------------------- answer state


def answers_from(submission: Submission | None) -> dict[str, Any]:
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
    state[COMMENT_KEY] = str(answers.get(drafts.COMMENT) or "")
    state[REASON_KEY] = ""
    state[ACTIONS_KEY] = False
    state.pop(REASON_MISSING_KEY, None)


def current_answers(item: ItemView, config: StudyConfig) -> dict[str, Any]:
    """The answers given so far, read from the widgets' session state, as draft answers."""
    state = st.session_state
    answers: dict[str, Any] = {q.name: state.get(widget_key(q)) for q in item_questions(item, config)}
    answers[drafts.COMMENT] = state.get(COMMENT_KEY) or ""
    return {name: value for name, value in answers.items() if value not in (None, "")}


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
        comment=answers.get(drafts.COMMENT, ""),
        opened_posts=tuple(sorted(st.session_state.get(OPENED_KEY, set()))),
    )


# ------------------------------------------------------------------------------------------ drafts


def keep_draft(item: ItemView, config: StudyConfig, *, answers: bool = True) -> None:
    """Keep the form's answers (as the widgets hold them when a button's callback runs) and the posts
    opened on the server; `answers=False` keeps only the posts opened (an answer's draft is kept by
    the page script through annotator.app.draft_route, the form's values reach the server at submit)."""
    account = current_account()
    if account is None:
        return
    try:
        with session() as active:
            drafts.save_draft(
                active,
                assignment_id=item.assignment_id,
                account=account,
                answers=current_answers(item, config) if answers else None,
                opened_posts=sorted(st.session_state.get(OPENED_KEY, set())),
            )
    except (AuthError, UserError) as exc:
        st.session_state[ERROR_KEY] = str(exc)


def post_opened(item: ItemView, config: StudyConfig, number: int) -> None:
    """A post's expander callback: remember that the annotator opened it (saved with the judgment)."""
    opened: set[int] = st.session_state.setdefault(OPENED_KEY, set())
    if number not in opened:
        opened.add(number)
        keep_draft(item, config, answers=False)
