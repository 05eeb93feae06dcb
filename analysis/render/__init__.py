"""The validation report rendered: JSON (with its schema), Markdown, self-contained HTML, the figures
(matplotlib, as SVG), the methods paragraph and the terminal summary, one module per output format and
:mod:`analysis.render.text` for the wording they share. Nothing here computes a statistic; everything
comes from :class:`analysis.report.Report`."""

from analysis.render.as_html import to_html
from analysis.render.as_json import REPORT_SCHEMA, json_ready, json_text, to_json
from analysis.render.as_markdown import to_markdown
from analysis.render.as_terminal import to_terminal
from analysis.render.formats import REPORT_FORMATS, ReportFormat, format_for, format_of_file
from analysis.render.owner_text import owner_sections
from analysis.render.plots import MIN_CATEGORY_PAIRS, difference_range, figure_captions, figures, svg_figures
from analysis.render.ppi_text import prediction_powered_sections
from analysis.render.text import (
    CROSSED_COLUMNS,
    EQUIVALENCE_COLUMNS,
    benchmark_sections,
    cleaning_rate,
    cleaning_title,
    crossed_table,
    escape_text,
    extra_sections,
    format_value,
    judge_sections,
    methods_paragraph,
    quality_sections,
    status_word,
)

__all__ = [
    "CROSSED_COLUMNS",
    "EQUIVALENCE_COLUMNS",
    "MIN_CATEGORY_PAIRS",
    "REPORT_FORMATS",
    "REPORT_SCHEMA",
    "ReportFormat",
    "benchmark_sections",
    "cleaning_rate",
    "cleaning_title",
    "crossed_table",
    "difference_range",
    "escape_text",
    "extra_sections",
    "figure_captions",
    "figures",
    "format_for",
    "format_of_file",
    "format_value",
    "judge_sections",
    "json_ready",
    "json_text",
    "methods_paragraph",
    "owner_sections",
    "prediction_powered_sections",
    "quality_sections",
    "status_word",
    "svg_figures",
    "to_html",
    "to_json",
    "to_markdown",
    "to_terminal",
]
