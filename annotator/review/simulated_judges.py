"""Simulated LLM judges for the demo and tests: ratings drawn from the people's own, saved like an
imported judge file (:func:`annotator.review.judges.save_judges`)."""

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotator.people.authorization import SYSTEM
from annotator.review.judges import JudgeImport, StudyFacts, save_judges, study_facts
from annotator.store.models import id_of
from annotator.study import get_study

__all__ = ["simulate_judges"]


@dataclass(frozen=True)
class _SimulatedJudge:
    """A demo judge of one `kind` (``close`` or ``lenient``) drawing from `rng`, with the orders it is
    shown each pair in (see :meth:`drawn`)."""

    rng: random.Random
    facts: StudyFacts
    kind: str
    orders: Mapping[str, tuple[str, ...]]

    @classmethod
    def drawn(cls, rng: random.Random, facts: StudyFacts, kind: str) -> "_SimulatedJudge":
        """The judge with its orders drawn: both for every pair, or for ``lenient`` one random order on
        two thirds of the pairs."""
        orders: dict[str, tuple[str, ...]] = {}
        for pair in facts.pairs:
            if kind == "lenient" and rng.random() > 1 / 3:
                orders[pair] = (rng.choice(("chosen_first", "rejected_first")),)
            else:
                orders[pair] = ("chosen_first", "rejected_first")
        return cls(rng, facts, kind, orders)

    def scores(self, means: pd.Series) -> list[dict[str, Any]]:
        """The score rows: the people's mean (a point higher for ``lenient``) plus noise, rounded onto
        the item's scale, in every order the pair is shown in."""
        rows: list[dict[str, Any]] = []
        for (pair, response, item), mean in means.items():
            if pair not in self.facts.pairs:
                continue
            scale = self.facts.scales.get(str(item))
            top = float(scale.high) if scale is not None else 2.0  # otherwise a rubric aspect: 0-2
            bottom = float(scale.low) if scale is not None else 0.0
            for order in self.orders[pair]:
                shift = 1.0 if self.kind == "lenient" else 0.0
                value = round(min(top, max(bottom, mean + shift + self.rng.gauss(0, 0.3))))
                rows.append(
                    {
                        "pair_id": self.facts.pairs[pair],
                        "order": order,
                        "response": response,
                        "item": item,
                        "value": float(value),
                        "preference": None,
                        "confidence": None,
                        "where": "simulated",
                    }
                )
        return rows

    def preferences(self, prefs: pd.Series) -> dict[tuple[int, str], tuple[float, float]]:
        """The preference and confidence per (Pair.id, order): ``close`` follows the people's mean
        preference, ``lenient`` mostly the response shown first."""
        pair_pref: dict[tuple[int, str], tuple[float, float]] = {}
        for pair, mean in prefs.items():
            if pair not in self.facts.pairs:
                continue
            for order in self.orders[pair]:
                if self.kind == "lenient":
                    toward_first = 1.0 if order == "chosen_first" else -1.0
                    pref = max(-2.0, min(2.0, round(0.3 * mean + 1.5 * toward_first)))
                    confidence = 0.95
                else:
                    pref = max(-2.0, min(2.0, round(mean + self.rng.gauss(0, 0.4))))
                    confidence = round(min(0.99, 0.55 + 0.2 * abs(pref)), 2)
                pair_pref[(self.facts.pairs[pair], order)] = (float(pref), confidence)
        return pair_pref


def simulate_judges(
    engine: Engine, *, study: str, seed: int = 0, judges: dict[str, str] | None = None
) -> list[JudgeImport]:
    """Simulated judges for the demo and tests (deterministic per seed). ``close`` rates like the
    mean of the people plus small noise, shown each pair in both orders; ``lenient`` rates a point
    higher and mostly prefers whichever response it was shown first, shown each pair in one random
    order (a third of the pairs in both)."""
    from annotator.review.readers import label_frame

    judges = judges or {"demo-judge-close": "close", "demo-judge-lenient": "lenient"}
    with Session(engine) as session:
        frame = label_frame(session, study=study, account=SYSTEM)
        facts = study_facts(session, study)
        study_id = id_of(get_study(session, study))
    if "control" in frame.columns:
        frame = frame[frame["control"].fillna("") == ""]
    means = frame.groupby(["pair_id", "response", "item"])["value"].mean()
    prefs = frame.drop_duplicates(["pair_id", "annotator"]).groupby("pair_id")["preference"].mean()
    summaries = []
    for name, kind in judges.items():
        judge = _SimulatedJudge.drawn(random.Random(f"{seed}:{name}"), facts, kind)
        rows = judge.scores(means)
        pair_pref = judge.preferences(prefs)
        for row in rows:
            row["preference"], row["confidence"] = pair_pref.get((row["pair_id"], row["order"]), (None, None))
        with engine.begin() as connection:
            summaries.append(
                save_judges(
                    connection,
                    study_id=study_id,
                    judge=name,
                    rows=rows,
                    source="simulated",
                    account=SYSTEM,
                    study=study,
                )
            )
    return summaries
