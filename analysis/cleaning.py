"""The cleaning list: per-pair empirical-Bayes evidence that a pair is broken, with a stated FDR.

Per item (each quality dimension, the rubric, the preference) every judgment gives a chosen -
rejected score; the annotator-specific part (a shrunken annotator mean, the BLUP of the crossed
model's annotator effect) is removed and the pair's mean ``x_i`` is a noisy measurement of its true
effect ``g_i``. Its noise: each annotator's own variance (from the pairs rated more than once, shrunk
toward the crossed model's residual variance), so a pair rated by noisy annotators is less certain
than one rated by careful ones, and Student's t tails fitted to the residuals where the noise is
heavier-tailed than normal (then each judgment's own t density enters the pair's likelihood, so one
far-off judgment weighs as one slip, not as a pair far off). The distribution of the true effects
over the study's pairs is estimated without assuming its shape: the nonparametric maximum-likelihood
estimate on a grid (Kiefer & Wolfowitz 1956; the EM of Jiang & Zhang 2009; the grid of Koenker &
Mizera 2014), which puts mass where the pairs are, so a fifth of broken pairs forms its own bump
instead of being shrunk into the good ones. Each pair's posterior gives a shrunken estimate and the
probability that it is broken:

- its true quality gap (the mean over the quality dimensions) lies beyond the margin, or
- its rubric effect is not positive (chosen does not follow the rubric better),

taking the larger of the two probabilities (a lower bound on "either", so the list errs on keeping).
"Pairs to drop": the largest set whose mean posterior probability of not being clearly broken is at
most ``fdr`` (the Bayesian FDR, Newton et al. 2004; each pair's ``q_value`` is the smallest such level
that drops it), among the pairs with at least two judgments: one judgment cannot tell a broken pair
from one annotator's slip, so such a pair is never dropped. Clearly broken: the defect lies past its
boundary by more than a typical pair mean's standard error (the data's resolution). Good pairs whose
gaps reach toward the margin cannot be told from pairs just past it, and the estimated distribution
smears them across it; counting only clear defects keeps the false discovery rate of "broken" at
``fdr`` there too (``benchmarks/bench_cleaning.py``). "Keep": probability of being broken at most
``fdr``. Everything else "needs more judgments".

``q_any`` needs no estimated distribution: Benjamini-Hochberg (1995) over each pair's p value at the
defect's boundary (the least favourable good pair), so the drops with ``q_any`` at most ``fdr`` keep
the false discovery rate for any distribution of the pairs' effects, under the noise model; the list
marks them.

References
----------
Jiang, W., Zhang, C.-H. (2009). General maximum likelihood empirical Bayes estimation of normal
means. Ann. Statist. 37(4), 1647-1684.
Koenker, R., Mizera, I. (2014). Convex optimization, shape constraints, compound decisions, and
empirical Bayes rules. J. Amer. Statist. Assoc. 109, 674-685.
Newton, M. A., Noueiry, A., Sarkar, D., Ahlquist, P. (2004). Detecting differential gene expression
with a semiparametric hierarchical mixture method. Biostatistics 5(2), 155-176.
Benjamini, Y., Hochberg, Y. (1995). Controlling the false discovery rate. J. R. Statist. Soc. B 57(1),
289-300.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from analysis.aggregates import judgment_differences, judgments
from analysis.frames import ANNOTATOR, PAIR_ID, PREFERENCE, RUBRIC_ITEM, RUBRIC_PREFIX
from analysis.scale import to_study_points
from analysis.settings import DEFAULTS

__all__ = [
    "DECISIONS",
    "DROP",
    "KEEP",
    "NEEDS_MORE",
    "RULE",
    "ItemEvidence",
    "Noise",
    "annotator_noise",
    "bayesian_q_values",
    "cleaning_list",
    "defect_p_values",
    "drops_for_any_gaps",
    "frame_cleaning",
    "item_evidence",
    "npmle_prior",
    "pairs_needing_more",
    "study_cleaning",
    "t_fit",
]

#: The three decisions of the cleaning list, by name; DECISIONS is their order in the list.
DROP, NEEDS_MORE, KEEP = "drop", "needs more judgments", "keep"
DECISIONS: tuple[str, ...] = (DROP, NEEDS_MORE, KEEP)
MIN_JUDGMENTS_TO_DROP = 2  # a pair judged once is never dropped (its evidence is one annotator's)
#: The cleaning list's rule in one sentence (the pages and docs say it in these words).
RULE = (
    "Per pair: the empirical-Bayes (shrunken) estimates and the probability of being broken; "
    f"'{DROP}' controls the Bayesian false discovery rate, and the drops 'shown for any distribution "
    f"of pair gaps' the false discovery rate whatever the gaps; a pair that '{NEEDS_MORE}' can get "
    "one more annotator"
)
_GRID = 60
_ITERATIONS = 300
_MIN_PAIRS = 10  # fewer pairs do not estimate a distribution of effects


def npmle_prior(
    x: np.ndarray, se: np.ndarray, grid: np.ndarray, *, iterations: int = _ITERATIONS
) -> np.ndarray:
    """Weights on `grid` of the NPMLE of the effects' distribution (EM on the grid).

    Parameters
    ----------
    x, se : numpy.ndarray, shape (n,)
        Noisy measurements and their standard errors (> 0).
    grid : numpy.ndarray, shape (m,)
        Support points.

    Returns
    -------
    numpy.ndarray, shape (m,)
        Non-negative weights summing to 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = np.where(rng.random(400) < 0.25, 2.0, 0.0)
    >>> w = npmle_prior(g + rng.normal(0, 0.4, 400), np.full(400, 0.4), np.linspace(-1, 3, 41))
    >>> round(float(w[np.linspace(-1, 3, 41) > 1].sum()), 1)
    0.2
    """
    (x_u, se_u), counts, _ = _distinct(x, se)
    return _em_weights(_likelihood(x_u, se_u, grid), counts, iterations=iterations)


def _em_weights(like: np.ndarray, counts: np.ndarray, *, iterations: int = _ITERATIONS) -> np.ndarray:
    """The NPMLE's EM on the likelihood of each distinct measurement (rows) at each grid point
    (columns), each row counted `counts` times."""
    share = counts / counts.sum()
    w = np.full(like.shape[1], 1.0 / like.shape[1])
    for _ in range(iterations):
        new = w * (like.T @ (share / (like @ w)))
        if float(np.abs(new - w).max()) < 1e-7:
            w = new
            break
        w = new
    return cast(np.ndarray, w / w.sum())


def _distinct(*columns: np.ndarray) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """The distinct rows of equal-length columns, how often each occurs, and each row's distinct row.
    Pair means of integer scores take few values: the EM and the posteriors are computed once per
    value (the same sums, regrouped)."""
    rows, inverse, counts = np.unique(
        np.column_stack(columns), axis=0, return_inverse=True, return_counts=True
    )
    return tuple(rows.T), counts.astype(float), inverse.ravel()


def _likelihood(x: np.ndarray, se: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The normal density of each measurement (rows) at each grid point (columns)."""
    z = (x[:, None] - grid[None, :]) / se[:, None]
    like = np.exp(-0.5 * z * z) / se[:, None]
    return cast(np.ndarray, np.maximum(like, 1e-300))


