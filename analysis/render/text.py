"""The wording every output format of the validation report shares: the status words, the one
escaping rule (:func:`escape_text`), number formatting, the methods paragraph, the cleaning title and
the benchmark, quality and judge sections (title, note, table)."""

from __future__ import annotations

import html
import math
import re
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.competence import QC_REPORT_COLUMNS
from analysis.judges import AGREEMENT_COLUMNS, ALT_TEST_COLUMNS, BASELINE_COLUMNS
from analysis.ppi_report import UNEQUAL_DRAW
from analysis.render.owner_text import owner_sections
from analysis.render.ppi_text import prediction_powered_sections
from analysis.report import Report, Verdict
from analysis.scale import margins_text, report_scales
from analysis.wording import counted

_WORDS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "not_assessed": "NOT ASSESSED"}


def status_word(verdict: Verdict) -> str:
    """PASS, FAIL, INCONCLUSIVE or NOT ASSESSED."""
    return _WORDS[verdict.status]


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


def format_value(value: Any, digits: int = 3) -> str:
    """A cell as text: yes/no, whole numbers as they are, others to `digits` places (n/a when not finite)."""
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


def crossed_table(report: Report) -> pd.DataFrame:
    """The crossed random-effects TOST table as shown (its columns: :data:`CROSSED_COLUMNS`)."""
    return report.validation.crossed.rename(columns={"pvalue": "p_value"})


def _collection(p: dict[str, Any], s: dict[str, Any]) -> str:
    """How the labels were collected, as far as this tool knows: "blind" only for its own pages (a
    property of their configuration), and the measured side of chosen instead of "counterbalanced"."""
    if p.get("collected_here"):
        how = (
            " with this tool, whose pages show an annotator only the texts A and B, never which "
            "response was constructed to follow the user's rubric (blind by the tool's configuration)"
        )
    else:
        how = (
            " (labels read from a file: how they were collected, and whether the annotators were blind "
            "to which response was constructed to follow the rubric, is not known to this tool)"
        )
    n_side = int(s.get("side_judgments") or 0)
    if n_side:
        side = (
            f"; chosen was shown on side A in {int(s['side_a_judgments'])} of {n_side} judgments "
            f"({s['side_a_share']:.1%}; two-sided exact binomial test against 50%, p = {s['side_a_p']:.3g})"
        )
    else:
        side = "; the labels record no display side, so the side balance cannot be measured"
    return how + side


def _few_broken(p: dict[str, Any]) -> str:
    """The methods' sentence on the "few broken pairs" part of equivalence: the bound for any
    distribution of pair gaps, or under a registered two-stage or sequential allocation the test
    calibrated for that procedure (with the allocation itself)."""
    share = p.get("max_broken_share", 0.1)
    design = p.get("allocation")
    if isinstance(design, dict) and design.get("kind") in ("two_stage", "sequential"):
        if design["kind"] == "two_stage":
            rule = (
                f"two-stage: {design['first_stage']} judgments per pair, then blocks of "
                f"{design['second_stage']} more to the pairs whose first-stage judgments looked most broken"
            )
        else:
            rule = (
                f"sequential: {design['first_stage']} judgment(s) per pair, then one at a time to the pair "
                "that looked most broken"
            )
        return (
            "Judgments were allocated by a design registered with the study before the first import "
            f"({rule}; {design['budget']:g} judgments per pair on average, judged at {design['looks']} "
            "registered look(s)). Equivalence also required fewer than "
            f"{share:g} of the pairs beyond the margin: a likelihood-ratio statistic over the per-pair mean "
            "gaps whose critical value at level alpha comes from simulating the registered procedure "
            "(its allocation rule, its budget, the noise variance estimated from the same judgments, "
            f"prepivoted) with {share:g} of the pairs at the margin and the rest at 0, the configuration "
            "most likely to pass: valid for any distribution of pair gaps, for this registered design."
        )
    return (
        f"Equivalence also required few broken pairs: the upper {100 * (1 - p['alpha']):g}% confidence "
        "bound of the share of pairs whose true gap lies beyond the margin, valid for any distribution of "
        "pair gaps (at most the mean squared gap divided by the squared margin; the mean squared gap "
        "estimated from products of different annotators' judgments of the same pair, so annotator "
        f"effects are not counted as pair gaps), below {share:g}."
        + (
            " The tool drew the people's pairs with unequal inclusion probabilities (more where the judge "
            "was unsure), so this bound, like every people-only verdict of this report (the mean gap, the "
            "rubric and the preference), speaks for the rated sample, not for every pair of the study; the "
            "prediction-powered section gives the mean gap and this bound weighted by 1 / probability over "
            "every pair of the draw (the People only columns)."
            if p.get(UNEQUAL_DRAW)
            else ""
        )
    )


