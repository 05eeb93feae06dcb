"""Per-annotator quality control on the long label frame: pure functions, no database.

- :func:`control_checks` / :func:`gold_accuracy`: how often an annotator gives the known answer on
  control pairs (gold: expected answers; positive: the planted defect is rated worse; duplicate: a
  tie is seen as a tie).
- :func:`self_consistency`: agreement with oneself on swapped repeats (1 = identical answers).
- :func:`attention`: too-fast judgments (server-measured time under a floor) and straight-lining.
- :func:`annotator_competence`: Dawid-Skene and MACE competences (analysis.crowd_models) on the preference and
  on the ordinal quality/rubric items, from the main pairs.
- :func:`apply_exclusion`: a pre-registered rule applied to the per-annotator table.

Every table has one row per annotator and flat columns; a measure that cannot be computed is NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.crowd_models import dawid_skene, encode, mace
from analysis.scale import DEFAULT_SCALE
from analysis.vocabulary import DUPLICATE, GOLD, POSITIVE, RUBRIC_PREFIX, SWAP

__all__ = [
    "QC_COLUMNS",
    "QC_REPORT_COLUMNS",
    "QC_TERMINAL_COLUMNS",
    "QualitySection",
    "annotator_competence",
    "apply_exclusion",
    "attention",
    "control_checks",
    "gold_accuracy",
    "label_competence",
    "qc_table",
    "self_consistency",
]

#: Per annotator: the judgment count and the control checks (gold pairs, swapped repeats).
_CHECKS = ("annotator", "judgments", "gold_checks", "gold_accuracy", "swap_checks", "self_consistency")
#: The attention flags: too fast, straight-lining.
_ATTENTION = ("fast_share", "too_fast", "same_share", "straight_lining")
#: The competence models' columns (:func:`annotator_competence`).
_COMPETENCE = ("competence", "competence_preference", "competence_ordinal", "ds_preference", "ds_ordinal")
#: The columns of :func:`qc_table`.
QC_COLUMNS: tuple[str, ...] = (*_CHECKS, "median_time_s", *_ATTENTION, *_COMPETENCE)
#: The QC table as the report shows it (:func:`qc_table` after :func:`apply_exclusion`): controls,
#: attention, both competence models, and who is excluded and why.
QC_REPORT_COLUMNS: tuple[str, ...] = (
    *_CHECKS,
    *_ATTENTION,
    *("competence", "competence_preference", "ds_ordinal", "ds_preference", "excluded", "reasons"),
)
#: The same table on a terminal: without the straight-lining share and the other competence models.
QC_TERMINAL_COLUMNS: tuple[str, ...] = tuple(
    c
    for c in QC_REPORT_COLUMNS
    if c not in {"same_share", "competence_preference", "ds_ordinal", "ds_preference"}
)


def _controls(frame: pd.DataFrame) -> pd.Series:
    if "control" not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame["control"].fillna("").astype(str)


def _judgment_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (pair_id, annotator): preference, time_s, control."""
    keep = frame.assign(control=_controls(frame))
    return (
        keep.groupby(["pair_id", "annotator"], sort=True, observed=True)
        .agg(preference=("preference", "first"), time_s=("time_s", "first"), control=("control", "first"))
        .reset_index()
    )


def _wide_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """Scores as (pair_id, annotator) x (response, item)."""
    return frame.pivot_table(
        index=["pair_id", "annotator"], columns=["response", "item"], values="value", aggfunc="first"
    )


def _score(scores: pd.Series, response: str, item: str) -> float:
    return float(scores.get((response, item), np.nan))


def _gold_checks(
    preference: Any, scores: pd.Series, known: Mapping[str, Any], tolerance: float
) -> list[tuple[str, bool]]:
    """A gold judgment's checks: the preference's sign, then each expected score within tolerance."""
    checks: list[tuple[str, bool]] = []
    if known.get("preference") is not None:
        right = np.sign(int(preference)) == np.sign(int(known["preference"]))
        checks.append(("preference", bool(right)))
    for response, items in (known.get("scores") or {}).items():
        for item, target in items.items():
            got = _score(scores, response, item)
            if np.isnan(got):
                continue
            allowed = 0.0 if str(item).startswith(RUBRIC_PREFIX) else tolerance
            checks.append((f"{response}:{item}", abs(got - target) <= allowed))
    return checks


