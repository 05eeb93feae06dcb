"""Speed of the agreement kernels. Run: python benchmarks/bench_agreement.py

1. alpha_ci: 5 raters x 100,000 units, ordinal 1..5, 10% missing, 1,000 resamples (goal <= 3 s),
   against a Python loop over krippendorff.alpha on 5 x 2,000 units with 50 resamples, compared per
   resample-unit.
2. icc: 300,000 targets x 3 raters (goal <= 0.5 s), against pingouin.intraclass_corr on 10,000 targets,
   compared per target.
Peak memory is measured with tracemalloc (NumPy allocations are traced) in a separate pass.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.agreement import alpha_ci, icc  # noqa: E402


def ordinal_data(units: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=units)
    x = np.clip(truth + rng.integers(-1, 2, size=(5, units)), 1, 5).astype(float)
    x[rng.random(x.shape) < 0.10] = np.nan
    return x


def icc_frame(targets: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.repeat(np.arange(targets), 3)
    r = np.tile(np.arange(3), targets)
    y = rng.normal(size=targets)[t] + rng.normal(scale=0.3, size=3)[r] + rng.normal(size=3 * targets)
    return pd.DataFrame({"target": t, "rater": r, "rating": y})


def seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def peak_mb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def loop_alpha_ci(x: np.ndarray, n_boot: int, seed: int = 0) -> tuple[float, float]:
    """The naive percentile bootstrap: resample units, call the package each time."""
    rng = np.random.default_rng(seed)
    x = x[:, (~np.isnan(x)).sum(axis=0) >= 2]
    n = x.shape[1]
    reps = [
        krippendorff.alpha(
            x[:, rng.integers(0, n, n)], value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal"
        )
        for _ in range(n_boot)
    ]
    low, high = np.quantile(reps, [0.025, 0.975])
    return float(low), float(high)


def main() -> None:
    print(f"numpy {np.__version__}, pandas {pd.__version__}, krippendorff {version('krippendorff')}, "
          f"pingouin {pg.__version__}")  # fmt: skip

    big = ordinal_data(100_000)
    domain = [1, 2, 3, 4, 5]
    fast = seconds(lambda: alpha_ci(big, level="ordinal", n_boot=1000, value_domain=domain))
    ci = alpha_ci(big, level="ordinal", n_boot=1000, value_domain=domain)
    small = ordinal_data(2_000, seed=1)
    slow = seconds(lambda: loop_alpha_ci(small, n_boot=50), repeat=1)
    per_fast = fast / (1000 * 100_000)
    per_slow = slow / (50 * 2_000)
    print("alpha_ci, ordinal, 5 raters x 100,000 units, 10% missing, 1,000 resamples")
    print(f"  time {fast:.3f} s (goal <= 3 s), CI = ({ci[0]:.4f}, {ci[1]:.4f})")
    print(f"  loop over krippendorff.alpha, 5 x 2,000 units, 50 resamples: {slow:.3f} s")
    ratio = per_slow / per_fast
    print(f"  per resample-unit: {per_fast * 1e9:.2f} ns vs {per_slow * 1e9:.1f} ns -> {ratio:,.0f}x faster")
    print(f"  peak traced memory {peak_mb(lambda: alpha_ci(big, level='ordinal', n_boot=1000)):.1f} MB")

    cont = big + np.random.default_rng(2).random(big.shape)  # 450,000 distinct values
    t_int = seconds(lambda: alpha_ci(cont, level="interval", n_boot=1000), repeat=1)
    print("alpha_ci, interval, continuous values (no two equal), 5 x 100,000 units, 1,000 resamples")
    mem = peak_mb(lambda: alpha_ci(cont, level="interval", n_boot=200))
    print(f"  time {t_int:.3f} s, peak traced memory {mem:.1f} MB (200 resamples)")

    frame = icc_frame(300_000)
    t_icc = seconds(lambda: icc(frame, targets="target", raters="rater", ratings="rating"))
    ref = icc_frame(10_000, seed=1)
    t_pg = seconds(
        lambda: pg.intraclass_corr(ref, targets="target", raters="rater", ratings="rating"), repeat=1
    )
    ours_small = seconds(lambda: icc(ref, targets="target", raters="rater", ratings="rating"))
    print("icc, 300,000 targets x 3 raters")
    print(f"  time {t_icc:.3f} s (goal <= 0.5 s)")
    print(f"  pingouin on 10,000 targets: {t_pg:.3f} s (ours on the same: {ours_small:.4f} s)")
    print(f"  per target: {t_icc / 300_000 * 1e9:.0f} ns vs {t_pg / 10_000 * 1e9:,.0f} ns -> "
          f"{(t_pg / 10_000) / (t_icc / 300_000):,.0f}x faster")  # fmt: skip
    mem = peak_mb(lambda: icc(frame, targets="target", raters="rater", ratings="rating"))
    print(f"  peak traced memory {mem:.1f} MB")


if __name__ == "__main__":
    main()
