"""The validation report: one computation, rendered as JSON, Markdown, a terminal summary or HTML.

The app's dashboard and ``annotator analyze`` both call :func:`build_report`, so they show the same
numbers. Claims and their tests:

1. *Equivalent on general quality*: per dimension, a paired TOST on per-pair mean differences
   (chosen - rejected) against +-margin; all dimensions must pass (an intersection-union test, which
   needs no multiplicity correction, Berger 1982). A Wilcoxon TOST and a mixed-effects model are
   reported as robustness checks.
2. *Different on rubric alignment*: a one-sided paired t test (and Wilcoxon) on per-pair rubric means,
   Holm-adjusted together with the preference test.
3. *Chosen is preferred*: the preference rate for chosen (ties excluded) with a Wilson CI and an exact
   one-sided binomial test against 0.5.
4. *Annotators are reliable*: Krippendorff's alpha per item with a unit-bootstrap CI, ICC, Fleiss'
   kappa, Gwet's AC1 and percent agreement (reported; no pass/fail threshold is imposed).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.agreement import agreement_table
from analysis.diagnostics import annotator_diagnostics
from analysis.frames import (
    ANNOTATOR,
    CATEGORY,
    PAIR_ID,
    QUALITY_ITEMS,
    RUBRIC_ITEM,
    judgments,
    pair_means,
    validate_frame,
)
from analysis.validation import ValidationResult, validate_pairs

__all__ = ["REPORT_SCHEMA", "Report", "Verdict", "build_report", "to_html", "to_json", "to_markdown"]


@dataclass(frozen=True)
class Verdict:
    """One claim, the test behind it, and whether the data support it."""

    claim: str
    test: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Report:
    """Everything the report shows; every table has flat columns."""

    study: str
    parameters: dict[str, Any]
    summary: dict[str, Any]
    validation: ValidationResult
    agreement: pd.DataFrame
    diagnostics: pd.DataFrame
    failed_pairs: pd.DataFrame
    verdicts: list[Verdict]
    pair_table: pd.DataFrame = field(repr=False)


def build_report(
    frame: pd.DataFrame,
    *,
    study: str,
    quality_items: Sequence[str] = QUALITY_ITEMS,
    margin: float = 0.5,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
    mixed: bool = True,
    fast_seconds: float = 10.0,
) -> Report:
    """Compute the whole validation report from a label frame.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> rows = [(f"p{i}", a, r, "correctness", float(rng.integers(4, 6)), 1, 2, 30.0)
    ...         for i in range(12) for a in ("x", "y") for r in ("chosen", "rejected")]
    >>> df = pd.DataFrame(rows, columns=["pair_id", "annotator", "response", "item", "value",
    ...                                  "preference", "confidence", "time_s"])
    >>> rep = build_report(df, study="demo", quality_items=["correctness"], n_boot=50, mixed=False)
    >>> rep.summary["n_pairs"], rep.verdicts[0].test
    (12, 'paired TOST (per-pair means), intersection-union over 1 dimension(s)')
    """
    frame = validate_frame(frame)
    quality_items = list(quality_items)
    validation = validate_pairs(frame, quality_items=quality_items, margin=margin, alpha=alpha, mixed=mixed)
    agreement = agreement_table(frame, quality_items=quality_items, n_boot=n_boot, seed=seed, confidence=0.95)
    diagnostics = annotator_diagnostics(frame, quality_items=quality_items, fast_seconds=fast_seconds)
    pair_table = _pair_table(frame, quality_items)
    failed = _failed_pairs(pair_table, quality_items, margin)
    summary = {
        "n_pairs": int(frame[PAIR_ID].nunique()),
        "n_annotators": int(frame[ANNOTATOR].nunique()),
        "n_judgments": int(len(judgments(frame))),
        "n_scores": int(len(frame)),
        "n_failed_pairs": int(len(failed)),
    }
    parameters = {
        "margin": margin,
        "alpha": alpha,
        "ci_level_tost": 1 - 2 * alpha,
        "quality_items": quality_items,
        "n_boot": n_boot,
        "seed": seed,
        "bootstrap": "percentile bootstrap over units",
        "mixed_model": mixed,
        "fast_seconds": fast_seconds,
    }
    return Report(
        study,
        parameters,
        summary,
        validation,
        agreement,
        diagnostics,
        failed,
        _verdicts(validation, quality_items, alpha),
        pair_table,
    )


def _pair_table(frame: pd.DataFrame, quality_items: Sequence[str]) -> pd.DataFrame:
    """Per pair: chosen - rejected mean difference per item and rubric, and the majority preference."""
    table = None
    items = list(quality_items)
    if frame["item"].astype(str).str.startswith("rubric").any():
        items.append(RUBRIC_ITEM)
    for item in items:
        means = pair_means(frame, item).set_index(PAIR_ID)[["diff"]].rename(columns={"diff": f"diff_{item}"})
        table = means if table is None else table.join(means, how="outer")
    if table is None:
        raise ValueError("no quality items to report")
    per_judgment = judgments(frame)
    votes = (per_judgment["preference"] > 0).astype("float64").groupby(per_judgment[PAIR_ID])
    table["share_prefer_chosen"] = votes.mean()  # vectorized: a per-group lambda took ~3 s on 20k pairs
    table["n_judgments"] = votes.size()
    if CATEGORY in frame.columns:
        table["category"] = frame.groupby(PAIR_ID)[CATEGORY].first()
    return table.reset_index()


def _failed_pairs(table: pd.DataFrame, quality_items: Sequence[str], margin: float) -> pd.DataFrame:
    """Pairs that contradict the construction: a per-pair mean quality gap of more than twice the
    margin (a single pair's mean over a few annotators is noisy, so the study-level margin would flag
    most pairs), no rubric advantage for chosen, or no majority preferring chosen."""
    reasons = pd.Series([""] * len(table), index=table.index)

    def add(mask: pd.Series, text: str) -> None:
        reasons[mask] = reasons[mask].where(reasons[mask] == "", reasons[mask] + "; ") + text

    # Means of a few integer ratings are exact fractions; round away float noise so that a gap of
    # 0.9999999999999998 and one of 1.0 (the same ratings summed in another order) are judged alike.
    for item in quality_items:
        diff = table[f"diff_{item}"].round(9)
        add(diff.abs() > 2 * margin, f"{item} gap beyond +-{2 * margin:g}")
    if f"diff_{RUBRIC_ITEM}" in table:
        add(table[f"diff_{RUBRIC_ITEM}"].round(9) <= 0, "rubric not higher for chosen")
    add(table["share_prefer_chosen"] <= 0.5, "majority does not prefer chosen")
    failed = table.assign(reasons=reasons)
    return failed[failed["reasons"] != ""].reset_index(drop=True)


def _verdicts(validation: ValidationResult, quality_items: Sequence[str], alpha: float) -> list[Verdict]:
    eq = validation.equivalence
    failing = ", ".join(eq.loc[~eq["equivalent"], "dimension"]) or "none"
    verdicts = [
        Verdict(
            "chosen and rejected are equivalent on general quality",
            f"paired TOST (per-pair means), intersection-union over {len(quality_items)} dimension(s)",
            bool(validation.iut.equivalent),
            f"max p = {validation.iut.pvalue:.4g}; {validation.iut.n_equivalent}/{validation.iut.n_tests} "
            f"dimensions inside the margin (not equivalent: {failing})",
        )
    ]
    if not validation.superiority.empty:
        sup = validation.superiority.iloc[0]
        verdicts.append(
            Verdict(
                "chosen follows the user's rubric better",
                "one-sided paired t test on per-pair rubric means (Holm-adjusted)",
                bool(sup["p_holm"] < alpha),
                f"difference {sup['estimate']:.3f} [{sup['ci_low']:.3f}, {sup['ci_high']:.3f}], "
                f"d_z = {sup['dz']:.2f}, Holm p = {sup['p_holm']:.4g}",
            )
        )
    pref = validation.preference.iloc[0]
    verdicts.append(
        Verdict(
            "annotators prefer chosen for this user",
            "exact one-sided binomial test vs 0.5, ties excluded (Wilson CI)",
            bool(pref["p_greater"] < alpha),
            f"rate {pref['rate']:.3f} [{pref['ci_low']:.3f}, {pref['ci_high']:.3f}] over "
            f"{int(pref['n_chosen'] + pref['n_rejected'])} non-tied judgments ({int(pref['n_ties'])} ties), "
            f"p = {pref['p_greater']:.4g}",
        )
    )
    return verdicts


# --------------------------------------------------------------------------------------------- JSON


def _clean(value: Any) -> Any:
    """JSON-ready: NaN/inf become None, NumPy scalars become Python numbers."""
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


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [_clean(row) for row in df.to_dict(orient="records")]


def to_json(report: Report) -> dict[str, Any]:
    """Every number of the report as plain JSON data (see REPORT_SCHEMA)."""
    v = report.validation
    return _clean(
        {
            "study": report.study,
            "parameters": report.parameters,
            "summary": report.summary,
            "verdicts": [vars(verdict) for verdict in report.verdicts],
            "equivalence": _records(v.equivalence),
            "intersection_union": v.iut.to_dict(),
            "rubric_superiority": _records(v.superiority),
            "preference": _records(v.preference)[0],
            "holm": _records(v.holm),
            "mixed_model": _records(v.mixed),
            "agreement": _records(report.agreement),
            "annotator_diagnostics": _records(report.diagnostics),
            "failed_pairs": _records(report.failed_pairs),
        }
    )


_NUMBER = {"type": ["number", "null"]}
# The columns of the equivalence table shown in the Markdown and HTML reports.
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
        "parameters",
        "summary",
        "verdicts",
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
        "parameters": {
            "type": "object",
            "required": ["margin", "alpha", "quality_items", "n_boot", "seed"],
        },
        "summary": {"type": "object", "required": ["n_pairs", "n_annotators", "n_judgments"]},
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["claim", "test", "passed", "detail"],
                "properties": {"passed": {"type": "boolean"}, "claim": {"type": "string"}},
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
        "preference": {"type": "object", "required": ["rate", "ci_low", "ci_high", "p_greater"]},
        "agreement": {
            "type": "array",
            "items": {"type": "object", "required": ["item", "alpha", "alpha_ci_low", "alpha_ci_high"]},
        },
        "annotator_diagnostics": {"type": "array", "items": {"type": "object", "required": ["annotator"]}},
        "failed_pairs": {"type": "array", "items": {"type": "object", "required": ["pair_id", "reasons"]}},
    },
}


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


def _md_table(df: pd.DataFrame, columns: Sequence[str]) -> str:
    shown = [c for c in columns if c in df.columns]
    lines = ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    for row in df.to_dict(orient="records"):
        lines.append("| " + " | ".join(_fmt(row[c]).replace("|", "\\|") for c in shown) + " |")
    return "\n".join(lines)


def methods_paragraph(report: Report) -> str:
    """A methods paragraph with every parameter, ready for a paper."""
    p, s = report.parameters, report.summary
    level = round(100 * (1 - 2 * p["alpha"]))
    return (
        f"{s['n_annotators']} annotators rated {s['n_pairs']} preference pairs "
        f"({s['n_judgments']} judgments), "
        "blind to which response was constructed to follow the user's rubric and with its side "
        "counterbalanced. General quality (" + ", ".join(p["quality_items"]) + ") was rated 1-5 for each "
        "response. For each dimension we tested equivalence of chosen and rejected with a paired two "
        f"one-sided tests procedure (TOST; Schuirmann 1987) on per-pair mean differences with bounds "
        f"+-{p['margin']:g} scale points at alpha = {p['alpha']:g} (equivalently, the {level}% CI inside the "
        "bounds); the dimensions were combined as an intersection-union test, all of which must pass, "
        "so no multiplicity correction applies (Berger 1982). A Wilcoxon signed-rank TOST and a linear "
        "mixed model with pair random intercepts and annotator effects served as robustness checks. "
        "Rubric alignment (mean of the 0-2 aspect ratings) was compared with a one-sided paired t test "
        "(effect size d_z with a noncentral-t CI) and a Wilcoxon signed-rank test; the preference rate for "
        "the chosen response (ties excluded) was tested with an exact binomial test against 0.5 with a "
        "Wilson CI; these two superiority tests were Holm-adjusted. Inter-annotator agreement is "
        "Krippendorff's alpha (ordinal for the 1-5 scales, interval for rubric means) with 95% percentile "
        f"bootstrap CIs over units ({p['n_boot']} resamples, seed {p['seed']}), with ICC, Fleiss' kappa, "
        "Gwet's AC1 and percent agreement. The per-pair tests treat the annotators as fixed: they are "
        "conditional on this panel of annotators (with few annotators and ratings near the top of the "
        "scale, their biases shift the observed gap, so a claim about annotators in general rests on the "
        "mixed model with annotator random effects, fitted when there are at least 5 annotators)."
    )


def to_markdown(report: Report) -> str:
    """The report as Markdown."""
    v = report.validation
    parts = [f"# Validation report: {report.study}", ""]
    parts += [
        f"- **{'PASS' if x.passed else 'FAIL'}**: {x.claim} ({x.test}); {x.detail}" for x in report.verdicts
    ]
    parts += ["", "## Equivalence on general quality (chosen - rejected)", ""]
    parts.append(
        _md_table(
            v.equivalence,
            EQUIVALENCE_COLUMNS,
        )
    )
    if not v.mixed.empty:
        parts += [
            "",
            "Mixed-effects check:",
            "",
            _md_table(v.mixed, ["item", "model", "estimate", "ci_low", "ci_high", "equivalent"]),
        ]
    if not v.superiority.empty:
        parts += ["", "## Rubric alignment (one-sided superiority)", ""]
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
                    "dz_ci_low",
                    "dz_ci_high",
                    "rank_biserial",
                    "p_t",
                    "p_wilcoxon",
                    "p_holm",
                ],
            )
        )
    parts += ["", "## Preference for chosen", ""]
    parts.append(
        _md_table(
            v.preference,
            [
                "n",
                "n_chosen",
                "n_rejected",
                "n_ties",
                "rate",
                "ci_low",
                "ci_high",
                "p_greater",
                "rate_ties_half",
            ],
        )
    )
    parts += ["", "## Agreement", ""]
    parts.append(_md_table(report.agreement, list(report.agreement.columns)))
    parts += ["", "## Annotators", ""]
    parts.append(_md_table(report.diagnostics, list(report.diagnostics.columns)))
    parts += ["", f"## Pairs that fail validation ({len(report.failed_pairs)})", ""]
    if report.failed_pairs.empty:
        parts.append("None.")
    else:
        parts.append(_md_table(report.failed_pairs, ["pair_id", "reasons"]))
    parts += ["", "## Methods", "", methods_paragraph(report), ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------- HTML


def figures(report: Report) -> dict[str, Any]:
    """The report's plotly figures: forest plot, distributions, rubric effect, preference, agreement."""
    import plotly.graph_objects as go

    v = report.validation
    eq = v.equivalence
    margin = report.parameters["margin"]
    forest = go.Figure()
    forest.add_vrect(x0=-margin, x1=margin, fillcolor="#d3f9d8", opacity=0.6, line_width=0, layer="below")
    forest.add_trace(
        go.Scatter(
            x=eq["estimate"],
            y=eq["dimension"],
            mode="markers",
            marker={"size": 11, "color": "#3b5bdb"},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": eq["ci_high"] - eq["estimate"],
                "arrayminus": eq["estimate"] - eq["ci_low"],
            },
            name=f"{round(100 * (1 - 2 * report.parameters['alpha']))}% CI",
        )
    )
    forest.add_vline(x=0, line_dash="dot")
    forest.update_layout(
        title="Chosen - rejected per quality dimension (band: equivalence margin)",
        xaxis_title="difference (scale points)",
        height=320,
        showlegend=True,
    )
    pairs = report.pair_table
    diff_columns = [c for c in pairs.columns if c.startswith("diff_")]
    dist = go.Figure()
    values = pairs[diff_columns].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    edges = np.histogram_bin_edges(finite if finite.size else [0.0], bins=25)
    for column in diff_columns:  # binned here: a figure of counts stays small for 100k pairs
        column_values = pairs[column].to_numpy(dtype=float)
        counts, _ = np.histogram(column_values[np.isfinite(column_values)], bins=edges)
        dist.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=counts,
                width=np.diff(edges),
                name=column.removeprefix("diff_"),
                opacity=0.6,
            )
        )
    dist.update_layout(
        barmode="overlay",
        title="Per-pair chosen - rejected differences",
        height=340,
        xaxis_title="difference",
    )
    pref = v.preference.iloc[0]
    preference = go.Figure(
        go.Bar(
            x=["chosen", "tie", "rejected"],
            y=[pref["n_chosen"], pref["n_ties"], pref["n_rejected"]],
            marker_color=["#2f9e44", "#adb5bd", "#e03131"],
        )
    )
    preference.update_layout(
        title=f"Which response fits the user? (rate for chosen {pref['rate']:.2f})", height=320
    )
    ag = report.agreement
    agreement = go.Figure(
        go.Scatter(
            x=ag["alpha"],
            y=ag["item"],
            mode="markers",
            marker={"size": 11},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": ag["alpha_ci_high"] - ag["alpha"],
                "arrayminus": ag["alpha"] - ag["alpha_ci_low"],
            },
        )
    )
    agreement.add_vline(x=0.667, line_dash="dot", annotation_text="0.667")
    agreement.add_vline(x=0.8, line_dash="dot", annotation_text="0.8")
    agreement.update_layout(
        title="Krippendorff's alpha with 95% bootstrap CI", height=320, xaxis_range=[-0.2, 1]
    )
    return {"forest": forest, "differences": dist, "preference": preference, "agreement": agreement}


