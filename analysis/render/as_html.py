"""The validation report as one self-contained HTML page (:func:`to_html`), figures included."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence

import pandas as pd

from analysis.readable import readable
from analysis.render.as_json import json_ready
from analysis.render.plots import figure_captions, svg_figures
from analysis.render.text import (
    CROSSED_COLUMNS,
    EQUIVALENCE_COLUMNS,
    cleaning_rate,
    cleaning_title,
    crossed_table,
    escape_text,
    extra_sections,
    methods_paragraph,
    not_computed_lines,
    status_word,
)
from analysis.report import Report

#: A one-row table with more columns than this is shown as a list of its measures.
ONE_ROW_COLUMNS = 4
#: The columns of the agreement table and the cleaning list the page shows (the JSON report has all).
AGREEMENT_COLUMNS = [
    "item",
    "krippendorff_alpha",
    "krippendorff_alpha_ci_low",
    "krippendorff_alpha_ci_high",
    "ac1",
    "percent_agreement",
    "n_units",
    "note",
]
FAILED_COLUMNS = ["pair_id", "n_judgments", "decision", "p_broken", "q_value", "reasons"]


def _html(value: object) -> str:
    return escape_text(value, "html")


def _numbers_only(column: pd.Series) -> bool:
    """Whether every filled cell of a shown column is a number (such a column is right-aligned, words
    are left-aligned)."""
    for value in column:
        text = str(value).strip().lstrip("<>").rstrip("%").replace(",", "")
        if text in ("", "nan", "None"):
            continue
        try:
            float(text)
        except ValueError:
            return False
    return True


def _html_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A table a person reads (labelled columns, rounded numbers, empty cells). A one-row table is shown
    as a list of its measures (label, value); every cell carries its column's label, so that on a
    narrow screen each row becomes a card of label: value lines instead of a table cut at the edge."""
    shown = readable(df, columns)
    if len(shown) == 1 and len(shown.columns) > ONE_ROW_COLUMNS:
        shown = pd.DataFrame({"Measure": list(shown.columns), "Value": list(shown.iloc[0])})
    labels = [_html(str(c)) for c in shown.columns]
    aligned = ["" if _numbers_only(shown[c]) else " class='text'" for c in shown.columns]
    head = "".join(f"<th scope='col'{a}>{label}</th>" for label, a in zip(labels, aligned, strict=True))
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td data-label='{label}'{a}>{_html(value)}</td>"
            for label, a, value in zip(labels, aligned, row, strict=True)
        )
        + "</tr>"
        for row in shown.itertuples(index=False)
    )
    return (
        f"<div class='table' role='region' tabindex='0' aria-label='table'><table><thead><tr>{head}"
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _section(title: str, content: str, *, opened: bool = False, rows: int = 0) -> str:
    """A part of the report under its heading, collapsed (a click opens it) unless `opened`; `rows` says
    in the heading how long its table is."""
    count = f" <span class='count'>({rows} {'row' if rows == 1 else 'rows'})</span>" if rows else ""
    return (
        f"<details{' open' if opened else ''}><summary><h2>{_html(title)}</h2>{count}</summary>"
        f"{content}</details>"
    )


def to_html(report: Report, figures: Mapping[str, str] | None = None) -> str:
    """A self-contained HTML report (its figures are SVG images inside it; opens offline, no script);
    `figures`: the report's figures already drawn (:func:`svg_figures`), else they are drawn here."""
    captions = figure_captions(report)
    plots = {  # each figure an SVG image of its own (its ids cannot meet another figure's)
        name: f"<figure><img src='data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}' "
        f"alt='{html.escape(captions[name])}'><figcaption>{html.escape(captions[name])}</figcaption></figure>"
        for name, svg in (figures or svg_figures(report)).items()
    }
    v = report.validation
    verdicts = "".join(
        f"<li class='{x.status}'><b>{status_word(x)}</b> {_html(x.claim)} "
        f"<span class='test'>({_html(x.test)})</span><br>{_html(x.detail)}</li>"
        for x in report.verdicts
    )
    s = report.summary

    def table_or(df: pd.DataFrame, empty: str, columns: Sequence[str] | None = None, key: str = "") -> str:
        if key in report.not_computed:
            return f"<p>{_html(report.not_computed[key])}</p>"
        return _html_table(df, columns) if not df.empty else f"<p>{empty}</p>"

    science = [  # models, arms, rubric support, quality control, judges
        _section(title, f"<p>{_html(note)}</p>{_html_table(table)}", rows=len(table))
        for title, note, table in extra_sections(report)
    ]
    crossed = "Crossed random-effects TOST (the verdict: pairs and annotators in general)"
    categories = (
        plots["categories"]
        if not report.categories.empty
        else table_or(report.categories, "No categories.", key="categories")
    )
    parameters = f"<pre>{_html(json.dumps(json_ready(report.parameters), indent=2))}</pre>"
    parts = [
        _section(
            "Equivalence on general quality",
            f"{plots['forest']}<h3>{crossed}</h3>{_html_table(crossed_table(report), CROSSED_COLUMNS)}",
            opened=True,
        ),
        _section(
            "Per-pair TOST, conditional on this panel of annotators",
            _html_table(v.equivalence, EQUIVALENCE_COLUMNS),
            rows=len(v.equivalence),
        ),
        _section(
            "Annotators needed to generalize",
            table_or(report.design, "Not estimated."),
            rows=len(report.design),
        ),
        _section("Rating differences", plots["differences"]),
        _section("By category", categories),
        _section("Rubric alignment", table_or(v.superiority, "No rubric ratings.")),
        _section("Preference (pair level; ties count half)", plots["preference"] + _html_table(v.preference)),
        _section(
            "Agreement",
            plots["agreement"] + _html_table(report.agreement, AGREEMENT_COLUMNS),
            rows=len(report.agreement),
        ),
        _section("Control pairs", table_or(report.controls, "No control pairs."), rows=len(report.controls)),
        _section(
            "Position and length bias",
            table_or(report.bias, "No side or length information.", key="bias"),
            rows=len(report.bias),
        ),
        _section(
            "Annotators",
            table_or(report.diagnostics, "Not computed.", key="diagnostics"),
            rows=len(report.diagnostics),
        ),
        _section(
            cleaning_title(report),
            (f"<p>{_html(rate)}</p>" if (rate := cleaning_rate(report)) else "")
            + table_or(report.failed_pairs, "None.", FAILED_COLUMNS, key="cleaning"),
            rows=len(report.failed_pairs),
        ),
        *science,
        *(
            [
                _section(
                    "Not computed at this size",
                    "<ul>" + "".join(f"<li>{_html(x)}</li>" for x in not_computed_lines(report)) + "</ul>",
                    opened=True,
                )
            ]
            if report.not_computed
            else []
        ),
        _section("Methods", f"<p>{_html(methods_paragraph(report))}</p>"),
        _section("Parameters", parameters),
    ]
    body = f"""
<h1>Validation report: {_html(report.study)}</h1>
<p class="summary">{s["n_pairs"]} pairs · {s["n_annotators"]} annotators · {s["n_judgments"]} judgments ·
{html.escape(cleaning_title(report))}</p>
<p class="overall {report.overall.lower()}"><b>Overall: {report.overall}</b>
({_html(report.overall_reason)})</p>
<ul class="verdicts">{verdicts}</ul>
<p class="hint">Each part below opens with a click; the JSON report holds every table in full.</p>
{"".join(parts)}
"""
    style = """body{font-family:system-ui,sans-serif;max-width:1240px;margin:2rem auto;color:#1f2430;
padding:0 1rem;line-height:1.45;overflow-wrap:anywhere}
.table{overflow-x:auto;max-width:100%;margin:.5rem 0 1.5rem}
table{border-collapse:collapse;font-size:.85rem}
th,td{border:1px solid #dee2e6;padding:.25rem .5rem;text-align:right;overflow-wrap:normal}
details{border-top:1px solid #dee2e6}summary{cursor:pointer;padding:.2rem 0}
summary h2{display:inline;font-size:1.2rem}.count,.hint{color:#4a5160;font-size:.9rem}
th{background:#f3f5f9;vertical-align:bottom}td:first-child,th:first-child,.text{text-align:left}
figure{margin:1rem 0;max-width:100%}figure>img{max-width:100%;height:auto}
figcaption{color:#4a5160;font-size:.9rem}.verdicts{padding-left:1.2rem}.verdicts li{margin:.4rem 0}
.pass b{color:#1e6b2e}.fail b{color:#c92a2a}.inconclusive b{color:#c2410c}.not_assessed b{color:#5c636e}
.test{color:#5c636e;font-size:.9em}.summary{color:#4a5160}pre{white-space:pre-wrap}
@media (max-width:600px){body{margin:1rem auto;padding:0 .75rem}h1{font-size:1.5rem}
table{font-size:.78rem}table,tbody,tr,td{display:block}thead{display:none}
tr{border:1px solid #dee2e6;margin:0 0 .5rem;padding:.25rem 0}td{border:0;text-align:left}
td::before{content:attr(data-label) ": ";color:#4a5160}}"""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>Validation report: "
        f"{_html(report.study)}</title><style>{style}</style></head><body>{body}</body></html>"
    )
