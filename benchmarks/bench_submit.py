"""Submit -> next question latency in the browser, on a 10,000-pair study and on a 100-pair study.

Run from the repository root: `python benchmarks/bench_submit.py [--n 30]`. It builds each study in a
temporary SQLite database (bulk inserts), starts the app on it, logs in as an annotator with a queue in
headless Debian chromium, and times the click on "Submit and next" until the next question's form is
on screen with the progress text advanced. Prints p50/p95 per study and the ratio of the p95s.
"""

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert, update  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from annotator.store import db  # noqa: E402
from annotator.store.models import Assignment, Judgment, Pair, Score, Study, User  # noqa: E402
from annotator.study import load_config  # noqa: E402
from tests.apphelpers import CHROMIUM_ARGS, IDLE, PASSWORD, password_hash, running_app  # noqa: E402

GOAL_P95_MS = 400
GOAL_RATIO = 1.2
WARMUP = 3
CROWD = 30
WORDS = "quick vegetarian dinner plan budget time oven pan fresh herbs weekly shopping list".split()
FORM = {  # widget key suffix -> option index to click
    "A_correctness": 4,
    "A_relevance": 3,
    "A_helpfulness": 4,
    "B_correctness": 1,
    "B_relevance": 2,
    "B_helpfulness": 0,
    "A_rubric0": 2,
    "A_rubric1": 1,
    "B_rubric0": 0,
    "B_rubric1": 1,
    "preference": 1,
    "confidence": 2,
}
ITEMS = ["correctness", "relevance", "helpfulness", "rubric:0", "rubric:1"]