def _html_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    columns = [c for c in (columns or list(df.columns)) if c in df.columns]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(row[c]))}</td>" for c in columns) + "</tr>"
        for row in df.to_dict(orient="records")
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def to_html(report: Report) -> str:
    """A self-contained HTML report (plotly inlined once; opens offline, no external script)."""
    figs = figures(report)
    plots = []
    for number, (name, fig) in enumerate(figs.items()):
        plots.append(
            fig.to_html(
                full_html=False,
                include_plotlyjs=number == 0,
                div_id=f"fig-{name}",
                config={"displaylogo": False},
            )
        )
    v = report.validation
    verdicts = "".join(
        f"<li class='{'pass' if x.passed else 'fail'}'><b>{'PASS' if x.passed else 'FAIL'}</b> "
        f"{html.escape(x.claim)} <span class='test'>({html.escape(x.test)})</span>"
        f"<br>{html.escape(x.detail)}</li>"
        for x in report.verdicts
    )
    s = report.summary
    body = f"""
<h1>Validation report: {html.escape(report.study)}</h1>
<p class="summary">{s["n_pairs"]} pairs · {s["n_annotators"]} annotators · {s["n_judgments"]} judgments ·
{s["n_failed_pairs"]} pairs fail validation</p>
<ul class="verdicts">{verdicts}</ul>
<h2>Equivalence on general quality</h2>{plots[0]}
{
        _html_table(
            v.equivalence,
            EQUIVALENCE_COLUMNS,
        )
    }
<h3>Mixed-effects check</h3>{
        _html_table(v.mixed, ["item", "model", "estimate", "ci_low", "ci_high", "equivalent", "warnings"])
        if not v.mixed.empty
        else "<p>Not run.</p>"
    }
<h2>Rating differences</h2>{plots[1]}
<h2>Rubric alignment</h2>{
        _html_table(v.superiority) if not v.superiority.empty else "<p>No rubric ratings.</p>"
    }
<h2>Preference</h2>{plots[2]}{_html_table(v.preference)}
<h2>Agreement</h2>{plots[3]}{_html_table(report.agreement)}
<h2>Annotators</h2>{_html_table(report.diagnostics)}
<h2>Pairs that fail validation</h2>
{_html_table(report.failed_pairs) if not report.failed_pairs.empty else "<p>None.</p>"}
<h2>Methods</h2><p>{html.escape(methods_paragraph(report))}</p>
<h2>Parameters</h2><pre>{html.escape(json.dumps(_clean(report.parameters), indent=2))}</pre>
"""
    style = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;color:#1f2430;
padding:0 1rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0 1.5rem;display:block;overflow-x:auto}
th,td{border:1px solid #dee2e6;padding:.25rem .5rem;text-align:right}th{background:#f3f5f9}
td:first-child,th:first-child{text-align:left}.verdicts li{margin:.4rem 0}.pass b{color:#2f9e44}
.fail b{color:#e03131}.test{color:#666;font-size:.9em}.summary{color:#555}"""
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Validation report: "
        f"{html.escape(report.study)}</title><style>{style}</style></head><body>{body}</body></html>"
    )
