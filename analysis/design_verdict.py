"""The equivalence verdict under a registered adaptive design, and where a study stands.

When a study registers a two-stage or sequential allocation (:mod:`analysis.design`), the "few broken
pairs" part of the equivalence verdict is the test calibrated for that procedure
(:func:`analysis.design.broken_test`, valid for any distribution of the pair gaps and for stopping at
the first registered look that passes: :mod:`analysis.design_looks` when several looks are registered);
the mean-gap part (the crossed-model TOST) is unchanged.
:func:`standing` says what the Validation page and the CLI say: "settled: PASS", "settled: FAIL" or
"not settled: about N more judgments, on these pairs".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from analysis.design import (
    MAX_PAIRS_ABOVE_3,
    MAX_PAIRS_AT_3,
    Design,
    broken_test,
    look_points,
    next_pairs,
    shown_valid,
)
from analysis.design_looks import look_rule
from analysis.scale import Margin, item_margin
from analysis.validation import ValidationResult
from analysis.verdicts import CROSSED_POPULATION, Verdict
from analysis.vocabulary import PAIR_ID
from analysis.wording import counted

__all__ = ["allocation_table", "pairs_to_judge", "registered_design", "registered_equivalence", "standing"]

_WORDS = {"two_stage": "two-stage", "sequential": "sequential", "fixed": "fixed"}


def registered_design(parameters: dict[str, object]) -> Design | None:
    """The design a report was computed under (its ``allocation`` parameter) when it is adaptive or has
    several registered looks, else None."""
    found = parameters.get("allocation")
    if not isinstance(found, dict) or (found.get("kind") == "fixed" and int(found.get("looks", 1)) == 1):
        return None
    return Design(**found)


def _pair_sums(differences: pd.DataFrame) -> pd.DataFrame:
    grouped = differences.groupby(PAIR_ID, sort=True)["diff"]
    return pd.DataFrame(
        {"sum": grouped.sum(), "square": grouped.apply(lambda d: float((d * d).sum())), "n": grouped.size()}
    )


def allocation_table(
    validation: ValidationResult,
    quality_items: Sequence[str],
    design: Design,
    *,
    margin: Margin,
    max_share: float,
    alpha: float,
) -> pd.DataFrame:
    """One row per quality dimension: the calibrated test (:class:`analysis.design.BrokenTest`), against
    the dimension's margin."""
    rows = []
    for item in quality_items:
        sums = _pair_sums(validation.differences[item])
        res = broken_test(
            sums["sum"], sums["square"], sums["n"], design, margin=item_margin(margin, item),
            max_share=max_share, alpha=alpha, dimension=item, rule=None if design.looks == 1 else look_rule,
        )  # fmt: skip
        rows.append(res.to_dict() | {"shown_valid": shown_valid(design, len(sums))})
    return pd.DataFrame(rows)


