"""The prediction-powered section as titled tables (every renderer shows them) and as terminal lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.ppi_report import SAMPLING_WEIGHTED, TABLE_COLUMNS, PredictionPoweredSection
from analysis.report import Report
from analysis.scale import margins_text

__all__ = ["prediction_powered_lines", "prediction_powered_sections"]

_SHOWN = [c for c in TABLE_COLUMNS if c not in ("df", "pvalue", "warnings")]


def _note(section: PredictionPoweredSection) -> str:
    p = section.parameters
    level = round(100 * (1 - 2 * p["alpha"]))
    return (
        "PPI++ (Angelopoulos, Duchi & Zrnic 2023): a judge rated every pair, people a sample; the mean "
        "chosen - rejected gap over every judged pair is lambda x the judge's mean gap on the pairs no "
        "person rated + the people's mean of (gap - lambda x judge gap) on the rated pairs, the latter in "
        "the crossed random-effects model (pair and annotator effects, Satterthwaite df), so the claim "
        "holds for pairs and annotators in general whatever the judge is. TOST against "
        + (
            f"+-{p['margin']:g}"
            if "margins" not in p
            else f"each dimension's margin ({margins_text(p['margins'])})"
        )
        + f" at {p['alpha']:g} per one-sided test ({level}% CIs), all dimensions must pass. "
        + "The share of broken pairs gets its own bound over every judged pair (the table below). "
        + _words(p).validity
    )


@dataclass(frozen=True)
class _SampleWords:
    """What the notes and lines say that depends on how the people's pairs were sampled."""

    validity: str  # the sentence the verdict's validity rests on
    correction: str  # how a one-sided test's human correction was made
    people: str  # what a one-sided table's People only columns are
    tested: str  # a one-sided terminal line's closing words
    broken_weight: str  # the broken-share bound's weighting, if any
    broken_people: str  # for which pairs its people-only bound speaks


_UNIFORM = _SampleWords(
    validity=(
        "Valid when the people rated a uniform random sample of the judged pairs. The People only "
        "columns: the people-only crossed model on the rated pairs."
    ),
    correction="the human correction in the crossed model",
    people="the people-only crossed model on the rated pairs",
    tested=(
        "(one-sided; PPI++, the people's correction in the crossed pair x annotator model: for the judged "
        "pairs and annotators in general, if the rated pairs are a uniform sample of them)"
    ),
    broken_weight="",
    broken_people=" (on the rated pairs).",
)
_WEIGHTED = _SampleWords(
    validity=(
        "The tool drew the people's pairs and recorded each pair's inclusion probability; each rated "
        "pair's correction is weighted by its inverse (active inference, Zrnic & Candes 2024), so the "
        "verdict speaks for every pair of the draw; the People only columns are the same weighted "
        "estimate without the judge."
    ),
    correction=(
        "the human correction weighted by 1 / each rated pair's recorded inclusion probability (pair "
        "and annotator variance parts, Satterthwaite df)"
    ),
    people="the same weighted estimate without the judge, over every pair of the draw",
    tested=(
        "(one-sided; PPI++, the people's correction weighted by the recorded inclusion probabilities: "
        "for every pair of the draw and annotators in general)"
    ),
    broken_weight=", each rated pair weighted by 1 / its inclusion probability",
    broken_people=" (weighted, so over every pair of the draw).",
)


def _words(parameters: dict[str, Any]) -> _SampleWords:
    """The wording for the human sample the section's `parameters` record."""
    return _WEIGHTED if parameters.get("sampling") == SAMPLING_WEIGHTED else _UNIFORM


def _broken_note(section: PredictionPoweredSection) -> str:
    """What the broken-share bound over every judged pair is, and for which pairs it speaks."""
    p = section.parameters
    share = p.get("max_broken_share", 0.1)
    words = _words(p)
    return (
        "Markov's bound, for any distribution of the pair gaps: the share of pairs beyond the margin is at "
        "most M / margin^2, M the mean squared true gap over every judged pair, estimated by PPI++ with the "
        "judge's squared gap as the prediction and the people's unbiased per-pair estimate (products of two "
        "annotators' differences) as the correction"
        + words.broken_weight
        + f"; upper {100 * (1 - p['alpha']):g}% bound, below when under {100 * share:g}%. For the pairs "
        "of the benchmark the judge rated and annotators in general. People only: share beyond the "
        "margin: the same bound without the judge" + words.broken_people
    )


