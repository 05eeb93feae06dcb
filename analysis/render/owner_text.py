"""The owners' section as titled tables (every renderer shows them) and as terminal lines."""

from __future__ import annotations

import math

import pandas as pd

from analysis.owners import MIN_KAPPA_OWNERS, MIN_KAPPA_PAIRS
from analysis.report import Report

__all__ = ["KAPPA_METHOD", "owner_lines", "owner_sections"]

#: What kappa's interval is, in the agreement table's note.
KAPPA_METHOD = (
    "Kappa's CI (population: the owners of these profiles, owners as the unit): the union of a "
    "leave-one-owner-out jackknife t interval with Hall's skewness correction, a score-type interval, and "
    "Fieller's interval of kappa at the corners of a distribution-free betting box (Waudby-Smith and "
    "Ramdas) of the owners' shares of chosen, tie and rejected; none below "
    f"{MIN_KAPPA_OWNERS} owners or {MIN_KAPPA_PAIRS} pairs."
)


def owner_sections(report: Report) -> list[tuple[str, str, pd.DataFrame]]:
    """The owners' tables (title, note, table); none when the study has no owner judgments."""
    section = report.owners
    if section is None:
        return []
    level = round(100 * section.parameters["ci_level"])
    unit = f"{level}% CIs, owners as the unit ({section.parameters['unit']})"
    sections = [
        (
            "Owners: do the profiles' owners prefer chosen?",
            f"The share of pairs whose owner prefers chosen (a tie counts half); {unit}. Population: the "
            "owners of these profiles; owners' judgments never enter the third-party analysis.",
            section.endorsement,
        ),
    ]
    if not section.agreement.empty:
        sections.append(
            (
                "Owners: how well third parties judge for the owner",
                "Agreement of each annotator and of the panel majority with the owner's own choice "
                f"(direction: chosen, tie or rejected; Cohen's kappa corrects for chance); {unit}. "
                f"{KAPPA_METHOD}",
                section.agreement,
            )
        )
    if not section.rubric.empty:
        sections.append(
            (
                "Owners: rubric validity",
                "How often owners say a rubric aspect describes what they want (yes 1, partly 1/2, no 0); "
                f"{unit}.",
                section.rubric,
            )
        )
    if not section.models.empty:
        sections.append(
            (
                "Owners: models against the owner and against the third-party majority",
                "Each model's choice against the owner's and against the panel majority's on the same "
                "pairs: the human ceiling for a personalized model is how well a person who is not the "
                f"user does; {unit}.",
                section.models,
            )
        )
    if not section.alt_test.empty:
        sections.append(
            (
                "Owners: can a model replace an annotator at judging for the owner?",
                "The alternative annotator test with the owner as the reference: per model and annotator, "
                "on the pairs both judged, [annotator agrees with the owner] - [model agrees with the owner] "
                f"tested against epsilon ({section.parameters['epsilon']:g}) one-sided, owners as the unit "
                "(p: the larger of a t test with the leave-one-owner-out jackknife SE and a "
                "distribution-free betting test over owners); "
                "Benjamini-Yekutieli over the annotators; can replace = winning rate >= 0.5 with at least 3 "
                "annotators of 30 pairs each.",
                section.alt_test,
            )
        )
    return sections


def format_value(value: float) -> str:
    """A number to three places (n/a when not finite)."""
    number = float(value)
    return f"{number:.3f}" if math.isfinite(number) else "n/a"


def owner_lines(report: Report) -> list[str]:
    """Terminal lines of the owners' section (none without owners)."""
    section = report.owners
    if section is None:
        return []
    e = section.endorsement.iloc[0]
    lines = [
        "",
        f"Owners ({int(e['n_owners'])} owners, {int(e['n_pairs'])} pairs; CIs over owners)",
        f"  prefer chosen  {format_value(e['share'])} "
        f"[{format_value(e['ci_low'])}, {format_value(e['ci_high'])}]",
    ]
    for row in section.agreement.to_dict("records"):
        lines.append(
            f"  {str(row['rater'])[:24]:<24} agrees with owner {format_value(row['accuracy'])} "
            f"[{format_value(row['accuracy_ci_low'])}, {format_value(row['accuracy_ci_high'])}] "
            f"kappa {format_value(row['kappa'])} on {row['n_pairs']} pairs"
        )
    for row in section.rubric.to_dict("records"):
        lines.append(
            f"  rubric aspects endorsed {format_value(row['endorsement'])} "
            f"[{format_value(row['ci_low'])}, {format_value(row['ci_high'])}] ({row['n_answers']} answers)"
        )
    for row in section.models.to_dict("records"):
        lines.append(
            f"  {str(row['model'])[:24]:<24} vs owner {format_value(row['accuracy_owner'])} "
            f"vs majority {format_value(row['accuracy_majority'])} on {row['n_pairs']} pairs"
        )
    return lines
