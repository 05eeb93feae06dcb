"""Progress: per annotator and per pair, stalled and flagged items, and judgments over time."""

from typing import Any

import pandas as pd
import streamlit as st

from annotator.app import charts
from annotator.app.common import engine, opened, session, study_page
from annotator.app.tables import show_table
from annotator.people.authorization import Account
from annotator.rating import crowd, drafts
from annotator.review import study_progress

PAIRS_PER_PAGE = 100


@st.cache_data(max_entries=16, show_spinner="Counting the study's assignments...")
def cached_counts(
    url: str, study: str, version: tuple[Any, ...], _account: Account
) -> tuple[pd.DataFrame, dict[str, int], pd.DataFrame]:
    """Per annotator, pairs complete and the judgments over time: the counts that read every assignment
    of the study, kept for the whole server at one :func:`study_progress.progress_version`."""
    with session() as active:
        return (
            study_progress.annotator_progress(active, study=study, account=_account),
            study_progress.pair_counts(active, study=study, account=_account),
            study_progress.judgments_over_time(active, study=study, account=_account),
        )


def timeline_section(timeline: pd.DataFrame) -> None:
    """The judgments-over-time chart, drawn only once its expander is opened: the browser then loads the
    chart module (1.2 MB) on request instead of on the page where a researcher lands."""
    box = opened("Judgments over time", "progress_timeline_open", icon=":material/show_chart:", kept=True)
    if box is None:
        return
    with box:
        st.echarts_chart(
            charts.timeline_chart(study_progress.cumulative_judgments(timeline)),
            key="progress_timeline",
            renderer="svg",
            alt="Judgments over time: each annotator's running count of submitted judgments.",
        )
        st.caption(
            "Each line is one annotator's running count of submitted judgments (revisions included), "
            f"counted per minute (per hour once the study spans more than a day), in at most "
            f"{study_progress.TIMELINE_BINS} equal time steps from the first to the last."
        )


def main() -> None:
    account, study = study_page("Progress", "progress_study")
    if study is not None:
        with session() as active:
            version = study_progress.progress_version(active, study, account=account)
            stalled = study_progress.stalled_assignments(active, study=study, account=account)
            flagged = drafts.flagged_items(active, study=study, account=account)
            workers = crowd.outcomes(active, study=study, account=account)
        people, counts, timeline = cached_counts(str(engine().url), study, version, account)
        summary = study_progress.study_summary(people, counts, stalled)
        columns = st.columns(5)
        columns[0].metric("Pairs", f"{summary['pairs']:,}")
        columns[1].metric(f"Judgments done (of {summary['assigned']:,})", f"{summary['done']:,}")
        columns[2].metric("Pairs complete", f"{summary['complete']:,}")
        columns[3].metric("Stalled items", f"{summary['stalled']:,}")
        columns[4].metric("Flagged as broken", f"{len(flagged):,}")
        if not flagged.empty:
            st.header("Flagged by annotators (out of their queues)")
            show_table(flagged, key="progress_flagged")
        if not workers.empty:
            st.header("Crowd workers (completion code, or no credit and why)")
            show_table(workers, key="progress_workers")
        st.header("Annotators")
        st.caption(
            "Median time on task: read from bins of time 2% wide, so it is within 1% of the exact median."
        )
        show_table(people, key="progress_people")
        if not timeline.empty:
            timeline_section(timeline)
        st.header("Pairs")
        pages = max(1, -(-summary["pairs"] // PAIRS_PER_PAGE))
        shown = 1
        if pages > 1:
            shown = int(
                st.number_input(
                    f"Page (of {pages}; {PAIRS_PER_PAGE} pairs each, in import order)",
                    min_value=1,
                    max_value=pages,
                    value=1,
                    key="progress_pairs_page",
                )
            )
        with session() as active:
            pairs = study_progress.pair_completion(
                active,
                study=study,
                account=account,
                offset=(shown - 1) * PAIRS_PER_PAGE,
                limit=PAIRS_PER_PAGE,
            )
        show_table(pairs, key="progress_pairs")
        if not stalled.empty:
            st.header("Stalled (shown more than a day ago, not submitted)")
            show_table(stalled, key="progress_stalled")


main()
