"""The validation report as Markdown (:func:`to_markdown`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.render.text import (
    CROSSED_COLUMNS,
    EQUIVALENCE_COLUMNS,
    cleaning_rate,
    cleaning_title,
    crossed_table,
    escape_text,
    extra_sections,
    format_value,
    methods_paragraph,
    not_computed_lines,
    status_word,
)
from analysis.report import Report, Verdict


def _md(value: object) -> str:
    return escape_text(value, "markdown")


def _md_cell(value: Any) -> str:
    """A table cell: a number as formatted (nothing in it to escape), anything else escaped."""
    if isinstance(value, bool | np.bool_ | int | np.integer | float | np.floating):
        return format_value(value)
    return _md(format_value(value))


def _md_table(df: pd.DataFrame, columns: Sequence[str]) -> str:
    shown = [c for c in columns if c in df.columns]
    lines = ["| " + " | ".join(_md(c) for c in shown) + " |", "|" + "---|" * len(shown)]
    for row in df.to_dict(orient="records"):
        lines.append("| " + " | ".join(_md_cell(row[c]) for c in shown) + " |")
    return "\n".join(lines)


def _verdict_line(verdict: Verdict) -> str:
    return (
        f"- **{status_word(verdict)}** ({verdict.key}): {_md(verdict.claim)} ({_md(verdict.test)}); "
        f"{_md(verdict.detail)}"
    )


def to_markdown(report: Report) -> str:
    """The report as Markdown."""
    parts = [
        f"# Validation report: {_md(report.study)}",
        "",
        f"**Overall: {report.overall}** ({_md(report.overall_reason)})",
        "",
    ]
    parts += [_verdict_line(x) for x in report.verdicts]
    parts += _equivalence_parts(report)
    parts += _rubric_and_preference_parts(report)
    parts += _descriptive_parts(report)
    if report.not_computed:
        parts += ["", "## Not computed at this size", ""]
        parts += [f"- {_md(line)}" for line in not_computed_lines(report)]
    for title, note, table in extra_sections(report):
        parts += ["", f"## {_md(title)}", "", _md(note), "", _md_table(table, list(table.columns))]
    parts += ["", "## Methods", "", _md(methods_paragraph(report)), ""]
    return "\n".join(parts)


def _equivalence_parts(report: Report) -> list[str]:
    """The equivalence section: the crossed and per-pair TOST tables, the design and broken-share
    tables, and the crossed rubric and preference models."""
    v = report.validation
    level = round(100 * (1 - 2 * report.parameters["alpha"]))
    parts = ["", "## Equivalence on general quality (chosen - rejected)", ""]
    parts += [
        f"Crossed random-effects TOST (the verdict; generalizes over pairs and annotators, {level}% CI):",
        "",
        _md_table(crossed_table(report), CROSSED_COLUMNS),
        "",
        "Per-pair TOST, conditional on this panel of annotators:",
        "",
        _md_table(v.equivalence, EQUIVALENCE_COLUMNS),
    ]
    if not report.design.empty:
        parts += ["", "Annotators needed to generalize (variance components of the difference):", ""]
        parts.append(_md_table(report.design, list(report.design.columns)))
    if not v.broken.empty:
        parts += ["", "Share of pairs whose true gap lies beyond the margin (upper bound vs max):", ""]
        parts.append(_md_table(v.broken, list(v.broken.columns)))
    crossed_cols = ["dimension", "estimate", "se", "df", "ci_low", "ci_high", "p_greater", "p_holm",
                    "n_pairs", "n_annotators", "annotator_var", "warnings"]  # fmt: skip
    for title, table in (
        ("Rubric", v.rubric_crossed),
        ("Preference (a share: estimate and CI in 0-1)", v.preference_crossed),
    ):
        if not table.empty:
            parts += [
                "",
                f"{title}, crossed random-effects model (the verdict: pairs and annotators in general):",
            ]
            parts += ["", _md_table(table, [c for c in crossed_cols if c in table.columns])]
    return parts


def _rubric_and_preference_parts(report: Report) -> list[str]:
    """The rubric-alignment (superiority) and preference-for-chosen sections, conditional on the panel."""
    v = report.validation
    parts: list[str] = []
    if not v.superiority.empty:
        parts += ["", "## Rubric alignment (one-sided superiority), conditional on this panel", ""]
        parts.append(
            _md_table(
                v.superiority,
                [
                    "dimension",
                    "n",
                    "estimate",
                    "ci_low",
                    "ci_high",
                    "dz",
                    "rank_biserial",
                    "p_t",
                    "p_wilcoxon",
                    "p_holm",
                    "mde",
                ],
            )
        )
    parts += ["", "## Preference for chosen (pair level; ties count half), conditional on this panel", ""]
    parts.append(
        _md_table(
            v.preference,
            [
                "n_pairs",
                "n_judgments",
                "n_chosen",
                "n_rejected",
                "n_ties",
                "rate",
                "ci_low",
                "ci_high",
                "p_greater",
                "p_holm",
                "method",
            ],
        )
    )
    return parts


def _descriptive_parts(report: Report) -> list[str]:
    """Agreement, control pairs, bias, categories, annotators and the cleaning list."""
    parts = ["", "## Agreement", ""]
    parts.append(_md_table(report.agreement, list(report.agreement.columns)))
    if not report.controls.empty:
        parts += ["", "## Control pairs", "", _md_table(report.controls, list(report.controls.columns))]
    if not report.bias.empty:
        parts += ["", "## Position and length bias", "", _md_table(report.bias, list(report.bias.columns))]
    if not report.categories.empty:
        parts += ["", "## By category", "", _md_table(report.categories, list(report.categories.columns))]
    if not report.diagnostics.empty:
        parts += ["", "## Annotators", "", _md_table(report.diagnostics, list(report.diagnostics.columns))]
    biased = report.summary.get("position_biased") or []
    if biased:
        parts += ["", f"Annotators who prefer one side whatever the responses: {', '.join(biased)}"]
    parts += ["", f"## {cleaning_title(report)}", ""]
    if rate := cleaning_rate(report):
        parts += [_md(rate), ""]
    if "cleaning" in report.not_computed:
        parts.append(_md(report.not_computed["cleaning"]))
    elif report.failed_pairs.empty:
        parts.append("None.")
    else:
        parts.append(_md_table(report.failed_pairs, ["pair_id", "reasons"]))
    return parts
