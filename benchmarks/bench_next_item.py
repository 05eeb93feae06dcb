"""Next-item latency on a large study: SQLite against PostgreSQL.

Run from the repository root:

    python benchmarks/bench_next_item.py [--pg postgresql+psycopg://USER:PW@HOST/postgres] [--calls 50]

It bulk-inserts (SQLAlchemy core, into the real tables) a study of 100,000 pairs and 300,000 judgments:
30 annotators, every pair judged by 2-4 of them (status done, one judgment each, `Pair.n_done` set) and
pending in the queue of one more, so each annotator has ~3,300 items waiting. Then it times what the
annotate page does for the next item, `labels.next_assignment` + `labels.show`, each call in its own
session (`db.session_scope`, committed, as in the app), cycling over the annotators, the two engines
taking turns call by call. Prints p50/p95 per engine and the PostgreSQL/SQLite ratio. The PostgreSQL
database is made from the admin URL (`--pg` or $ANNOTATOR_TEST_POSTGRES), vacuumed and analyzed after
the load (as autovacuum would), and dropped.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, insert, text, update  # noqa: E402
from sqlalchemy.engine import Engine, make_url  # noqa: E402
from sqlmodel import col, select  # noqa: E402

from annotator.people.authorization import Account, account_of  # noqa: E402
from annotator.rating import labels  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.models import Assignment, Judgment, Pair, Study, User  # noqa: E402
from annotator.study import load_config  # noqa: E402

GOAL_RATIO = 1.5
ANNOTATORS = 30
CHUNK = 20_000
WORDS = "quick vegetarian dinner plan budget time oven pan fresh herbs weekly shopping list".split()


def _texts(rng: random.Random, n_words: int, n: int = 200) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "." for _ in range(n)]


def _chunks(rows: list[dict], size: int = CHUNK) -> Iterator[list[dict]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def build(engine: Engine, n_pairs: int, n_judgments: int, *, seed: int = 0) -> None:
    """The study: `n_pairs` pairs, `n_judgments` done assignments with one judgment each (2-4 per pair,
    `n_done` set to match), and one pending assignment per pair in another annotator's queue."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    posts, questions, long_texts = _texts(rng, 40), _texts(rng, 25), _texts(rng, 150)
    base = n_judgments // n_pairs
    with engine.begin() as connection:
        study_id = connection.execute(
            insert(Study).values(name="bench", config=load_config().model_dump(), created_at=now)
        ).inserted_primary_key[0]
        connection.execute(
            insert(User),
            [
                {"username": f"ann{k:02d}", "role": "annotator", "password_hash": "x", "active": True}
                | {"created_at": now, "failed_logins": 0, "guidelines_ack_at": now}
                for k in range(ANNOTATORS)
            ],
        )
        user_ids = [row[0] for row in connection.execute(text('SELECT id FROM "user" ORDER BY id'))]
        n_done = [base + (i % 3) - 1 if base >= 3 else base for i in range(n_pairs)]  # 2, 3, 4, ...
        for i in range(abs(n_judgments - sum(n_done))):  # make the total exact
            n_done[i] += 1 if n_judgments > sum(n_done) else -1
        rng.shuffle(n_done)
        for chunk in _chunks(list(range(n_pairs))):
            connection.execute(
                insert(Pair),
                [
                    {
                        "study_id": study_id,
                        "external_id": f"bench-{i}",
                        "question": f"Question {i}: {rng.choice(questions)}",
                        "profile": [
                            {"id": f"{i}-{k}", "category": "cooking", "text": rng.choice(posts)}
                            for k in range(10)
                        ],
                        "rubric": [
                            {"aspect": "Quick recipes", "reason": rng.choice(questions), "evidence": "posts"},
                            {"aspect": "Vegetarian", "reason": rng.choice(questions), "evidence": "posts"},
                        ],
                        "narrative": rng.choice(questions),
                        "category": "cooking",
                        "chosen": f"{i} {rng.choice(long_texts)}",
                        "rejected": f"{i} {rng.choice(long_texts)}",
                        "metadata": {},
                        "content_hash": f"{i:064d}",
                        "is_gold": False,
                        "n_done": n_done[i],
                        "created_at": now,
                    }
                    for i in chunk
                ],
            )
        pair_ids = [row[0] for row in connection.execute(text("SELECT id FROM pair ORDER BY id"))]
        done, pending = [], []
        queue_length = dict.fromkeys(user_ids, 0)
        for i, pair_id in enumerate(pair_ids):
            who = rng.sample(user_ids, n_done[i] + 1)
            done += [(pair_id, user_id) for user_id in who[:-1]]
            queue_length[who[-1]] += 1
            pending.append((pair_id, who[-1], queue_length[who[-1]]))
        rows = [
            {
                "study_id": study_id,
                "pair_id": pair_id,
                "annotator_id": user_id,
                "chosen_side": rng.choice("AB"),
            }
            | {"position": n, "status": "done", "skip_count": 0, "created_at": now, "completed_at": now}
            | {"revisions": 1}
            for n, (pair_id, user_id) in enumerate(done, start=1)
        ]
        for chunk in _chunks(rows):
            connection.execute(insert(Assignment), chunk)
        first_done = connection.execute(text("SELECT min(id) FROM assignment")).scalar_one()
        rows = [
            {
                "study_id": study_id,
                "pair_id": pair_id,
                "annotator_id": user_id,
                "chosen_side": rng.choice("AB"),
            }
            | {"position": position, "status": "pending", "skip_count": 0, "created_at": now, "revisions": 0}
            for pair_id, user_id, position in pending
        ]
        for chunk in _chunks(rows):
            connection.execute(insert(Assignment), chunk)
        rows = [
            {
                "assignment_id": first_done + n,
                "revision": 1,
                "submission_id": f"seed-{n}",
                "submitted_at": now,
            }
            | {"time_on_task_s": 60.0, "preference": rng.randint(0, 4), "confidence": 2, "comment": ""}
            | {"flag": False, "flag_reason": ""}
            for n in range(len(done))
        ]
        for chunk in _chunks(rows):
            connection.execute(insert(Judgment), chunk)
        connection.execute(
            update(Assignment)
            .where(Assignment.status == "done")
            .values(current_judgment_id=Assignment.id - first_done + 1)  # judgment n+1 is assignment first+n
        )


