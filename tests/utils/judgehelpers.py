"""Helpers for the LLM-judge tests: a plain-loop alternative annotator test (the paper's definition,
written instance by instance as a reference for the vectorised kernel) and a rated study."""

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import ttest_1samp
from sqlalchemy.engine import Engine

from annotator.synthetic import SimulationSpec, simulate
from tests.utils.factories import make_study


def alt_test_loop(
    h: np.ndarray, f: np.ndarray, *, epsilon: float, q: float, scoring: str, min_items: int
) -> tuple[float, float]:
    """Winning rate and advantage probability, annotator by annotator and instance by instance
    (Calderon, Reichart & Dror 2025, Sec. 3; the reference code's loop, github.com/nitaytech/AltTest)."""
    m, n, _ = h.shape
    p_values, advantages = [], []
    for j in range(m):
        wf, wh = [], []
        for i in range(n):
            if np.isnan(h[j, i]).any() or np.isnan(f[i]).any():
                continue
            others = [k for k in range(m) if k != j and not np.isnan(h[k, i]).any()]
            if not others:
                continue
            if scoring == "neg_rmse":
                s_h = -np.sqrt(np.mean([(h[j, i] - h[k, i]) ** 2 for k in others]))
                s_f = -np.sqrt(np.mean([(f[i] - h[k, i]) ** 2 for k in others]))
            else:
                s_h = np.mean([h[j, i, 0] == h[k, i, 0] for k in others])
                s_f = np.mean([f[i, 0] == h[k, i, 0] for k in others])
            wf.append(s_f >= s_h - 1e-12)
            wh.append(s_h >= s_f - 1e-12)
        if len(wf) < min_items:
            continue
        d = np.array(wh, float) - np.array(wf, float)
        p = (
            float(ttest_1samp(d, epsilon, alternative="less").pvalue)
            if d.std() > 0
            else float(d.mean() >= epsilon)
        )
        p_values.append(p)
        advantages.append(float(np.mean(wf)))
    if not p_values:
        return float("nan"), float("nan")
    ranked = np.sort(p_values)
    m_t = len(ranked)
    harmonic = float(np.sum(1.0 / np.arange(1, m_t + 1)))
    k = max([i + 1 for i in range(m_t) if ranked[i] <= (i + 1) / m_t * q / harmonic], default=0)
    return k / m_t, float(np.mean(advantages))


def rated_study(engine: Engine, tmp_path: Path, *, n_pairs: int = 32, annotators: int = 3) -> None:
    """Study "s1" with `n_pairs` pairs, each rated by all `annotators` simulated annotators."""
    make_study(engine, tmp_path, n_pairs)
    simulate(engine, study="s1", spec=SimulationSpec(annotators=annotators, overlap=annotators, seed=3))


def beta_study(
    *,
    annotators: int = 5,
    pairs: int = 200,
    seed: int = 0,
    chosen_longer: float = 0.5,
    items: tuple[str, ...] = ("correctness",),
) -> tuple[pd.DataFrame, np.ndarray]:
    """A main label frame where each pair's P(chosen) ~ Beta(3, 1) and each judgment is a tie with
    probability 0.1 (else chosen with that probability); quality `items` (1-5: a latent quality per
    response plus noise); response lengths unrelated to quality (chosen is the
    longer one with probability `chosen_longer`). Returns the frame and P(chosen) per pair."""
    rng = np.random.default_rng(seed)
    p_chosen = rng.beta(3, 1, size=pairs)
    longer = rng.random(pairs) < chosen_longer
    quality = rng.normal(3.5, 0.8, size=(pairs, 2))
    rows = []
    for i in range(pairs):
        for j in range(annotators):
            pref = 0 if rng.random() < 0.1 else (2 if rng.random() < p_chosen[i] else -2)
            for k, response in enumerate(("chosen", "rejected")):
                for item in items:
                    value = int(np.clip(round(quality[i, k] + rng.normal(0, 0.8)), 1, 5))
                    rows.append(
                        {
                            "pair_id": f"p{i:03d}",
                            "annotator": f"a{j}",
                            "response": response,
                            "item": item,
                            "value": value,
                            "preference": pref,
                            "confidence": 2,
                            "time_s": 10.0,
                            "chosen_chars": 900 if longer[i] else 500,
                            "rejected_chars": 500 if longer[i] else 900,
                        }
                    )
    return pd.DataFrame(rows), p_chosen


def preference_judge(name: str, pairs: list[str], preference: np.ndarray, orders: list[str]) -> pd.DataFrame:
    """A judge frame with only preferences (one row per pair and order shown)."""
    return pd.DataFrame(
        {
            "pair_id": pairs,
            "judge": name,
            "order": orders,
            "response": "",
            "item": "",
            "value": np.nan,
            "preference": np.asarray(preference, dtype=float),
            "confidence": np.nan,
        }
    )


def judged_beyond_people(engine: Engine, folder: Path, *, rated: int = 40, unrated: int = 120) -> None:
    """Study "s1": `rated` pairs rated by 3 simulated annotators, `unrated` more no person rated, and a
    judge "every-pair" on all of them that gives the people's pairs the people's mean ratings (and the
    others a rating that depends on the pair only)."""
    from sqlmodel import Session

    from annotator.people.authorization import SYSTEM
    from annotator.review.judges import import_judges
    from annotator.review.readers import label_frame
    from tests.utils.factories import write_csv

    make_study(engine, folder, rated)
    simulate(engine, study="s1", spec=SimulationSpec(annotators=3, overlap=3, seed=2))
    make_study(engine, folder, unrated, start=rated)
    with Session(engine) as session:
        people = label_frame(session, study="s1", account=SYSTEM)
    means = people.groupby(["pair_id", "response", "item"])["value"].mean()
    rows = [
        {
            "pair_id": f"pair-{i}",
            "response": response,
            "item": item,
            "value": means.get((f"pair-{i}", response, item), 3.0 + (i % 3) / 2),
        }
        for i in range(rated + unrated)
        for item in ("correctness", "relevance", "helpfulness")
        for response in ("chosen", "rejected")
    ]
    import_judges(
        engine, write_csv(folder / "judge.csv", rows), study="s1", judge="every-pair", account=SYSTEM
    )