def _rated_on(p: dict[str, Any]) -> str:
    """The quality items and their scales, for the methods: "a, b) was rated 1-5 ", or with
    dimensions on their own scales "a, b) was rated on each dimension's own scale (a 1-5, b 0-1) "."""
    items = p["quality_items"]
    if "scales" not in p:
        return ", ".join(items) + f") was rated {p['scale_min']:g}-{p['scale_max']:g} "
    scales = report_scales(p, items)
    each = ", ".join(f"{item} {scales[item].text()}" for item in items)
    return ", ".join(items) + f") was rated on each dimension's own scale ({each}) "


def _margin_words(p: dict[str, Any]) -> str:
    """The equivalence margin for the methods: "+-0.5 scale points", or each dimension's when they
    differ ("each dimension's margin in its own points (a +-0.5, b +-0.125; sums and means over
    dimensions in points of the study's +-0.5)")."""
    if "margins" not in p:
        return f"+-{p['margin']:g} scale points"
    return (
        f"each dimension's margin in its own scale's points ({margins_text(p['margins'])}; sums and means "
        f"over dimensions in points of the study's +-{p['margin']:g})"
    )


def methods_paragraph(report: Report) -> str:
    """A methods paragraph stating exactly what was tested, with every parameter."""
    p, s = report.parameters, report.summary
    level = round(100 * (1 - 2 * p["alpha"]))
    crossed = report.validation.crossed
    dfs = ", ".join(
        f"{r['dimension']} " + (f"{r['df']:.1f}" if math.isfinite(r["df"]) else "n/a (exact bound)")
        for r in crossed.to_dict("records")
    )
    design = report.design
    n_ann = s["n_annotators"]
    weak = (
        f" With {n_ann} annotators the annotator variance rests on "
        f"{counted(max(n_ann - 1, 0), 'degree', 'degrees')} of freedom, "
        "so the generalization to other annotators is weak: the test is conservative when annotator "
        f"effects are normal, but {n_ann} annotators cannot show that annotators in general do not "
        "split into camps."
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
        + _collection(p, s)
        + (
            f"; {s['n_control_pairs']} control pairs were analysed separately"
            if s.get("n_control_pairs")
            else ""
        )
        + ". General quality ("
        + _rated_on(p)
        + "for each response. For each dimension we fitted a linear mixed model to the per-judgment "
        "differences (chosen - rejected) with crossed random effects of pair and of annotator on the "
        "difference (REML), so that the mean difference refers to pairs and annotators in general, and "
        "tested equivalence with two one-sided tests (TOST; Schuirmann 1987) against "
        + _margin_words(p)
        + f" at alpha = {p['alpha']:g} using Satterthwaite degrees of freedom ({dfs}); equivalently, the "
        f"{level}% CI lies inside the bounds. The dimensions were combined as an intersection-union "
        "test, all of which must pass, so no multiplicity correction applies (Berger 1982)."
        f"{weak} A paired TOST on per-pair "
        "mean differences and a Wilcoxon signed-rank TOST (Pratt's treatment of differences on the bound; "
        "Hodges-Lehmann interval strictly inside the bounds) are reported as conditional on this panel of "
        f"annotators. {_few_broken(p)} Rubric alignment (per judgment, the "
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
        "advantage), with each annotator's own noise variance and the noise's tails fitted (under "
        "heavy tails each judgment's own t density); 'drop' counts a pair past the margin by more than "
        "a pair mean's standard error and controls the Bayesian false discovery rate at "
        f"{p.get('fdr', 0.1):g} (measured at or below it with annotators of unequal noise, heavy-tailed "
        "noise, integer ratings with slips and good pairs up to the margin, and for the latest list "
        "after pairs that need more judgments got them), and the drops marked 'shown for any "
        "distribution of pair gaps' (Benjamini-Hochberg on p values at the margin) control it whatever "
        f"the gaps. No result passes with fewer than {p['min_pairs']} pairs. "
        "The overall result is PASS only when every verdict passes."
    )


#: What each section a report may leave out is called (its key in ``Report.not_computed``).
SECTION_NAMES = {
    "cleaning": "Cleaning list (pairs to drop, pairs that need more judgments)",
    "pair_table": "Per-pair table",
    "diagnostics": "Annotators (agreement with the others, speed, straight-lining)",
    "bias": "Position and length bias",
    "categories": "By category",
    "benchmark": "Models, arms and rubric support",
    "owners": "The profiles' owners (owner endorsement)",
}


def not_computed_lines(report: Report) -> list[str]:
    """One line per section the report did not compute: its name and why."""
    return [f"{SECTION_NAMES.get(key, key)}: {why}" for key, why in report.not_computed.items()]


