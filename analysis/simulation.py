"""The simulator's rating model, in one home (the demo, ``annotator simulate``, power and benchmarks).

Model: every pair has a latent quality ``QUALITY_MEAN + QUALITY_SD * z`` per dimension, shared by both
responses (``chosen`` gets ``+quality_gap``); every annotator has a bias ``N(0, BIAS_SD)`` and a noise
SD ``NOISE * U(0.7, 1.3)``; a rating is the latent value plus bias plus noise, rounded half to even
(as Python's ``round`` and ``np.rint``) and clipped to the scale. Rubric aspects: latent
``RUBRIC_MEAN + RUBRIC_SD * z`` for ``rejected`` (+rubric_gap for ``chosen``), noise ``NOISE / 2``,
scale 0..2.

:func:`simulate_frame` draws a whole study as a long label frame (see :mod:`analysis.frames`) from a
:class:`SimDesign` (what the study collects: pairs, pool, items, scale, controls) and a
:class:`SimEffects` (what the raters and responses do), with the heterogeneity a methods reviewer asks
about: an annotator-specific gap (``annotator_gap_sd``), a pair-specific gap (``pair_gap_sd``), a pool
design (``pool`` annotators, ``per_pair`` of them on each pair), pair-level preference heterogeneity
(Beta), positive-control pairs and response lengths.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.scale import DEFAULT_SCALE, Scale, rescaled
from analysis.vocabulary import POSITIVE, rubric_item

__all__ = [
    "BIAS_SD",
    "NOISE",
    "QUALITY_MEAN",
    "QUALITY_SD",
    "RUBRIC_MEAN",
    "RUBRIC_SD",
    "SimDesign",
    "SimEffects",
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


@dataclass(frozen=True)
class SimDesign:
    """What a simulated study collects.

    Parameters
    ----------
    n_pairs : int
        Main pairs.
    per_pair : int, default 3
        Annotators per pair.
    pool : int, optional
        Annotators in the pool (default ``per_pair``: a fixed panel rating every pair).
    items : tuple of str
        Quality dimensions.
    scale : analysis.scale.Scale
        The quality scale the latent truth is drawn and rated on.
    scales : mapping of str to analysis.scale.Scale
        An item's own scale: its latent truth (on `scale`) is moved onto it (:func:`analysis.scale.rescaled`)
        before the rating is rounded and clipped.
    rubric_aspects : int
        Rubric aspects per pair (0: none).
    positive_controls : int
        Extra pairs with ``control == "positive"`` (their defect is :attr:`SimEffects.control_defect`).
    lengths : bool
        Add ``chosen_chars``/``rejected_chars`` (independent of the ratings).
    prefix : str
        Prefix of the pair ids.
    """

    n_pairs: int
    per_pair: int = 3
    pool: int | None = None
    items: tuple[str, ...] = ("correctness", "relevance", "helpfulness")
    scale: Scale = DEFAULT_SCALE
    scales: Mapping[str, Scale] = field(default_factory=dict)
    rubric_aspects: int = 2
    positive_controls: int = 0
    lengths: bool = True
    prefix: str = "p"

    @property
    def annotators(self) -> int:
        """Annotators in the pool."""
        return self.per_pair if self.pool is None else self.pool


@dataclass(frozen=True)
class SimEffects:
    """What the simulated raters and responses do (the defaults: raters who see no quality gap).

    Parameters
    ----------
    quality_gap : float
        Latent chosen - rejected quality gap (the same on every dimension).
    annotator_gap_sd, pair_gap_sd : float
        SD of an annotator-specific and of a pair-specific addition to the gap.
    noise, bias_sd : float
        Rating noise SD (times U(0.7, 1.3) per annotator) and annotator bias SD.
    pure_noise : bool
        Quality ratings uniform on the scale, unrelated to anything (raters who cannot tell).
    rubric_gap : float
        The latent rubric gap.
    preference_rate : float
        Population rate at which a judgment prefers chosen (ties: 10% of judgments).
    preference_beta : float, optional
        Given (b), each pair's rate is drawn from Beta(2 b r, 2 b (1 - r)) with r =
        ``preference_rate``: mean r, and Beta(b, b) at r = 0.5.
    control_defect : float
        A positive control's ``rejected`` response is this many latent points worse on every dimension.
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
    position_bias : mapping, optional
        ``{annotator index: share}``: that annotator prefers side A in this share of its judgments,
        whatever the responses.
    """

    quality_gap: float = 0.0
    annotator_gap_sd: float = 0.0
    pair_gap_sd: float = 0.0
    noise: float = NOISE
    bias_sd: float = BIAS_SD
    pure_noise: bool = False
    rubric_gap: float = 1.0
    preference_rate: float = 0.75
    preference_beta: float | None = None
    control_defect: float = 1.5
    broken_share: float = 0.0
    broken_gap: float = 1.5
    preference_logit_sd: float = 0.0
    rubric_leniency_sd: float = 0.0
    quality_uniform: tuple[float, float] | None = None
    position_bias: Mapping[int, float] | None = None


def simulate_frame(
    rng: np.random.Generator, design: SimDesign, effects: SimEffects = SimEffects()
) -> pd.DataFrame:
    """Draw one simulated study as a long label frame.

    Parameters
    ----------
    rng : numpy.random.Generator
        The random source.
    design : SimDesign
        What the study collects.
    effects : SimEffects
        What the raters and responses do.

    Returns
    -------
    pandas.DataFrame
        A label frame with ``side_chosen`` (counterbalanced) and ``control``.

    Examples
    --------
    >>> frame = simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=4, rubric_aspects=0))
    >>> len(frame), sorted(frame["annotator"].unique())
    (72, ['a00', 'a01', 'a02'])
    """
    pool = design.annotators
    n_pairs = design.n_pairs
    n_total = n_pairs + design.positive_controls
    pair, ann = _assignments(rng, n_total, design.per_pair, pool)
    n = len(pair)
    bias = rng.normal(0.0, effects.bias_sd, pool)
    noise_a = effects.noise * rng.uniform(*NOISE_SPREAD, pool)
    ann_gap = _per_annotator(rng, effects.annotator_gap_sd, pool)
    is_control = np.arange(n_total) >= n_pairs
    broken = np.zeros(n_total, dtype=bool)
    if effects.broken_share > 0:
        broken[rng.permutation(n_pairs)[: round(effects.broken_share * n_pairs)]] = True
    pair_ids = np.array(
        [f"{design.prefix}{i:05d}" if i < n_pairs else f"ctl{i - n_pairs:04d}" for i in range(n_total)]
    )
    defect = np.where(is_control, effects.control_defect, np.where(broken, effects.broken_gap, 0.0))
    shared = _Draw(rng, pair, ann, bias, noise_a, n_total)
    values = _quality_values(shared, design, effects, ann_gap, defect)
    values |= _rubric_values(shared, design, effects, pool)
    preference, tie = _preferences(shared, effects, pool)
    side = np.where(rng.random(n) < 0.5, "A", "B")
    for a, share in (effects.position_bias or {}).items():
        mine = ann == a
        picks_a = rng.random(n) < share
        # preference > 0 means chosen; picking A means chosen when chosen was shown as A
        preference = np.where(mine & ~tie, np.where(picks_a == (side == "A"), 1, -1), preference)
    columns: dict[str, Any] = {
        "pair_id": pair_ids[pair],
        "annotator": np.array([f"a{j:02d}" for j in range(pool)])[ann],
        "preference": preference,
        "confidence": 2.0,
        "time_s": rng.lognormal(np.log(60), 0.4, n),
        "side_chosen": side,
        "control": np.where(is_control[pair], POSITIVE, ""),
    }
    if design.lengths:
        chars = rng.integers(400, 1600, (n_total, 2)).astype(float)
        columns["chosen_chars"] = chars[pair, 0]
        columns["rejected_chars"] = chars[pair, 1]
    parts = []
    for (item, response), vals in values.items():
        parts.append(pd.DataFrame({**columns, "response": response, "item": item, "value": vals}))
    out = pd.concat(parts, ignore_index=True)
    out.attrs["broken"] = sorted(pair_ids[broken].tolist())
    return out


@dataclass(frozen=True)
class _Draw:
    """What every part of one study's draw shares: the source, who rated which pair, each annotator's
    bias and noise SD, and the number of pairs (main and controls)."""

    rng: np.random.Generator
    pair: np.ndarray
    ann: np.ndarray
    bias: np.ndarray
    noise: np.ndarray
    n_total: int


def _per_annotator(rng: np.random.Generator, sd: float, pool: int) -> np.ndarray:
    """Each annotator's ``N(0, sd)`` addition (zeros, drawing nothing, when ``sd`` is 0)."""
    return rng.normal(0.0, sd, pool) if sd > 0 else np.zeros(pool)


