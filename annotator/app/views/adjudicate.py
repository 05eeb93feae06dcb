"""Adjudicate: automatic resolution, the queue (lowest agreement first), and a decision on one pair
with its whole context (question, narrative, rubric with reasons and evidence, profile)."""

import math
from typing import Any, cast

import pandas as pd
import streamlit as st

from analysis.wording import counted
from annotator.app import stored_view
from annotator.app.common import (
    choose_study,
    engine,
    opened,
    require,
    safe_md,
    scroll_to_top,
    session,
    show_rubric,
)
from annotator.app.panes import focusable_panes
from annotator.app.tables import show_table
from annotator.app.waiting import outcome, submit
from annotator.errors import UserError
from annotator.people.authorization import Account
from annotator.review import adjudicate, adjudication_queue, stored_results
from annotator.store import db

PICK_KEY = "adjudicate_pick"
ROUND_KEY = "adjudicate_round"  # decisions recorded in this session: a fresh pair picker after each
NAMES_KEY = "adjudicate_names"
DONE_KEY = "adjudicate_done"
#: The scrolling panes (container key -> what it holds), reachable with Tab and scrolled with arrows.
PANES = {
    "adjudicate_pane_profile": "The user's past posts",
    "adjudicate_pane_chosen": "Chosen response",
    "adjudicate_pane_rejected": "Rejected response",
}
QUEUE_SHOWN = ["pair_id", "category", "n_judgments", "agreement", "majority", "reasons", "reopened"]
JUDGMENT_SHOWN = [
    "annotator",
    "preference_label",
    "confidence",
    "time_s",
    "side_chosen",
    "revision_count",
    "submitted_at",
    "flag",
    "comment",
]


def show_context(pair: dict[str, Any]) -> None:
    """The question, the user's narrative, rubric aspects (reason and evidence) and profile."""
    st.subheader("Question")
    st.info(safe_md(pair.get("question", "")))
    left, right = st.columns(2, gap="medium")
    with left:
        if pair.get("narrative"):
            with st.expander("The user's own explanation", expanded=True):
                st.markdown(safe_md(pair["narrative"]))
        rubric = pair.get("rubric_aspects") or []
        if rubric:
            with st.expander(f"The user's rubric ({len(rubric)} aspects)", expanded=True):
                show_rubric(rubric)
    with right:
        profile = pair.get("profile") or []
        if profile:
            with st.expander(f"The user's past posts ({len(profile)})", expanded=False):
                with st.container(height=360, key="adjudicate_pane_profile"):
                    for number, post in enumerate(profile, start=1):
                        category = f" · {safe_md(post.get('category'))}" if post.get("category") else ""
                        st.markdown(f"**Post {number}**{category}  \n{safe_md(post.get('text', ''))}")


def decision_form(detail: adjudication_queue.PairDetail, pair_db_id: int, account: object) -> None:
    """Final preference (nothing preselected), keep, final scores starting at the medians, a note."""
    with st.form(f"decide_{pair_db_id}"):
        preference = st.radio(
            "Final preference",
            adjudicate.PREFERENCES,
            index=None,
            horizontal=True,
            key=f"decide_pref_{pair_db_id}",
        )
        keep = st.checkbox("Keep this pair in the benchmark", value=True, key=f"decide_keep_{pair_db_id}")
        final: dict[str, dict[str, float]] = {"chosen": {}, "rejected": {}}
        outside: list[str] = []  # every score beyond its item's scale, said at once
        with st.expander("Final scores (change only where they should differ from the median)"):
            for row in detail.defaults.itertuples(index=False):
                left, right = st.columns(2)
                for column, response in ((left, "chosen"), (right, "rejected")):
                    median = float(getattr(row, response))
                    value = column.number_input(
                        f"{safe_md(row.label)} · {response}",
                        value=median,
                        step=0.5,
                        help=f"Its scale: {row.low:g} to {row.high:g}" if math.isfinite(row.low) else None,
                        key=f"decide_{pair_db_id}_{response}_{row.item}",
                    )
                    if value != median:
                        final[response][str(row.item)] = float(value)
                    if not row.low <= value <= row.high:
                        outside.append(
                            f"{response} {row.label} {value:g} (its scale {row.low:g} to {row.high:g})"
                        )
        note = st.text_area("Note", key=f"decide_note_{pair_db_id}")
        if not st.form_submit_button("Record decision", type="primary"):
            return
    if preference is None:
        st.error("Choose the final preference first.")
        return
    if outside:
        st.error(safe_md("Nothing recorded: final scores beyond their scale: " + "; ".join(outside) + "."))
        return
    try:
        with session() as active:
            adjudicate.decide(
                active,
                pair_id=pair_db_id,
                account=account,  # type: ignore[arg-type]
                preference=preference,
                keep=keep,
                scores={response: items for response, items in final.items() if items} or None,
                note=note,
            )
    except UserError as exc:
        st.error(str(exc))
        return
    st.session_state[DONE_KEY] = f"Decision recorded for {detail.pair['pair_id']}."
    # the queue moves on to the next pair: a picker under a new key (the old one kept showing the
    # decided pair in the browser while the page showed the next)
    st.session_state[ROUND_KEY] = st.session_state.get(ROUND_KEY, 0) + 1
    st.rerun()


