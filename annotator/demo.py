"""The one-command demo: a database with the sample pairs, demo accounts and simulated annotators."""

from dataclasses import dataclass
from pathlib import Path

from annotator import accounts, assign, ingest
from annotator.simulate import SimulationSpec, simulate
from annotator.store import db

ROOT = Path(__file__).resolve().parents[1]
DEMO_DB = ROOT / "data" / "demo.db"
SAMPLE = ROOT / "data" / "sample_pairs.jsonl"
STUDY = "sample"
QUEUE = 12
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
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db.upgrade(url)
    engine = db.make_engine(url)
    ingest.import_file(engine, SAMPLE, study=STUDY, account=accounts.SYSTEM)
    simulate(engine, study=STUDY, spec=SimulationSpec(annotators=3, overlap=3, seed=seed))
    with db.session_scope(engine) as session:
        for username, (role, password) in CREDENTIALS.items():
            accounts.add_user(session, username=username, role=role, password=password, account=accounts.SYSTEM)
    with db.session_scope(engine) as session:
        pairs = assign.study_pair_ids(session, STUDY)[:QUEUE]
        assign.assign_pairs(session, study=STUDY, annotator="demo_annotator", pair_ids=pairs, seed=seed)
    engine.dispose()
    return Demo(url, True, CREDENTIALS)
