"""The one-command demo: a database with the sample pairs, demo accounts and simulated annotators.

Two studies show the verdicts at work. ``sample`` (every sample pair, among them the six the sample
marks as flawed, plus a simulated 30% of pairs whose `rejected` is clearly worse) does not PASS: neither
its mean gap within the margin nor fewer than 10% of pairs beyond it is shown, and the cleaning list
names the broken pairs. ``sample-clean`` (the sample's pairs without the flawed ones, and positive
controls made by ``controls make --kind degrade``) PASSes for the right reasons: realistic raters,
controls whose defect the raters see, the mean gap within the margin, rubric and preference over pairs
and annotators, and fewer than 10% of pairs beyond the margin by the test calibrated for its registered
sequential design (3 judgments per pair, then one at a time to the pair that looks most broken, 6 per
pair on average); the same 198 judgments as a fixed 33 pairs x 6 raters leave that claim INCONCLUSIVE.
Each of its profiles has a simulated owner who judged their own pair (the owners' section of the report).
"""

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from annotator.errors import os_failure
from annotator.intake import assign, controls, ingest
from annotator.people import accounts, authorization
from annotator.rating import owners
from annotator.review.predictions import simulate_models
from annotator.review.simulated_judges import simulate_judges
from annotator.store import db
from annotator.store.models import Pair, id_of
from annotator.study import get_study, load_config, parse_config
from annotator.synthetic import SimulationSpec, simulate, simulate_registered, simulated_users

DEMO_DB = Path("data") / "demo.db"  # under the working directory, like the default database
SAMPLE = Path(__file__).resolve().parent / "defaults" / "sample_pairs.jsonl"  # shipped in the package
STUDY = "sample"
CLEAN_STUDY = "sample-clean"
QUEUE = 12
#: Raters of a careful lab study: rating noise SD 0.35 (times U(0.7, 1.3)), bias SD 0.2.
NOISE, BIAS_SD = 0.35, 0.2
CREDENTIALS = {
    "demo_annotator": ("annotator", "demo-annotator"),
    "demo_adjudicator": ("adjudicator", "demo-adjudicator"),
    "demo_researcher": ("researcher", "demo-researcher"),
}


@dataclass(frozen=True)
class Demo:
    url: str
    built: bool
    credentials: dict[str, tuple[str, str]]


def build_demo(path: Path = DEMO_DB, *, rebuild: bool = False, seed: int = 7) -> Demo:
    """Build the demo database (kept when it exists, unless `rebuild`)."""
    url = f"sqlite:///{path.resolve()}"
    if path.exists() and not rebuild:
        db.upgrade(url)
        return Demo(url, False, CREDENTIALS)
    for suffix in ("", "-wal", "-shm"):
        try:
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            raise os_failure(f"cannot replace the demo database {path}", exc) from None
    db.upgrade(url)
    engine = db.make_engine(url)
    ingest.import_file(engine, SAMPLE, study=STUDY, account=authorization.SYSTEM)
    simulate(
        engine,
        study=STUDY,
        spec=SimulationSpec(
            annotators=3, overlap=3, seed=seed, broken_share=0.3, noise=NOISE, bias_sd=BIAS_SD
        ),
    )
    with db.session_scope(engine) as session:
        for username, (role, password) in CREDENTIALS.items():
            accounts.add_user(
                session, username=username, role=role, password=password, account=authorization.SYSTEM
            )
    with db.session_scope(engine) as session:
        pairs = assign.study_pair_ids(session, STUDY)[:QUEUE]
        assign.assign_pairs(session, study=STUDY, annotator="demo_annotator", pair_ids=pairs, seed=seed)
    build_science_demo(engine, seed=seed)
    simulate_judges(engine, study=STUDY, seed=seed)  # one judge close to the people, one lenient and biased
    build_clean_demo(engine, seed=seed)
    engine.dispose()
    return Demo(url, True, CREDENTIALS)


#: The clean study's registered design: 3 judgments on every pair, then one at a time to the pair that
#: looks most broken, 6 per pair on average (inside analysis.design.sequential_is_valid).
CLEAN_BUDGET = 6.0
CLEAN_ALLOCATION: dict[str, Any] = {"design": "sequential", "first_stage": 3, "budget": CLEAN_BUDGET}
ARMS_STUDY = "sample-arms"
DEMO_MODELS = {"demo-strong-rm": 0.9, "demo-weak-rm": 0.6}


