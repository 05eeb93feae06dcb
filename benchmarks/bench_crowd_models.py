"""Competence models: analysis.crowd_models against crowd-kit 1.4.2, time and agreement.

Two crowds, each run through the project's path (`annotator_competence`: MACE and Dawid-Skene on the
preference and on the ordinal quality/rubric items, four fits), once with `label_competence` as it is
(numpy) and once with crowd-kit's `MACE(n_restarts=1, n_iter=20)` / `DawidSkene(n_iter=100)` in its
place:

- the 30-pair study of tests/test_quality.py (6 simulated annotators, sim_05 and sim_06 spammers,
  overlap 3, controls), built in a temporary SQLite database; `annotator_quality` is timed too;
- a synthetic 1,000-pair crowd rated by all 6 annotators (2 spammers): 2 responses x (3 quality items
  on 1-5 + 3 rubric aspects on 0-2) = 12,000 ordinal tasks, 72,000 labels.

Printed: seconds (ours: best of --repeats; crowd-kit: one run), the max abs difference per column,
the same against crowd-kit fed the rows in sorted (worker, label) order (where its MACE reads its
strategy counts right; "n/a" when no row order makes the labels first appear sorted), and whether the
ranking and the exclusions at competence < 0.4 are the same.

    python benchmarks/bench_crowd_models.py [--pairs 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.utils.qchelpers

from analysis.competence import annotator_competence  # noqa: E402

COLUMNS = ["competence_preference", "competence_ordinal", "ds_preference", "ds_ordinal"]
THRESHOLD = 0.4


def crowdkit_competence(
    labels: pd.DataFrame, *, method: str = "mace", seed: int = 0, sort: bool = False
) -> pd.Series:
    """`label_competence` computed by crowd-kit; with `sort`, MACE on the rows ordered by (worker,
    label), NaN when that does not make the labels first appear in sorted order (Dawid-Skene does
    not depend on the order)."""
    from crowdkit.aggregation import MACE, DawidSkene

    workers = pd.unique(labels["worker"])
    if len(workers) < 2 or labels["label"].nunique() < 2:
        return pd.Series(np.nan, index=workers, dtype=float)
    data = labels[["task", "worker", "label"]].reset_index(drop=True)
    data = data.astype({c: object for c in data.columns if isinstance(data[c].dtype, pd.CategoricalDtype)})
    if sort and method == "mace":
        data = data.sort_values(["worker", "label"], kind="stable").reset_index(drop=True)
        if list(pd.unique(data["label"])) != sorted(pd.unique(data["label"])):
            return pd.Series(np.nan, index=workers, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "mace":
            model = MACE(n_restarts=1, n_iter=20, random_state=seed).fit(data)
            return pd.Series(model.spamming_[:, 1], index=pd.unique(data["worker"]), dtype=float)
        ds = DawidSkene(n_iter=100).fit(data)
    errors, priors = ds.errors_, ds.priors_
    return pd.Series(
        {w: sum(priors[k] * errors.loc[w].loc[k, k] for k in errors.loc[w].index) for w in workers},
        dtype=float,
    )


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def with_crowdkit(run: Callable[[], Any], *, sort: bool = False) -> Callable[[], Any]:
    def patched() -> Any:
        def competence(labels: pd.DataFrame, *, method: str = "mace", seed: int = 0) -> pd.Series:
            return crowdkit_competence(labels, method=method, seed=seed, sort=sort)

        with mock.patch("analysis.competence.label_competence", competence):
            return run()

    return patched


def differences(ours: pd.DataFrame, theirs: pd.DataFrame) -> str:
    cells = []
    for column in COLUMNS:
        gap = (ours[column] - theirs[column]).abs()
        cells.append(f"{column} {'n/a' if gap.isna().all() else f'{gap.max():.1e}'}")
    return ", ".join(cells)


def decisions(ours: pd.DataFrame, theirs: pd.DataFrame) -> str:
    """Whether `competence` orders the annotators and excludes (< THRESHOLD) the same way."""
    if theirs["competence"].isna().any():
        return "n/a"
    order, their_order = ours["competence"].sort_values().index, theirs["competence"].sort_values().index
    excluded = sorted(ours.index[ours["competence"] < THRESHOLD])
    same = excluded == sorted(theirs.index[theirs["competence"] < THRESHOLD])
    return (
        f"ranking same: {list(order) == list(their_order)}, lowest two same: "
        f"{set(order[:2]) == set(their_order[:2])}, excluded at < {THRESHOLD} same: {same}"
    )


def compare(name: str, frame: pd.DataFrame, repeats: int) -> None:
    import crowdkit.aggregation  # noqa: F401  (imported before the clock)

    def run() -> pd.DataFrame:
        return annotator_competence(frame).set_index("annotator")

    ours_s, ours = timed(run, repeats)
    theirs_s, theirs = timed(with_crowdkit(run), 1)
    _, sorted_rows = timed(with_crowdkit(run, sort=True), 1)
    excluded = sorted(ours.index[ours["competence"] < THRESHOLD])
    print(f"\n{name}: annotator_competence (4 fits) crowd-kit {theirs_s:.2f} s, ours {ours_s:.4f} s")
    print(f"  max abs difference vs crowd-kit: {differences(ours, theirs)}")
    print(f"    {decisions(ours, theirs)}")
    print(f"  vs crowd-kit on rows in sorted (worker, label) order: {differences(ours, sorted_rows)}")
    print(f"    {decisions(ours, sorted_rows)}")
    print(f"  ours excludes (competence < {THRESHOLD}): {excluded}")
    print(ours[["competence", *COLUMNS]].round(4).to_string())


def study_crowd(folder: Path) -> tuple[str, pd.DataFrame]:
    """The 30-pair crowd of tests/test_quality.py in a new SQLite database: its URL and label frame."""
    from sqlmodel import Session

    from annotator.intake import controls
    from annotator.people.authorization import SYSTEM
    from annotator.review.readers import label_frame
    from annotator.store import db
    from annotator.synthetic import SimulationSpec, simulate
    from tests.utils.qchelpers import qc_study

    url = f"sqlite:///{folder / 'crowd.db'}"
    engine = db.make_engine(url)
    db.upgrade(engine)
    spec = SimulationSpec(annotators=6, overlap=3, spammers=2, seed=3)
    rule = {"rule": "MACE competence below 0.4", "min_competence": 0.4, "exclude_too_fast": True}
    qc_study(engine, folder, 30, exclusion=rule, controls={"rate": 0.1})
    simulate(engine, study="s1", spec=spec)
    with db.session_scope(engine) as session:
        controls.make_controls(session, study="s1", kind="swap", n=2, account=SYSTEM)
        controls.make_controls(session, study="s1", kind="degrade", n=3, account=SYSTEM)
    simulate(engine, study="s1", spec=spec)
    with Session(engine) as session:
        frame = label_frame(session, study="s1", account=SYSTEM)
    engine.dispose()
    return url, frame


def time_quality(url: str, repeats: int) -> None:
    from sqlmodel import Session

    from annotator.people.authorization import SYSTEM
    from annotator.review.quality import annotator_quality
    from annotator.store import db

    engine = db.make_engine(url)
    with Session(engine) as session:

        def run() -> Any:
            return annotator_quality(session, study="s1", account=SYSTEM)

        ours_s, _ = timed(run, repeats)
        theirs_s, _ = timed(with_crowdkit(run), 1)
    engine.dispose()
    print(f"  annotator_quality (whole page/report section): crowd-kit {theirs_s:.2f} s, ours {ours_s:.3f} s")


def synthetic_crowd(pairs: int, seed: int = 0) -> pd.DataFrame:
    """`pairs` pairs rated by 6 annotators (ann_5 and ann_6 answer at random): latent scores per
    (pair, response, item), good annotators add N(0, 0.6) and round (quality 1-5, rubric 0-2) and
    prefer by the latent gap plus N(0, 0.8), rounded to -2..2."""
    rng = np.random.default_rng(seed)
    items = [("correctness", 1, 5), ("relevance", 1, 5), ("helpfulness", 1, 5)]
    items += [(f"rubric:{k}", 0, 2) for k in range(3)]
    responses = ("chosen", "rejected")
    latents = {(r, item): rng.uniform(low, high, pairs) for r in responses for item, low, high in items}
    parts = []
    for a in range(1, 7):
        for response in responses:
            for item, low, high in items:
                latent = latents[(response, item)]
                if a >= 5:
                    values = rng.integers(low, high + 1, pairs).astype(float)
                else:
                    values = np.clip(np.rint(latent + rng.normal(0, 0.6, pairs)), low, high)
                parts.append(
                    pd.DataFrame(
                        {
                            "pair_id": [f"p{p:05d}" for p in range(pairs)],
                            "annotator": f"ann_{a}",
                            "response": response,
                            "item": item,
                            "value": values,
                        }
                    )
                )
    frame = pd.concat(parts, ignore_index=True)
    gap = sum(latents[("chosen", item)] - latents[("rejected", item)] for item, _, _ in items)
    preference = np.clip(np.rint(gap[:, None] / 2 + rng.normal(0, 0.8, (pairs, 6))), -2, 2)
    preference[:, 4:] = rng.integers(-2, 3, (pairs, 2))
    frame["preference"] = preference.astype(int)[
        frame["pair_id"].str[1:].astype(int), frame["annotator"].str[4:].astype(int) - 1
    ]
    frame["time_s"], frame["control"] = 30.0, ""
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("load average:", Path("/proc/loadavg").read_text().strip())
    with tempfile.TemporaryDirectory() as folder:
        url, frame = study_crowd(Path(folder))
        compare("30-pair study, 6 annotators (tests/test_quality.py)", frame, args.repeats)
        time_quality(url, args.repeats)
    compare(f"synthetic {args.pairs:,} pairs x 6 annotators", synthetic_crowd(args.pairs), args.repeats)
    print("\nload average:", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main()