def text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def build(engine: Engine, n_pairs: int, *, queue: int, seed: int = 0) -> None:
    """A study of `n_pairs` with 3 judgments per pair on average (10 scores each) by CROWD annotators,
    and an annotator "bench" with `queue` pending items."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    with engine.begin() as connection:
        study_id = connection.execute(
            insert(Study).values(name="bench", config=load_config().model_dump(), created_at=now)
        ).inserted_primary_key[0]
        users = [{"username": f"crowd{k:02d}", "role": "annotator"} for k in range(CROWD)]
        users.append({"username": "bench", "role": "annotator"})
        for user in users:
            user |= {"password_hash": password_hash(), "active": True, "created_at": now}
            user |= {"failed_logins": 0, "guidelines_ack_at": now}
        connection.execute(insert(User), users)
        pairs = []
        for i in range(n_pairs):
            n_done = 4 if i % 2 == 0 else 2
            pairs.append(
                {
                    "study_id": study_id,
                    "external_id": f"bench-{i}",
                    "question": f"Question {i}: " + text(rng, 25),
                    "profile": [
                        {"id": f"{i}-{k}", "category": "cooking", "text": text(rng, 60)} for k in range(10)
                    ],
                    "rubric": [
                        {"aspect": "Quick recipes", "reason": text(rng, 12), "evidence": text(rng, 8)},
                        {"aspect": "Vegetarian", "reason": text(rng, 12), "evidence": text(rng, 8)},
                    ],
                    "narrative": text(rng, 60),
                    "category": "cooking",
                    "chosen": text(rng, 220),
                    "rejected": text(rng, 200),
                    "metadata": {},
                    "content_hash": f"{i:064d}",
                    "is_gold": False,
                    "n_done": n_done,
                    "created_at": now,
                }
            )
        connection.execute(insert(Pair), pairs)
        done, pending = [], []
        for pair_id in range(1, n_pairs + 1):
            n_done = 4 if (pair_id - 1) % 2 == 0 else 2
            for k in rng.sample(range(CROWD), n_done):
                done.append((pair_id, k + 1))
        for position, pair_id in enumerate(rng.sample(range(1, n_pairs + 1), queue), start=1):
            pending.append((pair_id, position))
        assignments = [
            {
                "study_id": study_id,
                "pair_id": pair_id,
                "annotator_id": user_id,
                "chosen_side": rng.choice("AB"),
                "position": n,
                "status": "done",
                "skip_count": 0,
                "created_at": now,
                "completed_at": now,
                "revisions": 1,
            }
            for n, (pair_id, user_id) in enumerate(done, start=1)
        ]
        bench_id = CROWD + 1
        assignments += [
            {
                "study_id": study_id,
                "pair_id": pair_id,
                "annotator_id": bench_id,
                "chosen_side": rng.choice("AB"),
                "position": position,
                "status": "pending",
                "skip_count": 0,
                "created_at": now,
                "revisions": 0,
            }
            for pair_id, position in pending
        ]
        connection.execute(insert(Assignment), assignments[: len(done)])
        connection.execute(insert(Assignment), assignments[len(done) :])
        judgments = [
            {
                "assignment_id": n,
                "revision": 1,
                "submission_id": f"seed-{n}",
                "submitted_at": now,
                "time_on_task_s": 60.0,
                "preference": rng.randint(-2, 2),
                "confidence": 2,
                "comment": "",
                "flag": False,
                "flag_reason": "",
            }
            for n in range(1, len(done) + 1)
        ]
        connection.execute(insert(Judgment), judgments)
        connection.execute(
            update(Assignment)
            .where(Assignment.status == "done")
            .values(current_judgment_id=Assignment.id)  # judgment n belongs to assignment n
        )
        scores = [
            {"judgment_id": n, "response": response, "item": item, "value": float(rng.randint(1, 2))}
            for n in range(1, len(done) + 1)
            for response in ("chosen", "rejected")
            for item in ITEMS
        ]
        for start in range(0, len(scores), 50_000):
            connection.execute(insert(Score), scores[start : start + 50_000])


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


SUBMIT = "[class*='st-key-a'][class*='_submit'] button"
NEXT_READY = """([done, old]) => {
  const bar = document.querySelector("[data-testid='stProgress']");
  if (!bar || !bar.innerText.includes(done)) return false;
  if (document.querySelector(`.st-key-${old}_submit`)) return false;
  return document.querySelector("[class*='st-key-a'][class*='_submit'] button") !== null;
}"""


def current_prefix(page: Any) -> str:
    classes = page.locator("[class*='st-key-a'][class*='_submit']").first.get_attribute("class") or ""
    return (
        next(c for c in classes.split() if c.startswith("st-key-a"))
        .removeprefix("st-key-")
        .removesuffix("_submit")
    )


def measure(url: str, log: Path, *, n: int, queue: int) -> list[float]:
    """Milliseconds from the click on Submit to the next question, for `n` submissions."""
    from playwright.sync_api import sync_playwright

    timings = []
    with running_app(url, log) as base_url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2600})
        page.set_default_timeout(60_000)
        page.goto(base_url)
        page.wait_for_timeout(100)
        page.locator(IDLE).wait_for(state="attached")
        page.locator(".st-key-login_username input").fill("bench")
        page.locator(".st-key-login_password input").fill(PASSWORD)
        page.locator(".st-key-login_submit button").click()
        for k in range(WARMUP + n):
            page.locator(SUBMIT).first.wait_for()
            page.wait_for_timeout(100)
            page.locator(IDLE).wait_for(state="attached")
            if page.locator(SUBMIT).count() != 1:
                raise RuntimeError(f"expected one form on the page, found {page.locator(SUBMIT).count()}")
            prefix = current_prefix(page)
            for key, index in FORM.items():
                page.locator(f".st-key-{prefix}_{key} [data-testid='stRadioOption']").nth(index).click()
            page.locator(IDLE).wait_for(state="attached")
            start = time.perf_counter()
            page.locator(f".st-key-{prefix}_submit button").click()
            page.wait_for_function(NEXT_READY, arg=[f"{k + 1} of {queue} done", prefix], polling="raf")
            elapsed = (time.perf_counter() - start) * 1000
            if k >= WARMUP:
                timings.append(elapsed)
        browser.close()
    return timings


def run_study(n_pairs: int, *, n: int, folder: Path) -> list[float]:
    url = f"sqlite:///{folder / f'bench-{n_pairs}.db'}"
    engine = db.make_engine(url)
    db.upgrade(engine)
    started = time.perf_counter()
    queue = min(n_pairs, 10_000)
    build(engine, n_pairs, queue=queue)
    engine.dispose()
    print(f"{n_pairs:>6} pairs: built in {time.perf_counter() - started:.1f} s", flush=True)
    return measure(url, folder / f"server-{n_pairs}.log", n=n, queue=queue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="timed submissions per study")
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("Debian's chromium is needed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        results = {size: run_study(size, n=args.n, folder=folder) for size in (10_000, 100)}
    print(f"\nclick on Submit -> next question visible, {args.n} submissions after {WARMUP} warm-up")
    for size, timings in results.items():
        print(
            f"{size:>6} pairs: p50 {percentile(timings, 50):6.0f} ms   p95 {percentile(timings, 95):6.0f} ms"
            f"   max {max(timings):6.0f} ms"
        )
    ratio = percentile(results[10_000], 95) / percentile(results[100], 95)
    big_p95 = percentile(results[10_000], 95)
    print(f"p95 ratio 10,000 / 100 pairs: {ratio:.2f}")
    print(
        f"goal p95 <= {GOAL_P95_MS} ms: {'met' if big_p95 <= GOAL_P95_MS else 'NOT met'}; "
        f"goal ratio <= {GOAL_RATIO}: {'met' if ratio <= GOAL_RATIO else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
