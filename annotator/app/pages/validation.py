"""Validation: the same report as `annotator analyze`, live, with filters; cached by a data version."""

import streamlit as st

from analysis.report import Report, figures
from annotator import dashboard
from annotator.app.common import choose_study, engine, require, session
from annotator.assign import get_study
from annotator.db import session_scope
from annotator.errors import UserError
from annotator.export import label_frame
from annotator.reporting import report_from_frame
from annotator.study import parse_config


@st.cache_data(show_spinner="Computing the validation report...", max_entries=32)
def cached_report(
    url: str, study: str, version: tuple[int, int], categories: tuple[str, ...], annotators: tuple[str, ...]
) -> Report:
    """The report for one data version and filter set (an idle rerun reads it from the cache)."""
    with session_scope(engine()) as active:
        config = parse_config(get_study(active, study).config)
        frame = label_frame(active, study=study)
    return report_from_frame(
        frame,
        study=study,
        quality_items=config.dimension_names,
        margin=config.analysis.margin,
        alpha=config.analysis.alpha,
        categories=categories,
        annotators=annotators,
    )


@st.cache_data(max_entries=32)
def filter_options(url: str, study: str, version: tuple[int, int]) -> tuple[list[str], list[str]]:
    with session_scope(engine()) as active:
        frame = label_frame(active, study=study)
    return sorted(frame["category"].dropna().unique()), sorted(frame["annotator"].unique())


require("researcher")
st.title("Validation")
study = choose_study("validation_study")
if study is not None:
    with session() as active:
        version = dashboard.data_version(active, study)
    url = str(engine().url)
    categories, annotators = filter_options(url, study, version)
    left, right = st.columns(2)
    chosen_categories = left.multiselect("Categories", categories, key="validation_categories")
    chosen_annotators = right.multiselect("Annotators", annotators, key="validation_annotators")
    try:
        report = cached_report(url, study, version, tuple(chosen_categories), tuple(chosen_annotators))
    except UserError as exc:
        st.info(str(exc))
        st.stop()
    s = report.summary
    st.caption(f"{s['n_pairs']} pairs · {s['n_annotators']} annotators · {s['n_judgments']} judgments")
    for verdict in report.verdicts:
        box = st.success if verdict.passed else st.error
        word = "PASS" if verdict.passed else "FAIL"
        box(f"**{word}: {verdict.claim}** ({verdict.test})  \n{verdict.detail}")
    plots = figures(report)
    st.plotly_chart(plots["forest"], use_container_width=True)
    st.dataframe(report.validation.equivalence, hide_index=True, use_container_width=True)
    st.plotly_chart(plots["differences"], use_container_width=True)
    left, right = st.columns(2)
    with left:
        st.plotly_chart(plots["preference"], use_container_width=True)
    with right:
        st.plotly_chart(plots["agreement"], use_container_width=True)
    st.subheader("Rubric alignment")
    st.dataframe(report.validation.superiority, hide_index=True, use_container_width=True)
    st.subheader("Agreement")
    st.dataframe(report.agreement, hide_index=True, use_container_width=True)
    st.subheader(f"Pairs that fail validation ({len(report.failed_pairs)})")
    st.dataframe(report.failed_pairs, hide_index=True, use_container_width=True)
