"""The validation report as one self-contained HTML page (:func:`to_html`), figures included."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import pandas as pd

from analysis.readable import readable
from analysis.render.as_json import json_ready
from analysis.render.plots import figure_captions, figures
from analysis.render.text import (
    CROSSED_COLUMNS,
    EQUIVALENCE_COLUMNS,
    cleaning_title,
    crossed_table,
    escape_text,
    extra_sections,
    methods_paragraph,
    status_word,
)
from analysis.report import Report


def _html(value: object) -> str:
    return escape_text(value, "html")


def _html_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A table a person reads (labelled columns, rounded numbers, empty cells), in a box that scrolls
    sideways on a narrow screen instead of widening the page."""
    shown = readable(df, columns)
    head = "".join(f"<th scope='col'>{_html(str(c))}</th>" for c in shown.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_html(value)}</td>" for value in row) + "</tr>"
        for row in shown.itertuples(index=False)
    )
    return (
        f"<div class='table' role='region' tabindex='0' aria-label='table'><table><thead><tr>{head}"
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def to_html(report: Report) -> str:
    """A self-contained HTML report (plotly inlined once; opens offline, no external script)."""
    figs = figures(report)
    captions = figure_captions(report)
    plots = {
        name: "<figure>"
        + fig.to_html(
            full_html=False,
            include_plotlyjs=number == 0,
            div_id=f"fig-{name}",
            default_width="100%",
            config={"displaylogo": False, "responsive": True},
        )
        + f"<figcaption>{html.escape(captions[name])}</figcaption></figure>"
        for number, (name, fig) in enumerate(figs.items())
    }
    v = report.validation
    verdicts = "".join(
        f"<li class='{x.status}'><b>{status_word(x)}</b> {_html(x.claim)} "
        f"<span class='test'>({_html(x.test)})</span><br>{_html(x.detail)}</li>"
        for x in report.verdicts
    )
    s = report.summary

    def table_or(df: pd.DataFrame, empty: str, columns: Sequence[str] | None = None) -> str:
        return _html_table(df, columns) if not df.empty else f"<p>{empty}</p>"

    science = "".join(  # models, arms, rubric support, quality control, judges
        f"<h2>{_html(title)}</h2><p>{_html(note)}</p>{_html_table(table)}"
        for title, note, table in extra_sections(report)
    )
    body = f"""
<h1>Validation report: {_html(report.study)}</h1>
<p class="summary">{s["n_pairs"]} pairs · {s["n_annotators"]} annotators · {s["n_judgments"]} judgments ·
{html.escape(cleaning_title(report))}</p>
<p class="overall {report.overall.lower()}"><b>Overall: {report.overall}</b>
({_html(report.overall_reason)})</p>
<ul class="verdicts">{verdicts}</ul>
<h2>Equivalence on general quality</h2>{plots["forest"]}
<h3>Crossed random-effects TOST (the verdict: pairs and annotators in general)</h3>
{_html_table(crossed_table(report), CROSSED_COLUMNS)}
<h3>Per-pair TOST, conditional on this panel of annotators</h3>
{_html_table(v.equivalence, EQUIVALENCE_COLUMNS)}
<h3>Annotators needed to generalize</h3>{table_or(report.design, "Not estimated.")}
<h2>Rating differences</h2>{plots["differences"]}
<h2>By category</h2>{plots["categories"] if not report.categories.empty else "<p>No categories.</p>"}
<h2>Rubric alignment</h2>{table_or(v.superiority, "No rubric ratings.")}
<h2>Preference (pair level; ties count half)</h2>{plots["preference"]}{_html_table(v.preference)}
<h2>Agreement</h2>{plots["agreement"]}{_html_table(report.agreement)}
<h2>Control pairs</h2>{table_or(report.controls, "No control pairs.")}
<h2>Position and length bias</h2>{table_or(report.bias, "No side or length information.")}
<h2>Annotators</h2>{table_or(report.diagnostics, "Not computed.")}
<h2>{html.escape(cleaning_title(report))}</h2>{table_or(report.failed_pairs, "None.")}
{science}
<h2>Methods</h2><p>{_html(methods_paragraph(report))}</p>
<h2>Parameters</h2><pre>{_html(json.dumps(json_ready(report.parameters), indent=2))}</pre>
"""
    style = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;color:#1f2430;
padding:0 1rem;line-height:1.45;overflow-wrap:anywhere}
.table{overflow-x:auto;max-width:100%;margin:.5rem 0 1.5rem}
table{border-collapse:collapse;font-size:.85rem}
th,td{border:1px solid #dee2e6;padding:.25rem .5rem;text-align:right;overflow-wrap:normal}
th{background:#f3f5f9;vertical-align:bottom}td:first-child,th:first-child{text-align:left}
figure{margin:1rem 0;max-width:100%}figure>div{max-width:100%}
figcaption{color:#4a5160;font-size:.9rem}.verdicts{padding-left:1.2rem}.verdicts li{margin:.4rem 0}
.pass b{color:#1e6b2e}.fail b{color:#c92a2a}.inconclusive b{color:#c2410c}.not_assessed b{color:#5c636e}
.test{color:#5c636e;font-size:.9em}.summary{color:#4a5160}pre{white-space:pre-wrap}
@media (max-width:600px){body{margin:1rem auto;padding:0 .75rem}h1{font-size:1.5rem}
table{font-size:.78rem}}"""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>Validation report: "
        f"{_html(report.study)}</title><style>{style}</style></head><body>{body}</body></html>"
    )