def pick_label(row: Any) -> str:
    """A queue row in the pair picker: what tells pairs apart first (the reasons start alike)."""
    agreement = f" · agreement {row.agreement:.2f}" if pd.notna(row.agreement) else ""
    return f"{row.pair_id} · {counted(int(row.n_judgments), 'judgment')}{agreement} · {row.reasons}"


def computed_queue(study: str, current: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cleaning list and the queue of `study` on the current data (version `current`), computed once
    per version on the server's background thread, stored as the study's stored result as soon as they
    are ready, and waited for without holding the visit (:func:`annotator.app.waiting.outcome`)."""
    server_engine = engine()
    url = str(server_engine.url)

    def compute() -> tuple[pd.DataFrame, pd.DataFrame]:
        with db.session_scope(server_engine) as active:
            result = stored_results.compute(active, study=study, kind="adjudication")
        stored_view.store(server_engine, study, "adjudication", current, result)
        return cast(tuple[pd.DataFrame, pd.DataFrame], result)

    return outcome(
        lambda: submit(("adjudication", url, study, current), compute),
        f"adjudicate_{hash((url, study, current))}",
        "the adjudication queue",
    )


def study_queue(study: str, account: Account) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cleaning list and the queue to show: the stored ones at once (without the pairs a person
    decided since), with a line saying which data they cover; computed (:func:`computed_queue`) when
    none is stored yet, or when asked for."""
    with session() as active:
        version = adjudication_queue.queue_version(active, study=study, account=account)
    current = stored_results.encode_version(version)
    stored = stored_view.latest(study, "adjudication", account)
    result = None if stored is None else stored_view.payload(stored)
    if stored is not None and result is not None:
        line, stale = stored_view.coverage(stored, current, "Queue")
        st.caption(line)
        if not stale:
            return result
        stored_view.keep_updated()
        if not st.button(
            "Compute the current queue now",
            key="adjudicate_current",
            icon=":material/update:",
            help="The queue is brought up to date in the background; this computes it here and now",
        ):
            evidence, waiting = result
            with session() as active:
                decided = adjudication_queue.decided_after(
                    active, study=study, after=stored_results.newest_decision(stored), account=account
                )
            return evidence, waiting[~waiting["pair_db_id"].isin(decided)].reset_index(drop=True)
    evidence, waiting = computed_queue(study, current)
    return evidence, waiting


def main() -> None:
    account = require("adjudicator", "researcher")
    st.title("Adjudicate")
    done = st.session_state.pop(DONE_KEY, None)
    if done:  # the next pair from its top (the page kept the scroll position of the form)
        st.toast(done, icon=":material/check:")
        st.success(done, icon=":material/check:")
        scroll_to_top(st.session_state.get(ROUND_KEY, 0))
    study = choose_study("adjudicate_study")
    if study is not None:
        if st.button(
            "Resolve the clear cases automatically", key="adjudicate_auto", icon=":material/auto_mode:"
        ):
            with session() as active:
                st.success(adjudicate.auto_resolve(active, study=study, account=account).in_words())
        evidence, waiting = study_queue(study, account)
        st.header(f"Queue ({len(waiting)})")
        if waiting.empty:
            st.info(
                "Nothing needs a person right now. Run the automatic resolution after new judgments arrive."
            )
            st.stop()
        whole_queue = opened("The whole queue", "adjudicate_queue_open", kept=True)
        if whole_queue is not None:
            with whole_queue:
                show_table(waiting, QUEUE_SHOWN, key="adjudicate_queue")
        show_names = st.toggle("Show annotator names", value=False, key=NAMES_KEY)
        rows = list(waiting.itertuples(index=False))
        pick = st.selectbox(
            "Pair", rows, format_func=pick_label, key=f"{PICK_KEY}_{st.session_state.get(ROUND_KEY, 0)}"
        )
        with session() as active:
            detail = adjudication_queue.pair_detail(
                active,
                pair_id=int(pick.pair_db_id),
                account=account,
                hide_names=not show_names,
                evidence=evidence,
            )
        if len(detail.judgments) != int(pick.n_judgments):
            st.info(
                f"This pair has {len(detail.judgments)} current judgments, {int(pick.n_judgments)} when the "
                "queue was computed: the tables below and the decision use the current ones."
            )
        pair = detail.pair
        st.header(f"Pair {safe_md(pair['pair_id'])}")
        show_context(pair)
        left, right = st.columns(2)
        with left, st.container(border=True, height=360, key="adjudicate_pane_chosen"):
            st.markdown("**Chosen** (built to follow the rubric)")
            st.markdown(safe_md(pair.get("chosen", "")))
        with right, st.container(border=True, height=360, key="adjudicate_pane_rejected"):
            st.markdown("**Rejected**")
            st.markdown(safe_md(pair.get("rejected", "")))
        focusable_panes(PANES)
        st.subheader("Judgments")
        show_table(detail.judgments, JUDGMENT_SHOWN, key="adjudicate_judgments")
        st.subheader("Scores by item")
        show_table(
            detail.scores, ["label", "annotator", "chosen", "rejected", "diff"], key="adjudicate_scores"
        )
        if not detail.history.empty:
            st.subheader("History")
            show_table(detail.history.drop(columns=["adjudication_id"]), key="adjudicate_history")
        decision_form(detail, int(pick.pair_db_id), account)


main()
