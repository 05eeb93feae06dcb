"""Concurrent submits: N processes submitting and revising judgments on one database at once.

Run: python benchmarks/bench_concurrency.py [--procs 20] [--per-proc 250] [--pairs 200]
     python benchmarks/bench_concurrency.py --pg postgresql+psycopg://USER:PW@HOST:5432/postgres

Sets up one study (`--pairs` pairs) and procs/2 annotators who each have every pair in their queue;
two processes ("spawn", each with its own engine) work for each annotator, like two browser tabs:
tab 0 walks the queue from the start, tab 1 from the middle, and about one submit in five revises an
item seen earlier, so the two tabs often revise the same item at the same time. Every 25th submit is a
double submit: both tabs send the same form (same submission id) for the same item. All processes
start together at a barrier. Without --pg the database is a fresh SQLite file (WAL); with --pg a
scratch database is created on that server (the URL names an existing database to connect to for
CREATE/DROP DATABASE) and dropped at the end.

Checks (each must be 0): lost or duplicated judgments (every distinct submission id saved exactly once
on its item), revision numbers not 1..n per item, items whose current judgment is not the newest
revision (or whose revision count is off), judgments with missing scores, submit events != judgments,
pair counters (n_done) off, errors raised to a worker. Prints p50/p99 submit latency (one
transaction per submit, as the app does it) and the throughput over the whole run. A submit whose
SQLite busy timeout runs out ("database is locked") is resubmitted with the same submission id (at
most 3 times), as the annotator would press the button again; these are counted and printed.
"""

import argparse
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.utils.factories, also in the spawned workers

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from sqlalchemy.exc import OperationalError  # noqa: E402
from sqlmodel import Session, col, select  # noqa: E402

from annotator.intake import ingest  # noqa: E402
from annotator.intake.assign import assign  # noqa: E402
from annotator.people.accounts import hash_password  # noqa: E402
from annotator.people.authorization import SYSTEM, account_of  # noqa: E402
from annotator.rating import labels  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.models import Assignment, Event, Judgment, Pair, Score, User, id_of  # noqa: E402
from annotator.study import load_config
from annotator.synthetic import complete_form

DIMENSIONS = tuple(load_config().dimension_names)

N_ASPECTS = 3
SCORES_PER_JUDGMENT = 2 * (len(DIMENSIONS) + N_ASPECTS)
RETRIES = 3  # resubmits (same submission id) after "database is locked", as a person would

Step = tuple[int, int, str, int]  # user id, assignment id, submission id, answer seed


def worker(url: str, steps: list[Step], barrier: Any, results: Any) -> None:
    engine = db.make_engine(url)
    with Session(engine) as session:  # connect and warm up (imports, mapper set-up) before the clock
        acting_as = {id_of(user): account_of(user) for user in session.exec(select(User))}  # each as itself
        labels.current_answers(session, assignment_id=steps[0][1], account=acting_as[steps[0][0]])
    latencies, errors, locked = [], [], 0
    barrier.wait()
    started = time.time()
    for user_id, assignment_id, submission_id, k in steps:
        t0 = time.perf_counter()
        for attempt in range(RETRIES + 1):
            try:
                with db.session_scope(engine) as session:
                    labels.submit(
                        session,
                        assignment_id=assignment_id,
                        account=acting_as[user_id],
                        submission=complete_form(
                            submission_id, k, dimensions=DIMENSIONS, n_aspects=N_ASPECTS
                        ),
                    )
                break
            except OperationalError as exc:  # the busy timeout ran out: the annotator presses submit again
                if "locked" not in str(exc) or attempt == RETRIES:
                    errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
                    break
                locked += 1
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
                break
        latencies.append(time.perf_counter() - t0)
    results.put((started, time.time(), latencies, errors, locked))
    engine.dispose()


def setup(url: str, n_pairs: int, n_annotators: int, folder: Path) -> dict[int, list[int]]:
    engine = db.make_engine(url)
    db.upgrade(engine)
    records = [
        {
            "id": f"c-{i}",
            "question": f"Question {i}?",
            "profile": [{"id": f"p{i}-{k}", "category": "c", "text": f"Post {k}"} for k in range(5)],
            "rubric_aspects": [{"aspect": f"A{k}", "reason": "r", "evidence": "e"} for k in range(N_ASPECTS)],
            "narrative": "n",
            "category": "c",
            "chosen": f"Chosen {i}",
            "rejected": f"Rejected {i}",
        }
        for i in range(n_pairs)
    ]
    path = folder / "pairs.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    ingest.import_file(engine, path, study="bench", account=SYSTEM)
    password = hash_password("bench-password")
    with db.session_scope(engine) as session:
        for k in range(n_annotators):
            session.add(User(username=f"tab{k:02d}", role="annotator", password_hash=password))
        session.flush()
        assign(session, study="bench", overlap=n_annotators, seed=0, account=SYSTEM)
    with Session(engine) as session:
        rows = session.exec(
            select(Assignment.annotator_id, Assignment.id).order_by(
                col(Assignment.annotator_id), col(Assignment.position)
            )
        ).all()
    engine.dispose()
    queues: dict[int, list[int]] = defaultdict(list)
    for user_id, assignment_id in rows:
        queues[int(user_id)].append(int(assignment_id or 0))
    return queues


