"""Dawid-Skene and MACE in numpy (analysis/crowd_models.py) against crowd-kit 1.4.2 on the same data."""

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene

from analysis.competence import annotator_competence, label_competence
from analysis.crowd_models import dawid_skene, encode, mace

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

TOL = 1e-9


@dataclass(frozen=True)
class Crowd:
    """A seeded crowd: the first `spammers` workers answer uniformly at random, the others give the
    truth 75% of the time; each label but the first worker's is missing with probability `missing`;
    with `single`, one more worker (w99) gives a single label."""

    seed: int
    tasks: int
    workers: int
    values: tuple[int, ...]
    spammers: int
    missing: float
    single: bool = False


CROWDS = {
    "2 labels, complete": Crowd(0, 40, 4, (0, 1), 1, 0.0),
    "3 labels, missing, one-label worker": Crowd(1, 60, 6, (0, 1, 2), 2, 0.3, single=True),
    "1-5 scale without 3": Crowd(2, 60, 5, (1, 2, 4, 5), 1, 0.4),
    "5 labels, missing, one-label worker": Crowd(3, 80, 7, (0, 1, 2, 3, 4), 2, 0.2, single=True),
}


def _crowd(spec: Crowd) -> pd.DataFrame:
    """The crowd's rows, ordered by worker, then label, so that workers (w00..) and labels first appear
    in sorted order (the order in which crowd-kit's MACE reads its counts right)."""
    rng = np.random.default_rng(spec.seed)
    truth = rng.choice(spec.values, spec.tasks)
    rows = []
    for w in range(spec.workers):
        for t in range(spec.tasks):
            if w > 0 and rng.random() < spec.missing:
                continue
            random = w < spec.spammers or rng.random() > 0.75
            label = int(rng.choice(spec.values)) if random else int(truth[t])
            rows.append((f"t{t:03d}", f"w{w:02d}", label))
    if spec.single:
        rows.append(("t000", "w99", int(spec.values[-1])))
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    frame = frame.sort_values(["worker", "label"], kind="stable").reset_index(drop=True)
    assert list(pd.unique(frame["label"])) == sorted(spec.values)
    return frame


@dataclass(frozen=True)
class Reference:
    """A crowd and crowd-kit's fits on it (the slow part of these tests, so made once per crowd)."""

    crowd: pd.DataFrame
    ds: Any
    mace: Any


def _quiet(model: Any, data: pd.DataFrame) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(data)


@pytest.fixture(params=list(CROWDS), scope="module")
def reference(request: pytest.FixtureRequest) -> Reference:
    crowd = _crowd(CROWDS[request.param])
    return Reference(
        crowd,
        _quiet(DawidSkene(n_iter=100), crowd),
        _quiet(MACE(n_restarts=1, n_iter=20, random_state=0), crowd),
    )


def _crowdkit_errors(errors: pd.DataFrame, workers: pd.Index, labels: pd.Index) -> np.ndarray:
    """crowd-kit's error rows as a (worker, answer, truth) array, 0 on answers a worker never gave."""
    full = errors.reindex(pd.MultiIndex.from_product([workers, labels]), fill_value=0.0)[list(labels)]
    return full.to_numpy().reshape(len(workers), len(labels), len(labels))


def test_dawid_skene_matches_crowd_kit(reference: Reference) -> None:
    coded = encode(reference.crowd)
    ours = dawid_skene(coded.tasks, coded.workers, coded.labels, n_iter=100)
    theirs = reference.ds
    assert len(ours.elbo) == len(theirs.loss_history_)
    np.testing.assert_allclose(ours.elbo, theirs.loss_history_, rtol=0, atol=TOL)
    np.testing.assert_allclose(ours.priors, theirs.priors_[coded.label_names], rtol=0, atol=TOL)
    expected = _crowdkit_errors(theirs.errors_, coded.worker_names, coded.label_names)
    np.testing.assert_allclose(ours.errors, expected, rtol=0, atol=TOL)
    probas = theirs.probas_.loc[coded.task_names, list(coded.label_names)].to_numpy()
    np.testing.assert_allclose(ours.probas, probas, rtol=0, atol=TOL)  # crowd-kit floors them at 1e-10


