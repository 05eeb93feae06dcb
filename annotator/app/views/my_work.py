"""My work: every item the annotator submitted (with their answers and each revision), skipped or
flagged (with the reason); reopening a submitted or skipped item brings it to the rating page, and
submitting it again adds a revision."""

from collections.abc import Sequence
from functools import partial

import streamlit as st

from analysis.vocabulary import RUBRIC_PREFIX, SUPPORT_PREFIX
from annotator.app.common import ITEM_KEY, REOPEN_KEY, REOPEN_STUDY_KEY, require, safe_md, session
from annotator.rating import work_log
from annotator.rating.work_log import SKIPPED, SUBMITTED, Answers, WorkItem
from annotator.study import StudyConfig, study_config

FILTERS = {"All": None, "Submitted": SUBMITTED, "Skipped": SKIPPED, "Flagged": work_log.FLAGGED_STATE}


def revisions(n: int) -> str:
    """ "submitted once", "revised once", "revised 2 times" (revisions counts every submission)."""
    if n <= 1:
        return "submitted once"
    return "revised once" if n == 2 else f"revised {n - 1} times"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def score_name(name: str, aspects: Sequence[str] = ()) -> str:
    """A score's name as the annotator reads it (Markdown-safe): "correctness", "rubric aspect 1 (No
    jump scares)" (aspects count from 1, named when the pair's rubric is known)."""
    for prefix, words in ((RUBRIC_PREFIX, "rubric aspect"), (SUPPORT_PREFIX, "aspect")):
        if name.startswith(prefix) and name.removeprefix(prefix).isdigit():
            k = int(name.removeprefix(prefix))
            aspect = " ".join(aspects[k].split()) if k < len(aspects) else ""  # on one line
            named = f" ({safe_md(aspect)})" if aspect else ""
            return f"{words} {k + 1}{named}"
    return safe_md(name)


def _order(name: str, dimensions: Sequence[str]) -> tuple[int, int, str]:
    """The form's order: the quality dimensions as the study lists them, then the rubric aspects in
    their own order."""
    number = name.rsplit(":", 1)[-1]
    if ":" in name and number.isdigit():
        return (1, int(number), "")
    return (0, dimensions.index(name) if name in dimensions else len(dimensions), name)


def answer_lines(answers: Answers, config: StudyConfig, aspects: Sequence[str] = ()) -> list[str]:
    """One revision's answers as short Markdown lines, in the A/B terms the annotator saw."""
    preference = config.preference.labels[answers.preference] if 0 <= answers.preference < 5 else "?"
    confidence = (
        config.preference.confidence_labels[answers.confidence - 1]
        if answers.confidence and 1 <= answers.confidence <= len(config.preference.confidence_labels)
        else "-"
    )
    lines = [f"**Preference:** {safe_md(preference)} · **confidence:** {safe_md(confidence)}"]
    order = partial(_order, dimensions=config.dimension_names)
    for side in ("A", "B"):
        scores = answers.scores.get(side, {})
        parts = [
            f"{score_name(name, aspects)}: {_number(scores[name])}" for name in sorted(scores, key=order)
        ]
        lines.append(f"**Response {side}:** " + (" · ".join(parts) if parts else "-"))
    if answers.support:
        support = " · ".join(
            f"{score_name(k, aspects)}: {_number(answers.support[k])}"
            for k in sorted(answers.support, key=order)
        )
        lines.append(f"**Rubric support:** {support}")
    if answers.comment.strip():
        lines.append(f"**Comment:** {safe_md(answers.comment)}")
    return lines


def reopen(item: WorkItem) -> None:
    """Open the item on the rating page, under its own study."""
    st.session_state.pop(ITEM_KEY, None)
    st.session_state[REOPEN_KEY] = item.assignment_id
    st.session_state[REOPEN_STUDY_KEY] = (item.study_id, item.study)
    st.switch_page("views/annotate.py")


def show_item(number: int, item: WorkItem, config: StudyConfig) -> None:
    """One item: its question, its state and reason, the current answers and the earlier revisions."""
    with st.container(border=True):
        left, right = st.columns([5, 1], vertical_alignment="center")
        question = item.question if len(item.question) < 160 else item.question[:157] + "..."
        left.markdown(f"**{number}.** {safe_md(question)}")
        when = f" · {item.when:%Y-%m-%d %H:%M}" if item.when else ""
        if item.state == SUBMITTED:
            left.caption(f"{safe_md(item.study)} · finished{when} · {revisions(len(item.revisions))}")
            if right.button("Revise", key=f"reopen_{item.assignment_id}", icon=":material/edit:"):
                reopen(item)
        elif item.state == SKIPPED:
            times = "once" if item.skips == 1 else f"{item.skips} times"
            left.caption(f"{safe_md(item.study)} · skipped {times}, still in your queue")
            left.markdown(f"**Why you skipped it:** {safe_md(item.reason) or '-'}")
            if right.button("Rate now", key=f"reopen_{item.assignment_id}", icon=":material/rate_review:"):
                reopen(item)
        else:
            left.caption(f"{safe_md(item.study)} · flagged as broken{when} · with the researcher")
            left.markdown(f"**What you reported:** {safe_md(item.reason) or '-'}")
        if item.revisions:
            current, earlier = item.revisions[-1], item.revisions[:-1]
            left.markdown("  \n".join(answer_lines(current, config, item.aspects)))
            if earlier:
                with left.expander(f"Earlier answers ({len(earlier)})"):
                    for answers in reversed(earlier):
                        st.markdown(
                            f"*Revision {answers.revision} · {answers.submitted_at:%Y-%m-%d %H:%M}*  \n"
                            + "  \n".join(answer_lines(answers, config, item.aspects))
                        )


def main() -> None:
    account = require("annotator")
    st.title("My work")
    with session() as active:
        items = work_log.my_work(active, account=account)
        configs = {study_id: study_config(active, study_id) for study_id in {i.study_id for i in items}}
    if not items:
        st.info("You have not submitted, skipped or flagged any item yet.")
    else:
        counts = {
            name: sum(state is None or i.state == state for i in items) for name, state in FILTERS.items()
        }
        chosen = st.segmented_control(
            "Show",
            list(FILTERS),
            default="All",
            format_func=lambda name: f"{name} ({counts[name]})",
            key="my_work_filter",
            required=True,  # a click on the chosen filter keeps it
        )
        wanted = FILTERS.get(chosen or "All")
        shown = [item for item in items if wanted is None or item.state == wanted]
        for number, item in enumerate(shown, start=1):
            show_item(number, item, configs[item.study_id])


main()
