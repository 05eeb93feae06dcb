"""Latent-truth models of crowd labels, fitted with numpy on integer-coded (task, worker, label) rows.

- :func:`dawid_skene`: Dawid & Skene (1979), one confusion matrix per worker, fitted by EM.
- :func:`mace`: MACE (Hovy et al. 2013), each worker either knows the true label or answers from a
  spamming strategy; fitted by variational Bayes.
- :func:`encode`: a (task, worker, label) frame as the integer codes both models take.

Both reproduce the fitting conventions of crowd-kit 1.4.2 (``DawidSkene`` and ``MACE(method="vb")``):
the same initialisation, update order, stopping rule, priors and clipping, so that on the same data
they give the same numbers (``tests/test_crowd_models.py``). Both models depend on the rows only
through the sparse count matrix of task x (worker, answer) cells, so every E- and M-step is a product
with it or its transpose (``scipy.sparse``, no BLAS): O(rows x labels) per iteration, no pandas.

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
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from analysis.lazy import sparse, special

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

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
class _Cells:
    """The rows as counts: ``counts[t, c]`` answers in task t of cell c = worker * n_labels + answer."""

    counts: csr_matrix  # tasks x cells
    by_cell: csr_matrix  # its transpose
    n_workers: int
    n_labels: int
    per_task: FloatArray  # answers per task, as a column
    per_cell: FloatArray  # answers per cell
    answers: FloatArray  # cells x labels: 1 in the column of the cell's answer

    @property
    def answer(self) -> IntArray:
        """The answer of each cell."""
        return np.arange(self.n_workers * self.n_labels) % self.n_labels


def _cells(tasks: ArrayLike, workers: ArrayLike, labels: ArrayLike) -> _Cells:
    """The codes checked (equally long, not empty, each axis coded 0..n-1 with every code used, as
    :func:`encode` or ``pd.factorize`` gives them; crowd-kit, too, knows only the labels given) and
    counted by (task, cell)."""
    codes = [np.asarray(a, dtype=np.intp).ravel() for a in (tasks, workers, labels)]
    if len({len(c) for c in codes}) != 1 or len(codes[0]) == 0:
        raise ValueError("tasks, workers and labels must be equally long and not empty")
    if min(int(c.min()) for c in codes) < 0:
        raise ValueError("codes must be non-negative")
    for name, c in zip(("task", "worker", "label"), codes, strict=True):
        if np.bincount(c).min() == 0:
            raise ValueError(f"every {name} code from 0 to the largest must occur")
    t, w, k = codes
    n_tasks, n_workers, n_labels = int(t.max()) + 1, int(w.max()) + 1, int(k.max()) + 1
    counts = sparse.csr_matrix(
        (np.ones(len(t)), (t, w * n_labels + k)), shape=(n_tasks, n_workers * n_labels)
    )
    counts.sum_duplicates()
    answers = np.tile(np.eye(n_labels), (n_workers, 1))
    return _Cells(
        counts,
        counts.T.tocsr(),
        n_workers,
        n_labels,
        np.bincount(t, minlength=n_tasks).astype(np.float64)[:, None],
        np.bincount(w * n_labels + k, minlength=n_workers * n_labels).astype(np.float64),
        answers,
    )


def _softmax_rows(log_values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each row exponentiated and normalised, and the log of its normaliser."""
    top = log_values.max(axis=1)
    log_total = np.log(np.exp(log_values - top[:, None]).sum(axis=1)) + top
    return np.exp(log_values - log_total[:, None]), log_total


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
        return cast(FloatArray, np.einsum("k,wkk->w", self.priors, self.errors))


def _ds_m_step(cells: _Cells, probas: FloatArray, given: NDArray[np.bool_]) -> FloatArray:
    """Confusion matrices from the posteriors: expected counts of (answer, truth) per worker, floored
    at EPS on the labels the worker gave, normalised over those labels for each truth."""
    expected = np.where(given[:, None], np.maximum(cells.by_cell @ probas, EPS), 0.0)
    expected = expected.reshape(cells.n_workers, cells.n_labels, cells.n_labels)
    return cast(FloatArray, expected / expected.sum(axis=1, keepdims=True))


