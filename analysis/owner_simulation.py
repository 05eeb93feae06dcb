"""Simulated owners' judgments for a label frame (the demo, the tests and the Monte Carlo benchmark)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.aggregates import judgments, pair_majority
from analysis.vocabulary import (
    ANNOTATOR,
    CHOSEN,
    CONFIDENCE,
    CONTROL,
    ITEM,
    OWNER,
    PAIR_ID,
    PREFERENCE,
    RATER_KIND,
    RESPONSE,
    TIME_S,
    VALUE,
    support_item,
)

__all__ = ["with_owners"]


def with_owners(
    rng: np.random.Generator,
    frame: pd.DataFrame,
    *,
    n_owners: int,
    owned_share: float = 1.0,
    follow_panel: float = 0.8,
    endorse: float = 0.75,
    aspects: int = 2,
    aspect_yes: float = 0.7,
    prefix: str = "owner-",
) -> pd.DataFrame:
    """`frame` plus one owner judgment per owned main pair (``rater_kind = "owner"``).

    A share `owned_share` of the main pairs gets an owner (owners drawn uniformly among `n_owners`).
    With probability `follow_panel` the owner takes the panel majority's direction (when there is
    one), else prefers chosen with probability `endorse` (rejected otherwise). Each owner row answers
    ``support:<k>`` on `aspects` rubric aspects: yes with probability `aspect_yes`, else partly or no.
    """
    main = frame if CONTROL not in frame.columns else frame[frame[CONTROL].astype(str) == ""]
    majority = pair_majority(judgments(main)[[PAIR_ID, ANNOTATOR, PREFERENCE]])
    pairs = majority[PAIR_ID].astype(str).to_numpy()
    owned = rng.random(len(pairs)) < owned_share
    pairs, panel = pairs[owned], majority["majority"].to_numpy()[owned]
    owners = rng.integers(0, n_owners, len(pairs))
    panel_pref = np.select([panel == CHOSEN, panel == "rejected"], [1, -1], 0)
    own_pref = np.where(rng.random(len(pairs)) < endorse, 1, -1) * rng.choice([1, 2], len(pairs))
    follows = (rng.random(len(pairs)) < follow_panel) & (panel != "none")
    pref = np.where(follows, panel_pref, own_pref)
    rows = []
    for k in range(aspects):
        u = rng.random(len(pairs))
        value = np.where(u < aspect_yes, 2.0, np.where(u < aspect_yes + (1 - aspect_yes) / 2, 1.0, 0.0))
        rows.append(
            pd.DataFrame(
                {
                    PAIR_ID: pairs,
                    ANNOTATOR: [f"{prefix}{g}" for g in owners],
                    RESPONSE: CHOSEN,
                    ITEM: support_item(k),
                    VALUE: value,
                    PREFERENCE: pref,
                    CONFIDENCE: 2.0,
                    TIME_S: 30.0,
                    RATER_KIND: OWNER,
                }
            )
        )
    base = frame.assign(**{RATER_KIND: ""}) if RATER_KIND not in frame.columns else frame
    for col in base.columns:
        for part in rows:
            if col not in part.columns:
                part[col] = "" if col == CONTROL else np.nan
    return pd.concat(
        [base.astype({PAIR_ID: str, ANNOTATOR: str, RESPONSE: str, ITEM: str}), *rows], ignore_index=True
    )
