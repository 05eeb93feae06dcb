"""Qualification before the real queue: training with feedback, then a comprehension check.

Both are configured in the study's `[training]` section (annotator.study.Training). Training items
are answered one at a time; after each answer the annotator sees the expected answer and its
explanation. An attempt passes when its share of right answers reaches `pass_threshold` (a failed
attempt can be repeated: it is training). The comprehension check is answered as a whole, without
feedback, and passes only when every answer is right; it allows `comprehension_attempts` attempts.
The real queue opens once both have passed (:func:`status`.qualified). Every answer is stored
(`TrainingAnswer`), so the researcher can see who needed how many attempts.

The training items are the study.toml questions followed by the study's training pairs: records of
the pairs file marked ``"control": "training"`` (never assigned to a queue, never in the analysis).
A training pair is served as a practice item (:func:`practice_items`): its question, profile, rubric
and the two responses, `chosen` on a side fixed per annotator; the annotator says which response fits
the user better, and the feedback gives the expected answer from the record's
``"expected": {"preference": -2..2}`` (positive = `chosen` better; default: `chosen` better) and its
``"explanation"`` (in `expected` or at the top level of the record). They count toward the pass
threshold like the questions.
"""

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from annotator.errors import UserError
from annotator.people.authorization import Account, account_of, require_role
from annotator.store.models import Event, Pair, Study, TrainingAnswer, User
from annotator.study import Training, parse_config

__all__ = [
    "ComprehensionResult",
    "Feedback",
    "PracticeItem",
    "PracticePair",
    "TrainingStatus",
    "answer_training",
    "needs_training",
    "practice_items",
    "status",
    "submit_comprehension",
]


@dataclass(frozen=True)
class TrainingStatus:
    """Where an annotator stands in a study's qualification."""

    required: bool
    attempt: int  # the current training attempt (1-based)
    answered: int  # training items answered in the current attempt
    items: int
    training_passed: bool
    comprehension_attempts_used: int
    comprehension_attempts: int
    comprehension_passed: bool

    @property
    def comprehension_failed(self) -> bool:
        """No attempts left and never passed: the real queue stays closed."""
        return (
            not self.comprehension_passed and self.comprehension_attempts_used >= self.comprehension_attempts
        )

    @property
    def qualified(self) -> bool:
        return not self.required or (self.training_passed and self.comprehension_passed)


@dataclass(frozen=True)
class Feedback:
    """What the annotator sees after a training answer."""

    correct: bool
    expected: str
    explanation: str
    attempt_done: bool
    attempt_passed: bool
    right: int = 0  # at the attempt's end: its right answers, of `items`, and the right answers it needs
    items: int = 0
    needed: int = 0


@dataclass(frozen=True)
class PracticePair:
    """A training pair as the annotator sees it (hostile text: pages render it as plain text)."""

    question: str
    narrative: str
    profile: list[dict[str, Any]]
    rubric: list[dict[str, Any]]
    response_a: str
    response_b: str


@dataclass(frozen=True)
class PracticeItem:
    """One training item: a study.toml question (`pair` None) or a training pair."""

    question: str
    options: tuple[str, ...]
    answer: int  # index into options
    explanation: str
    pair: PracticePair | None = None
    key: str = ""  # stored as TrainingAnswer.item


PAIR_OPTIONS = (
    "Response A fits this user better",
    "Response B fits this user better",
    "Both fit this user about equally",
)


@dataclass(frozen=True)
class ComprehensionResult:
    passed: bool
    attempts_left: int


def _config(session: Session, study_id: int) -> Training:
    study = session.get(Study, study_id)
    if study is None:
        raise UserError(f"no study with id {study_id}")
    return parse_config(study.config, source=f"study {study.name!r}").training


def _training_pairs(session: Session, study_id: int) -> list[Pair]:
    return list(
        session.exec(
            select(Pair).where(Pair.study_id == study_id, Pair.control == "training").order_by(col(Pair.id))
        )
    )


def _count_training_pairs(session: Session, study_id: int) -> int:
    return int(
        session.exec(
            select(func.count())
            .select_from(Pair)
            .where(Pair.study_id == study_id, Pair.control == "training")
        ).one()
    )


def needs_training(session: Session, *, study_id: int, config: Training) -> bool:
    """Whether a study has a training phase: questions in study.toml or training pairs."""
    return config.required or _count_training_pairs(session, study_id) > 0