def _ds_log_likelihood(cells: _Cells, errors: FloatArray, given: NDArray[np.bool_]) -> FloatArray:
    """tasks x truths: the log likelihood of each task's answers (log errors, summed)."""
    flat = errors.reshape(-1, cells.n_labels)
    return np.asarray(cells.counts @ np.log(np.where(given[:, None], flat, 1.0)))


def _ds_elbo(cells: _Cells, probas: FloatArray, log_prior: FloatArray, log_like: FloatArray) -> float:
    """Expected complete-data log likelihood plus the posterior's entropy (probabilities floored at
    EPS inside the entropy, as crowd-kit does)."""
    expectation = float(np.sum(probas * (log_like + cells.per_task * log_prior)))
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

    Start: majority-vote posteriors (each task's share of votes per label), their mean as priors,
    confusion matrices from them. Each iteration: E-step (log prior floored at EPS plus the answers'
    log likelihood), priors = mean posterior, M-step, then the ELBO per row; it stops after at most
    `n_iter` iterations, or once the ELBO per row grew by less than `tol`. Codes as :func:`encode`
    gives them (each axis 0..n-1, every code used).
    """
    cells = _cells(tasks, workers, labels)
    given = cells.per_cell > 0
    votes = np.asarray(cells.counts @ cells.answers)
    probas = votes / votes.sum(axis=1, keepdims=True)
    priors = probas.mean(axis=0)
    errors = _ds_m_step(cells, probas, given)
    log_like = _ds_log_likelihood(cells, errors, given)
    history: list[float] = []
    previous = -np.inf
    for _ in range(n_iter):
        probas, _ = _softmax_rows(log_like + np.log(np.maximum(priors, EPS)))
        priors = probas.mean(axis=0)
        errors = _ds_m_step(cells, probas, given)
        log_like = _ds_log_likelihood(cells, errors, given)
        elbo = _ds_elbo(cells, probas, np.log(np.maximum(priors, EPS)), log_like) / cells.per_cell.sum()
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


def _mace_e_step(cells: _Cells, spamming: FloatArray, thetas: FloatArray) -> _MaceCounts:
    """Posteriors under a uniform prior on the truth, where an answer a has the likelihood
    spamming * theta[a] + knowing * [truth == a] (summed in logs per task), and the expected counts:
    each answer is known with probability P(truth = a) * knowing / (spamming * theta[a] + knowing)."""
    worker = np.arange(cells.n_workers * cells.n_labels) // cells.n_labels
    guess = spamming[worker, 0] * thetas.ravel()
    knows = spamming[worker, 1]
    per_answer = np.log(guess)[:, None] + cells.answers * np.log1p(knows / guess)[:, None]
    probas, log_marginal = _softmax_rows(np.asarray(cells.counts @ per_answer) - np.log(cells.n_labels))
    truth_is_answer = np.asarray(cells.by_cell @ probas)[np.arange(len(worker)), cells.answer]
    knowing = (truth_is_answer * knows / (guess + knows)).reshape(cells.n_workers, cells.n_labels)
    strategy = cells.per_cell.reshape(cells.n_workers, cells.n_labels) - knowing
    return _MaceCounts(
        float(np.logaddexp(log_marginal, np.log(1e-8)).sum()),
        probas,
        np.column_stack([strategy.sum(axis=1), knowing.sum(axis=1)]),
        strategy,
    )


def _variational_weights(counts: FloatArray, prior: FloatArray) -> FloatArray:
    """exp(E[log p]) under the Dirichlet posterior counts + prior, row by row."""
    posterior = counts + prior
    return cast(
        FloatArray, np.exp(special.digamma(posterior) - special.digamma(posterior.sum(axis=1, keepdims=True)))
    )


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
    cells = _cells(tasks, workers, labels)
    spamming, thetas = _mace_start(cells.n_workers, cells.n_labels, default_noise, random_state)
    counts = _mace_e_step(cells, spamming, thetas)
    knowing_prior = np.array([alpha, beta])
    for _ in range(n_iter):
        spamming = _variational_weights(counts.knowing, knowing_prior)
        thetas = _variational_weights(counts.strategy, np.full(cells.n_labels, float(strategy_prior)))
        counts = _mace_e_step(cells, spamming, thetas)
    return MaceFit(spamming, thetas, counts.probas, counts.log_marginal_likelihood)
