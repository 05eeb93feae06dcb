"""Benchmark science: reward models against the human ceiling, study arms, and rubric support.

Pure functions on DataFrames (no database, no Streamlit). Inputs:

- the long label frame (:mod:`analysis.frames`); control pairs (a non-empty ``control``) never count;
- a predictions frame, one row per (pair, model): ``pair_id, model, choice`` with ``choice`` in
  ``chosen | rejected | tie`` (optionally ``score_chosen, score_rejected, confidence, category``);
- the final labels (``annotator export adjudicated``): ``pair_id, preference`` (chosen | rejected |
  tie | None) and ``keep``.

Accuracy is the share of pairs on which a judge prefers ``chosen``. A tie counts as not preferring
``chosen`` (for models: ``score_chosen > score_rejected`` strictly, as in RewardBench; for people: a
tie or no majority). Per annotator, accuracy is over the pairs that annotator rated. The *human
ceiling* is the accuracy of the human majority, of the adjudicated final preference and of each
annotator on the same (validated) pairs as the models.

Rubric support answers are items ``support:<k>`` (aspect ``k``, 0-based) with values 0 = no,
1 = partly, 2 = yes, stored on the ``chosen`` rows of a judgment (they are about the pair, not a
response); :data:`SUPPORT_PREFIX` names them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar

from analysis.agreement import alpha_ci, cohen_kappa, krippendorff_alpha
from analysis.equivalence import wilson_interval
from analysis.frames import (
    ANNOTATOR,
    ARM,
    CATEGORY,
    ITEM,
    PAIR_ID,
    PREFERENCE,
    RESPONSE,
    VALUE,
    judgment_differences,
    judgments,
    pair_majority,
    split_controls,
)

__all__ = [
    "CHOICES",
    "HUMAN_ADJUDICATED",
    "HUMAN_JUDGMENTS",
    "HUMAN_MAJORITY",
    "SUPPORT_LABELS",
    "SUPPORT_PREFIX",
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

#: A model's or a final decision's preference direction.
CHOICES: tuple[str, ...] = ("chosen", "rejected", "tie")
#: Prefix of a rubric-support item: ``support:0``, ``support:1``, ...
SUPPORT_PREFIX = "support:"
#: The rubric-support answers by value (0, 1, 2).
SUPPORT_LABELS: tuple[str, ...] = ("no", "partly", "yes")
HUMAN_MAJORITY = "human majority"
HUMAN_ADJUDICATED = "human adjudicated"
HUMAN_JUDGMENTS = "human (each judgment)"
ALL = "(all)"

_OUTCOME_COLUMNS = ["source", "kind", PAIR_ID, CATEGORY, "correct"]


# ------------------------------------------------------------------------------------------ outcomes


def choice_from_scores(score_chosen: npt.ArrayLike, score_rejected: npt.ArrayLike) -> np.ndarray:
    """The preference direction implied by two scores: chosen if higher, rejected if lower, else tie.

    >>> choice_from_scores([1.0, 0.2, 0.5], [0.5, 0.3, 0.5]).tolist()
    ['chosen', 'rejected', 'tie']
    """
    c = np.asarray(score_chosen, dtype=float)
    r = np.asarray(score_rejected, dtype=float)
    return np.select([c > r, c < r], ["chosen", "rejected"], default="tie").astype(object)


def validated_pair_ids(final: pd.DataFrame) -> list[str]:
    """The pairs the final labels keep (``keep`` is True), sorted."""
    keep = final["keep"].map(lambda v: v is True or v is np.True_)
    return sorted(final.loc[keep.to_numpy(dtype=bool), PAIR_ID].astype(str))


def _restrict(df: pd.DataFrame, pairs: Iterable[str] | None) -> pd.DataFrame:
    if pairs is None:
        return df
    return df[df[PAIR_ID].astype(str).isin(set(map(str, pairs)))]


def _categories(frame: pd.DataFrame) -> pd.Series:
    if CATEGORY not in frame.columns:
        return pd.Series(dtype=object)
    return frame.groupby(PAIR_ID, sort=False)[CATEGORY].first().astype(str)


def model_outcomes(
    predictions: pd.DataFrame, *, pairs: Iterable[str] | None = None, categories: pd.Series | None = None
) -> pd.DataFrame:
    """One row per (model, pair): ``source`` (the model), ``kind`` "model", pair_id, category, correct.

    ``correct`` is 1.0 when the model's choice is ``chosen`` (a tie is 0.0).
    """
    missing = [c for c in (PAIR_ID, "model", "choice") if c not in predictions.columns]
    if missing:
        raise ValueError(f"predictions need column(s): {', '.join(missing)}")
    rows = _restrict(predictions, pairs)
    category = rows[CATEGORY].astype(str) if CATEGORY in rows.columns else None
    if category is None and categories is not None:
        mapped = rows[PAIR_ID].astype(str).map(categories).astype(object)
        category = mapped.where(mapped.notna(), "")
    out = pd.DataFrame(
        {
            "source": rows["model"].astype(str).to_numpy(),
            "kind": "model",
            PAIR_ID: rows[PAIR_ID].astype(str).to_numpy(),
            CATEGORY: category.to_numpy() if category is not None else "",
            "correct": (rows["choice"].astype(str) == "chosen").to_numpy(dtype=float),
        }
    )
    return out[_OUTCOME_COLUMNS]


def human_outcomes(
    frame: pd.DataFrame, *, final: pd.DataFrame | None = None, pairs: Iterable[str] | None = None
) -> pd.DataFrame:
    """The human judges' outcomes, in the :func:`model_outcomes` shape.

    Sources: :data:`HUMAN_MAJORITY` (kind "human": the majority of the current judgments prefers
    chosen), :data:`HUMAN_ADJUDICATED` (kind "human": the final preference is chosen; only with
    `final`), :data:`HUMAN_JUDGMENTS` (kind "human": every judgment, several per pair) and one source
    per annotator (kind "annotator", on the pairs that annotator rated). Control pairs are dropped.
    """
    main, _ = split_controls(frame)
    main = _restrict(main, pairs)
    categories = _categories(main)
    per_judgment = judgments(main)
    parts = []
    if not per_judgment.empty:
        majority = pair_majority(per_judgment)
        parts.append(
            pd.DataFrame(
                {
                    "source": HUMAN_MAJORITY,
                    "kind": "human",
                    PAIR_ID: majority[PAIR_ID].astype(str).to_numpy(),
                    "correct": (majority["majority"] == "chosen").to_numpy(dtype=float),
                }
            )
        )
        correct = (per_judgment[PREFERENCE].to_numpy() > 0).astype(float)
        ids = per_judgment[PAIR_ID].astype(str).to_numpy()
        parts.append(
            pd.DataFrame({"source": HUMAN_JUDGMENTS, "kind": "human", PAIR_ID: ids, "correct": correct})
        )
        parts.append(
            pd.DataFrame(
                {
                    "source": per_judgment[ANNOTATOR].astype(str).to_numpy(),
                    "kind": "annotator",
                    PAIR_ID: ids,
                    "correct": correct,
                }
            )
        )
    if final is not None and not final.empty:
        decided = _restrict(final, pairs)
        decided = decided[decided["preference"].map(lambda p: isinstance(p, str) and p in CHOICES)]
        parts.append(
            pd.DataFrame(
                {
                    "source": HUMAN_ADJUDICATED,
                    "kind": "human",
                    PAIR_ID: decided[PAIR_ID].astype(str).to_numpy(),
                    "correct": (decided["preference"] == "chosen").to_numpy(dtype=float),
                }
            )
        )
        if CATEGORY in decided.columns:
            categories = pd.concat([categories, decided.set_index(PAIR_ID)[CATEGORY].astype(str)])
            categories = categories[~categories.index.duplicated()]
    if not parts:
        return pd.DataFrame(columns=_OUTCOME_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out[CATEGORY] = out[PAIR_ID].map(categories).fillna("") if len(categories) else ""
    return out[_OUTCOME_COLUMNS]


def outcomes(
    frame: pd.DataFrame,
    predictions: pd.DataFrame,
    *,
    final: pd.DataFrame | None = None,
    validated_only: bool = True,
) -> pd.DataFrame:
    """Models and people on the same pairs: the validated pairs (with `final` and `validated_only`),
    else every main pair with judgments."""
    main, _ = split_controls(frame)
    pairs: set[str] = set(main[PAIR_ID].astype(str))
    if final is not None and validated_only:
        pairs &= set(validated_pair_ids(final))
    humans = human_outcomes(main, final=final, pairs=pairs)
    models = model_outcomes(predictions, pairs=pairs, categories=_categories(main))
    return pd.concat([models, humans], ignore_index=True)


# ------------------------------------------------------------------------------------------ accuracy


def _cluster_boot_ci(
    correct: np.ndarray, clusters: np.ndarray, *, n_boot: int, seed: int, alpha: float
) -> tuple[float, float]:
    """Percentile CI of a mean, resampling clusters (pairs) with replacement."""
    codes, _ = pd.factorize(clusters)
    k = int(codes.max()) + 1 if len(codes) else 0
    if k < 2:
        return math.nan, math.nan
    sums = np.bincount(codes, weights=correct, minlength=k)
    counts = np.bincount(codes, minlength=k).astype(float)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot).astype(float)
    stats = (weights @ sums) / (weights @ counts)
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def accuracy_table(
    outcome: pd.DataFrame,
    *,
    alpha: float = 0.05,
    by_category: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Accuracy per source (and per category) with a 1 - alpha CI.

    Returns columns ``source, kind, category, n_pairs, n, n_correct, accuracy, ci_low, ci_high,
    ci_method``. ``category`` is ``"(all)"`` for the overall row. One outcome per pair: a Wilson
    interval; several per pair (:data:`HUMAN_JUDGMENTS`): a percentile bootstrap over pairs.

    >>> out = pd.DataFrame({"source": "m", "kind": "model", "pair_id": ["a", "b", "c", "d"],
    ...                     "category": "x", "correct": [1.0, 1.0, 1.0, 0.0]})
    >>> accuracy_table(out, by_category=False)[["source", "n", "accuracy"]].values.tolist()
    [['m', 4, 0.75]]
    """
    rows = []
    groups: list[tuple[str, pd.DataFrame]] = [(ALL, outcome)]
    if by_category and CATEGORY in outcome.columns:
        groups += [(str(c), g) for c, g in outcome.groupby(CATEGORY, sort=True) if str(c)]
    for category, group in groups:
        for (source, kind), part in group.groupby(["source", "kind"], sort=False):
            correct = part["correct"].to_numpy(dtype=float)
            n = len(correct)
            n_pairs = int(part[PAIR_ID].nunique())
            hits = float(correct.sum())
            if n_pairs == n:
                low, high = wilson_interval(hits, n, alpha)
                method = "wilson"
            else:
                low, high = _cluster_boot_ci(
                    correct, part[PAIR_ID].to_numpy(), n_boot=n_boot, seed=seed, alpha=alpha
                )
                method = "bootstrap over pairs"
            rows.append(
                {
                    "source": source,
                    "kind": kind,
                    "category": category,
                    "n_pairs": n_pairs,
                    "n": n,
                    "n_correct": int(round(hits)),
                    "accuracy": hits / n if n else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "ci_method": method,
                }
            )
    columns = [
        "source",
        "kind",
        "category",
        "n_pairs",
        "n",
        "n_correct",
        "accuracy",
        "ci_low",
        "ci_high",
        "ci_method",
    ]
    table = pd.DataFrame(rows, columns=columns)
    order = {"model": 0, "human": 1, "annotator": 2}
    table["_k"] = table["kind"].map(order)
    table["_c"] = table["category"] != ALL
    return (
        table.sort_values(["_c", "category", "_k", "source"], kind="stable")
        .drop(columns=["_k", "_c"])
        .reset_index(drop=True)
    )


