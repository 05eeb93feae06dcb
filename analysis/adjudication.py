"""Adjudication rules on frames: which pairs need a person and what an automatic decision says.

A pair's current judgments are summarised by direction (sign of the preference: chosen > 0,
rejected < 0, tie = 0). A pair with fewer than two judgments is *unresolved* (not enough data). A pair
needs a person when any named rule fires (:data:`RULES`); every other pair is resolved automatically,
*unanimous* when all judgments share one direction, else *majority*. The quality rule uses the same
evidence as the report's cleaning list (:mod:`analysis.cleaning`, from 10 pairs on): a pair in "drop"
is settled automatically as not kept, a pair that "needs more judgments" goes to a person, a kept pair
passes the rule; with fewer pairs the median gap of its judgments decides. Pure pandas: the database
side is :mod:`annotator.review.adjudicate` (decisions) and :mod:`annotator.review.adjudication_queue`
(the queue, one pair).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.aggregates import pair_majority, rubric_scores
from analysis.cleaning import DROP, NEEDS_MORE
from analysis.scale import Margin, item_margin
from analysis.vocabulary import RUBRIC_PREFIX

__all__ = [
    "MIN_JUDGMENTS",
    "PREFERENCES",
    "RULES",
    "UNRESOLVED",
    "auto_decision",
    "auto_rule",
    "evaluate",
    "json_number",
    "keeps",
]

#: The rules that send a pair to a person, by name.
RULES: dict[str, str] = {
    "no_majority": "no preference direction (chosen, rejected, tie) has more than half of the judgments",
    "majority_against_chosen": "more than half of the judgments prefer the rejected response",
    "quality_gap": "the median chosen - rejected difference on a quality dimension is beyond the margin "
    "(fewer than 10 pairs)",
    "uncertain": "the cleaning list's evidence cannot settle the pair (it needs more judgments)",
    "flagged": "an annotator flagged the item as broken",
}
MIN_JUDGMENTS = 2
UNRESOLVED = "unresolved"
PREFERENCES = ("chosen", "rejected", "tie")
RULE_LENGTH = 200
_GAP_TOLERANCE = 1e-9


# ------------------------------------------------------------------------------------------ evaluation


def _score_columns(items: Sequence[str], dimensions: Sequence[str]) -> list[str]:
    ordered = [d for d in dimensions if d in items] + sorted(set(items) - set(dimensions) - {"rubric"})
    if "rubric" in items:
        ordered.append("rubric")
    return [f"{response}_{item}" for item in ordered for response in ("chosen", "rejected")]


def _medians(judgments: pd.DataFrame, scores: pd.DataFrame, dimensions: Sequence[str]) -> pd.DataFrame:
    """Per pair: the median over judgments of every quality item and of the rubric (per judgment the
    mean over aspects), as flat columns ``chosen_<item>`` / ``rejected_<item>``, indexed by pair_db_id."""
    if scores.empty:
        return pd.DataFrame(index=pd.Index([], name="pair_db_id"))
    pair_of = pd.Series(judgments["pair_db_id"].to_numpy(), index=judgments["judgment_id"].to_numpy())
    scores = scores[scores["judgment_id"].isin(pair_of.index)]  # one read may be newer than the other
    values = pd.DataFrame(
        {
            "pair_db_id": pair_of.reindex(scores["judgment_id"].to_numpy()).to_numpy(),
            "judgment_id": scores["judgment_id"].to_numpy(),
            "response": scores["response"].astype(object).to_numpy(),
            "item": scores["item"].astype(object).to_numpy(),
            "value": scores["value"].to_numpy(),
        }
    )
    aspect = values["item"].str.startswith(RUBRIC_PREFIX).to_numpy(dtype=bool)
    rubric = rubric_scores(values, ["pair_db_id", "judgment_id", "response"])
    quality = values[~aspect]
    both = pd.concat([quality, rubric[quality.columns]], ignore_index=True)
    wide = (
        both.groupby(["pair_db_id", "response", "item"], sort=False)["value"]
        .median()
        .unstack(["response", "item"])
    )
    wide.columns = [f"{response}_{item}" for response, item in wide.columns]
    columns = _score_columns(list(both["item"].unique()), dimensions)
    return wide.reindex(columns=columns)


def _objects(values: Sequence[Any]) -> pd.Series:
    """A column of Python objects (text or None), kept as such rather than inferred as a text dtype."""
    return pd.Series(list(values), dtype=object)


def _quality_gaps(
    medians: pd.DataFrame, dimensions: Sequence[str], margin: Margin
) -> tuple[np.ndarray, list[list[str]]]:
    """Per pair: whether a quality dimension's median gap (chosen - rejected) is beyond `margin`, and
    the gaps beyond it in words ("<dimension> +<gap>")."""
    gap_words: list[list[str]] = [[] for _ in range(len(medians))]
    gap_hit = np.zeros(len(medians), dtype=bool)
    for dimension in dimensions:
        if f"chosen_{dimension}" not in medians.columns:
            continue
        gap = (medians[f"chosen_{dimension}"] - medians[f"rejected_{dimension}"]).to_numpy()
        beyond = np.abs(np.nan_to_num(gap)) > item_margin(margin, dimension) + _GAP_TOLERANCE
        gap_hit |= beyond
        for hit_at in np.flatnonzero(beyond):
            gap_words[hit_at].append(f"{dimension} {gap[hit_at]:+g}")
    return gap_hit, gap_words


def _reason(
    hit: Sequence[str],
    counts: Sequence[int],
    *,
    n_judgments: int,
    n_flags: int,
    margin: Margin,
    gaps: Sequence[str],
    evidence: str,
    dropped: bool,
) -> str:
    """The rules a pair hits (and a drop by the cleaning list) in words, joined by "; "."""
    chosen, rejected, tie = counts
    words = []
    if "no_majority" in hit:
        words.append(f"no majority (chosen {chosen}, rejected {rejected}, tie {tie})")
    if "majority_against_chosen" in hit:
        words.append(f"majority prefers rejected ({rejected} of {n_judgments})")
    if "quality_gap" in hit:
        bound = "its dimension's margin" if isinstance(margin, Mapping) else f"{margin:g}"
        words.append(f"quality gap beyond {bound}: {', '.join(gaps)}")
    if "flagged" in hit:
        words.append(f"flagged by {n_flags} annotator(s)")
    if "uncertain" in hit:
        words.append(f"uncertain, needs more judgments ({evidence})")
    if dropped:
        words.append(f"broken: in the drop list ({evidence})")
    return "; ".join(words)


def evaluate(
    pairs: pd.DataFrame,
    judgments: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    dimensions: Sequence[str],
    margin: Margin,
    evidence: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Apply the adjudication rules to every pair.

    Parameters
    ----------
    pairs : DataFrame
        Columns pair_db_id, pair_id, category: every pair to evaluate.
    judgments, scores : DataFrame
        :func:`annotator.review.readers.current_judgments` and
        :func:`annotator.review.readers.current_scores`.
    dimensions : sequence of str
        The study's quality dimensions (checked by the ``quality_gap`` rule).
    margin : float or mapping of str to float
        The study's equivalence margin (or each dimension's): a larger |median chosen - median
        rejected| needs a person.
    evidence : DataFrame, optional
        The cleaning list (:func:`analysis.cleaning.frame_cleaning`: pair_id, decision, p_broken,
        reason, evidence); when given (non-empty) it replaces the median rule: "drop" settles the pair
        as not kept (``evidence_decision``), "needs more judgments" fires ``uncertain``.

    Returns
    -------
    DataFrame
        One row per pair (in the order of `pairs`): pair_db_id, pair_id, category, n_judgments,
        n_chosen, n_rejected, n_tie, majority (chosen | rejected | tie | None), agreement (share of
        judgments in the most common direction; NaN without judgments), n_flags, last_submitted_at,
        status (unresolved | needs_person | auto), method (unanimous | majority | None), rules
        (comma-separated names of the rules hit), reasons (the same in words), then the median
        columns ``chosen_<item>`` / ``rejected_<item>``.
    """
    out = pairs[["pair_db_id", "pair_id", "category"]].reset_index(drop=True).copy()
    index = pd.Index(out["pair_db_id"].to_numpy(), name="pair_db_id")
    votes = (
        pair_majority(judgments[["pair_db_id", "preference"]], pair_col="pair_db_id")
        .set_index("pair_db_id")
        .reindex(index)
    )
    out["n_judgments"] = votes["n_votes"].fillna(0).astype("int64").to_numpy()
    for name in ("n_chosen", "n_rejected", "n_tie"):
        out[name] = votes[name].fillna(0).astype("int64").to_numpy()
    flags = judgments.groupby("pair_db_id")["flag"].sum().reindex(index, fill_value=0)
    out["n_flags"] = flags.astype("int64").to_numpy()
    last = judgments.groupby("pair_db_id")["submitted_at"].max().reindex(index)
    n = out["n_judgments"].to_numpy()
    counts = out[["n_chosen", "n_rejected", "n_tie"]].to_numpy()
    top = counts.max(axis=1) if len(out) else np.zeros(0, dtype="int64")
    out["agreement"] = votes["agreement"].to_numpy(dtype=float)
    has_majority = top * 2 > n
    out["majority"] = _objects(
        [m if m in PREFERENCES else None for m in votes["majority"].to_numpy(dtype=object)]
    )
    out["last_submitted_at"] = last.to_numpy()

    medians = _medians(judgments, scores, dimensions).reindex(index)
    hits: dict[str, np.ndarray] = {
        "no_majority": ~has_majority,
        "majority_against_chosen": has_majority & (out["majority"].to_numpy() == "rejected"),
        "flagged": out["n_flags"].to_numpy() > 0,
    }
    gap_hit, gap_words = _quality_gaps(medians, dimensions, margin)
    use_evidence = evidence is not None and not evidence.empty
    decision = np.full(len(out), "", dtype=object)
    evidence_text = np.full(len(out), "", dtype=object)
    if use_evidence:
        assert evidence is not None
        by_pair = evidence.set_index("pair_id")
        found = out["pair_id"].map(by_pair["decision"]).fillna("")
        decision = found.to_numpy(dtype=object)
        evidence_text = out["pair_id"].map(by_pair["evidence"]).fillna("").to_numpy(dtype=object)
        hits["quality_gap"] = np.zeros(len(out), dtype=bool)
        hits["uncertain"] = decision == NEEDS_MORE
    else:
        hits["quality_gap"] = gap_hit
        hits["uncertain"] = np.zeros(len(out), dtype=bool)
    drop = decision == DROP

    enough = n >= MIN_JUDGMENTS
    names = np.full(len(out), "", dtype=object)  # a pair that hits no rule and is not dropped: ""
    reasons = np.full(len(out), "", dtype=object)
    too_few = np.flatnonzero(~enough)
    reasons[too_few] = [f"not enough judgments ({k} of {MIN_JUDGMENTS})" for k in n[too_few]]
    any_hit = np.logical_or.reduce([hits[name] for name in RULES]) | drop
    n_flags = out["n_flags"].to_numpy()
    for position in np.flatnonzero(enough & any_hit):  # only the pairs a rule or a drop names
        hit = [name for name in RULES if hits[name][position]]
        names[position] = ",".join(hit)
        reasons[position] = _reason(
            hit,
            counts[position],
            n_judgments=n[position],
            n_flags=n_flags[position],
            margin=margin,
            gaps=gap_words[position],
            evidence=evidence_text[position],
            dropped=bool(drop[position]),
        )
    out["rules"] = names.tolist()
    out["reasons"] = reasons.tolist()
    out["evidence_decision"] = decision
    settled = drop | (out["rules"] == "").to_numpy()
    out["status"] = np.where(~enough, UNRESOLVED, np.where(settled, "auto", "needs_person"))
    auto = (out["status"] == "auto").to_numpy()
    out["method"] = _objects(
        [("unanimous" if t == k else "majority") if a else None for t, k, a in zip(top, n, auto, strict=True)]
    )
    for name in medians.columns:
        out[name] = medians[name].to_numpy()
    return out