def _assert_same_mace(ours: Any, theirs: Any, coded: Any) -> None:
    np.testing.assert_allclose(ours.spamming, theirs.spamming_, rtol=0, atol=TOL)
    np.testing.assert_allclose(ours.thetas, theirs.thetas_, rtol=0, atol=TOL)
    probas = theirs.probas_.loc[coded.task_names, list(coded.label_names)].to_numpy()
    np.testing.assert_allclose(ours.probas, probas, rtol=0, atol=TOL)


def test_mace_matches_crowd_kit_from_the_same_random_start(reference: Reference) -> None:
    coded = encode(reference.crowd)
    ours = mace(coded.tasks, coded.workers, coded.labels, n_iter=20, random_state=0)
    _assert_same_mace(ours, reference.mace, coded)


def test_mace_matches_crowd_kit_from_another_seed_and_iteration_count() -> None:
    crowd = _crowd(CROWDS["3 labels, missing, one-label worker"])
    coded = encode(crowd)
    ours = mace(coded.tasks, coded.workers, coded.labels, n_iter=35, random_state=7)
    _assert_same_mace(ours, _quiet(MACE(n_restarts=1, n_iter=35, random_state=7), crowd), coded)


def test_label_competence_matches_the_crowd_kit_competences(reference: Reference) -> None:
    crowd, ds = reference.crowd, reference.ds
    workers = pd.unique(crowd["worker"])
    expected_mace = pd.Series(reference.mace.spamming_[:, 1], index=workers)
    diagonal = {
        w: sum(ds.priors_[k] * ds.errors_.loc[w].loc[k, k] for k in ds.errors_.loc[w].index) for w in workers
    }
    for method, expected in (("mace", expected_mace), ("dawid_skene", pd.Series(diagonal))):
        got = label_competence(crowd, method=method)  # type: ignore[arg-type]
        assert list(got.index) == list(workers)
        np.testing.assert_allclose(got.to_numpy(), expected[workers].to_numpy(), rtol=0, atol=TOL)


def test_spammers_get_the_lowest_competence() -> None:
    crowd = _crowd(CROWDS["5 labels, missing, one-label worker"])
    for method in ("mace", "dawid_skene"):
        competence = label_competence(crowd.query("worker != 'w99'"), method=method)  # type: ignore[arg-type]
        assert set(competence.sort_values().index[:2]) == {"w00", "w01"}