def cleaning_title(report: Report) -> str:
    """The heading of the cleaning list, with its counts (its error rate: :func:`cleaning_rate`)."""
    if "cleaning" in report.not_computed:
        return "Cleaning list: not computed at this size"
    s = report.summary
    more = s.get("n_needs_more", 0)
    return (
        f"Cleaning list: {counted(s.get('n_drop', 0), 'pair')} to drop, "
        f"{more} {counted(more, 'needs', 'need', number=False)} more judgments"
    )


def cleaning_rate(report: Report) -> str:
    """The cleaning list's error rates in one sentence ("" when the list was not computed)."""
    if "cleaning" in report.not_computed:
        return ""
    fdr = report.parameters.get("fdr", 0.1)
    return (
        f"Drops at a Bayesian false discovery rate of {fdr:.0%} in this list (after more judgments, decide "
        "on the latest list: the drops of earlier lists taken together do not keep that rate); "
        f"{report.summary.get('n_drop_any', 0)} of them also at {fdr:.0%} for any distribution of pair "
        "gaps, and over repeated looks."
    )


def benchmark_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The benchmark-science tables to show (title, one-line note, table), in order; none without
    model predictions, study arms or rubric-support answers."""
    science = report.benchmark
    if science is None:
        return []
    where = (
        "on the validated pairs" if science.pairs_used == "validated pairs" else f"on {science.pairs_used}"
    )
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
            qc.table[[c for c in QC_REPORT_COLUMNS if c in qc.table.columns]],
        ),
        (
            "Verdicts with and without the excluded annotators",
            "The same analysis run twice: on every annotator, and without the annotators the rule excludes.",
            qc.verdicts,
        ),
    ]


#: What the content-blind baseline table shows (one sentence per idea).
BASELINE_NOTE = (
    "A content-blind judge answers from position or length alone (preference: the response the judge was "
    "shown first, or the longer one; ratings: every response the people's mean rating, or the longer one "
    "the mean of longer responses), scored against the same annotators; the best of them is shown. "
    "Baseline gap: how much better an annotator scores than the best content-blind judge; when it is below "
    "epsilon, epsilon is too loose to mean anything for this study (a judge that does not read would pass "
    "the alt-test). The judge beats the "
    "baseline when it wins more than {margin:g} more often per comparison (one-sided t test over pairs at "
    "{q:g}, {level}% lower bound shown) against every content-blind judge; Can replace needs that and the "
    "alt-test."
)


def judge_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The LLM-judge tables (title, note, table); none when the study has no judge ratings."""
    section = report.judges
    if section is None or section.table.empty:
        return []
    p = section.parameters
    level = round(100 * (1 - 2 * p["q"]))
    shown = ["judge", "item", "n_pairs", *ALT_TEST_COLUMNS, "can_replace", "note"]
    baseline = ["judge", "item", "epsilon", *BASELINE_COLUMNS, "baseline_note"]
    agreement = ["judge", "item", *AGREEMENT_COLUMNS, "leniency"]
    sections = [
        (
            "LLM judges: can a judge replace an annotator? (alternative annotator test)",
            "Calderon, Reichart & Dror (ACL 2025), per judge and item, on the main pairs: each annotator "
            "left out in turn; the judge and that annotator are scored against the remaining annotators "
            "(negative RMSE over both responses; the preference by its direction); one-sided paired t test "
            f"of rho(annotator) - rho(judge) >= epsilon ({p['epsilon']:g}: {p.get('epsilon_basis', '')}), "
            f"Benjamini-Yekutieli over annotators at {p['q']:g}; passes = winning rate >= 0.5; can replace = "
            "passes and beats every content-blind judge (next table). Needs "
            f"{p['min_annotators']} annotators with {p['min_items']} pairs each; judge ratings never enter "
            "the human analysis.",
            section.table[shown],
        ),
        (
            "LLM judges: against a judge that does not read the responses (content-blind baseline)",
            BASELINE_NOTE.format(margin=p.get("margin", 0.05), q=p["q"], level=round(100 * (1 - p["q"]))),
            section.table[baseline],
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
                "direction in both orders. First position rate: the share of non-tied preferences for "
                "the response shown first (Position bias: exact binomial test against 1/2, p < alpha). "
                "Longer rate: picks of the longer response by the judge and the people's majority on the "
                "same pairs (Length bias: exact McNemar test, p < alpha); length slopes: preference per "
                "1000 characters of "
                "chosen - rejected (judge vs the people's per-pair mean); calibration of confidence "
                "against agreeing with the majority (ECE over 10 bins, Brier).",
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


def extra_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The titled sections after the main report, in order: benchmark science, annotator quality
    control, LLM judges (title, note, table)."""
    return [
        *benchmark_sections(report),
        *quality_sections(report),
        *judge_sections(report),
        *prediction_powered_sections(report),
        *owner_sections(report),
    ]
