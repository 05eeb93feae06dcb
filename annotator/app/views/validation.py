"""Validation: the same report as `annotator analyze`, with filters, and its downloads (HTML, JSON,
Markdown, the methods paragraph). The whole study's report is the stored one (computed ahead of the
visit, annotator.review.stored_results) with a line saying which data it covers; a filtered one is one
cached `build_report` per data version and filter set."""

import functools

import streamlit as st

from analysis import cleaning
from analysis.readable import SHARE_LABELS
from analysis.render import (
    CROSSED_COLUMNS,
    EQUIVALENCE_COLUMNS,
    REPORT_FORMATS,
    benchmark_sections,
    cleaning_rate,
    cleaning_title,
    crossed_table,
    figure_captions,
    judge_sections,
    owner_sections,
    prediction_powered_sections,
    status_word,
)
from analysis.report import Report
from analysis.verdicts import claims_in_words
from analysis.wording import counted
from annotator.app import report_cache, stored_view, waiting
from annotator.app.common import engine, safe_md, session, study_page
from annotator.app.tables import show_plot, show_table
from annotator.errors import UserError
from annotator.intake import assign
from annotator.people.authorization import Account
from annotator.review import adjudication_queue, stored_results, study_progress, study_report

SHOWN_FAILED = 500
SUPERIORITY_COLUMNS = ["dimension", "n", "estimate", "ci_low", "ci_high", "dz", "p_t", "p_wilcoxon", "p_holm"]
AGREEMENT_COLUMNS = [
    "item",
    "krippendorff_alpha",
    "krippendorff_alpha_ci_low",
    "krippendorff_alpha_ci_high",
    "ac1",
    "percent_agreement",
    "n_units",
]
FAILED_COLUMNS = ["pair_id", "category", "n_judgments", "share_prefer_chosen", "majority", "reasons"]


@st.cache_data(max_entries=32)
def cached_filter_options(
    url: str, study: str, version: tuple[int, ...], _account: Account
) -> tuple[list[str], list[str]]:
    """The categories and annotators to filter by, for one data version."""
    with session() as active:
        return study_progress.filter_options(active, study=study, account=_account)


@st.cache_resource(max_entries=2, show_spinner="Reading the latest stored report...")
def stored_published(url: str, stamp: str, _stored: stored_results.Stored) -> report_cache.Published | None:
    """The stored report with its figures, read once per stored version for the whole server (a report
    stored without its figures, by an earlier version, gets them drawn here)."""
    value = stored_view.read(_stored)
    return None if value is None else report_cache.Published(*stored_results.report_of(value))


def computed(key: report_cache.Key, account: Account) -> report_cache.Published:
    """The report of `key` computed in this server (once per key), waited for without holding the visit
    (:func:`annotator.app.waiting.outcome`)."""
    try:
        return waiting.outcome(
            lambda: report_cache.request(key, account, engine=engine()),
            f"validation_{hash(key)}",
            "the validation report",
        )
    except UserError as exc:
        st.info(str(exc))
        st.stop()


def the_report(key: report_cache.Key, account: Account) -> report_cache.Published:
    """The report to show, after a line saying which data it covers: the whole study's stored report at
    once (computed here when none is stored yet, or when asked for); a filtered one computed here."""
    url, study, version, categories, annotators = key
    filtered = bool(categories or annotators)
    current = stored_results.encode_version(version)
    stored = None if filtered else stored_view.latest(study, "report", account)
    published = None
    if stored is not None:
        published = stored_published(url, stored.stamp, stored)
        stored = stored if published is not None else None  # its file is gone: compute and store anew
    if stored is not None:
        line, stale = stored_view.coverage(stored, current, "Report")
        st.caption(line)
        if stale:
            stored_view.keep_updated()
            if st.button(
                "Compute the current report now",
                key="validation_current",
                icon=":material/update:",
                help="The report is brought up to date in the background; this computes it here and now",
            ):
                published = None
    if published is None:
        published = computed(key, account)
        if not filtered and (stored is None or stored.version != current):
            st.caption(f"Report of the current data ({published.report.summary['n_judgments']} judgments)")
    return published


def headline(report: Report) -> str:
    """The overall result and, in words, which claims the data contradict or do not (yet) establish."""
    failed = claims_in_words([v.claim for v in report.verdicts if v.status == "fail"])
    open_ = claims_in_words([v.claim for v in report.verdicts if v.status == "inconclusive"])
    lines = [f"**Overall: {report.overall}**"]
    if failed:
        lines.append("Contradicted by the data: " + failed + ".")
    if open_:
        lines.append("Not established by the data so far: " + open_ + ".")
    if not failed and not open_:
        lines.append("Every verdict passes.")
    return "  \n".join(lines)


def downloads(published: report_cache.Published, study: str, filtered: bool) -> None:
    """The report to publish in every registered format (analysis.render.REPORT_FORMATS), made when a
    button is pressed, and the methods paragraph to copy."""
    st.header("Download the report")
    st.caption(
        "The same numbers as `annotator analyze --study "
        + study.replace("`", "")
        + "`"
        + (" with the filters above applied." if filtered else ".")
        + " The HTML file opens offline (its figures are inside it)."
    )
    name = study + ("-filtered" if filtered else "")
    columns = st.columns(len(REPORT_FORMATS))
    for column, fmt in zip(columns, REPORT_FORMATS, strict=True):
        column.download_button(
            fmt.title,
            functools.partial(published.file, fmt.name),
            file_name=f"{name}-report.{fmt.suffix}",
            mime=fmt.mime,
            key=f"validation_download_{fmt.suffix}",
            icon=":material/download:",
            on_click="ignore",
        )
    with st.expander("Methods paragraph (the copy button is at its top right)"):
        st.code(published.methods, language=None, wrap_lines=True)