# ------------------------------------------------------------------------------ automatic decisions


def json_number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def auto_decision(
    row: Mapping[str, Any], judgment_ids: list[int], score_columns: Sequence[str]
) -> dict[str, Any]:
    scores: dict[str, dict[str, float]] = {"chosen": {}, "rejected": {}}
    for name in score_columns:
        value = json_number(row.get(name))
        if value is not None:
            response, item = name.split("_", 1)
            scores[response][item] = value
    return {
        "preference": row["majority"],
        "keep": keeps(row),
        "evidence": row.get("evidence_decision") or "",
        "agreement": json_number(row["agreement"]),
        "n_judgments": int(row["n_judgments"]),
        "votes": {
            "chosen": int(row["n_chosen"]),
            "rejected": int(row["n_rejected"]),
            "tie": int(row["n_tie"]),
        },
        "scores": scores,
        "judgment_ids": judgment_ids,
    }


def keeps(row: Mapping[str, Any]) -> bool:
    return bool(row["majority"] == "chosen" and row.get("evidence_decision") != DROP)


def auto_rule(row: Mapping[str, Any]) -> str:
    n, majority = int(row["n_judgments"]), row["majority"]
    if row.get("evidence_decision") == DROP:
        return f"dropped: the cleaning list's evidence says broken; {row['reasons']}"[:RULE_LENGTH]
    if row["method"] == "unanimous":
        text = f"unanimous: all {n} judgments prefer {majority}; no rule needs a person"
    else:
        count = int(row[f"n_{majority}"])
        text = f"majority: {count} of {n} judgments prefer {majority}; no rule needs a person"
    return text[:RULE_LENGTH]
