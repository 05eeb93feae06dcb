"""Latent-truth models of crowd labels, fitted with numpy on integer-coded (task, worker, label) rows.

- :func:`dawid_skene`: Dawid & Skene (1979), one confusion matrix per worker, fitted by EM.
- :func:`mace`: MACE (Hovy et al. 2013), each worker either knows the true label or answers from a
  spamming strategy; fitted by variational Bayes.
- :func:`encode`: a (task, worker, label) frame as the integer codes both models take.

Both reproduce the fitting conventions of crowd-kit 1.4.2 (``DawidSkene`` and ``MACE(method="vb")``):
the same initialisation, update order, stopping rule, priors and clipping, so that on the same data
they give the same numbers (``tests/test_crowd_models.py``). Every step is a grouped sum over the rows
(``np.bincount``), so an iteration costs O(rows x labels) with no pandas in the loop.

One deliberate difference: crowd-kit's MACE builds each worker's spamming-strategy counts in sorted
(worker, label) order but reads them in order of first appearance, so when the two orders differ it
updates one worker's strategy from another worker's counts. Here the counts stay with their worker;
the two agree when workers and labels first appear in sorted order.

References
----------
Dawid, A. P., Skene, A. M. (1979). Maximum likelihood estimation of observer error-rates using the
EM algorithm. J. R. Stat. Soc. C 28(1), 20-28.
Hovy, D., Berg-Kirkpatrick, T., Vaswani, A., Hovy, E. (2013). Learning whom to trust with MACE.
Proceedings of NAACL-HLT, 1120-1130.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import digamma

__all__ = ["Coded", "DawidSkeneFit", "MaceFit", "dawid_skene", "encode", "mace"]

#: The floor crowd-kit puts under probabilities before taking their logarithm.
EPS = 1e-10

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True)
class Coded:
    """Rows as codes: ``tasks[i]``, ``workers[i]``, ``labels[i]`` index the ``*_names``."""

    tasks: IntArray
    workers: IntArray
    labels: IntArray
    task_names: pd.Index
    worker_names: pd.Index
    label_names: pd.Index


def encode(frame: pd.DataFrame) -> Coded:
    """The ``task``, ``worker`` and ``label`` columns as codes; rows with a missing value are dropped.

    Workers and labels are coded in sorted order, so a fit does not depend on the order of the rows
    (MACE's random start is drawn per worker code); tasks in order of first appearance.
    """
    rows = frame[["task", "worker", "label"]].dropna()
    tasks, task_names = pd.factorize(rows["task"])
    workers, worker_names = pd.factorize(rows["worker"], sort=True)
    labels, label_names = pd.factorize(rows["label"], sort=True)
    return Coded(
        tasks.astype(np.intp),
        workers.astype(np.intp),
        labels.astype(np.intp),
        pd.Index(task_names),
        pd.Index(worker_names),
        pd.Index(label_names),
    )


@dataclass(frozen=True)
class _Rows:
    """Validated codes and the sizes of the three axes."""

    tasks: IntArray
    workers: IntArray
    labels: IntArray
    n_tasks: int
    n_workers: int
    n_labels: int

    @property
    def cells(self) -> IntArray:
        """Each row's (worker, label) cell, ``worker * n_labels + label``."""
        return self.workers * self.n_labels + self.labels


def _rows(tasks: ArrayLike, workers: ArrayLike, labels: ArrayLike) -> _Rows:
    """The codes checked: equally long, not empty, and each axis coded 0..n-1 with every code used
    (as :func:`encode` or ``pd.factorize`` gives them; crowd-kit, too, knows only the labels given)."""
    codes = [np.asarray(a, dtype=np.intp).ravel() for a in (tasks, workers, labels)]
    if len({len(c) for c in codes}) != 1 or len(codes[0]) == 0:
        raise ValueError("tasks, workers and labels must be equally long and not empty")
    if min(int(c.min()) for c in codes) < 0:
        raise ValueError("codes must be non-negative")
    for name, c in zip(("task", "worker", "label"), codes, strict=True):
        if np.bincount(c).min() == 0:
            raise ValueError(f"every {name} code from 0 to the largest must occur")
    t, w, k = codes
    return _Rows(t, w, k, int(t.max()) + 1, int(w.max()) + 1, int(k.max()) + 1)


def _sums(index: IntArray, weights: FloatArray, n: int) -> FloatArray:
    """Sum of `weights` by `index` (0..n-1)."""
    return np.bincount(index, weights=weights, minlength=n).astype(np.float64, copy=False)


def _group_sum(index: IntArray, values: FloatArray, n: int) -> FloatArray:
    """Sum of the rows of `values` (rows x columns) by `index`, as an (n x columns) array."""
    width = values.shape[1]
    flat = (index[:, None] * width + np.arange(width)).ravel()
    return _sums(flat, values.ravel(), n * width).reshape(n, width)


def _softmax_rows(log_values: FloatArray) -> FloatArray:
    scaled = np.exp(log_values - log_values.max(axis=1, keepdims=True))
    return scaled / scaled.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class DawidSkeneFit:
    """A fitted Dawid-Skene model.

    ``priors[k]``: the share of tasks whose true label is k. ``errors[w, l, k]``: the probability that
    worker w answers l when the truth is k (0 on a label w never gave, as crowd-kit leaves that row
    out). ``probas[t, k]``: the posterior of task t's true label. ``elbo``: the evidence lower bound
    per row after each iteration (crowd-kit's ``loss_history_``).
    """

    priors: FloatArray
    errors: FloatArray
    probas: FloatArray
    elbo: tuple[float, ...]

    @property
    def accuracy(self) -> FloatArray:
        """Per worker, the probability of giving the true label: sum_k priors[k] * errors[w, k, k]."""
        return np.einsum("k,wkk->w", self.priors, self.errors)


def _majority_probas(rows: _Rows) -> FloatArray:
    """Each task's share of votes per label (crowd-kit's ``MajorityVote`` probabilities)."""
    votes = np.bincount(rows.tasks * rows.n_labels + rows.labels, minlength=rows.n_tasks * rows.n_labels)
    votes = votes.reshape(rows.n_tasks, rows.n_labels).astype(float)
    return votes / votes.sum(axis=1, keepdims=True)


def _ds_m_step(rows: _Rows, probas: FloatArray, given: NDArray[np.bool_]) -> FloatArray:
    """Confusion matrices from the posteriors: expected counts of (answer, truth) per worker, floored
    at EPS on the labels the worker gave, normalised over those labels for each truth."""
    counts = _group_sum(rows.cells, probas[rows.tasks], rows.n_workers * rows.n_labels)
    counts = np.where(given[:, None], np.maximum(counts, EPS), 0.0)
    counts = counts.reshape(rows.n_workers, rows.n_labels, rows.n_labels)
    return counts / counts.sum(axis=1, keepdims=True)


def _log_errors(errors: FloatArray, given: NDArray[np.bool_]) -> FloatArray:
    """log errors as one row per (worker, answer) cell; 0 on cells no row uses."""
    flat = errors.reshape(-1, errors.shape[2])
    return np.log(np.where(given[:, None], flat, 1.0))


def _ds_e_step(rows: _Rows, priors: FloatArray, log_errors: FloatArray) -> FloatArray:
    """Posteriors of the true labels: log prior (floored at EPS) plus each answer's log likelihood."""
    log_like = _group_sum(rows.tasks, log_errors[rows.cells], rows.n_tasks)
    return _softmax_rows(log_like + np.log(np.maximum(priors, EPS)))


def _ds_elbo(rows: _Rows, probas: FloatArray, priors: FloatArray, log_errors: FloatArray) -> float:
    """Expected complete-data log likelihood plus the posterior's entropy (probabilities floored at
    EPS inside the entropy, as crowd-kit does)."""
    joint = log_errors[rows.cells] + np.log(np.maximum(priors, EPS))
    expectation = float(np.sum(probas[rows.tasks] * joint))
    floored = np.maximum(probas, EPS)
    return expectation - float(np.sum(floored * np.log(floored)))


def dawid_skene(
    tasks: ArrayLike,
    workers: ArrayLike,
    labels: ArrayLike,
    *,
    n_iter: int = 100,
    tol: float = 1e-5,
) -> DawidSkeneFit:
    """Dawid & Skene (1979) by EM, as crowd-kit's ``DawidSkene(n_iter, tol)`` fits it.

    Start: majority-vote posteriors, their mean as priors, confusion matrices from them. Each
    iteration: E-step, priors = mean posterior, M-step, then the ELBO per row; it stops after at most
    `n_iter` iterations, or once the ELBO per row grew by less than `tol`. Codes as :func:`encode`
    gives them (each axis 0..n-1, every code used).
    """
    rows = _rows(tasks, workers, labels)
    given = np.bincount(rows.cells, minlength=rows.n_workers * rows.n_labels) > 0
    probas = _majority_probas(rows)
    priors = probas.mean(axis=0)
    errors = _ds_m_step(rows, probas, given)
    history: list[float] = []
    previous = -np.inf
    for _ in range(n_iter):
        probas = _ds_e_step(rows, priors, _log_errors(errors, given))
        priors = probas.mean(axis=0)
        errors = _ds_m_step(rows, probas, given)
        elbo = _ds_elbo(rows, probas, priors, _log_errors(errors, given)) / len(rows.tasks)
        history.append(elbo)
        if elbo - previous < tol:
            break
        previous = elbo
    return DawidSkeneFit(priors, errors, probas, tuple(history))


@dataclass(frozen=True)
class MaceFit:
    """A fitted MACE model.

    ``spamming[w]``: (spamming, knowing) weights of worker w, the variational exp E[log] of the
    Bernoulli parameter (crowd-kit's ``spamming_``; they need not sum to 1). ``thetas[w, l]``: the
    same for the spamming strategy over labels. ``probas[t, k]``: the posterior of task t's true label.
    ``log_marginal_likelihood``: sum over tasks of log(P(task's labels) + 1e-8), as crowd-kit reports.
    """

    spamming: FloatArray
    thetas: FloatArray
    probas: FloatArray
    log_marginal_likelihood: float

    @property
    def competence(self) -> FloatArray:
        """Per worker, the weight of not spamming (``spamming[:, 1]``)."""
        return self.spamming[:, 1]


@dataclass(frozen=True)
class _MaceCounts:
    """What a MACE E-step hands to the M-step."""

    log_marginal_likelihood: float
    probas: FloatArray
    knowing: FloatArray  # (workers, 2): expected spamming and knowing answers
    strategy: FloatArray  # (workers, labels): expected spamming answers per label


def _mace_start(
    n_workers: int, n_labels: int, default_noise: float, seed: int
) -> tuple[FloatArray, FloatArray]:
    """crowd-kit's random start: U(1, 2 + default_noise) weights normalised per worker, the knowing
    and the strategy weights each drawn from a fresh ``RandomState(seed)``."""
    scale = 1.0 + default_noise
    spamming = np.random.RandomState(seed).uniform(0.0, 1.0, (n_workers, 2)) * scale + 1.0
    thetas = np.random.RandomState(seed).uniform(0.0, 1.0, (n_workers, n_labels)) * scale + 1.0
    return spamming / spamming.sum(axis=1, keepdims=True), thetas / thetas.sum(axis=1, keepdims=True)


def _mace_e_step(rows: _Rows, spamming: FloatArray, thetas: FloatArray) -> _MaceCounts:
    """Posteriors under a uniform prior on the truth, where an answer a has the likelihood
    spamming * theta[a] + knowing * [truth == a] (summed in logs per task), and the expected counts:
    each answer is known with probability P(truth = a) * knowing / (spamming * theta[a] + knowing)."""
    guess = spamming[rows.workers, 0] * thetas[rows.workers, rows.labels]
    knows = spamming[rows.workers, 1]
    n_cells = rows.n_tasks * rows.n_labels
    match = _sums(rows.tasks * rows.n_labels + rows.labels, np.log1p(knows / guess), n_cells)
    spam = _sums(rows.tasks, np.log(guess), rows.n_tasks)
    log_joint = spam[:, None] + match.reshape(rows.n_tasks, rows.n_labels) - np.log(rows.n_labels)
    top = log_joint.max(axis=1)
    log_marginal = np.log(np.exp(log_joint - top[:, None]).sum(axis=1)) + top
    probas = np.exp(log_joint - log_marginal[:, None])
    knowing = probas[rows.tasks, rows.labels] * knows / (guess + knows)
    per_worker = np.column_stack([_sums(rows.workers, w, rows.n_workers) for w in (1.0 - knowing, knowing)])
    strategy = _sums(rows.cells, 1.0 - knowing, rows.n_workers * rows.n_labels)
    return _MaceCounts(
        float(np.logaddexp(log_marginal, np.log(1e-8)).sum()),
        probas,
        per_worker,
        strategy.reshape(rows.n_workers, rows.n_labels),
    )


def _variational_weights(counts: FloatArray, prior: FloatArray) -> FloatArray:
    """exp(E[log p]) under the Dirichlet posterior counts + prior, row by row."""
    posterior = counts + prior
    return np.exp(digamma(posterior) - digamma(posterior.sum(axis=1, keepdims=True)))


def mace(
    tasks: ArrayLike,
    workers: ArrayLike,
    labels: ArrayLike,
    *,
    n_iter: int = 50,
    alpha: float = 0.5,
    beta: float = 0.5,
    strategy_prior: float = 10.0,
    default_noise: float = 0.5,
    random_state: int = 0,
) -> MaceFit:
    """MACE (Hovy et al. 2013) by variational Bayes, as crowd-kit's ``MACE(method="vb",
    n_restarts=1)`` fits it: Beta(alpha, beta) on (spamming, knowing), a symmetric Dirichlet with
    `strategy_prior` on each strategy, a uniform prior on the truth.

    From crowd-kit's random start (:func:`_mace_start`), an E-step, then `n_iter` times a variational
    M-step followed by an E-step; no convergence test. Codes as in :func:`dawid_skene`.
    """
    if min(alpha, beta, strategy_prior) <= 0:
        raise ValueError("alpha, beta and strategy_prior must be positive")
    rows = _rows(tasks, workers, labels)
    spamming, thetas = _mace_start(rows.n_workers, rows.n_labels, default_noise, random_state)
    counts = _mace_e_step(rows, spamming, thetas)
    knowing_prior = np.array([alpha, beta])
    for _ in range(n_iter):
        spamming = _variational_weights(counts.knowing, knowing_prior)
        thetas = _variational_weights(counts.strategy, np.full(rows.n_labels, float(strategy_prior)))
        counts = _mace_e_step(rows, spamming, thetas)
    return MaceFit(spamming, thetas, counts.probas, counts.log_marginal_likelihood)