def _judgment_likelihood(
    y: np.ndarray, pair_codes: np.ndarray, sd: np.ndarray, grid: np.ndarray, noise: Noise
) -> np.ndarray:
    """The likelihood of each pair's judgments (rows) at each grid point (columns) when every judgment
    has Student's t noise with `noise.df` degrees of freedom and scale `noise.spread` x its
    annotator's SD: the product of the judgments' densities, so one far-off judgment counts as one
    (a heavy tail), not as a far-off pair mean. Each row is known up to a factor (the densities'
    normalizing constants), which neither the NPMLE nor a posterior depends on."""
    df, scale = noise.df, noise.spread * sd
    n_pairs = int(pair_codes.max()) + 1
    log_like = np.empty((n_pairs, len(grid)))
    for column, g in enumerate(grid):
        z = (y - g) / scale
        log_like[:, column] = np.bincount(pair_codes, weights=np.log1p(z * z / df), minlength=n_pairs)
    log_like *= -(df + 1.0) / 2.0
    log_like -= log_like.max(axis=1, keepdims=True)
    return cast(np.ndarray, np.maximum(np.exp(log_like), 1e-300))


def defect_p_values(x: np.ndarray, se: np.ndarray, defect: tuple[str, float], noise: Noise) -> np.ndarray:
    """Each pair's p value against "no defect", at the defect's boundary (the least favourable good
    pair): for ``("beyond", m)`` the chance that a pair whose true gap is +-m lies as far out; for
    ``("at_most", c)`` that a pair whose true effect is c lies as low. Valid for any distribution of
    the pairs' effects, under the noise model."""
    from analysis.lazy import stats

    def tail(z: np.ndarray) -> np.ndarray:
        if np.isfinite(noise.df):
            return np.asarray(stats.t.sf(z / noise.spread, noise.df))
        return np.asarray(stats.norm.sf(z))

    kind, bound = defect
    if kind == "beyond":
        far = np.abs(x)
        p = tail((far - bound) / se) + tail((far + bound) / se)
    else:
        p = tail((bound - x) / se)
    return np.clip(p, 0.0, 1.0)