def _positive_checks(scores: pd.Series, known: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """A positive control's checks: chosen rated above rejected on every dimension it is worse on."""
    checks: list[tuple[str, bool]] = []
    for item in known.get("worse_on") or []:
        chosen, rejected = _score(scores, "chosen", item), _score(scores, "rejected", item)
        if not (np.isnan(chosen) or np.isnan(rejected)):
            checks.append((f"worse:{item}", chosen > rejected))
    return checks


def _duplicate_checks(preference: Any, scores: pd.Series, tolerance: float) -> list[tuple[str, bool]]:
    """A duplicate's checks: at most "better", and each quality dimension within tolerance."""
    checks = [("preference", abs(int(preference)) <= 1)]
    items = {item for response, item in scores.index if not str(item).startswith(RUBRIC_PREFIX)}
    for item in sorted(items):
        chosen, rejected = _score(scores, "chosen", item), _score(scores, "rejected", item)
        if not (np.isnan(chosen) or np.isnan(rejected)):
            checks.append((f"same:{item}", abs(chosen - rejected) <= tolerance))
    return checks


def control_checks(
    frame: pd.DataFrame,
    expected: Mapping[str, Mapping[str, Any]],
    *,
    tolerance: float = 1.0,
) -> pd.DataFrame:
    """Every check on a control judgment, right or wrong: one row per check.

    Parameters
    ----------
    frame : the long label frame with a ``control`` column.
    expected : per control pair_id, what is known: ``preference`` (-2..2, positive = chosen better)
        and/or ``scores`` ({"chosen"|"rejected": {item: value}}) for gold pairs; ``worse_on`` (quality
        dimensions) for positive controls. Duplicates need no entry.
    tolerance : a quality score within this many points of the expected one is right (rubric
        aspects, on 0-2, must match exactly).

    Returns
    -------
    DataFrame with columns annotator, pair_id, control, check, correct (bool). Gold: the preference
    is right when it has the expected sign (tie = 0); each expected score is a check. Positive: for
    every dimension in ``worse_on``, `chosen` is rated above `rejected`. Duplicate: the preference is
    at most "better" (not "much better"), and each quality dimension differs by at most `tolerance`.
    """
    columns = ["annotator", "pair_id", "control", "check", "correct"]
    controls = _controls(frame)
    sub = frame[controls.isin([GOLD, POSITIVE, DUPLICATE])]
    if sub.empty:
        return pd.DataFrame(columns=columns)
    sub = sub.assign(control=_controls(sub))
    judgments = _judgment_table(sub)
    wide = _wide_scores(sub)
    rows: list[tuple[str, str, str, str, bool]] = []
    for pair_id, annotator, preference, _, control in judgments.itertuples(index=False):
        scores = wide.loc[(pair_id, annotator)]
        known = expected.get(str(pair_id), {})
        if control == GOLD:
            checks = _gold_checks(preference, scores, known, tolerance)
        elif control == POSITIVE:
            checks = _positive_checks(scores, known)
        else:  # duplicate: the same text twice
            checks = _duplicate_checks(preference, scores, tolerance)
        rows.extend((annotator, pair_id, control, check, correct) for check, correct in checks)
    return pd.DataFrame(rows, columns=columns)


def gold_accuracy(checks: pd.DataFrame) -> pd.DataFrame:
    """Per annotator: gold_checks (how many) and gold_accuracy (share right) from :func:`control_checks`."""
    if checks.empty:
        return pd.DataFrame({"annotator": pd.Series(dtype=object), "gold_checks": [], "gold_accuracy": []})
    grouped = checks.groupby("annotator")["correct"]
    return pd.DataFrame(
        {"gold_checks": grouped.size(), "gold_accuracy": grouped.mean().astype(float)}
    ).reset_index()


def self_consistency(
    frame: pd.DataFrame,
    sources: Mapping[str, str],
    *,
    quality_ranges: Mapping[str, float] | None = None,
    rubric_range: float = 2.0,
) -> pd.DataFrame:
    """Per annotator: agreement with their own earlier judgment on swapped repeats.

    `sources` maps each swap control's pair_id to the pair it repeats. For every repeat the annotator
    also judged the source of, the consistency is 1 minus the mean absolute difference over the
    preference (range 4) and every score both judgments have (a quality item over its scale's width in
    `quality_ranges`, 4 when not there; rubric aspects over `rubric_range`), so 1 = identical answers,
    about 0.6 = answering at random.

    Returns annotator, swap_checks (repeats used), self_consistency (mean over them).
    """
    empty = pd.DataFrame({"annotator": pd.Series(dtype=object), "swap_checks": [], "self_consistency": []})
    controls = _controls(frame)
    swaps = frame[controls == SWAP]
    if swaps.empty or not sources:
        return empty
    judgments = _judgment_table(frame).set_index(["pair_id", "annotator"])["preference"]
    wide = _wide_scores(frame)
    rows = []
    for pair_id, annotator in swaps[["pair_id", "annotator"]].drop_duplicates().itertuples(index=False):
        source = sources.get(str(pair_id))
        if source is None or (source, annotator) not in judgments.index:
            continue
        diffs = [abs(float(judgments[(pair_id, annotator)]) - float(judgments[(source, annotator)])) / 4.0]
        repeat, first = wide.loc[(pair_id, annotator)], wide.loc[(source, annotator)]
        both = repeat.notna() & first.notna()
        for (_, item), a, b in zip(repeat.index[both], repeat[both], first[both], strict=True):
            scale = (
                rubric_range
                if str(item).startswith(RUBRIC_PREFIX)
                else (quality_ranges or {}).get(str(item), DEFAULT_SCALE.span)
            )
            diffs.append(abs(float(a) - float(b)) / scale)
        rows.append((annotator, 1.0 - float(np.mean(diffs))))
    if not rows:
        return empty
    table = pd.DataFrame(rows, columns=["annotator", "consistency"]).groupby("annotator")["consistency"]
    return pd.DataFrame({"swap_checks": table.size(), "self_consistency": table.mean()}).reset_index()


def attention(
    frame: pd.DataFrame,
    *,
    min_seconds: float = 10.0,
    max_fast_share: float = 0.5,
    max_same_share: float = 0.9,
    min_judgments: int = 5,
) -> pd.DataFrame:
    """Per annotator: speed and straight-lining flags, over all their judgments (controls included).

    too_fast: more than `max_fast_share` of the judgments took under `min_seconds` (server time).
    straight_lining: in at least `max_same_share` of the judgments the same preference was given, or
    every quality score of both responses was the same value. No flag on fewer than `min_judgments`.

    Returns annotator, judgments, median_time_s, fast_share, too_fast, same_share, straight_lining.
    """
    judgments = _judgment_table(frame)
    quality = frame[~frame["item"].astype(str).str.startswith(RUBRIC_PREFIX)]
    flat = quality.groupby(["pair_id", "annotator"], observed=True)["value"].agg(lambda v: v.nunique() == 1)
    judgments = judgments.join(flat.rename("flat"), on=["pair_id", "annotator"])
    rows = []
    for annotator, group in judgments.groupby("annotator", sort=True):
        n = len(group)
        fast = float((group["time_s"] < min_seconds).mean())
        modal = float(group["preference"].value_counts(normalize=True).iloc[0])
        flat_share = float(group["flat"].fillna(False).astype(bool).mean())
        same = max(modal, flat_share)
        enough = n >= min_judgments
        rows.append(
            (
                annotator,
                n,
                float(group["time_s"].median()),
                fast,
                bool(enough and fast > max_fast_share),
                same,
                bool(enough and same >= max_same_share),
            )
        )
    return pd.DataFrame(
        rows,
        columns=[
            "annotator",
            "judgments",
            "median_time_s",
            "fast_share",
            "too_fast",
            "same_share",
            "straight_lining",
        ],
    )


Method = Literal["mace", "dawid_skene"]


def label_competence(labels: pd.DataFrame, *, method: Method = "mace", seed: int = 0) -> pd.Series:
    """Competence per worker from a crowd label model on (task, worker, label) rows, in [0, 1].

    MACE (Hovy et al. 2013): the weight of not answering at random (theta), variational Bayes with
    20 iterations from the random start `seed`. Dawid-Skene (1979): the probability of giving the true
    label, sum_k prior_k * P(label k | true k). Both from :mod:`analysis.crowd_models` (crowd-kit's
    conventions); a worker's competence is NaN when the model cannot be fitted (fewer than two workers
    or two labels).
    """
    workers = pd.unique(labels["worker"])
    if len(workers) < 2 or labels["label"].nunique() < 2:
        return pd.Series(np.nan, index=workers, dtype=float)
    data = labels[["task", "worker", "label"]].reset_index(drop=True)
    data = data.astype({c: object for c in data.columns if isinstance(data[c].dtype, pd.CategoricalDtype)})
    order = pd.unique(data["worker"])
    coded = encode(data)
    if method == "mace":
        values = mace(coded.tasks, coded.workers, coded.labels, n_iter=20, random_state=seed).competence
    elif method == "dawid_skene":
        values = dawid_skene(coded.tasks, coded.workers, coded.labels, n_iter=100).accuracy
    else:
        raise ValueError(f"method must be 'mace' or 'dawid_skene', got {method!r}")
    return pd.Series(values, index=coded.worker_names, dtype=float).reindex(order)


def _preference_labels(frame: pd.DataFrame) -> pd.DataFrame:
    judgments = _judgment_table(frame)
    return pd.DataFrame(
        {
            "task": judgments["pair_id"],
            "worker": judgments["annotator"],
            "label": judgments["preference"].astype(int),
        }
    )


def _ordinal_labels(frame: pd.DataFrame) -> pd.DataFrame:
    task = (
        frame["pair_id"].astype(str) + "|" + frame["response"].astype(str) + "|" + frame["item"].astype(str)
    )
    return pd.DataFrame(
        {
            "task": task.to_numpy(),
            "worker": frame["annotator"].to_numpy(),
            "label": frame["value"].round().astype(int),
        }
    )


def annotator_competence(frame: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per annotator: MACE and Dawid-Skene competences on the preference and on the ordinal items.

    Fitted on the main pairs only (control rows left out). `competence`, the figure the exclusion
    rule uses, is MACE on the ordinal items (every quality and rubric rating is a label, so it rests
    on far more labels than the one preference per judgment, where people may legitimately differ);
    the preference figure when there are no ordinal items.

    Returns annotator, competence, competence_preference, competence_ordinal, ds_preference,
    ds_ordinal.
    """
    main = frame[_controls(frame) == ""]
    annotators = sorted(pd.unique(main["annotator"]).tolist())
    if not annotators:
        return pd.DataFrame(
            {
                name: pd.Series(dtype=object if name == "annotator" else float)
                for name in ("annotator", *_COMPETENCE)
            }
        )
    preference, ordinal = _preference_labels(main), _ordinal_labels(main)
    table = pd.DataFrame(index=pd.Index(annotators, name="annotator"))
    table["competence_preference"] = label_competence(preference, method="mace", seed=seed)
    table["competence_ordinal"] = label_competence(ordinal, method="mace", seed=seed)
    table["ds_preference"] = label_competence(preference, method="dawid_skene", seed=seed)
    table["ds_ordinal"] = label_competence(ordinal, method="dawid_skene", seed=seed)
    table["competence"] = table["competence_ordinal"].fillna(table["competence_preference"])
    return table.reset_index()[["annotator", *_COMPETENCE]]


def qc_table(
    frame: pd.DataFrame,
    *,
    expected: Mapping[str, Mapping[str, Any]] | None = None,
    sources: Mapping[str, str] | None = None,
    tolerance: float = 1.0,
    quality_ranges: Mapping[str, float] | None = None,
    min_seconds: float = 10.0,
    max_fast_share: float = 0.5,
    max_same_share: float = 0.9,
    min_judgments: int = 5,
    competence: bool = True,
    seed: int = 0,
) -> pd.DataFrame:
    """The whole per-annotator table (:data:`QC_COLUMNS`), one row per annotator, sorted by name."""
    att = attention(
        frame,
        min_seconds=min_seconds,
        max_fast_share=max_fast_share,
        max_same_share=max_same_share,
        min_judgments=min_judgments,
    )
    gold = gold_accuracy(control_checks(frame, expected or {}, tolerance=tolerance))
    swap = self_consistency(frame, sources or {}, quality_ranges=quality_ranges)
    table = att.merge(gold, on="annotator", how="left").merge(swap, on="annotator", how="left")
    if competence:
        table = table.merge(annotator_competence(frame, seed=seed), on="annotator", how="left")
    for name in QC_COLUMNS:
        if name not in table.columns:
            table[name] = np.nan
    table["gold_checks"] = table["gold_checks"].fillna(0).astype(int)
    table["swap_checks"] = table["swap_checks"].fillna(0).astype(int)
    return table[list(QC_COLUMNS)].sort_values("annotator").reset_index(drop=True)


def apply_exclusion(
    table: pd.DataFrame,
    *,
    min_gold_accuracy: float | None = None,
    min_self_consistency: float | None = None,
    min_competence: float | None = None,
    exclude_too_fast: bool = False,
    exclude_straight_lining: bool = False,
    min_checks: int = 3,
    max_side_share: float | None = None,
    position: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The rule applied to a :func:`qc_table`: adds ``excluded`` (bool) and ``reasons`` (text).

    An annotator is excluded when any configured criterion fails; a gold accuracy on fewer than
    `min_checks` checks, or a self-consistency on fewer than `min_checks` score comparisons' worth of
    repeats (one repeat is enough: it compares every item), never excludes. With `max_side_share`
    and `position` (:func:`analysis.diagnostics.position_bias`), an annotator whose whole interval of
    the rate of preferring side A lies above `max_side_share` or below ``1 - max_side_share`` is
    excluded (they pick a side, not a response).
    """
    out = table.copy()
    reasons: list[str] = []
    sides = position.set_index("annotator") if position is not None and not position.empty else None
    for row in out.itertuples(index=False):
        why = []
        if max_side_share is not None and sides is not None and row.annotator in sides.index:
            side = sides.loc[row.annotator]
            if side["side_a_ci_low"] > max_side_share or side["side_a_ci_high"] < 1 - max_side_share:
                why.append(
                    f"position bias: prefers side A in {side['side_a_rate']:.2f} of judgments "
                    f"[{side['side_a_ci_low']:.2f}, {side['side_a_ci_high']:.2f}], beyond {max_side_share:g}"
                )
        if (
            min_gold_accuracy is not None
            and row.gold_checks >= min_checks
            and row.gold_accuracy < min_gold_accuracy
        ):
            why.append(f"gold accuracy {row.gold_accuracy:.2f} < {min_gold_accuracy:g}")
        if (
            min_self_consistency is not None
            and row.swap_checks >= 1
            and row.self_consistency < min_self_consistency
        ):
            why.append(f"self-consistency {row.self_consistency:.2f} < {min_self_consistency:g}")
        if min_competence is not None and not np.isnan(row.competence) and row.competence < min_competence:
            why.append(f"competence {row.competence:.2f} < {min_competence:g}")
        if exclude_too_fast and row.too_fast:
            why.append("too fast")
        if exclude_straight_lining and row.straight_lining:
            why.append("straight-lining")
        reasons.append("; ".join(why))
    out["reasons"] = reasons
    out["excluded"] = out["reasons"] != ""
    return out


@dataclass(frozen=True)
class QualitySection:
    """The report's annotator quality-control section.

    ``table``: :func:`qc_table` with ``excluded`` and ``reasons``; ``exclusion``: the pre-registered
    rule (``rule``, ``criteria``, ``registered_at``, ``first_judgment_at``, ``registered_before_data``,
    ``excluded``); ``verdicts``: one row per verdict key with its status on all annotators
    (``status_all``) and without the excluded ones (``status_without_excluded``), overall included.
    """

    table: pd.DataFrame = field(repr=False)
    exclusion: dict[str, Any]
    verdicts: pd.DataFrame = field(repr=False)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"annotators": self.table, "verdicts": self.verdicts}
