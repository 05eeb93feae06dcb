"""Rubric support: is each rubric aspect supported by what the user wrote?

Rubric support answers are items ``support:<k>`` (aspect ``k``, 0-based) with values 0 = no,
1 = partly, 2 = yes, stored on the ``chosen`` rows of a judgment (they are about the pair, not a
response); :data:`SUPPORT_PREFIX` names them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.agreement import alpha_ci, krippendorff_alpha
from analysis.frames import (
    ANNOTATOR,
    ITEM,
    PAIR_ID,
    RESPONSE,
    VALUE,
    has_prefix,
    split_controls,
)
from analysis.science.ceiling import cluster_boot_ci
from analysis.vocabulary import SUPPORT_DOMAIN, SUPPORT_LABELS, SUPPORT_PREFIX

# ---------------------------------------------------------------------------------- rubric support


def _support_rows(frame: pd.DataFrame) -> pd.DataFrame:
    main, _ = split_controls(frame)
    rows = main[has_prefix(main[ITEM], SUPPORT_PREFIX) & (main[RESPONSE] == "chosen").to_numpy(dtype=bool)]
    out = pd.DataFrame(
        {
            PAIR_ID: rows[PAIR_ID].astype(str).to_numpy(),
            ANNOTATOR: rows[ANNOTATOR].astype(str).to_numpy(),
            "aspect": rows[ITEM].astype(str).str.removeprefix(SUPPORT_PREFIX).astype(int).to_numpy(),
            VALUE: rows[VALUE].to_numpy(dtype=float),
        }
    )
    bad = out[~out[VALUE].isin(SUPPORT_DOMAIN)]
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
    low, high = cluster_boot_ci(support, rows[PAIR_ID].to_numpy(), n_boot=n_boot, seed=seed, alpha=0.05)
    result["support_ci_low"], result["support_ci_high"] = low, high
    return result