@dataclass(frozen=True)
class Noise:
    """Each annotator's judgment-noise variance and the noise's degrees of freedom (inf: normal)."""

    variance: np.ndarray
    df: float
    spread: float = 1.0


_PRIOR_JUDGMENTS = 20  # an annotator's own noise variance is shrunk toward the pooled one as if
#                        the pooled one came from this many judgments
_MAX_DF = 30.0  # noise with more degrees of freedom than this is taken as normal
_MIN_DF = 2.5  # the heaviest tails modelled (a variance must exist)
_FIT_SAMPLE = 5_000  # residuals the tails are fitted on


def annotator_noise(y: np.ndarray, pair_codes: np.ndarray, ann_codes: np.ndarray, pooled: float) -> Noise:
    """Each annotator's noise variance and the noise's tails, from the pairs rated more than once.

    A residual from its pair's mean has expectation ``s_j^2 ((k-1)/k)^2 + S_-j / k^2`` (``S_-j`` the
    other judgments' variances): solved for every ``s_j^2`` by fixed-point iteration, each shrunk
    toward `pooled` (the crossed fit's residual variance). The tails: Student's t fitted by maximum
    likelihood to the standardized residuals; more than 30 degrees of freedom is taken as normal.
    """
    n_ann = int(ann_codes.max()) + 1 if len(ann_codes) else 0
    k = np.bincount(pair_codes).astype(float)
    kj = k[pair_codes]
    rep = kj >= 2
    variance = np.full(n_ann, pooled)
    if not rep.any() or not pooled > 0:  # no pair rated twice, or no noise: no tails to fit
        return Noise(variance, np.inf)
    r = y - (np.bincount(pair_codes, weights=y) / k)[pair_codes]
    own = ((kj - 1.0) / kj) ** 2
    counts = np.bincount(ann_codes[rep], minlength=n_ann).astype(float)
    for _ in range(20):
        pair_total = np.bincount(pair_codes, weights=variance[ann_codes])[pair_codes]
        others = (pair_total - variance[ann_codes]) / kj**2
        num = np.bincount(ann_codes[rep], weights=(r * r - others)[rep], minlength=n_ann)
        den = np.bincount(ann_codes[rep], weights=own[rep], minlength=n_ann)
        raw = np.where(den > 0, num / np.maximum(den, 1e-12), pooled)
        new = (counts * np.maximum(raw, 0.1 * pooled) + _PRIOR_JUDGMENTS * pooled) / (
            counts + _PRIOR_JUDGMENTS
        )
        if float(np.abs(new - variance).max()) < 1e-6 * pooled:
            variance = new
            break
        variance = new
    pair_total = np.bincount(pair_codes, weights=variance[ann_codes])[pair_codes]
    own_var = variance[ann_codes]
    expected = own_var[rep] * own[rep] + (pair_total - own_var)[rep] / kj[rep] ** 2
    z = r[rep] / np.sqrt(expected)
    return Noise(variance, *_tails(z))


