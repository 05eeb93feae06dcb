"""Validation: the same report as `annotator analyze`, live, with filters; cached by a data version."""

from typing import Any

import pandas as pd
import streamlit as st

from analysis.render import benchmark_sections, cleaning_title, figures, judge_sections, status_word
from analysis.report import Report
from annotator import study_progress
from annotator.accounts import Account
from annotator.app.common import choose_study, engine, require, session
from annotator.errors import UserError
from annotator.store.db import session_scope
from annotator.study_report import study_report

SHOWN_FAILED = 500


@st.cache_resource(show_spinner="Computing the validation report...", max_entries=16)
def cached_report(
    url: str,
    study: str,
    version: tuple[int, ...],
    categories: tuple[str, ...],
    annotators: tuple[str, ...],
    _account: Account,
) -> tuple[Report, dict[str, Any]]:
    """The report and its figures for one data version and filter set.

    Cached as a shared resource (no copy per rerun): an idle rerun only asks the database for the
    data version and re-sends the cached figures. `_account` (not part of the cache key) is checked
    when the report is computed; the page checked it through data_version before any cache hit.
    """
    with session_scope(engine()) as active:
        report = study_report(
            active, study=study, categories=categories, annotators=annotators, account=_account
        )
    return report, figures(report)


@st.cache_data(max_entries=32)
def cached_filter_options(
    url: str, study: str, version: tuple[int, ...], _account: Account
) -> tuple[list[str], list[str]]:
    """The categories and annotators to filter by, for one data version."""
    with session() as active:
        return study_progress.filter_options(active, study=study, account=_account)


account = require("researcher")
st.title("Validation")
study = choose_study("validation_study")
if study is not None:
    with session() as active:
        version = study_progress.data_version(active, study, account=account)
    url = str(engine().url)
    categories, annotators = cached_filter_options(url, study, version, account)
    left, right = st.columns(2)
    chosen_categories = left.multiselect("Categories", categories, key="validation_categories")
    chosen_annotators = right.multiselect("Annotators", annotators, key="validation_annotators")
    try:
        report, plots = cached_report(
            url, study, version, tuple(chosen_categories), tuple(chosen_annotators), account
        )
    except UserError as exc:
        st.info(str(exc))
        st.stop()
    s = report.summary
    info, refresh = st.columns([5, 1], vertical_alignment="center")
    info.caption(f"{s['n_pairs']} pairs · {s['n_annotators']} annotators · {s['n_judgments']} judgments")
    refresh.button(
        "Refresh",
        key="validation_refresh",
        icon=":material/refresh:",
        help="Re-read the study; the report is recomputed only when judgments, decisions or models changed",
    )
    boxes = {"pass": st.success, "fail": st.error, "inconclusive": st.warning, "not_assessed": st.info}
    overall_box = {"PASS": st.success, "FAIL": st.error}.get(report.overall, st.warning)
    overall_box(f"**Overall: {report.overall}**  \n{report.overall_reason}")
    for verdict in report.verdicts:
        boxes[verdict.status](
            f"**{status_word(verdict)}: {verdict.claim}** ({verdict.test})  \n{verdict.detail}"
        )
    st.plotly_chart(plots["forest"], width="stretch")
    st.caption("Crossed random-effects model (the verdict: pairs and annotators in general)")
    st.dataframe(report.validation.crossed, hide_index=True, width="stretch")
    st.caption("Per-pair TOST, conditional on this panel of annotators")
    st.dataframe(report.validation.equivalence, hide_index=True, width="stretch")
    st.caption("Share of pairs whose true gap lies beyond the margin (upper bound against the maximum)")
    st.dataframe(report.validation.broken, hide_index=True, width="stretch")
    st.plotly_chart(plots["differences"], width="stretch")
    left, right = st.columns(2)
    with left:
        st.plotly_chart(plots["preference"], width="stretch")
    with right:
        st.plotly_chart(plots["agreement"], width="stretch")
    st.plotly_chart(plots["categories"], width="stretch")
    st.subheader("Rubric alignment and preference over pairs and annotators (the verdicts)")
    st.dataframe(
        pd.concat([report.validation.rubric_crossed, report.validation.preference_crossed]),
        hide_index=True,
        width="stretch",
    )
    st.caption("Rubric alignment, conditional on this panel of annotators")
    st.dataframe(report.validation.superiority, hide_index=True, width="stretch")
    if report.summary.get("position_biased"):
        st.warning(
            "Annotators who prefer one side whatever the responses (side-A rate, Holm-adjusted): "
            + ", ".join(report.summary["position_biased"])
        )
    st.subheader("Agreement")
    st.dataframe(report.agreement, hide_index=True, width="stretch")
    st.subheader(cleaning_title(report))
    st.caption(
        "Per pair: the empirical-Bayes (shrunken) estimates and the probability of being broken; "
        "'drop' controls the false discovery rate, 'needs more judgments' feeds dynamic overlap"
    )
    st.dataframe(report.failed_pairs.head(SHOWN_FAILED), hide_index=True, width="stretch")
    if len(report.failed_pairs) > SHOWN_FAILED:
        st.caption(f"The first {SHOWN_FAILED} are shown; `annotator analyze --json` lists them all.")
    for title, note, table in [*benchmark_sections(report), *judge_sections(report)]:  # models, arms, judges
        st.subheader(title)
        st.caption(note)
        st.dataframe(table.head(SHOWN_FAILED), hide_index=True, width="stretch")
