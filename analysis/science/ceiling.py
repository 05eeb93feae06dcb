"""Reward models against the human ceiling: per-pair outcomes, accuracy with CIs, kappa, McNemar
tests, and the pairs on which models and people disagree.

Inputs:

- the long label frame (:mod:`analysis.frames`); control pairs never count;
- a predictions frame, one row per (pair, model): ``pair_id, model, choice`` with ``choice`` in
  ``chosen | rejected | tie`` (optionally ``score_chosen, score_rejected, confidence, category``);
- the final labels (``annotator export adjudicated``): ``pair_id, preference`` (chosen | rejected |
  tie | None) and ``keep``.

Accuracy is the share of pairs on which a judge prefers ``chosen``. A tie counts as not preferring
``chosen`` (for models: ``score_chosen > score_rejected`` strictly, as in RewardBench; for people: a
tie or no majority). Per annotator, accuracy is over the pairs that annotator rated. The *human
ceiling* is the accuracy of the human majority, of the adjudicated final preference and of each
annotator on the same (validated) pairs as the models.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.aggregates import judgments, pair_majority
from analysis.agreement import kappa_from_codes
from analysis.equivalence import wilson_interval
from analysis.frames import ANNOTATOR, CATEGORY, PAIR_ID, PREFERENCE, split_controls
from analysis.lazy import contingency_tables

#: A model's or a final decision's preference direction.
CHOICES: tuple[str, ...] = ("chosen", "rejected", "tie")
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


def _human(
    source: str | npt.ArrayLike, kind: str, pair_ids: pd.Series, correct: npt.ArrayLike
) -> pd.DataFrame:
    """One human outcome part: `source` (a name, or one per row), `kind`, the pair ids as text and
    `correct` (a boolean per row) as 1.0 / 0.0."""
    return pd.DataFrame(
        {
            "source": source,
            "kind": kind,
            PAIR_ID: pair_ids.astype(str).to_numpy(),
            "correct": np.asarray(correct, dtype=float),
        }
    )


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
        parts.append(_human(HUMAN_MAJORITY, "human", majority[PAIR_ID], majority["majority"] == "chosen"))
        correct = per_judgment[PREFERENCE].to_numpy() > 0
        parts.append(_human(HUMAN_JUDGMENTS, "human", per_judgment[PAIR_ID], correct))
        parts.append(
            _human(
                per_judgment[ANNOTATOR].astype(str).to_numpy(), "annotator", per_judgment[PAIR_ID], correct
            )
        )
    if final is not None and not final.empty:
        decided = _restrict(final, pairs)
        decided = decided[decided["preference"].map(lambda p: isinstance(p, str) and p in CHOICES)]
        parts.append(_human(HUMAN_ADJUDICATED, "human", decided[PAIR_ID], decided["preference"] == "chosen"))
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


def cluster_boot_ci(
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
                low, high = cluster_boot_ci(
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
        ia, ib = _choice_codes(a), _choice_codes(b)
        kappa = _kappa(ia, ib)
        boot = []
        if n >= 2 and not math.isnan(kappa):
            for _ in range(n_boot):
                take = rng.integers(0, n, n)
                boot.append(_kappa(ia[take], ib[take]))
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


def _choice_codes(values: npt.NDArray[np.str_]) -> npt.NDArray[np.intp]:
    """Each choice's position in CHOICES (-1 for anything else)."""
    return np.asarray(pd.Index(CHOICES).get_indexer(values), dtype=np.intp)


def _kappa(ia: npt.NDArray[np.intp], ib: npt.NDArray[np.intp]) -> float:
    """Cohen's kappa on CHOICES of two coded label arrays; NaN where it is undefined."""
    if len(ia) == 0 or (ia < 0).any() or (ib < 0).any():
        return math.nan
    try:
        return kappa_from_codes(ia, ib, len(CHOICES))
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
            p = float(contingency_tables.mcnemar(table, exact=exact, correction=True).pvalue)
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