def _scrambled(crowd: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The same labels in a random row order, with workers renamed against their sorted order."""
    rng = np.random.default_rng(seed)
    names = {w: f"z{99 - i:02d}" for i, w in enumerate(sorted(pd.unique(crowd["worker"])))}
    return crowd.assign(worker=crowd["worker"].map(names)).iloc[rng.permutation(len(crowd))]


def test_dawid_skene_matches_crowd_kit_in_any_row_order() -> None:
    crowd = _scrambled(_crowd(CROWDS["5 labels, missing, one-label worker"]), seed=4)
    coded = encode(crowd)
    ours = dawid_skene(coded.tasks, coded.workers, coded.labels)
    theirs = _quiet(DawidSkene(n_iter=100), crowd)
    expected = _crowdkit_errors(theirs.errors_, coded.worker_names, coded.label_names)
    np.testing.assert_allclose(ours.errors, expected, rtol=0, atol=TOL)


def test_label_competence_does_not_depend_on_the_row_order() -> None:
    crowd = _crowd(CROWDS["3 labels, missing, one-label worker"])
    shuffled = crowd.iloc[np.random.default_rng(5).permutation(len(crowd))]
    for method in ("mace", "dawid_skene"):
        a = label_competence(crowd, method=method)  # type: ignore[arg-type]
        b = label_competence(shuffled, method=method)  # type: ignore[arg-type]
        np.testing.assert_allclose(a[b.index].to_numpy(), b.to_numpy(), rtol=0, atol=1e-12)


def test_mace_departs_from_crowd_kit_only_where_it_misreads_strategy_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """crowd-kit sums the strategy counts by sorted (worker, label) but indexes them by order of first
    appearance; with those counts put back in its own order, it gives our numbers on any row order."""
    crowd = _scrambled(_crowd(CROWDS["5 labels, missing, one-label worker"]), seed=6)
    tasks, _ = pd.factorize(crowd["task"])
    workers, _ = pd.factorize(crowd["worker"])
    labels, _ = pd.factorize(crowd["label"])
    ours = mace(tasks, workers, labels, n_iter=20, random_state=0)
    misread = _quiet(MACE(n_restarts=1, n_iter=20, random_state=0), crowd)
    assert np.abs(misread.spamming_ - ours.spamming).max() > 1e-4

    e_step = MACE._e_step

    def aligned(
        self: MACE,
        annotation: pd.DataFrame,
        task_names: Any,
        worker_names: Any,
        label_names: Any,
        *codes: Any,
    ) -> Any:
        likelihood, gold, strategy, knowing = e_step(
            self, annotation, task_names, worker_names, label_names, *codes
        )
        return likelihood, gold, strategy.reindex(index=worker_names, columns=label_names), knowing

    monkeypatch.setattr(MACE, "_e_step", aligned)
    theirs = _quiet(MACE(n_restarts=1, n_iter=20, random_state=0), crowd)
    np.testing.assert_allclose(ours.spamming, theirs.spamming_, rtol=0, atol=TOL)


def test_a_scale_value_nobody_uses_is_no_label() -> None:
    crowd = _crowd(CROWDS["1-5 scale without 3"])
    coded = encode(crowd)
    assert list(coded.label_names) == [1, 2, 4, 5] and coded.labels.max() == 3


def test_codes_are_checked() -> None:
    with pytest.raises(ValueError, match="every task"):
        dawid_skene([0, 2], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="every label"):
        mace([0, 1], [0, 1], [0, 2])
    with pytest.raises(ValueError, match="non-negative"):
        mace([0, 1], [0, -1], [0, 1])
    with pytest.raises(ValueError, match="equally long"):
        dawid_skene([0, 1], [0, 1], [0])


def _long_frame(seed: int) -> pd.DataFrame:
    """A small label frame: 20 pairs, 4 annotators (ann_3 answers at random), 3 items on a 1-5 scale,
    rows ordered by annotator and value (so the ordinal labels come in crowd-kit's reading order)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(20):
        latent = rng.integers(1, 6, (2, 3))
        for a in range(4):
            preference = int(rng.integers(-2, 3))
            for r, response in enumerate(("chosen", "rejected")):
                for i, item in enumerate(("correctness", "relevance", "helpfulness")):
                    noisy = latent[r, i] + rng.integers(-1, 2) if a < 3 else rng.integers(1, 6)
                    value = float(np.clip(noisy, 1, 5))
                    rows.append((f"p{p:02d}", f"ann_{a}", response, item, value, preference, 30.0, ""))
    columns = ["pair_id", "annotator", "response", "item", "value", "preference", "time_s", "control"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["annotator", "value"], kind="stable").reset_index(drop=True)


def test_annotator_competence_on_the_ordinal_items_matches_crowd_kit() -> None:
    frame = _long_frame(8)
    table = annotator_competence(frame).set_index("annotator")
    task = frame["pair_id"] + "|" + frame["response"] + "|" + frame["item"]
    ordinal = pd.DataFrame({"task": task, "worker": frame["annotator"], "label": frame["value"].astype(int)})
    workers = pd.unique(ordinal["worker"])
    theirs = _quiet(MACE(n_restarts=1, n_iter=20, random_state=0), ordinal)
    np.testing.assert_allclose(table.loc[workers, "competence"], theirs.spamming_[:, 1], rtol=0, atol=TOL)
    assert table["competence"].idxmin() == "ann_3"
