"""The benchmark-science section of the validation report: every table in one object."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from analysis.frames import (
    PAIR_ID,
    split_controls,
)
from analysis.science.arms import arm_comparison
from analysis.science.ceiling import (
    ALL,
    accuracy_table,
    disagreements,
    kappa_table,
    outcomes,
    paired_comparisons,
    validated_pair_ids,
)
from analysis.science.support import support_agreement, support_by_aspect, support_by_pair

# ------------------------------------------------------------------------------------ for the report


@dataclass(frozen=True)
class BenchmarkTables:
    """The benchmark-science section of the validation report; every table has flat columns and is
    empty when its input is missing (no predictions, no arms, no rubric-support answers).

    ``accuracy``: :func:`accuracy_table` of the models and the human judges on the validated pairs
    (all main pairs when nothing is validated yet: ``pairs_used`` says which); ``kappa``:
    :func:`kappa_table`; ``tests``: :func:`paired_comparisons`; ``disagreements``: :func:`disagreements`;
    ``arms`` / ``arm_differences``: :func:`arm_comparison`; ``support_pairs``: :func:`support_by_pair`;
    ``support_summary``: :func:`support_agreement` as one row plus the number of flagged pairs;
    ``support_aspects``: :func:`support_by_aspect` (one row per pair and rubric aspect).
    """

    pairs_used: str
    accuracy: pd.DataFrame
    kappa: pd.DataFrame
    tests: pd.DataFrame
    disagreements: pd.DataFrame
    arms: pd.DataFrame
    arm_differences: pd.DataFrame
    support_pairs: pd.DataFrame
    support_summary: pd.DataFrame
    support_aspects: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def empty(self) -> bool:
        """True when there is nothing to show."""
        return all(getattr(self, name).empty for name in ("accuracy", "arms", "support_pairs"))

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name, in report order."""
        names = ("accuracy", "kappa", "tests", "disagreements", "arms", "arm_differences", "support_summary",
                 "support_pairs", "support_aspects")  # fmt: skip
        return {name: getattr(self, name) for name in names}


def benchmark_tables(
    frame: pd.DataFrame,
    *,
    predictions: pd.DataFrame | None = None,
    final: pd.DataFrame | None = None,
    quality_items: Sequence[str] = (),
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> BenchmarkTables:
    """Every benchmark-science table for one study (see :class:`BenchmarkTables`).

    The human ceiling needs judgments on the models' pairs; model accuracy is computed on the
    validated pairs (``keep`` in `final`) when there are any, else on every main pair with judgments.
    """
    main, _ = split_controls(frame)
    empty = pd.DataFrame()
    pairs_used = "none"
    accuracy = kappa = tests = queue = empty
    predictions = (
        predictions if predictions is not None else pd.DataFrame(columns=[PAIR_ID, "model", "choice"])
    )
    if not main.empty and not predictions.empty:
        validated = set(validated_pair_ids(final)) if final is not None else set()
        judged = set(main[PAIR_ID].astype(str))
        pairs = judged & validated if validated & judged else judged
        pairs_used = "validated pairs" if validated & judged else "all main pairs (none validated yet)"
        outcome = outcomes(main, predictions, final=final, validated_only=bool(validated & judged))
        accuracy = accuracy_table(outcome, alpha=alpha, n_boot=n_boot, seed=seed)
        per_annotator_category = (accuracy["kind"] == "annotator") & (accuracy["category"] != ALL)
        accuracy = accuracy[~per_annotator_category].reset_index(drop=True)  # annotators: overall only
        kappa = kappa_table(main, predictions, pairs=pairs, n_boot=n_boot, seed=seed, alpha=alpha)
        tests = paired_comparisons(outcome, n_boot=n_boot, seed=seed, alpha=alpha)
        queue = disagreements(main, predictions, final=final)
    arms, arm_differences = arm_comparison(
        main, quality_items=quality_items, n_boot=n_boot, seed=seed, alpha=alpha
    )
    support_pairs = support_by_pair(main)
    support_aspects = support_by_aspect(main)
    if support_pairs.empty:
        support_summary = empty
    else:
        summary = support_agreement(main, n_boot=n_boot, seed=seed)
        summary["n_flagged_pairs"] = int(support_pairs["flagged"].sum())
        support_summary = pd.DataFrame([summary])
    return BenchmarkTables(
        pairs_used=pairs_used,
        accuracy=accuracy,
        kappa=kappa,
        tests=tests,
        disagreements=queue,
        arms=arms,
        arm_differences=arm_differences,
        support_pairs=support_pairs,
        support_summary=support_summary,
        support_aspects=support_aspects,
    )