def build_science_demo(engine: Engine, *, seed: int = 7) -> None:
    """Benchmark science on first run: two simulated reward models (one strong, one weak)
    on the sample study, and a second study of the same pairs with two arms (profile only / rubric),
    rubric verification, its own simulated annotators and the same two models."""
    data = load_config().model_dump()
    data["rubric"]["verify_support"] = True
    data["arms"] = {
        "conditions": [
            {
                "name": "profile_only",
                "description": "What a reward model sees: profile and question, no rubric, no narrative",
                "show_rubric": False,
                "show_narrative": False,
            },
            {"name": "rubric", "description": "Everything: profile, narrative and the rubric"},
        ]
    }
    ingest.import_file(
        engine, SAMPLE, study=ARMS_STUDY, config=parse_config(data), account=authorization.SYSTEM
    )
    simulate(engine, study=ARMS_STUDY, spec=SimulationSpec(annotators=6, overlap=4, seed=seed, prefix="arm"))
    with db.session_scope(engine) as session:
        for study in (STUDY, ARMS_STUDY):
            simulate_models(session, study=study, models=DEMO_MODELS, account=authorization.SYSTEM, seed=seed)


def build_clean_demo(
    engine: Engine, *, seed: int = 7, allocation: dict[str, Any] | None = CLEAN_ALLOCATION, raters: int = 6
) -> None:
    """The study that passes: the sample's pairs without the ones it marks as flawed, 8 positive
    controls (a planted defect), realistic simulated raters. With an `allocation` (a registered
    ``[allocation]`` section) `raters` start, follow it one judgment at a time through the design's
    queue and are joined by newcomers when the pair it picks has been judged by all
    (:func:`annotator.synthetic.simulate_registered`); without one, `raters` rate everything."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    kept = [
        json.dumps(record | {"user_id": f"owner-{record['id']}"})  # each profile's owner, simulated below
        for record in map(json.loads, lines)
        if not record.get("construction_note", "").startswith("flawed")
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sample_clean.jsonl"
        path.write_text("\n".join(kept) + "\n", encoding="utf-8")
        data = load_config().model_dump()
        data["controls"]["rate"] = 0.2  # 8 positive controls among each rater's 33 pairs
        if allocation is not None:
            data["allocation"] = data["allocation"] | allocation
        ingest.import_file(
            engine, path, study=CLEAN_STUDY, config=parse_config(data), account=authorization.SYSTEM
        )
    overlap = raters if allocation is None else int(allocation["first_stage"])
    spec = SimulationSpec(
        annotators=raters, overlap=overlap, seed=seed, prefix="clean", noise=NOISE, bias_sd=BIAS_SD,
        keyed_draws=allocation is not None,
    )  # fmt: skip
    with db.session_scope(engine) as session:
        users = simulated_users(session, spec)
        assign.assign(
            session, study=CLEAN_STUDY, overlap=overlap, annotators=users, seed=seed,
            overlap_among_named=True, account=authorization.SYSTEM,
        )  # fmt: skip
    with db.session_scope(engine) as session:
        controls.make_controls(
            session, study=CLEAN_STUDY, kind="degrade", n=8, seed=seed, account=authorization.SYSTEM
        )
    if allocation is None:
        simulate(engine, study=CLEAN_STUDY, spec=spec)
    else:
        simulate_registered(engine, study=CLEAN_STUDY, spec=spec)
    simulate_owners(engine, study=CLEAN_STUDY, seed=seed)


def simulate_owners(engine: Engine, *, study: str, seed: int) -> None:
    """Each owned pair's owner judges it: prefers chosen with probability 0.85 (else rejected), and
    says each rubric aspect describes what they want (yes 0.7, partly 0.2, no 0.1)."""
    rng = random.Random(seed)
    with db.session_scope(engine) as session:
        for pair in session.exec(select(Pair).where(Pair.study_id == id_of(get_study(session, study)))).all():
            owner = pair.owner
            if not owner or pair.control:
                continue
            prefers = rng.choice((1, 2)) if rng.random() < 0.85 else -1
            aspects = [rng.choices((2, 1, 0), (0.7, 0.2, 0.1))[0] for _ in pair.rubric]
            owners.record_owner_judgment(
                session, study=study, owner=owner, pair_external_id=pair.external_id, preference=prefers,
                aspects=aspects, confidence=rng.choice((2, 3)), side_chosen=rng.choice("AB"),
            )  # fmt: skip
