"""Helpers for the benchmark-science tests: a simulated, auto-resolved study with two models."""

import random
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from annotator.people.authorization import SYSTEM
from annotator.review import adjudicate, predictions
from annotator.store import db
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.factories import make_study, write_jsonl

if TYPE_CHECKING:
    from annotator.study import StudyConfig
    from tests.utils.apphelpers import AppDB


def simulated_study(
    engine: Engine, folder: Path, n_pairs: int = 12, *, study: str = "s1", seed: int = 3
) -> None:
    """`n_pairs` pairs rated by 3 simulated annotators, auto-resolved."""
    make_study(engine, folder, n_pairs, study=study, account=SYSTEM)
    simulate(engine, study=study, spec=SimulationSpec(annotators=3, overlap=3, seed=seed, rubric_gap=1.5))
    with db.session_scope(engine) as session:
        adjudicate.auto_resolve(session, study=study, account=SYSTEM)


def add_models(engine: Engine, folder: Path, n_pairs: int, *, study: str = "s1", seed: int = 0) -> None:
    """Two models on pairs pair-0..: "strong" right about 90% of the time (scores), "weak" about 60%
    (choices with a confidence)."""
    rng = random.Random(seed)
    strong = [
        {"id": f"pair-{i}", "score_chosen": 1.0 if rng.random() < 0.9 else -1.0, "score_rejected": 0.0}
        for i in range(n_pairs)
    ]
    weak = [
        {"id": f"pair-{i}", "choice": "chosen" if rng.random() < 0.6 else "rejected", "confidence": 0.5}
        for i in range(n_pairs)
    ]
    for name, records in (("strong", strong), ("weak", weak)):
        path = write_jsonl(folder / f"{study}-{name}.jsonl", records)
        predictions.import_predictions(engine, path, study=study, model=name, account=SYSTEM)


def arm_app_study(
    app_db: "AppDB", folder: Path, *, config: "StudyConfig", arm: str, username: str = "ann1"
) -> None:
    """A study "arms" with the given config whose pairs are all queued for `username` in study arm `arm`."""
    import json

    from sqlmodel import select

    from annotator.intake import ingest
    from annotator.store.models import Assignment, Pair, Study
    from tests.utils.apphelpers import pair_record

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "arms.jsonl"
    path.write_text("".join(json.dumps(pair_record(200 + i)) + "\n" for i in range(2)), encoding="utf-8")
    ingest.import_file(app_db.engine, path, study="arms", config=config, account=SYSTEM)
    with db.session_scope(app_db.engine) as session:
        study_id = int(session.exec(select(Study.id).where(Study.name == "arms")).one() or 0)
        pair_ids = list(session.exec(select(Pair.id).where(Pair.study_id == study_id).order_by(Pair.id)))
        session.add_all(
            Assignment(
                study_id=study_id,
                pair_id=pair_id,
                annotator_id=app_db.users[username],
                chosen_side="AB"[k % 2],
                position=k + 1,
                arm=arm,
            )
            for k, pair_id in enumerate(pair_ids)
        )