def _pair_item(pair: Pair, user_id: int) -> PracticeItem:
    """A training pair as a practice item; `chosen` on a side fixed per (pair, annotator)."""
    digest = hashlib.sha256(f"training:{pair.id}:{user_id}".encode()).digest()
    chosen_a = digest[0] % 2 == 0
    meta = pair.meta if isinstance(pair.meta, dict) else {}
    raw = meta.get("expected")
    expected: dict[str, Any] = raw if isinstance(raw, dict) else {}
    preference = expected.get("preference", 1)
    if isinstance(preference, bool) or not isinstance(preference, int | float):
        preference = 1
    if preference == 0:
        answer = 2
    else:
        answer = 0 if (preference > 0) == chosen_a else 1
    explanation = expected.get("explanation", meta.get("explanation", ""))
    view = PracticePair(
        question=pair.question,
        narrative=pair.narrative,
        profile=list(pair.profile or []),
        rubric=list(pair.rubric or []),
        response_a=pair.chosen if chosen_a else pair.rejected,
        response_b=pair.rejected if chosen_a else pair.chosen,
    )
    return PracticeItem(
        question=pair.question,
        options=PAIR_OPTIONS,
        answer=answer,
        explanation=explanation if isinstance(explanation, str) else "",
        pair=view,
        key=f"pair:{pair.id}",
    )


def practice_items(session: Session, *, account: Account, study_id: int) -> list[PracticeItem]:
    """The training items in order: the study.toml questions, then the study's training pairs."""
    require_role(session, account, "annotator")
    config = _config(session, study_id)
    items = [
        PracticeItem(q.question, tuple(q.options), q.answer, q.explanation, key=str(k))
        for k, q in enumerate(config.items)
    ]
    return items + [_pair_item(pair, account.id) for pair in _training_pairs(session, study_id)]


def _answers(session: Session, account: Account, study_id: int, phase: str) -> list[TrainingAnswer]:
    return list(
        session.exec(
            select(TrainingAnswer)
            .where(
                TrainingAnswer.study_id == study_id,
                TrainingAnswer.user_id == account.id,
                TrainingAnswer.phase == phase,
            )
            .order_by(TrainingAnswer.id)  # type: ignore[arg-type]
        )
    )


def _training_state(n: int, config: Training, answers: list[TrainingAnswer]) -> tuple[int, int, bool]:
    """(current attempt, answered in it, passed in any attempt) with `n` training items."""
    passed = False
    attempt = 1
    answered = 0
    by_attempt: dict[int, list[TrainingAnswer]] = {}
    for row in answers:
        by_attempt.setdefault(row.attempt, []).append(row)
    for number in sorted(by_attempt):
        rows = by_attempt[number]
        if len(rows) >= n:
            if sum(r.correct for r in rows[:n]) / n >= config.pass_threshold:
                passed = True
            attempt, answered = number + 1, 0
        else:
            attempt, answered = number, len(rows)
    return attempt, answered, passed or n == 0


def status(session: Session, *, account: Account, study_id: int) -> TrainingStatus:
    """The annotator's qualification state in a study."""
    require_role(session, account, "annotator")
    config = _config(session, study_id)
    n = len(config.items) + _count_training_pairs(session, study_id)
    attempt, answered, training_passed = _training_state(
        n, config, _answers(session, account, study_id, "training")
    )
    comprehension = _answers(session, account, study_id, "comprehension")
    attempts: dict[int, list[bool]] = {}
    for row in comprehension:
        attempts.setdefault(row.attempt, []).append(row.correct)
    passed = not config.comprehension or any(
        len(rows) == len(config.comprehension) and all(rows) for rows in attempts.values()
    )
    return TrainingStatus(
        required=config.required or n > 0,
        attempt=attempt,
        answered=answered,
        items=n,
        training_passed=training_passed,
        comprehension_attempts_used=len(attempts),
        comprehension_attempts=config.comprehension_attempts,
        comprehension_passed=passed,
    )


def qualified(session: Session, *, account: Account, study_id: int) -> bool:
    """Whether an account may open the study's real queue (labels.show checks it on every item); the
    role is the stored one: only annotators train."""
    user = session.get(User, account.id)
    if user is None:
        return False
    return (
        status(session, account=account_of(user), study_id=study_id).qualified
        if user.role == "annotator"
        else True
    )


