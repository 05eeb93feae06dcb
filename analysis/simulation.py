"""The simulator's rating model, in one home (the demo, ``annotator simulate``, power and benchmarks).

Model: every pair has a latent quality ``QUALITY_MEAN + QUALITY_SD * z`` per dimension, shared by both
responses (``chosen`` gets ``+quality_gap``); every annotator has a bias ``N(0, BIAS_SD)`` and a noise
SD ``NOISE * U(0.7, 1.3)``; a rating is the latent value plus bias plus noise, rounded half to even
(as Python's ``round`` and ``np.rint``) and clipped to the scale. Rubric aspects: latent
``RUBRIC_MEAN + RUBRIC_SD * z`` for ``rejected`` (+rubric_gap for ``chosen``), noise ``NOISE / 2``,
scale 0..2.

:func:`simulate_frame` draws a whole study as a long label frame (see :mod:`analysis.frames`), with
the heterogeneity a methods reviewer asks about: an annotator-specific gap (``annotator_gap_sd``),
a pair-specific gap (``pair_gap_sd``), a pool design (``pool`` annotators, ``per_pair`` of them on each
pair), pair-level preference heterogeneity (Beta), positive-control pairs and response lengths.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.vocabulary import POSITIVE, rubric_item

__all__ = [
    "BIAS_SD",
    "NOISE",
    "QUALITY_MEAN",
    "QUALITY_SD",
    "RUBRIC_MEAN",
    "RUBRIC_SD",
    "latent_quality",
    "latent_rubric",
    "rate",
    "simulate_frame",
]

QUALITY_MEAN = 4.0
QUALITY_SD = 0.45
RUBRIC_MEAN = 0.5
RUBRIC_SD = 0.3
BIAS_SD = 0.25
NOISE = 0.6
NOISE_SPREAD = (0.7, 1.3)


def latent_quality(z: Any) -> Any:
    """A pair's latent quality from a standard normal draw ``z`` (scalar or array).

    Examples
    --------
    >>> latent_quality(0.0), round(latent_quality(1.0), 2)
    (4.0, 4.45)
    """
    return QUALITY_MEAN + QUALITY_SD * z


def latent_rubric(z: Any) -> Any:
    """A response's latent rubric alignment (before the gap) from a standard normal draw ``z``.

    Examples
    --------
    >>> latent_rubric(0.0)
    0.5
    """
    return RUBRIC_MEAN + RUBRIC_SD * z


def rate(value: Any, low: float, high: float) -> Any:
    """A rating: ``value`` rounded half to even and clipped to ``low..high`` (scalar or array).

    Examples
    --------
    >>> float(rate(4.5, 1, 5)), float(rate(6.2, 1, 5)), float(rate(3.5, 1, 5))
    (4.0, 5.0, 4.0)
    """
    return np.clip(np.rint(value), low, high)


def _assignments(
    rng: np.random.Generator, n_pairs: int, per_pair: int, pool: int
) -> tuple[np.ndarray, np.ndarray]:
    """(pair, annotator) of every judgment: each pair gets `per_pair` distinct annotators of the pool,
    balanced so that annotators rate about equally many pairs."""
    if pool == per_pair:
        return np.repeat(np.arange(n_pairs), per_pair), np.tile(np.arange(pool), n_pairs)
    order = np.concatenate([rng.permutation(pool) for _ in range((n_pairs * per_pair) // pool + 2)])
    annotators = np.empty((n_pairs, per_pair), dtype=int)
    pos = 0
    for i in range(n_pairs):
        chosen: list[int] = []
        while len(chosen) < per_pair:
            a = int(order[pos % len(order)])
            pos += 1
            if a not in chosen:
                chosen.append(a)
        annotators[i] = chosen
    return np.repeat(np.arange(n_pairs), per_pair), annotators.ravel()


def simulate_frame(
    rng: np.random.Generator,
    *,
    n_pairs: int,
    per_pair: int = 3,
    pool: int | None = None,
    items: tuple[str, ...] = ("correctness", "relevance", "helpfulness"),
    quality_gap: float = 0.0,
    annotator_gap_sd: float = 0.0,
    pair_gap_sd: float = 0.0,
    noise: float = NOISE,
    bias_sd: float = BIAS_SD,
    pure_noise: bool = False,
    scale: tuple[int, int] = (1, 5),
    rubric_aspects: int = 2,
    rubric_gap: float = 1.0,
    preference_rate: float = 0.75,
    preference_beta: float | None = None,
    positive_controls: int = 0,
    control_defect: float = 1.5,
    lengths: bool = True,
    prefix: str = "p",
    broken_share: float = 0.0,
    broken_gap: float = 1.5,
    preference_logit_sd: float = 0.0,
    rubric_leniency_sd: float = 0.0,
    quality_uniform: tuple[float, float] | None = None,
    position_bias: dict[int, float] | None = None,
) -> pd.DataFrame:
    """Draw one simulated study as a long label frame.

    Parameters
    ----------
    rng : numpy.random.Generator
        The random source.
    n_pairs : int
        Main pairs.
    per_pair : int, default 3
        Annotators per pair.
    pool : int, optional
        Annotators in the pool (default ``per_pair``: a fixed panel rating every pair).
    items : tuple of str
        Quality dimensions.
    quality_gap : float
        Latent chosen - rejected quality gap (the same on every dimension).
    annotator_gap_sd, pair_gap_sd : float
        SD of an annotator-specific and of a pair-specific addition to the gap.
    noise, bias_sd : float
        Rating noise SD (times U(0.7, 1.3) per annotator) and annotator bias SD.
    pure_noise : bool
        Quality ratings uniform on the scale, unrelated to anything (raters who cannot tell).
    scale : tuple of int
        The quality scale.
    rubric_aspects, rubric_gap : int, float
        Rubric aspects per pair (0: none) and the latent rubric gap.
    preference_rate : float
        Population rate at which a judgment prefers chosen (ties: 10% of judgments).
    preference_beta : float, optional
        Given (b), each pair's rate is drawn from Beta(2 b r, 2 b (1 - r)) with r =
        ``preference_rate``: mean r, and Beta(b, b) at r = 0.5.
    positive_controls : int
        Extra pairs with ``control == "positive"``: ``rejected`` carries a quality defect of
        ``control_defect`` latent points on every dimension.
    lengths : bool
        Add ``chosen_chars``/``rejected_chars`` (independent of the ratings).
    prefix : str
        Prefix of the pair ids.
    broken_share, broken_gap : float
        This share of the main pairs (rounded) is broken: their ``rejected`` response is ``broken_gap``
        latent points worse on every quality dimension (the pair ids are in ``frame.attrs["broken"]``).
    preference_logit_sd : float
        Annotators differ in how much they prefer ``chosen``: each adds ``N(0, sd)`` to the logit of
        the pair's rate (population mean rate still ``preference_rate`` at 0.5).
    rubric_leniency_sd : float
        Annotators differ in the rubric gap they see: each adds ``N(0, sd)`` to the latent rubric gap.
    quality_uniform : tuple of float, optional
        Draw each pair's latent quality from ``U(low, high)`` instead of the normal (a ceiling study:
        ``(4.7, 5.0)``).
    position_bias : dict, optional
        ``{annotator index: share}``: that annotator prefers side A in this share of its judgments,
        whatever the responses.

    Returns
    -------
    pandas.DataFrame
        A label frame with ``side_chosen`` (counterbalanced) and ``control``.

    Examples
    --------
    >>> frame = simulate_frame(np.random.default_rng(0), n_pairs=4, rubric_aspects=0)
    >>> len(frame), sorted(frame["annotator"].unique())
    (72, ['a00', 'a01', 'a02'])
    """
    pool = per_pair if pool is None else pool
    low, high = scale
    n_total = n_pairs + positive_controls
    pair, ann = _assignments(rng, n_total, per_pair, pool)
    n = len(pair)
    bias = rng.normal(0.0, bias_sd, pool)
    noise_a = noise * rng.uniform(*NOISE_SPREAD, pool)
    ann_gap = rng.normal(0.0, annotator_gap_sd, pool) if annotator_gap_sd > 0 else np.zeros(pool)
    is_control = np.arange(n_total) >= n_pairs
    broken = np.zeros(n_total, dtype=bool)
    if broken_share > 0:
        broken[rng.permutation(n_pairs)[: round(broken_share * n_pairs)]] = True
    pair_ids = np.array(
        [f"{prefix}{i:05d}" if i < n_pairs else f"ctl{i - n_pairs:04d}" for i in range(n_total)]
    )
    columns: dict[str, Any] = {}
    values: dict[tuple[str, str], np.ndarray] = {}
    for item in items:
        if pure_noise:
            values[(item, "chosen")] = rng.integers(low, high + 1, n).astype(float)
            values[(item, "rejected")] = rng.integers(low, high + 1, n).astype(float)
            continue
        base = (
            latent_quality(rng.standard_normal(n_total))
            if quality_uniform is None
            else rng.uniform(*quality_uniform, n_total)
        )
        pgap = rng.normal(0.0, pair_gap_sd, n_total) if pair_gap_sd > 0 else np.zeros(n_total)
        defect = np.where(is_control, control_defect, np.where(broken, broken_gap, 0.0))
        chosen_latent = base[pair] + quality_gap + pgap[pair] + ann_gap[ann]
        rejected_latent = base[pair] - defect[pair]
        values[(item, "chosen")] = rate(
            chosen_latent + bias[ann] + noise_a[ann] * rng.standard_normal(n), low, high
        )
        values[(item, "rejected")] = rate(
            rejected_latent + bias[ann] + noise_a[ann] * rng.standard_normal(n), low, high
        )
    leniency = rng.normal(0.0, rubric_leniency_sd, pool) if rubric_leniency_sd > 0 else np.zeros(pool)
    for k in range(rubric_aspects):
        base = latent_rubric(rng.standard_normal(n_total))[pair]
        values[(rubric_item(k), "chosen")] = rate(
            base + rubric_gap + leniency[ann] + noise_a[ann] / 2 * rng.standard_normal(n), 0, 2
        )
        values[(rubric_item(k), "rejected")] = rate(base + noise_a[ann] / 2 * rng.standard_normal(n), 0, 2)
    if preference_beta is None:
        pair_rate = np.full(n_total, preference_rate)
    else:
        r = preference_rate
        pair_rate = rng.beta(2 * preference_beta * r, 2 * preference_beta * (1 - r), n_total)
    judgment_rate = pair_rate[pair]
    if preference_logit_sd > 0:
        shift = rng.normal(0.0, preference_logit_sd, pool)[ann]
        logit = np.log(judgment_rate) - np.log1p(-judgment_rate)
        judgment_rate = 1.0 / (1.0 + np.exp(-(logit + shift)))
    u = rng.random(n)
    tie = rng.random(n) < 0.1
    preference = np.where(tie, 0, np.where(u < judgment_rate, 1, -1))
    side = np.where(rng.random(n) < 0.5, "A", "B")
    for a, share in (position_bias or {}).items():
        mine = ann == a
        picks_a = rng.random(n) < share
        # preference > 0 means chosen; picking A means chosen when chosen was shown as A
        preference = np.where(mine & ~tie, np.where(picks_a == (side == "A"), 1, -1), preference)
    columns = {
        "pair_id": pair_ids[pair],
        "annotator": np.array([f"a{j:02d}" for j in range(pool)])[ann],
        "preference": preference,
        "confidence": 2.0,
        "time_s": rng.lognormal(np.log(60), 0.4, n),
        "side_chosen": side,
        "control": np.where(is_control[pair], POSITIVE, ""),
    }
    if lengths:
        chars = rng.integers(400, 1600, (n_total, 2)).astype(float)
        columns["chosen_chars"] = chars[pair, 0]
        columns["rejected_chars"] = chars[pair, 1]
    parts = []
    for (item, response), vals in values.items():
        parts.append(pd.DataFrame({**columns, "response": response, "item": item, "value": vals}))
    out = pd.concat(parts, ignore_index=True)
    out.attrs["broken"] = sorted(pair_ids[broken].tolist())
    return out