def plans(
    queues: dict[int, list[int]], per_proc: int, seed: int
) -> tuple[list[list[Step]], dict[int, set[str]]]:
    rng = random.Random(seed)
    result: list[list[Step]] = []
    expected: dict[int, set[str]] = defaultdict(set)
    for user_id, queue in queues.items():
        for tab in range(2):
            steps: list[Step] = []
            pointer = 0 if tab == 0 else len(queue) // 2
            seen: list[int] = []
            for i in range(per_proc):
                if i % 25 == 0:  # the same form from both tabs
                    assignment_id, submission_id = queue[(i // 25) % len(queue)], f"u{user_id}-double-{i}"
                elif seen and rng.random() < 0.2:  # revise an item seen earlier
                    assignment_id, submission_id = rng.choice(seen), f"u{user_id}-t{tab}-{i}"
                else:
                    assignment_id, submission_id = queue[pointer % len(queue)], f"u{user_id}-t{tab}-{i}"
                    pointer += 1
                seen.append(assignment_id)
                steps.append((user_id, assignment_id, submission_id, i + tab))
                expected[assignment_id].add(submission_id)
            result.append(steps)
    return result, expected


def check(url: str, expected: dict[int, set[str]]) -> dict[str, int]:
    engine = db.make_engine(url)
    with Session(engine) as session:
        judgments = session.exec(select(Judgment)).all()
        assignments = {a.id: a for a in session.exec(select(Assignment))}
        scores = Counter(session.exec(select(Score.judgment_id)).all())
        events = len(session.exec(select(Event.id).where(Event.action == "submit")).all())
        n_done = {p.id: p.n_done for p in session.exec(select(Pair))}
    engine.dispose()
    by_assignment: dict[int, list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        by_assignment[judgment.assignment_id].append(judgment)
    saved_ids = Counter(j.submission_id for j in judgments)
    wanted = {s for ids in expected.values() for s in ids}
    problems = {
        "lost": len(wanted - set(saved_ids)),
        "duplicated": sum(n - 1 for n in saved_ids.values()) + len(set(saved_ids) - wanted),
        "revision gaps": 0,
        "current not newest": 0,
        "incomplete scores": sum(scores[j.id] != SCORES_PER_JUDGMENT for j in judgments),
        "submit events off": abs(events - len(judgments)),
        "pair counters off": 0,
    }
    for assignment_id, rows in by_assignment.items():
        rows.sort(key=lambda j: j.revision)
        if [j.revision for j in rows] != list(range(1, len(rows) + 1)):
            problems["revision gaps"] += 1
        assignment = assignments[assignment_id]
        if assignment.current_judgment_id != rows[-1].id or assignment.revisions != len(rows):
            problems["current not newest"] += 1
    done = Counter(a.pair_id for a in assignments.values() if a.status == "done")
    problems["pair counters off"] = sum(n_done[p] != done.get(p, 0) for p in n_done)
    problems["judgments saved"] = len(judgments)
    problems["judgments expected"] = len(wanted)
    problems["max revisions of one item"] = max((len(r) for r in by_assignment.values()), default=0)
    return problems


def run(url: str, args: argparse.Namespace, folder: Path) -> None:
    queues = setup(url, args.pairs, args.procs // 2, folder)
    steps, expected = plans(queues, args.per_proc, args.seed)
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(len(steps)), ctx.Queue()
    processes = [ctx.Process(target=worker, args=(url, plan, barrier, results)) for plan in steps]
    for process in processes:
        process.start()
    collected = [results.get(timeout=1800) for _ in processes]
    for process in processes:
        process.join()
    start = min(c[0] for c in collected)
    end = max(c[1] for c in collected)
    latencies = sorted(x for c in collected for x in c[2])
    errors = [e for c in collected for e in c[3]]
    locked = sum(c[4] for c in collected)
    quantiles = statistics.quantiles(latencies, n=100)
    backend = make_url(url).get_backend_name()
    print(f"{backend}: {len(steps)} processes x {args.per_proc} submits = {len(latencies)} submits")
    print(
        f"  latency p50 {quantiles[49] * 1000:.1f} ms, p99 {quantiles[98] * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms; throughput {len(latencies) / (end - start):.0f} submits/s "
        f"({end - start:.1f} s wall)"
    )
    problems = check(url, expected)
    problems["errors raised"] = len(errors)
    print(f"  busy timeouts, resubmitted with the same submission id: {locked}")
    for name, value in problems.items():
        print(f"  {name}: {value}")
    for error in Counter(errors).most_common(5):
        print(f"  error x{error[1]}: {error[0]}")
    bad = [
        k for k in problems if k not in ("judgments saved", "judgments expected", "max revisions of one item")
    ]
    if any(problems[k] for k in bad):
        print("  FAILED")
        sys.exit(1)
    print("  OK: nothing lost, nothing duplicated, every revision kept")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=20, help="processes (two per annotator)")
    parser.add_argument("--per-proc", type=int, default=250, help="submits per process")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pg", help="PostgreSQL admin URL: run there in a scratch database")
    args = parser.parse_args()
    if args.procs < 2 or args.procs % 2:
        parser.error("--procs must be even (two tabs per annotator)")
    with tempfile.TemporaryDirectory() as folder:
        if not args.pg:
            run(f"sqlite:///{folder}/bench.db", args, Path(folder))
            return
        admin_url = make_url(args.pg)
        name = f"annotator_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            run(admin_url.set(database=name).render_as_string(hide_password=False), args, Path(folder))
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