def _quality_values(
    d: _Draw, design: SimDesign, effects: SimEffects, ann_gap: np.ndarray, defect: np.ndarray
) -> dict[tuple[str, str], np.ndarray]:
    """The quality ratings of both responses on every dimension."""
    rng, pair, ann, n = d.rng, d.pair, d.ann, len(d.pair)
    values: dict[tuple[str, str], np.ndarray] = {}
    for item in design.items:
        scale = design.scales.get(item, design.scale)
        low, high = scale.low, scale.high
        if effects.pure_noise:
            values[(item, "chosen")] = rng.integers(low, high + 1, n).astype(float)
            values[(item, "rejected")] = rng.integers(low, high + 1, n).astype(float)
            continue
        base = (
            latent_quality(rng.standard_normal(d.n_total))
            if effects.quality_uniform is None
            else rng.uniform(*effects.quality_uniform, d.n_total)
        )
        pgap = (
            rng.normal(0.0, effects.pair_gap_sd, d.n_total)
            if effects.pair_gap_sd > 0
            else np.zeros(d.n_total)
        )
        chosen_latent = base[pair] + effects.quality_gap + pgap[pair] + ann_gap[ann]
        rejected_latent = base[pair] - defect[pair]
        for response, latent in (("chosen", chosen_latent), ("rejected", rejected_latent)):
            rated = latent + d.bias[ann] + d.noise[ann] * rng.standard_normal(n)
            values[(item, response)] = rate(rescaled(rated, scale, design.scale), low, high)
    return values