def decided_pairs(study: str, account: Account) -> set[str]:
    """The study's pairs a person has decided (no longer among those that get more judgments)."""
    with session() as active:
        return adjudication_queue.decided_pairs(active, study=study, account=account)


def more_judgments(pairs: list[str], study: str, account: Account) -> None:
    """A button that gives each pair that gets the next judgments (:func:`study_report.standing`: the
    registered design's rule, else the cleaning list's "needs more judgments") one more annotator."""
    if not pairs:
        return
    if st.button(
        f"Give the {counted(len(pairs), 'pair')} that {counted(len(pairs), 'needs', 'need', number=False)} "
        "more judgments one more annotator each",
        key="validation_needs_more",
        icon=":material/group_add:",
        help="Each goes to the least-loaded active annotator not yet on it, on the side seen less often",
    ):
        try:
            with session() as active:
                summary = assign.assign(active, study=study, more_for=pairs, account=account)
        except UserError as exc:
            st.error(safe_md(exc))
        else:
            st.success(safe_md(summary))


def main() -> None:
    account, study = study_page("Validation", "validation_study")
    if study is not None:
        with session() as active:
            version = study_progress.data_version(active, study, account=account)
        url = str(engine().url)
        categories, annotators = cached_filter_options(url, study, version, account)
        left, right = st.columns(2)
        chosen_categories = left.multiselect("Categories", categories, key="validation_categories")
        chosen_annotators = right.multiselect("Annotators", annotators, key="validation_annotators")
        key = (url, study, version, tuple(chosen_categories), tuple(chosen_annotators))
        published = the_report(key, account)
        report, plots = published.report, published.plots
        captions = figure_captions(report)
        s = report.summary
        info, refresh = st.columns([5, 1], vertical_alignment="center")
        info.caption(f"{s['n_pairs']} pairs · {s['n_annotators']} annotators · {s['n_judgments']} judgments")
        refresh.button(
            "Refresh",
            key="validation_refresh",
            icon=":material/refresh:",
            help=(
                "Re-read the study; the report is recomputed only when judgments, decisions or models changed"
            ),
        )
        boxes = {"pass": st.success, "fail": st.error, "inconclusive": st.warning, "not_assessed": st.info}
        overall_box = {"PASS": st.success, "FAIL": st.error}.get(report.overall, st.warning)
        overall_box(headline(report))
        words, next_pairs = study_report.standing(report, decided_pairs(study, account))
        st.markdown(safe_md(words + (": " + ", ".join(next_pairs[:20]) if next_pairs else "")))
        for verdict in report.verdicts:
            boxes[verdict.status](
                f"**{status_word(verdict)}: {verdict.claim}** ({verdict.test})  \n{verdict.detail}"
            )
        downloads(published, study, bool(chosen_categories or chosen_annotators))
        st.header("Equivalence on general quality")
        show_plot(plots["forest"], captions["forest"])
        st.subheader("Crossed random-effects model (the verdict: pairs and annotators in general)")
        show_table(crossed_table(report), CROSSED_COLUMNS)
        st.subheader("Per-pair TOST, conditional on this panel of annotators")
        show_table(report.validation.equivalence, EQUIVALENCE_COLUMNS)
        show_plot(plots["differences"], captions["differences"])
        st.subheader("Share of pairs whose true gap lies beyond the margin (upper bound against the maximum)")
        show_table(report.validation.broken, key="validation_broken")
        st.header("Preference and agreement")
        left, right = st.columns(2)
        with left:
            show_plot(plots["preference"], captions["preference"])
        with right:
            show_plot(plots["agreement"], captions["agreement"])
        st.header("By category")
        show_plot(plots["categories"], captions["categories"])
        st.header("Rubric alignment and preference")
        st.subheader("Over pairs and annotators (the verdicts)")
        show_table(report.validation.rubric_crossed, key="validation_crossed_rubric")
        show_table(
            report.validation.preference_crossed, key="validation_crossed_preference", labels=SHARE_LABELS
        )
        st.subheader("Rubric alignment, conditional on this panel of annotators")
        show_table(report.validation.superiority, SUPERIORITY_COLUMNS)
        if report.summary.get("position_biased"):
            st.warning(
                "Annotators who prefer one side whatever the responses (side-A rate, Holm-adjusted): "
                + ", ".join(report.summary["position_biased"])
            )
        st.header("Agreement")
        show_table(report.agreement, AGREEMENT_COLUMNS)
        st.header(cleaning_title(report))
        rule = f"{cleaning_rate(report)} {cleaning.RULE}".strip()
        if report.failed_pairs.empty:  # nothing to list: the rule in one line, no empty table
            st.caption(f"{rule}. No pair is listed.")
        else:
            st.caption(f"{rule} with the button below the list (or `annotator assign --needs-more`)")
            show_table(report.failed_pairs.head(SHOWN_FAILED), key="validation_failed")
        if not (chosen_categories or chosen_annotators):  # the study's own list, not a filtered one
            more_judgments(next_pairs, study, account)
        if len(report.failed_pairs) > SHOWN_FAILED:
            st.caption(f"The first {SHOWN_FAILED} are shown; the JSON report lists them all.")
        # models, arms, judges, the profiles' owners
        sections = [
            *benchmark_sections(report),
            *judge_sections(report),
            *prediction_powered_sections(report),
        ]
        for title, note, table in [*sections, *owner_sections(report)]:
            st.header(title)
            st.caption(note)
            show_table(table.head(SHOWN_FAILED), key=f"validation_{title}")


main()
