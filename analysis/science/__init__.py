"""Benchmark science: reward models against the human ceiling (:mod:`.ceiling`), study arms
(:mod:`.arms`), rubric support (:mod:`.support`), and the report's tables of all three (:mod:`.tables`).

Pure functions on DataFrames (no database, no Streamlit)."""

from analysis.science.arms import arm_comparison, arm_summary
from analysis.science.ceiling import (
    CHOICES,
    HUMAN_ADJUDICATED,
    HUMAN_JUDGMENTS,
    HUMAN_MAJORITY,
    accuracy_table,
    choice_from_scores,
    disagreements,
    human_outcomes,
    kappa_table,
    model_outcomes,
    outcomes,
    paired_comparisons,
    validated_pair_ids,
)
from analysis.science.support import (
    support_agreement,
    support_by_aspect,
    support_by_pair,
)
from analysis.science.tables import BenchmarkTables, benchmark_tables

__all__ = [
    "CHOICES",
    "HUMAN_ADJUDICATED",
    "HUMAN_JUDGMENTS",
    "HUMAN_MAJORITY",
    "accuracy_table",
    "arm_comparison",
    "arm_summary",
    "BenchmarkTables",
    "benchmark_tables",
    "choice_from_scores",
    "disagreements",
    "human_outcomes",
    "kappa_table",
    "model_outcomes",
    "outcomes",
    "paired_comparisons",
    "support_agreement",
    "support_by_aspect",
    "support_by_pair",
    "validated_pair_ids",
]