# -------------------------------------------------------------------------------------- kappa, tests


def kappa_table(
    frame: pd.DataFrame,
    predictions: pd.DataFrame,
    *,
    pairs: Iterable[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Cohen's kappa between each model's choice and the human majority (chosen | rejected | tie).

    Pairs without a human majority are left out. Columns ``model, n_pairs, agreement, kappa, ci_low,
    ci_high`` (percentile bootstrap over pairs; NaN where kappa is undefined).
    """
    main, _ = split_controls(frame)
    main = _restrict(main, pairs)
    majority = (
        pair_majority(judgments(main)) if not main.empty else pd.DataFrame(columns=[PAIR_ID, "majority"])
    )
    majority = majority[majority["majority"] != "none"].set_index(PAIR_ID)["majority"]
    rows = []
    rng = np.random.default_rng(seed)
    for model, group in _restrict(predictions, pairs).groupby("model", sort=True):
        joined = group.assign(**{PAIR_ID: group[PAIR_ID].astype(str)}).join(majority, on=PAIR_ID, how="inner")
        a = joined["choice"].astype(str).to_numpy()
        b = joined["majority"].astype(str).to_numpy()
        n = len(a)
        kappa = _kappa(a, b)
        boot = []
        if n >= 2 and not math.isnan(kappa):
            for _ in range(n_boot):
                take = rng.integers(0, n, n)
                boot.append(_kappa(a[take], b[take]))
        finite = np.array([k for k in boot if not math.isnan(k)])
        low, high = (
            (float(np.quantile(finite, alpha / 2)), float(np.quantile(finite, 1 - alpha / 2)))
            if len(finite)
            else (math.nan, math.nan)
        )
        rows.append(
            {
                "model": str(model),
                "n_pairs": n,
                "agreement": float((a == b).mean()) if n else math.nan,
                "kappa": kappa,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return pd.DataFrame(rows, columns=["model", "n_pairs", "agreement", "kappa", "ci_low", "ci_high"])


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0:
        return math.nan
    try:
        return float(cohen_kappa(a, b, labels=list(CHOICES)))
    except (ValueError, ZeroDivisionError):
        return math.nan


def paired_comparisons(
    outcome: pd.DataFrame,
    *,
    against: Sequence[str] = (HUMAN_MAJORITY, HUMAN_ADJUDICATED),
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Each model against the human sources in `against` and against every other model, on the
    pairs both judged: McNemar's test (exact binomial below 25 discordant pairs, else chi-square with
    continuity correction) and a paired bootstrap CI (over pairs) of the accuracy difference a - b.

    Columns ``a, b, n_pairs, accuracy_a, accuracy_b, difference, ci_low, ci_high, a_only, b_only,
    p_mcnemar, test``.
    """
    single = outcome[outcome["kind"].isin(["model", "human"]) & (outcome["source"] != HUMAN_JUDGMENTS)]
    wide = single.pivot_table(index=PAIR_ID, columns="source", values="correct", aggfunc="first")
    models = sorted(single.loc[single["kind"] == "model", "source"].unique())
    comparisons = [(m, h) for m in models for h in against if h in wide.columns]
    comparisons += [(m1, m2) for i, m1 in enumerate(models) for m2 in models[i + 1 :]]
    rng = np.random.default_rng(seed)
    rows = []
    for a_name, b_name in comparisons:
        both = wide[[a_name, b_name]].dropna()
        a = both[a_name].to_numpy(dtype=float)
        b = both[b_name].to_numpy(dtype=float)
        n = len(a)
        a_only = int(((a == 1) & (b == 0)).sum())
        b_only = int(((a == 0) & (b == 1)).sum())
        if n == 0:
            continue
        discordant = a_only + b_only
        exact = discordant < 25
        if discordant:
            table = [[0, a_only], [b_only, 0]]
            p = float(mcnemar(table, exact=exact, correction=True).pvalue)
        else:
            p = 1.0
        diff = a - b
        if n >= 2:
            take = rng.integers(0, n, size=(n_boot, n))
            boot = diff[take].mean(axis=1)
            low, high = (float(v) for v in np.quantile(boot, [alpha / 2, 1 - alpha / 2]))
        else:
            low = high = math.nan
        rows.append(
            {
                "a": a_name,
                "b": b_name,
                "n_pairs": n,
                "accuracy_a": float(a.mean()),
                "accuracy_b": float(b.mean()),
                "difference": float(diff.mean()),
                "ci_low": low,
                "ci_high": high,
                "a_only": a_only,
                "b_only": b_only,
                "p_mcnemar": p,
                "test": "McNemar exact" if exact else "McNemar chi-square",
            }
        )
    columns = [
        "a", "b", "n_pairs", "accuracy_a", "accuracy_b", "difference", "ci_low", "ci_high",
        "a_only", "b_only", "p_mcnemar", "test",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def disagreements(
    frame: pd.DataFrame,
    predictions: pd.DataFrame,
    *,
    final: pd.DataFrame | None = None,
    pairs: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The pairs where at least one model's choice differs from the human majority (or where the
    people have no majority but the models decided): the queue to send back for more annotation.

    Columns ``pair_id, category, majority, human_agreement, n_judgments, adjudicated, n_models,
    n_models_disagree, models_disagree``; most model disagreements first, then lowest agreement.
    """
    main, _ = split_controls(frame)
    main = _restrict(main, pairs)
    columns = [
        PAIR_ID, CATEGORY, "majority", "human_agreement", "n_judgments", "adjudicated",
        "n_models", "n_models_disagree", "models_disagree",
    ]  # fmt: skip
    if main.empty or predictions.empty:
        return pd.DataFrame(columns=columns)
    majority = pair_majority(judgments(main)).set_index(PAIR_ID)
    preds = _restrict(predictions, pairs).assign(**{PAIR_ID: lambda d: d[PAIR_ID].astype(str)})
    preds = preds[preds[PAIR_ID].isin(majority.index)]
    human = preds[PAIR_ID].map(majority["majority"])
    differs = (preds["choice"].astype(str) != human) | (human == "none")
    per_pair = preds.assign(differs=differs.to_numpy())
    grouped = per_pair.groupby(PAIR_ID, sort=True)
    out = pd.DataFrame(
        {
            "n_models": grouped.size(),
            "n_models_disagree": grouped["differs"].sum().astype(int),
            "models_disagree": grouped.apply(
                lambda g: ", ".join(sorted(g.loc[g["differs"], "model"].astype(str))), include_groups=False
            ),
        }
    )
    out = out[out["n_models_disagree"] > 0]
    out["majority"] = majority["majority"].reindex(out.index)
    out["human_agreement"] = majority["agreement"].reindex(out.index)
    out["n_judgments"] = majority["n_votes"].reindex(out.index).astype(int)
    categories = _categories(main)
    out[CATEGORY] = categories.reindex(out.index).fillna("") if len(categories) else ""
    if final is not None and not final.empty:
        decided = final.assign(**{PAIR_ID: final[PAIR_ID].astype(str)}).set_index(PAIR_ID)["preference"]
        out["adjudicated"] = decided.reindex(out.index).where(lambda s: s.notna(), None)
    else:
        out["adjudicated"] = None
    out = out.reset_index().sort_values(
        ["n_models_disagree", "human_agreement", PAIR_ID], ascending=[False, True, True], kind="stable"
    )
    return out[columns].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------- arms


def _two_way_boot(
    y: np.ndarray,
    pair_codes: np.ndarray,
    ann_codes: np.ndarray,
    arm_codes: np.ndarray,
    n_arms: int,
    *,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Replicates (n_boot x n_arms) of the per-arm mean of `y`, resampling pairs (shared by the arms)
    and, independently, annotators within each arm (annotators are nested in arms)."""
    n_pairs = int(pair_codes.max()) + 1
    n_ann = int(ann_codes.max()) + 1
    arm_of_ann = np.zeros(n_ann, dtype=int)
    arm_of_ann[ann_codes] = arm_codes
    out = np.full((n_boot, n_arms), np.nan)
    for b in range(n_boot):
        wp = rng.multinomial(n_pairs, np.full(n_pairs, 1.0 / n_pairs)).astype(float)
        wa = np.zeros(n_ann)
        for arm in range(n_arms):
            members = np.flatnonzero(arm_of_ann == arm)
            if len(members):
                wa[members] = rng.multinomial(len(members), np.full(len(members), 1.0 / len(members)))
        w = wp[pair_codes] * wa[ann_codes]
        num = np.bincount(arm_codes, weights=w * y, minlength=n_arms)
        den = np.bincount(arm_codes, weights=w, minlength=n_arms)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[b] = num / den
    return out


def _arm_measures(main: pd.DataFrame, quality_items: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per measure: one row per judgment with pair_id, annotator, arm, y."""
    per_judgment = judgments(main)
    measures = {
        "accuracy": per_judgment.assign(y=(per_judgment[PREFERENCE] > 0).astype(float))[
            [PAIR_ID, ANNOTATOR, ARM, "y"]
        ]
    }
    arms = per_judgment.set_index([PAIR_ID, ANNOTATOR])[ARM]
    items = list(quality_items)
    if main[ITEM].astype(str).str.startswith("rubric:").any():
        items.append("rubric")
    for item in items:
        try:
            diffs = judgment_differences(main, item)
        except ValueError:
            continue
        diffs[ARM] = arms.reindex(pd.MultiIndex.from_frame(diffs[[PAIR_ID, ANNOTATOR]])).to_numpy()
        measures[f"{item} (chosen - rejected)"] = diffs.rename(columns={"diff": "y"})[
            [PAIR_ID, ANNOTATOR, ARM, "y"]
        ]
    return measures


def arm_comparison(
    frame: pd.DataFrame,
    *,
    quality_items: Sequence[str] = (),
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study arms side by side: ``(per_arm, differences)``.

    Measures: ``accuracy`` (share of judgments preferring chosen) and, per quality item and the
    rubric, the mean chosen - rejected difference. CIs are percentile bootstraps that resample pairs
    and, independently, annotators within each arm (the arms are between annotators, so the
    annotator is the unit of randomization). ``per_arm`` columns: ``measure, arm, n_annotators,
    n_pairs, n_judgments, estimate, ci_low, ci_high``; ``differences`` (each arm minus the first arm):
    ``measure, arm, reference, difference, ci_low, ci_high``. Both are empty without an ``arm``
    column or with fewer than two arms.
    """
    per_cols = ["measure", "arm", "n_annotators", "n_pairs", "n_judgments", "estimate", "ci_low", "ci_high"]
    diff_cols = ["measure", "arm", "reference", "difference", "ci_low", "ci_high"]
    empty = (pd.DataFrame(columns=per_cols), pd.DataFrame(columns=diff_cols))
    if ARM not in frame.columns:
        return empty
    main, _ = split_controls(frame)
    main = main.assign(**{ARM: main[ARM].fillna("").astype(str)})
    main = main[main[ARM] != ""]
    arm_names = sorted(main[ARM].unique())
    if len(arm_names) < 2:
        return empty
    rng = np.random.default_rng(seed)
    per_rows, diff_rows = [], []
    for measure, data in _arm_measures(main, quality_items).items():
        data = data.dropna(subset=["y", ARM])
        if data.empty:
            continue
        arm_codes = pd.Categorical(data[ARM], categories=arm_names).codes.astype(int)
        pair_codes, _ = pd.factorize(data[PAIR_ID])
        ann_codes, _ = pd.factorize(data[ANNOTATOR])
        y = data["y"].to_numpy(dtype=float)
        boot = _two_way_boot(y, pair_codes, ann_codes, arm_codes, len(arm_names), n_boot=n_boot, rng=rng)
        for k, arm in enumerate(arm_names):
            part = data[arm_codes == k]
            if part.empty:  # e.g. no rubric ratings in an arm that hides the rubric
                continue
            reps = boot[:, k][np.isfinite(boot[:, k])]
            low, high = np.quantile(reps, [alpha / 2, 1 - alpha / 2]) if len(reps) else (math.nan, math.nan)
            per_rows.append(
                {
                    "measure": measure,
                    "arm": arm,
                    "n_annotators": int(part[ANNOTATOR].nunique()),
                    "n_pairs": int(part[PAIR_ID].nunique()),
                    "n_judgments": len(part),
                    "estimate": float(part["y"].mean()) if len(part) else math.nan,
                    "ci_low": float(low),
                    "ci_high": float(high),
                }
            )
            if k == 0:
                continue
            ref = data[arm_codes == 0]["y"]
            if ref.empty:
                continue
            deltas = boot[:, k] - boot[:, 0]
            deltas = deltas[np.isfinite(deltas)]
            dl, dh = np.quantile(deltas, [alpha / 2, 1 - alpha / 2]) if len(deltas) else (math.nan, math.nan)
            diff_rows.append(
                {
                    "measure": measure,
                    "arm": arm,
                    "reference": arm_names[0],
                    "difference": float(part["y"].mean() - ref.mean())
                    if len(part) and len(ref)
                    else math.nan,
                    "ci_low": float(dl),
                    "ci_high": float(dh),
                }
            )
    return pd.DataFrame(per_rows, columns=per_cols), pd.DataFrame(diff_rows, columns=diff_cols)


def arm_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Who is in which arm: ``arm, n_annotators, n_pairs, n_judgments`` (main pairs only)."""
    if ARM not in frame.columns:
        return pd.DataFrame(columns=["arm", "n_annotators", "n_pairs", "n_judgments"])
    main, _ = split_controls(frame)
    per_judgment = judgments(main)
    grouped = per_judgment.groupby(per_judgment[ARM].fillna("").astype(str), sort=True)
    out = pd.DataFrame(
        {
            "n_annotators": grouped[ANNOTATOR].nunique(),
            "n_pairs": grouped[PAIR_ID].nunique(),
            "n_judgments": grouped.size(),
        }
    )
    out.index.name = "arm"
    return out.reset_index()


# ---------------------------------------------------------------------------------- rubric support


def _support_rows(frame: pd.DataFrame) -> pd.DataFrame:
    main, _ = split_controls(frame)
    item = main[ITEM].astype(str)
    rows = main[item.str.startswith(SUPPORT_PREFIX) & (main[RESPONSE] == "chosen")]
    out = pd.DataFrame(
        {
            PAIR_ID: rows[PAIR_ID].astype(str).to_numpy(),
            ANNOTATOR: rows[ANNOTATOR].astype(str).to_numpy(),
            "aspect": rows[ITEM].astype(str).str.removeprefix(SUPPORT_PREFIX).astype(int).to_numpy(),
            VALUE: rows[VALUE].to_numpy(dtype=float),
        }
    )
    bad = out[~out[VALUE].isin([0.0, 1.0, 2.0])]
    if len(bad):
        raise ValueError(f"rubric-support values must be 0, 1 or 2, got: {sorted(set(bad[VALUE]))[:5]}")
    return out


def support_by_aspect(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (pair, rubric aspect): how many annotators said yes / partly / no, the support rate
    (mean answer / 2: yes = 1, partly = 0.5, no = 0) and the majority answer ("none" without one).

    Columns ``pair_id, aspect, n, n_yes, n_partly, n_no, support, majority``.
    """
    rows = _support_rows(frame)
    columns = [PAIR_ID, "aspect", "n", "n_yes", "n_partly", "n_no", "support", "majority"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    grouped = rows.assign(n_yes=rows[VALUE] == 2, n_partly=rows[VALUE] == 1, n_no=rows[VALUE] == 0).groupby(
        [PAIR_ID, "aspect"], sort=True
    )
    out = grouped[["n_yes", "n_partly", "n_no"]].sum().astype(int)
    out.insert(0, "n", grouped.size().astype(int))
    out["support"] = grouped[VALUE].mean() / 2.0
    counts = out[["n_no", "n_partly", "n_yes"]].to_numpy()
    top = counts.argmax(axis=1)
    has = counts.max(axis=1) * 2 > out["n"].to_numpy()
    out["majority"] = np.where(has, np.array(SUPPORT_LABELS, dtype=object)[top], "none")
    return out.reset_index()[columns]


def support_by_pair(frame: pd.DataFrame, *, threshold: float = 0.5) -> pd.DataFrame:
    """Per pair: the mean support over its aspects, the aspects whose majority says "no", and a flag.

    A pair is ``flagged`` (its rubric is not supported by what the user wrote) when any aspect's
    majority answer is "no" or its mean support is below `threshold`. Columns ``pair_id, n_aspects,
    support, n_unsupported, unsupported_aspects, flagged`` (aspects 0-based, comma-separated).
    """
    per_aspect = support_by_aspect(frame)
    columns = [PAIR_ID, "n_aspects", "support", "n_unsupported", "unsupported_aspects", "flagged"]
    if per_aspect.empty:
        return pd.DataFrame(columns=columns)
    grouped = per_aspect.groupby(PAIR_ID, sort=True)
    out = pd.DataFrame(
        {
            "n_aspects": grouped.size().astype(int),
            "support": grouped["support"].mean(),
            "n_unsupported": grouped["majority"].apply(lambda m: int((m == "no").sum())),
            "unsupported_aspects": grouped.apply(
                lambda g: ",".join(str(a) for a in g.loc[g["majority"] == "no", "aspect"]),
                include_groups=False,
            ),
        }
    )
    out["flagged"] = (out["n_unsupported"] > 0) | (out["support"] < threshold)
    return out.reset_index()[columns]


def support_agreement(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> dict[str, float]:
    """Agreement on the rubric-support answers: Krippendorff's alpha (ordinal, units = pair x aspect)
    with a unit-bootstrap 95% CI, the overall support rate with a bootstrap CI over pairs, and the
    share of units where all annotators gave the same answer."""
    rows = _support_rows(frame)
    keys = [
        "krippendorff_alpha",
        "krippendorff_alpha_ci_low",
        "krippendorff_alpha_ci_high",
        "percent_agreement",
        "support",
        "support_ci_low",
        "support_ci_high",
        "n_units",
        "n_pairs",
        "n_answers",
    ]
    result = dict.fromkeys(keys, math.nan)
    if rows.empty:
        return result | {"n_units": 0, "n_pairs": 0, "n_answers": 0}
    unit = rows[PAIR_ID] + "\x00" + rows["aspect"].astype(str)
    wide = rows.assign(unit=unit).pivot_table(index=ANNOTATOR, columns="unit", values=VALUE, aggfunc="first")
    data = wide.to_numpy(dtype=float)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    result.update(n_units=int(data.shape[1]), n_pairs=int(rows[PAIR_ID].nunique()), n_answers=len(rows))
    if pairable.sum() >= 2:
        try:
            result["krippendorff_alpha"] = float(krippendorff_alpha(data[:, pairable], level="ordinal"))
            low, high = alpha_ci(data[:, pairable], level="ordinal", n_boot=n_boot, seed=seed)
            result["krippendorff_alpha_ci_low"] = float(low)
            result["krippendorff_alpha_ci_high"] = float(high)
        except ValueError:
            pass
        same = [len(set(col[~np.isnan(col)])) == 1 for col in data[:, pairable].T]
        result["percent_agreement"] = float(np.mean(same))
    support = rows[VALUE].to_numpy() / 2.0
    result["support"] = float(support.mean())
    low, high = _cluster_boot_ci(support, rows[PAIR_ID].to_numpy(), n_boot=n_boot, seed=seed, alpha=0.05)
    result["support_ci_low"], result["support_ci_high"] = low, high
    return result


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