def _tails(z: np.ndarray) -> tuple[float, float]:
    """Degrees of freedom and scale of Student's t fitted to standardized residuals (inf: normal)."""
    if len(z) < 30 or not np.isfinite(z).all() or float(np.ptp(z)) == 0.0:
        return np.inf, 1.0
    if len(z) > _FIT_SAMPLE:
        z = np.random.default_rng(0).choice(z, _FIT_SAMPLE, replace=False)
    df, scale = t_fit(z)
    if not np.isfinite(df) or df > _MAX_DF:
        return np.inf, 1.0
    return max(df, _MIN_DF), scale


def t_fit(z: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood degrees of freedom and scale of Student's t centred at 0 (what
    ``scipy.stats.t.fit(z, floc=0)`` finds; here with the analytic gradient, ten times faster)."""
    from analysis.lazy import optimize, special

    z2 = np.asarray(z, dtype=float) ** 2
    n = len(z2)

    def loss(x: np.ndarray) -> tuple[float, np.ndarray]:
        nu, s2 = float(np.exp(x[0])), float(np.exp(2 * x[1]))
        u = z2 / (nu * s2)
        log1p, share = np.log1p(u), u / (1 + u)
        ll = n * (special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - x[1])
        ll -= (nu + 1) / 2 * log1p.sum()
        d_nu = n * (special.digamma((nu + 1) / 2) - special.digamma(nu / 2) - 1 / nu) / 2
        d_nu += -0.5 * log1p.sum() + (nu + 1) / (2 * nu) * share.sum()
        d_log_s = -n + (nu + 1) * share.sum()
        return -float(ll), -np.array([d_nu * nu, d_log_s])

    start = np.array([np.log(5.0), 0.5 * np.log(z2.mean() * 0.6)])
    bounds = [(np.log(0.05), np.log(1e4)), (np.log(1e-4), np.log(1e4))]  # mostly-zero z: scale at its floor
    found = optimize.minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds)
    return float(np.exp(found.x[0])), float(np.exp(found.x[1]))


@dataclass(frozen=True)
class ItemEvidence:
    """Per pair of one item: the raw mean, the shrunken estimate, its posterior SD, the posterior
    probability of the item's defect and of a clear defect (past the boundary by more than a pair
    mean's standard error), and the p value at the boundary; ``method`` says how (EB over pairs, or
    raw when too few)."""

    item: str
    table: pd.DataFrame  # pair_id, n, mean, shrunken, posterior_sd, p_defect, p_clear, p_value
    method: str


def item_evidence(
    differences: pd.DataFrame,
    *,
    item: str,
    residual_var: float,
    annotator_var: float,
    pair_var: float,
    defect: tuple[str, float],
    score: str = "diff",
) -> ItemEvidence:
    """The empirical-Bayes evidence of one item.

    Parameters
    ----------
    differences : pandas.DataFrame
        One row per judgment with ``pair_id``, ``annotator`` and the column `score`.
    item : str
        The item's name.
    residual_var, annotator_var, pair_var : float
        Variance components of the crossed fit of `score`.
    defect : tuple
        ``("beyond", m)``: the defect is ``|g| > m``; ``("at_most", c)``: the defect is ``g <= c``.
    score : str, default "diff"
        The column holding each judgment's score.

    Returns
    -------
    ItemEvidence
    """
    y = differences[score].to_numpy(dtype=float)
    pair_codes, pair_ids = pd.factorize(differences[PAIR_ID])
    ann_codes, _ = pd.factorize(differences[ANNOTATOR])
    mu = float(y.mean())
    n_a = np.bincount(ann_codes).astype(float)
    s2 = max(float(residual_var), 1e-6)
    if annotator_var > 0:
        shrink = annotator_var / (annotator_var + (s2 + max(pair_var, 0.0)) / n_a)
        a_hat = shrink * (np.bincount(ann_codes, weights=y) / n_a - mu)
        y = y - a_hat[ann_codes]
    k = np.bincount(pair_codes).astype(float)
    noise = annotator_noise(y, pair_codes, ann_codes, s2)
    x = np.bincount(pair_codes, weights=y) / k
    se = np.sqrt(np.bincount(pair_codes, weights=noise.variance[ann_codes])) / k
    kind, bound = defect
    if len(x) >= _MIN_PAIRS:
        span = max(float(x.max() - x.min()), 1e-6)
        edges = [-bound, bound] if kind == "beyond" else [bound]
        grid = np.unique(
            np.concatenate(
                [np.linspace(x.min() - 0.05 * span, x.max() + 0.05 * span, _GRID), [0.0, mu], edges]
            )
        )
        if np.isfinite(noise.df):  # heavy tails: each judgment's own t density (one outlier is one)
            like = _judgment_likelihood(y, pair_codes, np.sqrt(noise.variance[ann_codes]), grid, noise)
            counts, row = np.ones(len(x)), np.arange(len(x))
        else:
            (x_u, se_u), counts, row = _distinct(x, se)
            like = _likelihood(x_u, se_u, grid)
        post = like * _em_weights(like, counts)
        post /= post.sum(axis=1, keepdims=True)
        mean_u = post @ grid
        sd_u = np.sqrt(np.maximum(post @ grid**2 - mean_u**2, 0.0))
        hit = np.abs(grid) > bound + 1e-9 if kind == "beyond" else grid <= bound + 1e-9
        shrunken, sd, p = mean_u[row], sd_u[row], (post @ hit.astype(float))[row]
        buffer = float(np.median(se))  # the data's resolution: a typical pair mean's standard error
        clear = np.abs(grid) > bound + buffer if kind == "beyond" else grid <= bound - buffer
        p_clear = (post @ clear.astype(float))[row]
        method = f"empirical Bayes over {len(x)} pairs (NPMLE of the effects on a {len(grid)}-point grid)"
    else:
        shrunken, sd = x, se
        p = (
            (np.abs(x) > bound + 1e-9).astype(float)
            if kind == "beyond"
            else (x <= bound + 1e-9).astype(float)
        )
        p_clear = p
        method = f"raw pair means (fewer than {_MIN_PAIRS} pairs: no distribution of effects to shrink to)"
    table = pd.DataFrame(
        {PAIR_ID: np.asarray(pair_ids), "n": k.astype(int), "mean": x, "shrunken": shrunken,
         "posterior_sd": sd, "p_defect": np.clip(p, 0.0, 1.0), "p_clear": np.clip(p_clear, 0.0, 1.0),
         "p_value": defect_p_values(x, se, defect, noise)}
    )  # fmt: skip
    return ItemEvidence(item, table, method)


def cleaning_list(
    evidence: Mapping[str, ItemEvidence],
    *,
    defects: Sequence[str],
    fdr: float = DEFAULTS.fdr,
    margin: float = DEFAULTS.margin,
    watch: Sequence[str] = (),
    margins: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Combine per-item evidence into the cleaning list.

    Parameters
    ----------
    evidence : mapping
        Per item its :class:`ItemEvidence` (quality dimensions, ``rubric``, ``preference``).
    defects : sequence of str
        The items whose defect makes a pair broken (quality dimensions and the rubric); the others
        (the preference) are shown, not decided on.
    fdr : float, default 0.1
        The false discovery rate of "pairs to drop", and the largest probability of being broken of a
        kept pair.
    margin : float
        The equivalence margin (for the wording).
    margins : mapping of str to float, optional
        A quality dimension's own margin (for the wording), where it differs from `margin`.
    watch : sequence of str
        Items whose own defect probability above `fdr` keeps a pair from "keep" (it then needs more
        judgments) without entering the drop decision: the quality dimensions, so a defect on one of
        them that the mean over dimensions dilutes is not kept unseen.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``pair_id, n_judgments, decision, p_broken, q_value, q_any, reason,
        evidence`` and per item ``shrunken_<item>``, ``p_<item>``; sorted by decision (drop, needs
        more judgments, keep) then by ``p_broken`` descending.
    """
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be in (0, 1), got {fdr!r}")
    table: pd.DataFrame | None = None
    for item, ev in evidence.items():
        part = ev.table.set_index(PAIR_ID)[
            ["n", "mean", "shrunken", "p_defect", "p_value", "p_clear"]
        ].rename(
            columns={
                "p_clear": f"pc_{item}",
                "p_value": f"pv_{item}",
                "n": f"n_{item}",
                "mean": f"mean_{item}",
                "shrunken": f"shrunken_{item}",
                "p_defect": f"p_{item}",
            }
        )
        table = part if table is None else table.join(part, how="outer")
    if table is None:
        return pd.DataFrame(
            columns=[PAIR_ID, "n_judgments", "decision", "p_broken", "q_value", "q_any", "reason", "evidence"]
        )
    present = [d for d in defects if f"p_{d}" in table.columns]
    probs = table[[f"p_{d}" for d in present]].fillna(0.0)
    table["p_broken"] = probs.max(axis=1) if present else 0.0
    table["n_judgments"] = table[[c for c in table.columns if c.startswith("n_")]].max(axis=1).astype(int)
    replicated = table["n_judgments"].to_numpy() >= MIN_JUDGMENTS_TO_DROP
    q = np.full(len(table), np.nan)
    clear = (
        table[[f"pc_{d}" for d in present]].fillna(0.0).max(axis=1).to_numpy()
        if present
        else np.zeros(len(table))
    )
    q[replicated] = bayesian_q_values(clear[replicated])
    table["q_value"] = q
    drop = replicated & (np.nan_to_num(q, nan=np.inf) <= fdr + 1e-12)
    table["q_any"] = _q_any(table, present, replicated)
    watched = [w for w in watch if f"p_{w}" in table.columns]
    watch_max = table[[f"p_{w}" for w in watched]].fillna(0.0).max(axis=1).to_numpy() if watched else 0.0
    keep = ~drop & (table["p_broken"].to_numpy() <= fdr) & (watch_max <= fdr)
    table["decision"] = np.where(drop, DROP, np.where(keep, KEEP, NEEDS_MORE))
    any_gaps = drops_for_any_gaps(table, fdr).tolist()
    column = {c: table[c].tolist() for c in table.columns}  # plain lists: per-pair words without pandas
    reasons = []
    for i, (p_broken, decision) in enumerate(zip(column["p_broken"], column["decision"], strict=True)):
        if decision == KEEP:  # a kept pair has no reason
            reasons.append("")
            continue
        top = [d for d in present if column[f"p_{d}"][i] >= max(p_broken, 1e-12) * 0.999]
        top = [d for d in top if p_broken > fdr]
        what = [
            "rubric not higher for chosen"
            if d == "rubric"
            else f"mean {d} gap beyond +-{(margins or {}).get(d, margin):g}"
            for d in top
        ]
        if decision != DROP:
            what += [
                f"{w} gap possibly beyond +-{(margins or {}).get(w, margin):g} (P {column[f'p_{w}'][i]:.2f})"
                for w in watched
                if column[f"p_{w}"][i] > fdr
            ]
        if any_gaps[i]:
            what.append(f"shown for any distribution of pair gaps (q {column['q_any'][i]:.2f})")
        reasons.append("; ".join(what))
    parts = [[f"{int(n)} judgments"] for n in column["n_judgments"]]
    for item in evidence:
        means = _formatted(column[f"mean_{item}"], "+.2f")
        shrunken = _formatted(column[f"shrunken_{item}"], "+.2f")
        for words, mean, shrunk in zip(parts, means, shrunken, strict=True):
            if mean is not None:
                words.append(f"{item} {mean} (shrunken {shrunk})")
    closing = zip(_formatted(column["p_broken"], ".2f"), _formatted(column["q_value"], ".2f"), strict=True)
    words = [
        "; ".join([*kept, f"P(broken) {p_text}, q {q_text or 'none (one judgment: never dropped)'}"])
        for kept, (p_text, q_text) in zip(parts, closing, strict=True)
    ]
    table["reason"] = reasons
    table["evidence"] = words
    rank = table["decision"].map({d: i for i, d in enumerate(DECISIONS)})
    table = table.assign(_rank=rank).sort_values(
        ["_rank", "p_broken"], ascending=[True, False], kind="stable"
    )
    cols = [PAIR_ID, "n_judgments", "decision", "p_broken", "q_value", "q_any", "reason", "evidence"]
    cols += [c for c in table.columns if c.startswith(("shrunken_", "p_")) and c != "p_broken"]
    return table.reset_index()[cols]


