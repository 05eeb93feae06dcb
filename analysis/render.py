"""The validation report rendered: JSON (with its schema), Markdown, self-contained HTML (plotly),
plotly figures, the methods paragraph and the terminal summary. Nothing here computes a statistic;
everything comes from :class:`analysis.report.Report`."""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.readable import readable
from analysis.report import Report, Verdict

__all__ = [
    "CROSSED_COLUMNS",
    "EQUIVALENCE_COLUMNS",
    "REPORT_SCHEMA",
    "escape_text",
    "figure_captions",
    "figures",
    "methods_paragraph",
    "status_word",
    "to_html",
    "to_json",
    "to_markdown",
    "to_terminal",
]

_WORDS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "not_assessed": "NOT ASSESSED"}


def status_word(verdict: Verdict) -> str:
    """PASS, FAIL, INCONCLUSIVE or NOT ASSESSED."""
    return _WORDS[verdict.status]


# --------------------------------------------------------------------------------------------- JSON


def _clean(value: Any) -> Any:
    """JSON-ready: NaN/inf become None, NumPy scalars become Python numbers."""
    if isinstance(value, _Records):
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


class _Records(list[dict[str, Any]]):
    """Table rows that are JSON-ready already (:func:`_clean` passes them through)."""


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows, JSON-ready (what :func:`_clean` makes of each row, by columns)."""
    frame = df.copy()
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_datetime64_any_dtype(column):
            frame[name] = [None if pd.isna(t) else t.isoformat() for t in column]
        elif pd.api.types.is_float_dtype(column):
            values = column.to_numpy(dtype=float)
            frame[name] = pd.Series(values.tolist(), index=frame.index, dtype=object).where(
                np.isfinite(values), None
            )
        elif column.isna().any():  # e.g. a string column's missing values (NaN in pandas' str dtype)
            frame[name] = column.astype(object).where(column.notna(), None)
    rows = frame.to_dict(orient="records")
    needs_cleaning = any(pd.api.types.is_object_dtype(df[name]) for name in df.columns)
    return _Records(_clean(row) for row in rows) if needs_cleaning else _Records(rows)


def json_text(report: Report) -> str:
    """The report as JSON text: one line per top-level key, and a table one row per line. The
    standard library's C encoder writes each line (``indent`` would use its Python encoder: 4 s for
    a 20,000-pair report)."""
    lines = []
    for key, value in to_json(report).items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            rows = ",\n".join(f"    {json.dumps(row, ensure_ascii=False, allow_nan=False)}" for row in value)
            text = f"[\n{rows}\n  ]"
        else:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        lines.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def to_json(report: Report) -> dict[str, Any]:
    """Every number of the report as plain JSON data (see :data:`REPORT_SCHEMA`).

    The agreement coefficient is ``krippendorff_alpha``; ``parameters.alpha`` is the significance
    level.
    """
    v = report.validation
    return _clean(
        {
            "study": report.study,
            "overall": report.overall,
            "overall_reason": report.overall_reason,
            "parameters": report.parameters,
            "summary": report.summary,
            "verdicts": [verdict.to_dict() for verdict in report.verdicts],
            "equivalence_crossed": _records(v.crossed),
            "equivalence": _records(v.equivalence),
            "intersection_union": v.iut.to_dict(),
            "intersection_union_panel": v.iut_panel.to_dict(),
            "rubric_superiority": _records(v.superiority),
            "rubric_crossed": _records(v.rubric_crossed),
            "preference_crossed": _records(v.preference_crossed),
            "broken_share": _records(v.broken),
            "cleaning": _records(report.cleaning),
            "preference": _records(v.preference)[0],
            "preference_judgments": _records(v.preference_judgments)[0],
            "holm": _records(v.holm),
            "agreement": _records(report.agreement),
            "annotator_design": _records(report.design),
            "bias": _records(report.bias),
            "categories": _records(report.categories),
            "controls": _records(report.controls),
            "annotator_diagnostics": _records(report.diagnostics),
            "failed_pairs": _records(report.failed_pairs),
            "methods": methods_paragraph(report),
            "quality": None
            if report.quality is None
            else {"exclusion": report.quality.exclusion}
            | {name: _records(df) for name, df in report.quality.tables().items()},
            **_judges_json(report),
            "benchmark": None
            if report.benchmark is None
            else {"pairs_used": report.benchmark.pairs_used}
            | {name: _records(df) for name, df in report.benchmark.tables().items()},
        }
    )


def _judges_json(report: Report) -> dict[str, Any]:
    """The LLM-judges keys: ``judges`` (one row per judge and item), ``judge_tests``, ``judge_cards``."""
    section = report.judges
    if section is None:
        return {"judges": [], "judge_tests": [], "judge_cards": []}
    return {name: _records(table) for name, table in section.tables().items()}


_NUMBER = {"type": ["number", "null"]}
# The columns of the equivalence tables shown in the Markdown and HTML reports.
CROSSED_COLUMNS = [
    "dimension",
    "n_pairs",
    "n_annotators",
    "estimate",
    "se",
    "df",
    "ci_low",
    "ci_high",
    "p_value",
    "equivalent",
    "pair_var",
    "annotator_var",
    "residual_var",
]
EQUIVALENCE_COLUMNS = [
    "dimension",
    "n_pairs",
    "estimate",
    "ci_low",
    "ci_high",
    "low",
    "high",
    "p_value",
    "equivalent",
    "wilcoxon_p_value",
    "wilcoxon_equivalent",
]
REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": [
        "study",
        "overall",
        "overall_reason",
        "parameters",
        "summary",
        "verdicts",
        "equivalence_crossed",
        "equivalence",
        "intersection_union",
        "rubric_superiority",
        "preference",
        "agreement",
        "annotator_diagnostics",
        "failed_pairs",
    ],
    "properties": {
        "study": {"type": "string"},
        "overall": {"enum": ["PASS", "INCONCLUSIVE", "FAIL"]},
        "overall_reason": {"type": "string"},
        "parameters": {
            "type": "object",
            "required": [
                "margin",
                "alpha",
                "quality_items",
                "n_boot",
                "seed",
                "reliability_threshold",
                "min_pairs",
            ],
        },
        "summary": {"type": "object", "required": ["n_pairs", "n_annotators", "n_judgments"]},
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "claim", "test", "status", "passed", "detail"],
                "properties": {
                    "key": {
                        "enum": [
                            "sample_size",
                            "equivalence",
                            "rubric",
                            "preference",
                            "reliability",
                            "sensitivity",
                        ]
                    },
                    "status": {"enum": ["pass", "fail", "inconclusive", "not_assessed"]},
                    "passed": {"type": "boolean"},
                    "claim": {"type": "string"},
                },
            },
        },
        "equivalence_crossed": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": [
                    "dimension",
                    "estimate",
                    "se",
                    "df",
                    "ci_low",
                    "ci_high",
                    "pvalue",
                    "equivalent",
                ],
            },
        },
        "equivalence": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": [
                    "dimension",
                    "estimate",
                    "ci_low",
                    "ci_high",
                    "low",
                    "high",
                    "p_value",
                    "equivalent",
                ],
                "properties": {
                    "dimension": {"type": "string"},
                    "estimate": _NUMBER,
                    "ci_low": _NUMBER,
                    "ci_high": _NUMBER,
                    "low": {"type": "number"},
                    "high": {"type": "number"},
                    "p_value": _NUMBER,
                    "equivalent": {"type": "boolean"},
                },
            },
        },
        "intersection_union": {"type": "object", "required": ["equivalent", "pvalue"]},
        "rubric_superiority": {"type": "array"},
        "preference": {"type": "object", "required": ["rate", "ci_low", "ci_high", "p_greater", "n_pairs"]},
        "agreement": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "item",
                    "krippendorff_alpha",
                    "krippendorff_alpha_ci_low",
                    "krippendorff_alpha_ci_high",
                    "ci_covers",
                ],
            },
        },
        "annotator_diagnostics": {"type": "array", "items": {"type": "object", "required": ["annotator"]}},
        "failed_pairs": {"type": "array", "items": {"type": "object", "required": ["pair_id", "reasons"]}},
        "judges": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "judge",
                    "item",
                    "n_pairs",
                    "winning_rate",
                    "advantage_probability",
                    "epsilon",
                    "can_replace",
                ],
                "properties": {"can_replace": {"type": ["boolean", "null"]}},
            },
        },
    },
}


# ------------------------------------------------------------------------------------------ escaping

# The characters that start inline Markdown markup wherever they stand (emphasis, code, links and
# images, raw HTML and entities, table cells, strikethrough, math), the backslash itself, and what
# starts a block at the beginning of a line (headings, quotes, lists, setext underlines).
_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]<>!|~$&])")
_MARKDOWN_BLOCK = re.compile(r"^(\d{1,9}(?=[.)])|)([#>+=\-.)])")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def escape_text(value: object, fmt: Literal["html", "markdown"]) -> str:
    """A text from the data (pair ids, categories, annotator, model and study names, reasons) as inert
    text in a report: the one escaping rule of every output format.

    HTML: ``<``, ``>``, ``&`` and quotes become entities. Markdown: the text is kept on one line (a line
    break would end a table row or start a block), a block marker at its start is escaped, and every
    character that starts inline markup is backslash-escaped (CommonMark lets any ASCII punctuation be),
    so raw HTML, images, links, emphasis, code, tables and math all show as the characters typed.

    >>> escape_text("<img src=x> ![a](http://e/x.png)", "html")
    '&lt;img src=x&gt; ![a](http://e/x.png)'
    >>> print(escape_text("<b>x</b>\\n![a](http://e/x.png) | *y*", "markdown"))
    \\<b\\>x\\</b\\> \\!\\[a\\](http://e/x.png) \\| \\*y\\*
    >>> print(escape_text("# 1. not a heading", "markdown"))
    \\# 1. not a heading
    """
    text = str(value)
    if fmt == "html":
        return html.escape(text, quote=True)
    text = _LINE_BREAKS.sub(" ", text).lstrip()
    text = _MARKDOWN_INLINE.sub(r"\\\1", text)
    return _MARKDOWN_BLOCK.sub(r"\1\\\2", text, count=1)


# ----------------------------------------------------------------------------------------- Markdown


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return str(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        if not math.isfinite(number):
            return "n/a"
        if number != 0 and abs(number) < 10**-digits:
            return f"{number:.2g}"
        return f"{number:.{digits}f}"
    return str(value)


def _md(value: object) -> str:
    return escape_text(value, "markdown")


def _md_cell(value: Any) -> str:
    """A table cell: a number as formatted (nothing in it to escape), anything else escaped."""
    if isinstance(value, bool | np.bool_ | int | np.integer | float | np.floating):
        return _fmt(value)
    return _md(_fmt(value))


def _md_table(df: pd.DataFrame, columns: Sequence[str]) -> str:
    shown = [c for c in columns if c in df.columns]
    lines = ["| " + " | ".join(_md(c) for c in shown) + " |", "|" + "---|" * len(shown)]
    for row in df.to_dict(orient="records"):
        lines.append("| " + " | ".join(_md_cell(row[c]) for c in shown) + " |")
    return "\n".join(lines)


def _crossed_table(report: Report) -> pd.DataFrame:
    return report.validation.crossed.rename(columns={"pvalue": "p_value"})


def methods_paragraph(report: Report) -> str:
    """A methods paragraph stating exactly what was tested, with every parameter."""
    p, s = report.parameters, report.summary
    level = round(100 * (1 - 2 * p["alpha"]))
    crossed = report.validation.crossed
    dfs = ", ".join(f"{r['dimension']} {r['df']:.1f}" for r in crossed.to_dict("records"))
    design = report.design
    n_ann = s["n_annotators"]
    weak = (
        f" With {n_ann} annotators the annotator variance rests on {max(n_ann - 1, 0)} degree(s) of freedom, "
        "so the generalization to other annotators is weak and the test conservative."
        if n_ann < 6
        else ""
    )
    if not design.empty and design["pool_needed"].notna().any():
        weak += (
            f" From the estimated variance components, about {int(design['pool_needed'].max())} annotators "
            f"(with these {s['n_pairs']} pairs and this overlap) give "
            f"{round(100 * p['target_power'])}% power if the true gap is 0."
        )
    return (
        f"{n_ann} annotators rated {s['n_pairs']} preference pairs ({s['n_judgments']} judgments)"
        + (
            ", blind to which response was constructed to follow the user's rubric and with its side "
            "counterbalanced"
            if s.get("side_data")
            else " (the labels record no display side, so blinding and counterbalancing are not claimed)"
        )
        + (
            f"; {s['n_control_pairs']} control pairs were analysed separately"
            if s.get("n_control_pairs")
            else ""
        )
        + ". General quality ("
        + ", ".join(p["quality_items"])
        + f") was rated {p['scale_min']:g}-{p['scale_max']:g} "
        "for each response. For each dimension we fitted a linear mixed model to the per-judgment "
        "differences (chosen - rejected) with crossed random effects of pair and of annotator on the "
        "difference (REML), so that the mean difference refers to pairs and annotators in general, and "
        "tested equivalence with two one-sided tests (TOST; Schuirmann 1987) against "
        f"+-{p['margin']:g} scale "
        f"points at alpha = {p['alpha']:g} using Satterthwaite degrees of freedom ({dfs}); equivalently, the "
        f"{level}% CI lies inside the bounds. The dimensions were combined as an intersection-union "
        "test, all of "
        f"which must pass, so no multiplicity correction applies (Berger 1982).{weak} A paired TOST "
        "on per-pair "
        "mean differences and a Wilcoxon signed-rank TOST (Pratt's treatment of differences on the bound; "
        "Hodges-Lehmann interval strictly inside the bounds) are reported as conditional on this panel of "
        "annotators. Equivalence also required few broken pairs: the upper 95% confidence bound of the "
        "share of pairs whose true gap lies beyond the margin (normal pair gaps; the bound on the mean "
        f"squared gap) below {p.get('max_broken_share', 0.1):g}. Rubric alignment (per judgment, the "
        "chosen - rejected difference of the mean of the 0-2 aspect ratings) and the preference for the "
        "chosen response (per judgment 1, tie 0.5, 0) were each tested one-sided in the same crossed "
        "random-effects model (Satterthwaite df, the same guard for few annotators), so both refer to "
        "pairs and annotators in general; the paired t test on per-pair rubric means and the t test on "
        "per-pair preference shares are reported as conditional on this panel; "
        f"the two verdict tests were Holm-adjusted; their CIs are {level}% to match the one-sided tests. "
        "Assay sensitivity: where at least "
        f"{p['min_control_pairs']} positive-control pairs (a planted quality defect) exist, their "
        "detected quality gap must exceed the margin (one-sided t test), and Krippendorff's alpha is then "
        "reported, not a gate; without them the equivalence claim requires Krippendorff's alpha "
        f"(ordinal) of every quality dimension to exceed {p['reliability_threshold']:g} with the lower "
        f"end of its {level}% percentile bootstrap CI ({p['bootstrap']}, {p['n_boot']} resamples, seed "
        f"{p['seed']}). The cleaning list gives per pair empirical-Bayes (NPMLE) shrunken estimates and "
        "the posterior probability of being broken (a quality gap beyond the margin or no rubric "
        f"advantage); 'drop' controls the Bayesian false discovery rate at {p.get('fdr', 0.1):g}. No "
        f"result passes with fewer than {p['min_pairs']} pairs. "
        "The overall result is PASS only when every verdict passes."
    )


def cleaning_title(report: Report) -> str:
    """The heading of the cleaning list, with its counts and its error rate."""
    s = report.summary
    fdr = report.parameters.get("fdr", 0.1)
    return (
        f"Cleaning list: {s.get('n_drop', 0)} pairs to drop (false discovery rate {fdr:.0%}), "
        f"{s.get('n_needs_more', 0)} need more judgments"
    )


def _verdict_line(verdict: Verdict) -> str:
    return (
        f"- **{status_word(verdict)}** ({verdict.key}): {_md(verdict.claim)} ({_md(verdict.test)}); "
        f"{_md(verdict.detail)}"
    )


def to_markdown(report: Report) -> str:
    """The report as Markdown."""
    v = report.validation
    level = round(100 * (1 - 2 * report.parameters["alpha"]))
    parts = [
        f"# Validation report: {_md(report.study)}",
        "",
        f"**Overall: {report.overall}** ({_md(report.overall_reason)})",
        "",
    ]
    parts += [_verdict_line(x) for x in report.verdicts]
    parts += ["", "## Equivalence on general quality (chosen - rejected)", ""]
    parts += [
        f"Crossed random-effects TOST (the verdict; generalizes over pairs and annotators, {level}% CI):",
        "",
        _md_table(_crossed_table(report), CROSSED_COLUMNS),
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
    for title, table in (("Rubric", v.rubric_crossed), ("Preference score - 0.5", v.preference_crossed)):
        if not table.empty:
            parts += [
                "",
                f"{title}, crossed random-effects model (the verdict: pairs and annotators in general):",
            ]
            parts += ["", _md_table(table, [c for c in crossed_cols if c in table.columns])]
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
    parts += ["", "## Agreement", ""]
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
    if report.failed_pairs.empty:
        parts.append("None.")
    else:
        parts.append(_md_table(report.failed_pairs, ["pair_id", "reasons"]))
    for title, note, table in [
        *benchmark_sections(report),
        *quality_sections(report),
        *judge_sections(report),
    ]:
        parts += ["", f"## {_md(title)}", "", _md(note), "", _md_table(table, list(table.columns))]
    parts += ["", "## Methods", "", _md(methods_paragraph(report)), ""]
    return "\n".join(parts)


def benchmark_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The benchmark-science tables to show (title, one-line note, table), in order; none without
    model predictions, study arms or rubric-support answers."""
    science = report.benchmark
    if science is None:
        return []
    where = f"on the {science.pairs_used}"
    notes = {
        "accuracy": (
            "Models and the human ceiling",
            f"Accuracy = share of pairs on which the judge prefers chosen (a tie counts as not), {where}; "
            "95% Wilson CI (a bootstrap over pairs for the pooled judgments). The human majority, the "
            "adjudicated preference and each annotator (on the pairs they rated) are the human ceiling.",
        ),
        "kappa": ("Models vs the human majority (Cohen's kappa)", "Pairs without a majority are left out."),
        "tests": (
            "Model vs human and model vs model",
            "McNemar's test on the pairs both judged; 95% paired-bootstrap CI of the accuracy difference.",
        ),
        "disagreements": (
            "Pairs where models and people disagree",
            "A model's choice differs from the human majority (or the people have none): candidates "
            "for more annotation.",
        ),
        "arms": (
            "Study arms",
            "Per arm: accuracy (share of judgments preferring chosen) and chosen - rejected rating "
            "differences; 95% CIs resample pairs and, within each arm, annotators.",
        ),
        "arm_differences": ("Arm differences", "Each arm minus the first arm, with 95% bootstrap CIs."),
        "support_summary": (
            "Rubric verification",
            "Is each rubric aspect supported by what the user wrote (0 no, 1 partly, 2 yes)? Support = "
            "mean answer / 2; Krippendorff's alpha (ordinal) over pair x aspect units.",
        ),
        "support_pairs": (
            "Pairs whose rubric is not supported",
            "Flagged: an aspect whose majority says no, or a mean support below 0.5 (every pair's and "
            "every aspect's support rate is in the JSON report).",
        ),
    }
    shown = science.tables() | {"support_pairs": science.support_pairs[science.support_pairs["flagged"]]}
    return [(*notes[name], table) for name, table in shown.items() if name in notes and not table.empty]


def quality_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The annotator quality-control tables (title, note, table); none when the report has no QC
    section (controls, attention, competence, the pre-registered exclusion rule)."""
    qc = report.quality
    if qc is None or qc.table.empty:
        return []
    rule = qc.exclusion
    timing = "before the first judgment" if rule.get("registered_before_data") else "AFTER data came in"
    excluded = ", ".join(rule.get("excluded") or []) or "nobody"
    columns = [
        "annotator",
        "judgments",
        "gold_checks",
        "gold_accuracy",
        "swap_checks",
        "self_consistency",
        "fast_share",
        "too_fast",
        "same_share",
        "straight_lining",
        "competence",
        "competence_preference",
        "ds_ordinal",
        "ds_preference",
        "excluded",
        "reasons",
    ]
    return [
        (
            "Annotator quality control",
            "Control pairs never enter the main analysis; they measure the annotators. gold_accuracy: share "
            "of control checks answered as known (gold answers, the planted defect rated worse, a duplicate "
            "seen as a tie); self_consistency: 1 - mean absolute difference to one's own earlier answers on "
            "swapped repeats (1 = identical); too_fast / straight_lining: attention flags; competence: MACE "
            "on the quality and rubric ratings (crowd-kit; ds_*: Dawid-Skene). "
            f"Pre-registered exclusion rule (written {rule.get('registered_at') or 'never'}, {timing}): "
            f"{str(rule.get('rule')).rstrip('.')}. Excluded: {excluded}.",
            qc.table[[c for c in columns if c in qc.table.columns]],
        ),
        (
            "Verdicts with and without the excluded annotators",
            "The same analysis run twice: on every annotator, and without the annotators the rule excludes.",
            qc.verdicts,
        ),
    ]


def judge_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The LLM-judge tables (title, note, table); none when the study has no judge ratings."""
    section = report.judges
    if section is None or section.table.empty:
        return []
    p = section.parameters
    level = round(100 * (1 - 2 * p["q"]))
    shown = [
        "judge",
        "item",
        "n_pairs",
        "n_tested",
        "winning_rate",
        "advantage_probability",
        "epsilon",
        "can_replace",
        "note",
    ]
    agreement = [
        "judge",
        "item",
        "alpha_people",
        "alpha_people_ci_low",
        "alpha_people_ci_high",
        "alpha_with_judge",
        "alpha_with_judge_ci_low",
        "alpha_with_judge_ci_high",
        "leniency",
    ]
    sections = [
        (
            "LLM judges: can a judge replace an annotator? (alternative annotator test)",
            "Calderon, Reichart & Dror (ACL 2025), per judge and item, on the main pairs: each annotator "
            "left out in turn; the judge and that annotator are scored against the remaining annotators "
            "(negative RMSE over both responses; the preference by its direction); one-sided paired t test "
            f"of rho_annotator - rho_judge >= epsilon ({p['epsilon']:g}: {p.get('epsilon_basis', '')}), "
            f"Benjamini-Yekutieli over annotators at {p['q']:g}; can replace = winning rate >= 0.5. Needs "
            f"{p['min_annotators']} annotators with {p['min_items']} pairs each; judge ratings never enter "
            "the human analysis.",
            section.table[shown],
        ),
        (
            "LLM judges: agreement as one more rater",
            f"Krippendorff's alpha (interval) among the people and with the judge added, {level}% "
            "pair-bootstrap CIs; leniency = the judge's mean rating minus the people's on the same pairs.",
            section.table[agreement],
        ),
    ]
    if not section.cards.empty:
        sections.append(
            (
                "LLM judges: accuracy against the human majority and bias card",
                f"Accuracy: the judge's preference direction equals the human majority's (pairs with a "
                f"majority; {round(100 * (1 - p['q']))}% Wilson CI over pairs). Swap consistency: the same "
                "direction in both orders; first_position_rate: non-tied preferences for the response shown "
                "first; length slopes: preference per 1000 characters of chosen - rejected (judge vs the "
                "people's per-pair mean); calibration of confidence against agreeing with the majority "
                "(ECE over 10 bins, Brier).",
                section.cards,
            )
        )
    if not section.queue.empty:
        sections.append(
            (
                "LLM judges: pairs where a judge and the human majority disagree",
                "Candidates for another look (`annotator judges queue --study S`).",
                section.queue,
            )
        )
    return sections


def to_terminal(report: Report) -> str:
    """The terminal summary: the overall result, one line per verdict, the equivalence table."""
    s = report.summary
    lines = [
        f"{report.study}: {s['n_pairs']} pairs, {s['n_annotators']} annotators, {s['n_judgments']} judgments",
        f"OVERALL {report.overall}: {report.overall_reason}",
    ]
    for verdict in report.verdicts:
        lines.append(f"{status_word(verdict)} {verdict.claim} ({verdict.test})")
        lines.append(f"     {verdict.detail}")
    level = round(100 * (1 - 2 * report.parameters["alpha"]))
    lines.append("")
    lines.append(f"Chosen - rejected, crossed model ({level}% CI) | per-pair TOST, conditional on this panel")
    panel = report.validation.equivalence.set_index("dimension")
    for row in report.validation.crossed.to_dict("records"):
        pr = panel.loc[row["dimension"]]
        lines.append(
            f"  {row['dimension']:<14} {row['estimate']:+.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
            f"df {row['df']:.1f} p {row['pvalue']:.4g} "
            f"{'equivalent' if row['equivalent'] else 'not demonstrated'}"
            f" | {pr['estimate']:+.3f} [{pr['ci_low']:.3f}, {pr['ci_high']:.3f}] "
            f"{'equivalent' if pr['equivalent'] else 'not demonstrated'}"
        )
    lines.append("")
    lines.append(f"Agreement (Krippendorff's alpha, {level}% bootstrap CI over pairs)")
    for row in report.agreement.to_dict("records"):
        lines.append(
            f"  {row['item']:<14} {_fmt(row['krippendorff_alpha'])} "
            f"[{_fmt(row['krippendorff_alpha_ci_low'])}, {_fmt(row['krippendorff_alpha_ci_high'])}] "
            f"AC1 {_fmt(row['ac1'])} agreement {_fmt(row['percent_agreement'])} units {row['n_units']}"
        )
    lines.append(cleaning_title(report))
    if report.summary.get("position_biased"):
        lines.append(f"Position bias (prefer one side): {', '.join(report.summary['position_biased'])}")
    science = report.benchmark
    if science is not None and not science.accuracy.empty:
        lines.append("")
        lines.append(f"Models and the human ceiling ({science.pairs_used}; prefers chosen, 95% CI)")
        overall = science.accuracy[
            (science.accuracy["category"] == "(all)") & (science.accuracy["kind"] != "annotator")
        ]
        for row in overall.to_dict("records"):
            lines.append(
                f"  {str(row['source']):<24} {_fmt(row['accuracy'])} [{_fmt(row['ci_low'])}, "
                f"{_fmt(row['ci_high'])}] on {row['n_pairs']} pairs"
            )
        lines.append(f"{len(science.disagreements)} pair(s) where a model and the human majority disagree")
    if report.judges is not None and not report.judges.table.empty:
        lines.append("")
        lines.append(
            f"LLM judges (alternative annotator test, epsilon {report.judges.parameters['epsilon']:g})"
        )
        for row in report.judges.table.to_dict("records"):
            word = {True: "can replace", False: "cannot replace"}.get(row["can_replace"], "no verdict")
            lines.append(
                f"  {str(row['judge'])[:24]:<24} {row['item']:<12} {word:<14} winning rate "
                f"{_fmt(row['winning_rate'])} advantage {_fmt(row['advantage_probability'])} "
                f"on {row['n_pairs']} pairs"
            )
    if report.quality is not None and not report.quality.table.empty:
        excluded = report.quality.exclusion.get("excluded") or []
        lines.append("")
        n_annotators = len(report.quality.table)
        lines.append(f"Quality control: {len(excluded)} of {n_annotators} annotators excluded by the rule")
        for row in report.quality.verdicts.to_dict("records"):
            lines.append(
                f"  {row['key']:<14} all: {row['status_all']:<13} "
                f"without excluded: {row['status_without_excluded']}"
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- HTML


#: A category with fewer main pairs than this gets no interval in the category plot (its t interval
#: would rest on 0 or 1 degree of freedom); it is drawn as a hollow point marked "too few pairs".
MIN_CATEGORY_PAIRS = 3
RUBRIC_ITEM = "rubric"
RUBRIC_RANGE = 2.0  # rubric alignment is the mean of 0-2 ratings: a difference lies in -2..+2


def difference_range(report: Report, item: str) -> float:
    """The largest chosen - rejected difference `item` can take (the scale's width)."""
    p = report.parameters
    if item == RUBRIC_ITEM:
        return RUBRIC_RANGE
    return float(p.get("scale_max", 5)) - float(p.get("scale_min", 1))


def _interval_bars(estimate: pd.Series, low: pd.Series, high: pd.Series) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": (high - estimate).clip(lower=0),
        "arrayminus": (estimate - low).clip(lower=0),
    }


def figure_captions(report: Report) -> dict[str, str]:
    """What each figure of :func:`figures` shows, in a sentence or two (under the figure in the app and
    in the HTML report)."""
    p = report.parameters
    level = round(100 * (1 - 2 * p["alpha"]))
    width = difference_range(report, "")
    return {
        "forest": (
            f"Mean chosen − rejected rating per quality dimension with its {level}% CI: blue from the "
            "crossed random-effects model (the verdict, for pairs and annotators in general), grey from "
            "the per-pair TOST (this panel of annotators). Equivalence is shown when the whole interval "
            f"lies inside the green band of ±{p['margin']:g} points."
        ),
        "differences": (
            "How many pairs have each mean chosen − rejected difference (averaged over the pair's "
            "annotators), per quality dimension. Zero means both responses were rated alike."
        ),
        "categories": (
            f"Mean chosen − rejected difference per category and item with its {level}% t interval over "
            f"pairs, clipped to the possible range (±{width:g} points on the quality scale, ±"
            f"{RUBRIC_RANGE:g} on the rubric). Categories with fewer than {MIN_CATEGORY_PAIRS} pairs "
            "have no interval: they are hollow points marked “too few pairs”. Green band: the "
            "equivalence margin."
        ),
        "preference": (
            "Judgments that preferred the chosen response, called them equal, or preferred the "
            "rejected one (counts of judgments; the title gives the mean per-pair share preferring "
            "chosen, ties counted as half)."
        ),
        "agreement": (
            f"Krippendorff's alpha (ordinal) per item with its {level}% percentile bootstrap CI over "
            f"pairs; dotted lines: the study's reliability threshold ({p['reliability_threshold']:g}) "
            "and 0.667, the usual floor for tentative conclusions (Krippendorff 2004)."
        ),
    }


def figures(report: Report) -> dict[str, Any]:
    """The report's plotly figures: forest plot, differences, categories, preference, agreement.

    Every figure has a title and axis labels; :func:`figure_captions` says what each shows. No interval
    is drawn beyond what the scale allows, and a category with too few pairs for one gets none.
    """
    import plotly.graph_objects as go

    v = report.validation
    margin = report.parameters["margin"]
    level = round(100 * (1 - 2 * report.parameters["alpha"]))
    width = difference_range(report, "")
    layout = {"margin": {"l": 10, "r": 10, "t": 60, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}
    forest = go.Figure()
    forest.add_vrect(x0=-margin, x1=margin, fillcolor="#d3f9d8", opacity=0.6, line_width=0, layer="below")
    for table, name, color in (
        (v.crossed, f"crossed model, {level}% CI (verdict)", "#3b5bdb"),
        (v.equivalence, f"per-pair TOST, {level}% CI (this panel)", "#868e96"),
    ):
        low, high = table["ci_low"].clip(-width, width), table["ci_high"].clip(-width, width)
        forest.add_trace(
            go.Scatter(
                x=table["estimate"],
                y=table["dimension"],
                mode="markers",
                marker={"size": 10, "color": color},
                error_x=_interval_bars(table["estimate"], low, high),
                name=name,
                offsetgroup=name,
            )
        )
    forest.add_vline(x=0, line_dash="dot")
    forest.update_layout(
        title="Chosen − rejected, by dimension",
        xaxis_title="chosen − rejected (points)",
        yaxis_title="dimension",
        height=360,
        showlegend=True,
        scattermode="group",
        **layout,
    )
    dist = go.Figure()
    columns = list(v.pair_means)
    values = [v.pair_means[c]["diff"].to_numpy(dtype=float) for c in columns]
    finite = np.concatenate([x[np.isfinite(x)] for x in values]) if values else np.array([0.0])
    edges = np.histogram_bin_edges(finite if finite.size else [0.0], bins=25)
    for name, column_values in zip(columns, values, strict=True):  # binned: small for 100k pairs
        counts, _ = np.histogram(column_values[np.isfinite(column_values)], bins=edges)
        dist.add_trace(
            go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges), name=name, opacity=0.6)
        )
    dist.update_layout(
        barmode="overlay",
        title="Per-pair differences",
        height=360,
        xaxis_title="pair mean, chosen − rejected (points)",
        yaxis_title="pairs",
        **layout,
    )
    categories = _category_figure(report, go, level, margin)
    pref = v.preference.iloc[0]
    preference = go.Figure(
        go.Bar(
            x=["chosen", "tie", "rejected"],
            y=[pref["n_chosen"], pref["n_ties"], pref["n_rejected"]],
            marker_color=["#2f9e44", "#adb5bd", "#e03131"],
        )
    )
    preference.update_layout(
        title=f"Preferred response (share {pref['rate']:.2f})",
        xaxis_title="preferred response",
        yaxis_title="judgments",
        height=340,
        **layout,
    )
    ag = report.agreement
    agreement = go.Figure(
        go.Scatter(
            x=ag["krippendorff_alpha"],
            y=ag["item"],
            mode="markers",
            marker={"size": 11},
            error_x=_interval_bars(
                ag["krippendorff_alpha"],
                ag["krippendorff_alpha_ci_low"].clip(-1, 1),
                ag["krippendorff_alpha_ci_high"].clip(-1, 1),
            ),
        )
    )
    threshold = report.parameters["reliability_threshold"]
    agreement.add_vline(x=threshold, line_dash="dot", annotation_text=f"threshold {threshold:g}")
    agreement.add_vline(x=0.667, line_dash="dot", annotation_text="0.667")
    agreement.update_layout(
        title=f"Agreement, {level}% CI",
        xaxis_title="Krippendorff's alpha (1 perfect, 0 chance)",
        yaxis_title="item",
        height=340,
        xaxis_range=[-0.2, 1],
        **layout,
    )
    return {
        "forest": forest,
        "differences": dist,
        "categories": categories,
        "preference": preference,
        "agreement": agreement,
    }


