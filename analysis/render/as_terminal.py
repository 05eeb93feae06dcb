"""The validation report as a terminal summary (:func:`to_terminal`)."""

from __future__ import annotations

from analysis.render.owner_text import owner_lines
from analysis.render.ppi_text import prediction_powered_lines
from analysis.render.text import cleaning_rate, cleaning_title, format_value, not_computed_lines, status_word
from analysis.report import Report


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
            f"df {format_value(row['df'], 1)} p {row['pvalue']:.4g} "
            f"{'equivalent' if row['equivalent'] else 'not demonstrated'}"
            f" | {pr['estimate']:+.3f} [{pr['ci_low']:.3f}, {pr['ci_high']:.3f}] "
            f"{'equivalent' if pr['equivalent'] else 'not demonstrated'}"
        )
    lines.append("")
    lines.append(f"Agreement (Krippendorff's alpha, {level}% bootstrap CI over pairs)")
    for row in report.agreement.to_dict("records"):
        lines.append(
            f"  {row['item']:<14} {format_value(row['krippendorff_alpha'])} "
            f"[{format_value(row['krippendorff_alpha_ci_low'])}, "
            f"{format_value(row['krippendorff_alpha_ci_high'])}] "
            f"AC1 {format_value(row['ac1'])} agreement {format_value(row['percent_agreement'])} "
            f"units {row['n_units']}"
        )
    lines.append(cleaning_title(report))
    if rate := cleaning_rate(report):
        lines.append(f"  {rate}")
    if report.not_computed:
        lines.append("")
        lines.append("Not computed at this size:")
        lines.extend(f"  {line}" for line in not_computed_lines(report))
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
                f"  {str(row['source']):<24} {format_value(row['accuracy'])} [{format_value(row['ci_low'])}, "
                f"{format_value(row['ci_high'])}] on {row['n_pairs']} pairs"
            )
        lines.append(f"{len(science.disagreements)} pair(s) where a model and the human majority disagree")
    lines.extend(judge_lines(report))
    lines.extend(prediction_powered_lines(report))
    lines.extend(owner_lines(report))
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


def judge_lines(report: Report) -> list[str]:
    """One line per judge and item: the alt-test's verdict, its numbers and the content-blind baseline."""
    if report.judges is None or report.judges.table.empty:
        return []
    lines = ["", f"LLM judges (alternative annotator test, epsilon {report.judges.parameters['epsilon']:g})"]
    for row in report.judges.table.to_dict("records"):
        word = {True: "can replace", False: "cannot replace"}.get(row["can_replace"], "no verdict")
        lines.append(
            f"  {str(row['judge'])[:24]:<24} {row['item']:<12} {word:<14} winning rate "
            f"{format_value(row['winning_rate'])} advantage {format_value(row['advantage_probability'])} "
            f"on {row['n_pairs']} pairs; content-blind {row['baseline']} "
            f"{format_value(row['baseline_advantage'])}"
            + ("; epsilon too loose" if row["epsilon_too_loose"] is True else "")
            + (
                f"; passes the alt-test but does not beat the content-blind judge by {row['margin']:g}"
                if row["passes_alt_test"] is True and row["beats_baseline"] is False
                else ""
            )
        )
    return lines