def _rubric_values(
    d: _Draw, design: SimDesign, effects: SimEffects, pool: int
) -> dict[tuple[str, str], np.ndarray]:
    """The rubric ratings (0..2) of both responses on every aspect."""
    rng, pair, ann, n = d.rng, d.pair, d.ann, len(d.pair)
    leniency = _per_annotator(rng, effects.rubric_leniency_sd, pool)
    values: dict[tuple[str, str], np.ndarray] = {}
    for k in range(design.rubric_aspects):
        base = latent_rubric(rng.standard_normal(d.n_total))[pair]
        values[(rubric_item(k), "chosen")] = rate(
            base + effects.rubric_gap + leniency[ann] + d.noise[ann] / 2 * rng.standard_normal(n), 0, 2
        )
        values[(rubric_item(k), "rejected")] = rate(base + d.noise[ann] / 2 * rng.standard_normal(n), 0, 2)
    return values


def _preferences(d: _Draw, effects: SimEffects, pool: int) -> tuple[np.ndarray, np.ndarray]:
    """Each judgment's preference (1 chosen, -1 rejected, 0 tie) and whether it is a tie."""
    rng, n = d.rng, len(d.pair)
    if effects.preference_beta is None:
        pair_rate = np.full(d.n_total, effects.preference_rate)
    else:
        r, b = effects.preference_rate, effects.preference_beta
        pair_rate = rng.beta(2 * b * r, 2 * b * (1 - r), d.n_total)
    judgment_rate = pair_rate[d.pair]
    if effects.preference_logit_sd > 0:
        shift = rng.normal(0.0, effects.preference_logit_sd, pool)[d.ann]
        logit = np.log(judgment_rate) - np.log1p(-judgment_rate)
        judgment_rate = 1.0 / (1.0 + np.exp(-(logit + shift)))
    u = rng.random(n)
    tie = rng.random(n) < 0.1
    return np.where(tie, 0, np.where(u < judgment_rate, 1, -1)), tie