def registered_equivalence(verdict: Verdict, validation: ValidationResult, table: pd.DataFrame) -> Verdict:
    """The equivalence verdict with its "few broken pairs" part from the registered design's test.

    A fail from the mean gap (its interval outside the margin) stands; otherwise PASS needs the
    crossed-model TOST and the calibrated test on every dimension; else inconclusive.
    """
    if table.empty:
        return verdict
    row0 = table.iloc[0]
    design = _WORDS.get(str(row0["design"]), str(row0["design"]))
    share = float(row0["max_share"])
    parts = "; ".join(
        f"{r['dimension']} T = {r['statistic']:.3f} against {r['critical']:.3f}"
        for r in table.to_dict("records")
    )
    look = int(row0["look"])
    detail = (
        f"{verdict.detail}; few broken pairs under the registered {design} design (look {look} of "
        f"{int(row0['looks'])}, {int(row0['judgments'])} of {int(row0['planned'])} judgments): {parts}"
    )
    test = (
        f"{verdict.test.split('; and the upper')[0]}; and fewer than {share:.0%} of the pairs beyond the "
        f"margin: a likelihood-ratio statistic over the per-pair mean gaps whose critical value comes from "
        f"simulating the registered {design} procedure (allocation rule, budget, {int(row0['looks'])} "
        "look(s) sharing alpha, noise estimated as here) with that share of pairs at the margin and the "
        "rest at 0, the configuration most likely to pass: valid for any distribution of the pair gaps"
    )
    claim = (
        f"{CROSSED_POPULATION}: chosen and rejected are equivalent on general quality (mean gap within the "
        f"margin), with fewer than {share:.0%} of this study's pairs beyond the margin (for any "
        f"distribution of pair gaps, under the registered {design} design)"
    )
    if verdict.status == "fail" and "outside the margin" in verdict.detail:
        return replace(verdict, claim=claim, test=test, detail=detail)
    crossed = validation.crossed
    mean_ok = bool(validation.iut.equivalent) and bool(crossed["annotator_estimable"].all())
    valid = bool(table["shown_valid"].astype(bool).all())
    few = valid and bool(table["below"].astype(bool).all())
    if mean_ok and few:
        return Verdict("equivalence", claim, test, "pass", detail)
    why = []
    if not mean_ok:
        why.append("mean gap within the margin not demonstrated (crossed model)")
    if not valid:
        why.append(
            f"the registered {design} design's test is not shown to hold its error rate at this budget "
            f"and number of pairs (benchmarks: any design up to {MAX_PAIRS_AT_3} pairs at 3 judgments per "
            f"pair; a sequential one above 3 per pair up to {MAX_PAIRS_ABOVE_3} pairs)"
        )
    elif look == 0:
        why.append("no registered look reached yet")
    elif not few:
        failing = ", ".join(table.loc[~table["below"].astype(bool), "dimension"])
        why.append(f"fewer than {share:.0%} broken pairs not demonstrated for: {failing}")
    return Verdict("equivalence", claim, test, "inconclusive", detail + "; " + "; ".join(why))


def pairs_to_judge(
    validation: ValidationResult, table: pd.DataFrame, design: Design, *, margin: Margin, limit: int
) -> list[str]:
    """The pairs the registered rule gives the next judgments to (at most `limit`), from the dimension
    furthest from settled."""
    if table.empty or limit <= 0:
        return []
    gap = (table["statistic"] - table["critical"]).fillna(np.inf)
    item = str(table.loc[gap.idxmax(), "dimension"])
    sums = _pair_sums(validation.differences[item])
    noise = float(table.loc[gap.idxmax(), "noise_var"])
    noise = noise if np.isfinite(noise) and noise > 0 else 1.0
    means = (sums["sum"] / sums["n"]).to_numpy()
    picked = next_pairs(means, sums["n"].to_numpy(), design, noise, item_margin(margin, item), limit)
    return [str(sums.index[i]) for i in picked]


def standing(
    overall: str, validation: ValidationResult, table: pd.DataFrame, design: Design | None, *, margin: Margin
) -> tuple[str, list[str]]:
    """What the study's state is, in words, and the pairs that should get the next judgments.

    ``settled: PASS`` and ``settled: FAIL`` follow the overall result; an adaptive design whose budget is
    spent without a PASS is settled as FAIL (the claim was not shown with the registered judgments).
    Otherwise ``not settled: about N more judgments, on these pairs`` with N the judgments to the next
    registered look.
    """
    if overall == "PASS":
        return "settled: PASS", []
    if overall == "FAIL":
        return "settled: FAIL", []
    if design is None or table.empty:
        return "not settled: more judgments are needed (see the verdicts)", []
    row = table.iloc[0]
    spent, planned = int(row["judgments"]), int(row["planned"])
    if spent >= planned:
        return "settled: FAIL (the registered budget is spent and the claim is not shown)", []
    n_pairs = len(validation.differences[str(row["dimension"])][PAIR_ID].unique())
    target = next((p for p in look_points(design, n_pairs) if p > spent), planned)
    more = max(target - spent, 1)
    pairs = pairs_to_judge(validation, table, design, margin=margin, limit=min(more, 20))
    return f"not settled: about {counted(more, 'more judgment')}, on these pairs", pairs
