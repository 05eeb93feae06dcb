"""The crossed pair x annotator model of the chosen - rejected differences from sufficient statistics.

Per pair and per annotator: the count, sum and sum of squares of the differences ``d`` of one item.
They are all the moment estimates need, they are computed in one pass (``numpy.bincount`` here,
``GROUP BY`` in any SQL engine: :data:`SUMS_SQL`), and they are small (one row per pair and per
annotator), so a study that does not fit one machine's memory as a long frame still fits as sums.

Model (the same as :mod:`analysis.mixed`): ``d_ij = mu + p_i + a_j + e_ij`` with pair effects
``p_i ~ N(0, s2_pair)``, annotator effects ``a_j ~ N(0, s2_annotator)`` and noise ``e_ij ~ N(0, s2)``.
The three U-statistics of Gao and Owen (2017),

    U_pair      = sum_i [ n_i. S2_i. - S_i.^2 ]      (differences within a pair, across annotators)
    U_annotator = sum_j [ n_.j S2_.j - S_.j^2 ]      (within an annotator, across pairs)
    U_all       = N S2 - S^2                          (all judgments)

have expectations linear in the components,

    E U_pair      = (s2_annotator + s2) (sum_i n_i.^2 - N)
    E U_annotator = (s2_pair + s2) (sum_j n_.j^2 - N)
    E U_all       = s2_pair (N^2 - sum_i n_i.^2) + s2_annotator (N^2 - sum_j n_.j^2) + s2 (N^2 - N),

so the three estimates solve a 3 x 3 system: O(N) time, whatever the design's balance (REML costs
more than linear time on a crossed design in general). A negative solution is set to 0 (and the
others solved again without it). On a balanced, complete design the estimates equal the ANOVA ones,
which REML reproduces when they are positive (``tests/test_sufficient.py`` checks both against
:func:`analysis.mixed.fit_crossed`). The mean gap is the plain mean of the differences; its variance
is ``(s2_pair sum_i n_i.^2 + s2_annotator sum_j n_.j^2 + s2 N) / N^2``.

References
----------
Gao, K., Owen, A. B. (2017). Efficient moment calculations for variance components in large
unbalanced crossed random effects models. Electron. J. Statist. 11(1), 1235-1296.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from analysis.vocabulary import ANNOTATOR, CHOSEN, PAIR_ID, RESPONSE, VALUE

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SUMS_SQL", "CrossedMoments", "GroupSums", "crossed_moments", "group_sums", "parquet_sums"]

#: Per-pair and per-annotator sums of the chosen - rejected difference of each judgment on each item,
#: from a table or view ``labels`` in the long label format (pair_id, annotator, response, item, value):
#: standard SQL (DuckDB, Spark SQL, PostgreSQL, SQLite). ``side`` is "pair" or "annotator", ``unit``
#: the pair id or the annotator.
SUMS_SQL = """
WITH d AS (
    SELECT pair_id, annotator, item,
           SUM(CASE WHEN response = 'chosen' THEN value ELSE -value END) AS diff
    FROM labels
    GROUP BY pair_id, annotator, item
    HAVING COUNT(DISTINCT response) = 2
)
SELECT 'pair' AS side, item, pair_id AS unit, COUNT(*) AS n, SUM(diff) AS s, SUM(diff * diff) AS s2
FROM d GROUP BY item, pair_id
UNION ALL
SELECT 'annotator' AS side, item, annotator AS unit, COUNT(*) AS n, SUM(diff) AS s, SUM(diff * diff) AS s2
FROM d GROUP BY item, annotator
"""


@dataclass(frozen=True)
class GroupSums:
    """Count, sum and sum of squares of the differences per pair and per annotator (one item)."""

    pair_n: np.ndarray
    pair_s: np.ndarray
    pair_s2: np.ndarray
    annotator_n: np.ndarray
    annotator_s: np.ndarray
    annotator_s2: np.ndarray
    pair_units: tuple[str, ...] = ()  # the pair id of each code, when known (parquet_sums)
    annotator_units: tuple[str, ...] = ()


@dataclass(frozen=True)
class CrossedMoments:
    """Moment estimates of the crossed model: the mean gap, its standard error and the components."""

    mean: float
    se: float
    pair_var: float
    annotator_var: float
    residual_var: float
    n_obs: int
    n_pairs: int
    n_annotators: int


def group_sums(diff: np.ndarray, pair_codes: np.ndarray, annotator_codes: np.ndarray) -> GroupSums:
    """The sufficient statistics of differences `diff` whose pair and annotator are given as codes
    0..P-1 and 0..Q-1 (arrays of the same length)."""
    d = np.asarray(diff, dtype=float)
    pairs, annotators = np.asarray(pair_codes), np.asarray(annotator_codes)
    if not (len(d) == len(pairs) == len(annotators)):
        raise ValueError("diff, pair_codes and annotator_codes must have the same length")
    return GroupSums(
        pair_n=np.bincount(pairs).astype(float),
        pair_s=np.bincount(pairs, weights=d),
        pair_s2=np.bincount(pairs, weights=d * d),
        annotator_n=np.bincount(annotators).astype(float),
        annotator_s=np.bincount(annotators, weights=d),
        annotator_s2=np.bincount(annotators, weights=d * d),
    )


def crossed_moments(sums: GroupSums) -> CrossedMoments:
    """Moment estimates of the crossed pair x annotator model from its sufficient statistics.

    Raises ValueError with fewer than 2 pairs or 2 annotators, or with no judgment shared by a pair
    or an annotator (the components are then not identified)."""
    n_i, n_j = sums.pair_n[sums.pair_n > 0], sums.annotator_n[sums.annotator_n > 0]
    if len(n_i) < 2 or len(n_j) < 2:
        raise ValueError("the crossed moments need at least 2 pairs and 2 annotators")
    total_n = float(n_i.sum())
    total_s, total_s2 = float(sums.pair_s.sum()), float(sums.pair_s2.sum())
    sum_ni2, sum_nj2 = float((n_i**2).sum()), float((n_j**2).sum())
    u_pair = float((sums.pair_n * sums.pair_s2 - sums.pair_s**2).sum())
    u_annotator = float((sums.annotator_n * sums.annotator_s2 - sums.annotator_s**2).sum())
    u_all = total_n * total_s2 - total_s**2
    # rows: E U = M @ (s2_pair, s2_annotator, s2)
    system = np.array(
        [
            [0.0, sum_ni2 - total_n, sum_ni2 - total_n],
            [sum_nj2 - total_n, 0.0, sum_nj2 - total_n],
            [total_n**2 - sum_ni2, total_n**2 - sum_nj2, total_n**2 - total_n],
        ]
    )
    if system[0, 1] <= 0 or system[1, 0] <= 0:
        raise ValueError("no pair has two annotators, or no annotator has two pairs")
    u = np.array([u_pair, u_annotator, u_all])
    free = list(range(3))  # pair, annotator, residual
    components = np.zeros(3)
    while True:  # a negative component is held at 0 and the others solved again (least squares)
        solved, *_ = np.linalg.lstsq(system[:, free], u, rcond=None)
        if (solved >= 0).all() or len(free) == 1:
            components[free] = np.maximum(solved, 0.0)
            break
        free = [f for f, value in zip(free, solved, strict=True) if value >= 0 or f == 2]
    s2_pair, s2_annotator, s2 = (float(c) for c in components)
    variance = (s2_pair * sum_ni2 + s2_annotator * sum_nj2 + s2 * total_n) / total_n**2
    return CrossedMoments(
        mean=total_s / total_n,
        se=float(np.sqrt(variance)),
        pair_var=s2_pair,
        annotator_var=s2_annotator,
        residual_var=s2,
        n_obs=int(total_n),
        n_pairs=len(n_i),
        n_annotators=len(n_j),
    )


def parquet_sums(path: str | Path, item: str) -> GroupSums:
    """The sufficient statistics of one item from a label file or a (partitioned) Parquet dataset in
    the long label format, read as columns (pyarrow): only pair_id, annotator, response and value of
    the item's rows are read, and the per-judgment differences are summed in Arrow's group-by."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    table = dataset.to_table(columns=[PAIR_ID, ANNOTATOR, RESPONSE, VALUE], filter=ds.field("item") == item)
    signed = pc.if_else(
        pc.equal(pc.cast(table[RESPONSE], pa.string()), CHOSEN),
        pc.cast(table[VALUE], pa.float64()),
        pc.negate(pc.cast(table[VALUE], pa.float64())),
    )
    judgments = (
        pa.table({PAIR_ID: table[PAIR_ID], ANNOTATOR: table[ANNOTATOR], "diff": signed})
        .group_by([PAIR_ID, ANNOTATOR])
        .aggregate([("diff", "sum"), ("diff", "count")])
    )
    del table, signed
    judgments = judgments.filter(pc.equal(judgments["diff_count"], 2))  # both responses scored
    diff = judgments["diff_sum"].to_numpy()
    pairs, pair_units = _codes(judgments[PAIR_ID])
    annotators, annotator_units = _codes(judgments[ANNOTATOR])
    sums = group_sums(diff, pairs, annotators)
    return replace(sums, pair_units=pair_units, annotator_units=annotator_units)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Codes 0..K-1 of a column's values (in order of first appearance) and the value of each code."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pc.cast(column, pa.string()).combine_chunks())
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False))
    return codes, tuple(encoded.dictionary.to_pylist())
