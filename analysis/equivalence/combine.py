"""Combining tests: the intersection-union verdict over equivalence tests, Holm's step-down
adjustment over superiority tests."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from analysis.equivalence.checks import TestResult


class _HasVerdict(Protocol):
    @property
    def pvalue(self) -> float: ...

    @property
    def equivalent(self) -> bool: ...


@dataclass(frozen=True)
class IutResult(TestResult):
    """Intersection-union verdict over several equivalence tests."""

    equivalent: bool
    pvalue: float
    n_tests: int
    n_equivalent: int


def intersection_union(results: Sequence[_HasVerdict] | Mapping[str, _HasVerdict]) -> IutResult:
    """Combine equivalence tests by the intersection-union principle.

    The combined claim "equivalent on every dimension" holds only if every test is equivalent; the
    combined p-value is the largest individual p-value. Because the global null is the *union* of the
    individual nulls, the test has level alpha without any multiplicity correction (Berger 1982;
    Berger & Hsu 1996), so no Bonferroni/Holm adjustment is applied.

    Parameters
    ----------
    results : sequence or mapping of results
        Objects with ``pvalue`` and ``equivalent`` (e.g. :class:`TostResult`).

    Returns
    -------
    IutResult

    References
    ----------
    Berger, R. L. (1982). Multiparameter hypothesis testing and acceptance sampling.
    Technometrics 24(4), 295-300.

    Examples
    --------
    >>> from analysis.equivalence import tost_paired
    >>> a = tost_paired([1, 2, 3, 4], [1, 2, 3, 4.5], low=-1, high=1)
    >>> b = tost_paired([1, 2, 3, 4], [3, 4, 5, 6.5], low=-1, high=1)
    >>> res = intersection_union([a, b])
    >>> res.equivalent, res.pvalue == max(a.pvalue, b.pvalue)
    (False, True)
    """
    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    if not items:
        raise ValueError("intersection_union needs at least one result")
    n_eq = sum(bool(r.equivalent) for r in items)
    return IutResult(
        equivalent=n_eq == len(items),
        pvalue=float(max(1.0 if math.isnan(float(r.pvalue)) else float(r.pvalue) for r in items)),
        n_tests=len(items),
        n_equivalent=n_eq,
    )


def holm(pvalues: Sequence[float] | Mapping[str, float], *, alpha: float = 0.05) -> pd.DataFrame:
    """Holm step-down adjustment for a family of (superiority) tests.

    Parameters
    ----------
    pvalues : sequence of float or mapping name -> float
        The unadjusted p-values.
    alpha : float, default 0.05
        Family-wise error rate.

    Returns
    -------
    pandas.DataFrame
        Columns ``test, pvalue, p_adjusted, reject`` in input order (``test`` is the mapping key or
        the position as a string); the same numbers as statsmodels ``multipletests(method="holm")``.

    Examples
    --------
    >>> holm({"rubric": 0.01, "preference": 0.04})["p_adjusted"].round(2).tolist()
    [0.02, 0.04]
    """
    if isinstance(pvalues, Mapping):
        names = [str(k) for k in pvalues]
        values = np.asarray(list(pvalues.values()), dtype=float)
    else:
        values = np.asarray(list(pvalues), dtype=float)
        names = [str(i) for i in range(len(values))]
    if values.size == 0:
        return pd.DataFrame({"test": [], "pvalue": [], "p_adjusted": [], "reject": []})
    if np.any(np.isnan(values)) or np.any((values < 0) | (values > 1)):
        raise ValueError("p-values must be in [0, 1] and not missing")
    # Holm (1979) step-down: sorted p_(i) times (m - i), running maximum, capped at 1 (the same
    # numbers as statsmodels multipletests(method="holm"), which costs a gc.collect() per call)
    m = values.size
    order = np.argsort(values, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * values[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    reject = adjusted <= alpha
    return pd.DataFrame({"test": names, "pvalue": values, "p_adjusted": adjusted, "reject": reject})