def _html(value: object) -> str:
    return escape_text(value, "html")


def _category_figure(report: Report, go: Any, level: int, margin: float) -> Any:
    """Per category and item: the mean difference, its interval clipped to the possible range, and a
    hollow "too few pairs" point (no interval) where a category has fewer than MIN_CATEGORY_PAIRS."""
    cat = report.categories
    figure = go.Figure()
    if cat.empty:
        figure.update_layout(title="By category: no categories", height=200)
        return figure
    counts = cat.groupby("category", sort=False)["n_pairs"].max()
    names = {
        c: f"{c} (n={int(n)}{', too few pairs' if n < MIN_CATEGORY_PAIRS else ''})" for c, n in counts.items()
    }
    for item, g in cat.groupby("item", sort=False):
        limit = difference_range(report, str(item))
        enough = g[g["n_pairs"] >= MIN_CATEGORY_PAIRS]
        few = g[g["n_pairs"] < MIN_CATEGORY_PAIRS]
        trace = go.Scatter(
            x=enough["estimate"],
            y=enough["category"].map(names),
            mode="markers",
            name=str(item),
            legendgroup=str(item),
            offsetgroup=str(item),
            error_x=_interval_bars(
                enough["estimate"],
                enough["ci_low"].clip(-limit, limit),
                enough["ci_high"].clip(-limit, limit),
            ),
        )
        figure.add_trace(trace)
        if not few.empty:
            figure.add_trace(
                go.Scatter(
                    x=few["estimate"],
                    y=few["category"].map(names),
                    mode="markers",
                    marker={"symbol": "circle-open", "size": 9},
                    name=f"{item} (too few pairs: no interval)",
                    legendgroup=str(item),
                    offsetgroup=str(item),
                )
            )
    figure.add_vrect(x0=-margin, x1=margin, fillcolor="#d3f9d8", opacity=0.4, line_width=0, layer="below")
    width = difference_range(report, "")
    figure.update_layout(
        title=f"By category, {level}% CI",
        xaxis_title="chosen − rejected (points)",
        yaxis_title="category (pairs)",
        xaxis_range=[-width - 0.2, width + 0.2],
        height=max(340, 40 * cat["category"].nunique() + 160),
        scattermode="group",
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        legend={"orientation": "h", "y": -0.12},
    )
    return figure


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
        for title, note, table in [
            *benchmark_sections(report),
            *quality_sections(report),
            *judge_sections(report),
        ]
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
{_html_table(_crossed_table(report), CROSSED_COLUMNS)}
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
<h2>Parameters</h2><pre>{_html(json.dumps(_clean(report.parameters), indent=2))}</pre>
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
