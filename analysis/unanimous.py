"""Tests when every judgment scores the same: no variance to fit, and an exact bound instead.

Pairs and annotators are drawn independently and judgments are independent given both (the crossed
model's population, whatever the distributions). If every judgment of the study scored `value`, a null
population puts at most ``s`` of its judgments at `value` or beyond (Markov's inequality on the
bounded scores), and by Finner's inequality over a matching of the design (annotators each paired with
a different pair they rated) all of the study's judgments do so with probability at most
``s ** matched``: a p-value valid for any crossed model, reached when each annotator always gives the
same score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.lazy import sparse

__all__ = [
    "UNANIMOUS_METHOD",
    "distinct_matching",
    "lower_end",
    "unanimous_message",
    "unanimous_p",
    "upper_end",
]

#: The name of the test a result made by this bound carries.
UNANIMOUS_METHOD = "exact bound for unanimous judgments (any crossed model; Markov and Finner's inequalities)"


def unanimous_p(value: float, *, null: float, low: float, matched: int) -> float:
    """One-sided p of "the mean score exceeds `null`" when every judgment scored `value`, valid for
    any crossed model (pairs and annotators drawn independently, judgments independent given both).

    Under the null, a judgment scores at least `value` with probability at most
    ``s = (null - low) / (value - low)`` (Markov's inequality on scores >= `low`); by Finner's
    inequality over a matching of the design (`matched` annotators each paired with a different pair:
    :func:`distinct_matching`), all of them do so with probability at most ``s ** matched``. The bound
    is reached when each annotator always gives `value` or always `low` (s = 1/2 for a preference
    that is chosen or rejected), so unanimity shows more than this panel only with enough annotators:
    ``matched >= log(alpha) / log(s)`` (5 for s = 1/2 at alpha 0.05).

    >>> unanimous_p(0.5, null=0.0, low=-0.5, matched=3), unanimous_p(0.5, null=0.0, low=-0.5, matched=5)
    (0.125, 0.03125)
    >>> unanimous_p(0.0, null=0.0, low=-0.5, matched=9)
    1.0
    """
    if not value > null:
        return 1.0
    if not null > low:
        return 0.0
    return float(((null - low) / (value - low)) ** matched)


def distinct_matching(pairs: Any, annotators: Any) -> int:
    """The most annotators that can each be given a different pair they rated (a maximum matching of
    the design's pair x annotator graph): min(pairs, annotators) when everyone rated every pair.

    >>> distinct_matching(["p1", "p1", "p2", "p2"], ["a", "b", "a", "b"])
    2
    >>> distinct_matching(["p1", "p1"], ["a", "b"])
    1
    """
    rows, cols = pd.factorize(np.asarray(pairs))[0], pd.factorize(np.asarray(annotators))[0]
    if not len(rows):
        return 0
    graph = sparse.csr_matrix(
        (np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(int(rows.max()) + 1, int(cols.max()) + 1)
    )
    graph.sum_duplicates()
    matches = sparse.csgraph.maximum_bipartite_matching(graph, perm_type="column")
    return int((matches >= 0).sum())


def unanimous_message(what: str, matched: int) -> str:
    """The warning a result made by this bound carries (`what`: "score", "difference")."""
    return (
        f"every {what} is identical: the exact bound for unanimous judgments is used, over {matched} "
        "annotator(s) who each rated a different pair"
    )


def lower_end(value: float, *, low: float, alpha: float, matched: int) -> float:
    """The smallest null mean :func:`unanimous_p` does not reject at `alpha` ("mean > null"): the
    lower end of the interval of a unanimous `value` on a scale from `low`.

    >>> round(lower_end(0.5, low=-0.5, alpha=0.05, matched=5), 4)
    0.0493
    """
    if not value > low:
        return value
    return low + (value - low) * alpha ** (1 / matched)


def upper_end(value: float, *, high: float, alpha: float, matched: int) -> float:
    """The mirror of :func:`lower_end` for "mean < null" on a scale up to `high`."""
    return -lower_end(-value, low=-high, alpha=alpha, matched=matched)