def drops_for_any_gaps(cleaning: pd.DataFrame, fdr: float) -> pd.Series:
    """Which pairs of a cleaning list are dropped at `fdr` for any distribution of pair gaps
    (``q_any`` at most `fdr`)."""
    return (cleaning["decision"] == DROP) & (cleaning["q_any"] <= fdr + 1e-12)


def _q_any(table: pd.DataFrame, defects: Sequence[str], replicated: np.ndarray) -> np.ndarray:
    """Each pair's Benjamini-Hochberg q value from its p values at the defects' boundaries (the
    smallest, times the number of defects), among the pairs with at least two judgments: "drop" at
    this q controls the false discovery rate for any distribution of the pairs' effects."""
    from analysis.lazy import stats

    q = np.full(len(table), np.nan)
    columns = [f"pv_{d}" for d in defects if f"pv_{d}" in table.columns]
    if not columns or not replicated.any():
        return q
    p = np.minimum(table[columns].min(axis=1).fillna(1.0).to_numpy() * len(columns), 1.0)
    q[replicated] = stats.false_discovery_control(p[replicated], method="bh")
    return q


def bayesian_q_values(p_defect: np.ndarray) -> np.ndarray:
    """Each pair's q-value: the smallest mean posterior probability of being good over the sets of
    pairs with the largest ``p_defect`` that contain it (Newton et al. 2004). Pairs with the same
    probability are in or out together (a threshold cannot part them), so they share their q-value
    whatever order they came in.

    >>> bayesian_q_values(np.array([0.8, 1.0, 0.8, 0.1])).round(3).tolist()
    [0.133, 0.0, 0.133, 0.325]
    """
    good = 1.0 - np.asarray(p_defect, dtype=float)
    order = np.argsort(good, kind="stable")
    ranked = good[order]
    running = np.cumsum(ranked) / np.arange(1, len(ranked) + 1)
    last_of_tie = np.searchsorted(ranked, ranked, side="right") - 1
    q_sorted = np.minimum.accumulate(running[last_of_tie][::-1])[::-1]
    q = np.empty(len(good))
    q[order] = q_sorted
    return q