def answer_training(session: Session, *, account: Account, study_id: int, choice: int) -> Feedback:
    """Record the answer to the current training item and return its feedback."""
    require_role(session, account, "annotator")
    config = _config(session, study_id)
    items = practice_items(session, account=account, study_id=study_id)
    attempt, answered, _ = _training_state(
        len(items), config, _answers(session, account, study_id, "training")
    )
    if not items:
        raise UserError("this study has no training items")
    item = items[answered]
    if not 0 <= choice < len(item.options):
        raise UserError("please choose one of the options")
    correct = choice == item.answer
    key = item.key or str(answered)
    _record_answer(session, account, study_id, "training", attempt, key, item.options[choice], correct)
    session.flush()
    feedback = Feedback(correct, item.options[item.answer], item.explanation, False, False)
    if answered + 1 < len(items):
        return feedback
    rows = [r for r in _answers(session, account, study_id, "training") if r.attempt == attempt]
    right = sum(r.correct for r in rows)
    passed = right / len(items) >= config.pass_threshold
    _record_attempt(session, account, "training", study_id=study_id, attempt=attempt, passed=passed)
    needed = next(r for r in range(len(items) + 1) if r / len(items) >= config.pass_threshold)
    return replace(
        feedback, attempt_done=True, attempt_passed=passed, right=right, items=len(items), needed=needed
    )


def _record_answer(
    session: Session,
    account: Account,
    study_id: int,
    phase: str,
    attempt: int,
    item: str,
    answer: str,
    correct: bool,
) -> None:
    """One answer of a training or comprehension attempt (its text cut to 200 characters)."""
    session.add(
        TrainingAnswer(
            study_id=study_id,
            user_id=account.id,
            phase=phase,
            attempt=attempt,
            item=item,
            answer=answer[:200],
            correct=correct,
        )
    )


def _record_attempt(
    session: Session, account: Account, phase: str, *, study_id: int, attempt: int, passed: bool
) -> None:
    """The audit event of a finished training or comprehension attempt."""
    detail = {"study": study_id, "attempt": attempt, "passed": passed}
    session.add(Event(user_id=account.id, action=phase, detail=detail))


def submit_comprehension(
    session: Session, *, account: Account, study_id: int, choices: list[int | None]
) -> ComprehensionResult:
    """Record a comprehension attempt (every question answered); passes when all answers are right."""
    require_role(session, account, "annotator")
    config = _config(session, study_id)
    state = status(session, account=account, study_id=study_id)
    if state.comprehension_passed:
        return ComprehensionResult(True, config.comprehension_attempts - state.comprehension_attempts_used)
    if state.comprehension_failed:
        raise UserError("no attempts left for the comprehension check")
    if len(choices) != len(config.comprehension) or any(c is None for c in choices):
        raise UserError("please answer every question")
    attempt = state.comprehension_attempts_used + 1
    right = []
    for index, (question, choice) in enumerate(zip(config.comprehension, choices, strict=True)):
        ok = choice == question.answer
        right.append(ok)
        answer = (
            question.options[int(choice)]
            if choice is not None and 0 <= choice < len(question.options)
            else ""
        )
        _record_answer(session, account, study_id, "comprehension", attempt, str(index), answer, ok)
    passed = all(right)
    _record_attempt(session, account, "comprehension", study_id=study_id, attempt=attempt, passed=passed)
    return ComprehensionResult(passed, config.comprehension_attempts - attempt)


def attempts_table(session: Session, *, study_id: int, account: Account) -> list[dict[str, object]]:
    """Per annotator: training attempts and comprehension attempts used (researchers only)."""
    require_role(session, account, "researcher")
    rows = session.exec(
        select(TrainingAnswer.user_id, TrainingAnswer.phase, func.max(TrainingAnswer.attempt))
        .where(TrainingAnswer.study_id == study_id)
        .group_by(TrainingAnswer.user_id, TrainingAnswer.phase)  # type: ignore[arg-type]
    ).all()
    table: dict[int, dict[str, object]] = {}
    for user_id, phase, attempts in rows:
        table.setdefault(user_id, {"user_id": user_id})[f"{phase}_attempts"] = int(attempts)
    return list(table.values())