def prediction_powered_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The prediction-powered tables (title, note, table); none when no judge covers pairs beyond the
    people's."""
    section = report.prediction_powered
    if section is None:
        return []
    verdicts = section.verdicts.assign(status=section.verdicts["status"].str.upper())
    sections = []
    if not section.table.empty:
        sections += [
            (
                "LLM judges: equivalence over every judged pair (prediction-powered)",
                _note(section),
                section.table[_SHOWN],
            ),
            (
                "LLM judges: what each judge added",
                "Per judge: the verdict over all its pairs, the claim of the people-only equivalence "
                "verdict (the mean gap within the margin and the share of broken pairs below its bound, on "
                "every dimension, once the study has its minimum of pairs rated by two or more annotators), "
                "coverage, effective sample size and lambda, in words.",
                verdicts[["judge", "status", "sentence"]],
            ),
        ]
    if not section.broken.empty:
        sections.append(
            (
                "LLM judges: share of broken pairs over every judged pair (prediction-powered)",
                _broken_note(section),
                section.broken.assign(below=section.broken["below"].map({True: "BELOW", False: "NOT BELOW"}))[
                    ["judge", "dimension", "below", "upper", "people_upper", "lam", "sentence"]
                ],
            )
        )
    if not section.preference.empty:
        sections.append(
            _one_sided(
                "LLM judges: preference for chosen over every judged pair (prediction-powered)",
                "The share of judgments preferring chosen (a tie counts half) over every pair the judge "
                "gave a preference, by PPI++ with the judge's preference mapped to 0..1",
                "share > 0.5",
                "rubric",
                section.preference,
                section.parameters,
            )
        )
    if not section.rubric.empty:
        sections.append(
            _one_sided(
                "LLM judges: rubric alignment over every judged pair (prediction-powered)",
                "The mean chosen - rejected rating of the rubric aspects over every pair the judge rated "
                "them on, by PPI++ with the judge's rubric gap",
                "a mean > 0",
                "preference",
                section.rubric,
                section.parameters,
            )
        )
    return sections


def _one_sided(
    title: str, what: str, claim: str, other: str, table: pd.DataFrame, parameters: dict[str, Any]
) -> tuple[str, str, pd.DataFrame]:
    """A one-sided prediction-powered test's table: `what` was estimated how, the `claim` tested, and
    the `other` one-sided test it is not Holm-adjusted with; the human sample as the `parameters` say."""
    alpha = parameters["alpha"]
    level = round(100 * (1 - 2 * alpha))
    words = _words(parameters)
    note = (
        f"{what} and {words.correction}; one-sided test of {claim} at {alpha:g} ({level}% CIs), not "
        f"Holm-adjusted with the {other} test as the people-only verdict is. The People only columns: "
        f"{words.people}."
    )
    return title, note, table.assign(status=table["status"].str.upper())


def prediction_powered_lines(report: Report) -> list[str]:
    """Terminal lines: one per judge (status and its sentences); none without the section."""
    section = report.prediction_powered
    if section is None:
        return []
    lines = ["", "LLM judges: equivalence over every judged pair (prediction-powered)"]
    for row in section.verdicts.to_dict("records"):
        lines.append(f"  {str(row['judge'])[:24]:<24} {str(row['status']).upper():<13} {row['sentence']}")
    for row in section.broken.to_dict("records"):
        below = "BELOW" if row["below"] else "NOT BELOW"
        lines.append(f"  {str(row['judge'])[:24]:<24} {below:<13} {row['dimension']}: {row['sentence']}")
    tested = _words(section.parameters).tested
    for row in section.preference.to_dict("records"):
        lines.append(
            f"  {str(row['judge'])[:24]:<24} {str(row['status']).upper():<13} preference for chosen over "
            f"{row['n_pairs']} pairs ({row['n_rated']} rated by people): share {row['share']:.3f} "
            f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}], p {row['p_greater']:.4g}, lambda "
            f"{row['lam']:.2f}, effective sample size {row['effective_pairs']:.0f} {tested}"
        )
    for row in section.rubric.to_dict("records"):
        lines.append(
            f"  {str(row['judge'])[:24]:<24} {str(row['status']).upper():<13} rubric alignment over "
            f"{row['n_pairs']} pairs ({row['n_rated']} rated by people): mean {row['estimate']:.3f} "
            f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}], p {row['p_greater']:.4g}, lambda "
            f"{row['lam']:.2f}, effective sample size {row['effective_pairs']:.0f} {tested}"
        )
    return lines