def _formatted(values: list[float], spec: str) -> list[str | None]:
    """Each value in format `spec` (None for a missing one), formatted once per distinct value: pair
    means and their posteriors repeat across pairs."""
    cache = {v: format(v, spec) for v in set(values) if v == v}
    return [cache.get(v) if v == v else None for v in values]


Components = tuple[float, float, float]  # pair, annotator and residual variance of a crossed fit


QUALITY = "quality"  # the composite item: the mean gap over the quality dimensions


def _components(data: pd.DataFrame, score: str) -> Components:
    from analysis.mixed import fit_crossed

    y = data[score].to_numpy(dtype=float)
    if len(y) < 3 or float(np.ptp(y)) == 0.0 or data[PAIR_ID].nunique() < 2:
        return 0.0, 0.0, 0.0
    fit = fit_crossed(y, np.ones((len(y), 1)), data[PAIR_ID].to_numpy(), data[ANNOTATOR].to_numpy())
    return fit.pair_var, fit.annotator_var, fit.residual_var


def study_cleaning(
    differences: Mapping[str, pd.DataFrame],
    components: Mapping[str, Components],
    preference: pd.DataFrame,
    preference_components: Components,
    *,
    quality_items: Sequence[str],
    margin: float,
    fdr: float = DEFAULTS.fdr,
    margins: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """The cleaning list of a study from its per-judgment differences and crossed-fit components.

    `differences` holds :func:`analysis.aggregates.judgment_differences` per quality dimension (and
    ``"rubric"`` when rated), `components` their ``(pair_var, annotator_var, residual_var)``;
    `preference` has ``pair_id, annotator, score`` (preference score - 0.5). A pair is broken when
    its mean gap over the quality dimensions (item ``"quality"``, fitted here) lies beyond the margin
    or its rubric effect is not positive; each dimension's shrunken gap is shown. With `margins` (each
    dimension's own margin, dimensions on different scales) a dimension's gaps enter the mean in points
    of `margin` (:func:`analysis.scale.to_study_points`) and its own evidence uses its margin. One
    posterior per defect, not one per dimension: the largest of three noisy posteriors of the same gap
    is not a probability, and dropped good pairs three times as often in the Monte Carlo check. Returns
    :func:`cleaning_list`.
    """
    evidence: dict[str, ItemEvidence] = {}
    defects = []
    present = [item for item in quality_items if item in differences]
    if present:
        long = pd.concat(
            [
                differences[item][[PAIR_ID, ANNOTATOR, "diff"]].assign(
                    diff=differences[item]["diff"] * to_study_points(margin, margins, item)
                )
                if margins
                else differences[item][[PAIR_ID, ANNOTATOR, "diff"]]
                for item in present
            ]
        )
        composite = long.groupby([PAIR_ID, ANNOTATOR], sort=True)["diff"].mean().reset_index()
        c_pair, c_ann, c_res = _components(composite, "diff")
        evidence[QUALITY] = item_evidence(
            composite, item=QUALITY, residual_var=c_res, annotator_var=c_ann, pair_var=c_pair,
            defect=("beyond", margin),
        )  # fmt: skip
        defects.append(QUALITY)
    for item, d in differences.items():
        pair_var, annotator_var, residual_var = (v if np.isfinite(v) else 0.0 for v in components[item])
        rubric = item == RUBRIC_ITEM
        evidence[item] = item_evidence(
            d,
            item=item,
            residual_var=residual_var,
            annotator_var=annotator_var,
            pair_var=pair_var,
            defect=("at_most", 0.0) if rubric else ("beyond", (margins or {}).get(item, margin)),
        )
        if rubric:
            defects.append(item)
    pair_var, annotator_var, residual_var = (v if np.isfinite(v) else 0.0 for v in preference_components)
    evidence["preference"] = item_evidence(
        preference,
        item="preference",
        residual_var=residual_var,
        annotator_var=annotator_var,
        pair_var=pair_var,
        defect=("at_most", 0.0),
        score="score",
    )
    return cleaning_list(evidence, defects=defects, fdr=fdr, margin=margin, watch=present, margins=margins)


def frame_cleaning(
    frame: pd.DataFrame,
    *,
    quality_items: Sequence[str],
    margin: float,
    fdr: float = DEFAULTS.fdr,
    margins: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """The cleaning list of a label frame of main pairs (fits the crossed models itself).

    Empty with fewer than 10 pairs (no distribution of effects to estimate); the report computes the
    same list from the fits it already has (:func:`study_cleaning`).
    """
    if frame.empty or frame[PAIR_ID].nunique() < _MIN_PAIRS:
        return pd.DataFrame()

    items = list(quality_items)
    if (frame["item"] == RUBRIC_ITEM).any() or frame["item"].str.startswith(RUBRIC_PREFIX).any():
        items.append(RUBRIC_ITEM)
    differences, comps = {}, {}
    for item in items:
        try:
            d = judgment_differences(frame, item)
        except ValueError:
            continue
        if not d.empty:  # some judgment scored both responses
            differences[item], comps[item] = d, _components(d, "diff")
    per_judgment = judgments(frame)
    pref = per_judgment[PREFERENCE].to_numpy(dtype=float)
    scores = per_judgment[[PAIR_ID, ANNOTATOR]].assign(
        score=np.where(pref > 0, 0.5, np.where(pref < 0, -0.5, 0.0))
    )
    return study_cleaning(
        differences,
        comps,
        scores,
        _components(scores, "score"),
        quality_items=quality_items,
        margin=margin,
        fdr=fdr,
        margins=margins,
    )


def pairs_needing_more(cleaning: pd.DataFrame) -> list[str]:
    """The pairs whose evidence the cleaning list cannot settle yet ("needs more judgments")."""
    if cleaning.empty:
        return []
    return [str(pair) for pair in cleaning.loc[cleaning["decision"] == NEEDS_MORE, PAIR_ID]]