def _call(engine: Engine, study_id: int, account: Account) -> float:
    """Milliseconds of next_assignment + show in one committed session, as the annotate page does."""
    start = time.perf_counter()
    with db.session_scope(engine) as session:
        assignment = labels.next_assignment(session, account=account, study_id=study_id)
        assert assignment is not None and assignment.id is not None
        view = labels.show(session, assignment_id=assignment.id, account=account)
        assert view.text_a and view.text_b
    return (time.perf_counter() - start) * 1000


def measure(engines: list[Engine], *, calls: int, warmup: int = 3) -> list[list[float]]:
    """Milliseconds per call on each engine, cycling over the annotators; the engines take turns call by
    call, so that a busy moment of the machine hits both alike."""
    targets = []
    for engine in engines:
        with db.session_scope(engine) as session:
            study_id = session.execute(text("SELECT id FROM study")).scalar_one()
            annotators = [account_of(user) for user in session.exec(select(User).order_by(col(User.id)))]
        targets.append((engine, study_id, annotators))
    timings: list[list[float]] = [[] for _ in engines]
    for k in range(warmup + calls):
        for (engine, study_id, annotators), out in zip(targets, timings, strict=True):
            elapsed = _call(engine, study_id, annotators[k % len(annotators)])
            if k >= warmup:
                out.append(elapsed)
    return timings


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{folder}/bench.db"


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"annotator_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def load(label: str, url: str, args: argparse.Namespace) -> Engine:
    engine = db.make_engine(url)
    db.upgrade(engine)
    start = time.perf_counter()
    build(engine, args.pairs, args.judgments)
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE"))
    print(
        f"{label}: built {args.pairs:,} pairs / {args.judgments:,} judgments "
        f"in {time.perf_counter() - start:.1f} s"
    )
    return engine


def report(label: str, timings: list[float]) -> None:
    print(
        f"{label}: next_assignment + show over {len(timings)} calls: "
        f"p50 {statistics.median(timings):.1f} ms, p95 {percentile(timings, 95):.1f} ms, "
        f"max {max(timings):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--judgments", type=int, default=300_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument(
        "--pg", default=os.environ.get("ANNOTATOR_TEST_POSTGRES"), help="PostgreSQL admin URL"
    )
    args = parser.parse_args()
    if not args.pairs * 2 <= args.judgments <= args.pairs * (ANNOTATORS - 1):
        parser.error("--judgments must be between 2 and 29 per pair")
    with ExitStack() as stack:
        engines = [load("SQLite", stack.enter_context(sqlite_database()), args)]
        if args.pg:
            engines.append(load("PostgreSQL", stack.enter_context(postgres_database(args.pg)), args))
        timings = measure(engines, calls=args.calls)
        for engine in engines:
            engine.dispose()
    report("SQLite", timings[0])
    if not args.pg:
        print("PostgreSQL: skipped (give --pg URL or set ANNOTATOR_TEST_POSTGRES)")
        return
    lite, pg = timings
    report("PostgreSQL", pg)
    p50 = statistics.median(pg) / statistics.median(lite)
    p95 = percentile(pg, 95) / percentile(lite, 95)
    verdict = "within" if max(p50, p95) <= GOAL_RATIO else "NOT within"
    print(f"PostgreSQL/SQLite: p50 {p50:.2f}x, p95 {p95:.2f}x ({verdict} the {GOAL_RATIO}x goal)")


if __name__ == "__main__":
    main()
