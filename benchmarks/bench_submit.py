"""Submit -> next item drawn, in the browser, against Potato 2.12.1 on the same pairs in the same run.

Run from the repository root: `python benchmarks/bench_submit.py [--n 30] [--sizes 100 10000]
[--no-potato] [--long-only] [--screenshots DIR]`. For each size it builds a study in a temporary SQLite
database (bulk inserts), starts the app, logs in as an annotator in headless Debian chromium (1440x900)
and answers each item with number keys, then times, inside the page (benchmarks/potato.py
`measure_in_page`: from the click event to the first animation frame in which the next item's question,
both responses and every question of the form are drawn and fresh), the click on "Submit and next". Two
forms: the study's full form (3 quality dimensions and 4 rubric aspects per response, preference,
confidence: 16 questions; `--aspects 2` gives the 12-question form timed before) and a form matched to
the Potato project (one quality dimension per response, preference, confidence; no rubric). Potato
2.12.1 (pairwise + one Likert on the same pairs) runs in its own environment (benchmarks/potato.py).

Every item is answered as an annotator with a keyboard would: one digit per question (the page puts
the focus on the first question of a new item and moves it on after each answer) and Ctrl+Enter, the
timed submit. The benchmark counts those keystrokes per item.

It also measures: reload -> the same item drawn with the draft answer restored (p95), the height of the
rating page at 1440x900, the page scrolls (one viewport each) an annotator needs to read every word of
the question, the narrative and both responses and to reach every question and the submit button, and
how many boxes scroll on their own (0: the panes grow with their text). Besides the timed studies, a
small study of long items (responses of 400-600 words in paragraphs, a 250-word narrative, 4 rubric
aspects: 16 questions) gives the same counts at 1440x900 and at 390 px wide (a phone, where the A/B
switch shows one response at a time).
"""

import argparse
import functools
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, insert, select, update  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from annotator.people.accounts import hash_password  # noqa: E402
from annotator.server import BROWSER_ARGS as CHROMIUM_ARGS  # noqa: E402
from annotator.server import IDLE_SELECTOR as IDLE  # noqa: E402
from annotator.server import background as running_app  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.models import Assignment, Draft, Judgment, Pair, Score, Study, User  # noqa: E402
from annotator.study import load_config  # noqa: E402
from benchmarks.potato import VIEWPORT, WARMUP, WORDS, measure_in_page, percentile, potato_latencies  # noqa: E402

PASSWORD = "bench-submit-password"


@functools.cache
def password_hash() -> str:
    """One hash of PASSWORD for every benchmark account (Argon2id is slow on purpose)."""
    return hash_password(PASSWORD)


GOAL_P95_MS = 400
GOAL_RATIO = 1.2
CROWD = 30
FULL_FORM = {  # widget key suffix -> number key pressed on it
    "A_correctness": "5",
    "A_relevance": "4",
    "A_helpfulness": "5",
    "A_rubric0": "2",
    "A_rubric1": "1",
    "B_correctness": "2",
    "B_relevance": "3",
    "B_helpfulness": "1",
    "B_rubric0": "0",
    "B_rubric1": "1",
    "preference": "2",
    "confidence": "3",
}
MATCHED_FORM = {"A_helpfulness": "4", "B_helpfulness": "2", "preference": "2", "confidence": "2"}
LONG_FORM = {  # 16 questions: 3 dimensions and 4 rubric aspects per response, preference, confidence
    **{f"A_{k}": v for k, v in zip(["correctness", "relevance", "helpfulness"], "543", strict=True)},
    **{f"A_rubric{k}": v for k, v in zip(range(4), "2102", strict=True)},
    **{f"B_{k}": v for k, v in zip(["correctness", "relevance", "helpfulness"], "234", strict=True)},
    **{f"B_rubric{k}": v for k, v in zip(range(4), "1012", strict=True)},
    "preference": "2",
    "confidence": "3",
}
PHONE = {"width": 390, "height": 844}
ITEMS = ["correctness", "relevance", "helpfulness", "rubric:0", "rubric:1"]
ASPECTS = ["Quick recipes", "Vegetarian", "Little washing up", "Leftovers for lunch"]


def text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def matched_config() -> dict[str, Any]:
    """The study config matched to the Potato project: one quality dimension (helpfulness)."""
    config = load_config().model_dump()
    dimensions = config["quality"]["dimensions"]
    config["quality"]["dimensions"] = [d for d in dimensions if d["name"] == "helpfulness"]
    return config


def long_text(rng: random.Random, n_words: int, n_paragraphs: int) -> str:
    return "\n\n".join(text(rng, n_words // n_paragraphs) for _ in range(n_paragraphs))


def build(
    engine: Engine,
    n_pairs: int,
    *,
    queue: int,
    seed: int = 0,
    matched: bool = False,
    long: bool = False,
    aspects: int = 2,
) -> None:
    """A study of `n_pairs` with 3 judgments per pair on average (10 scores each) by CROWD annotators,
    and an annotator "bench" with `queue` pending items (`matched`: the Potato-matched form, no rubric;
    `long`: responses of 400-600 words in paragraphs and a long narrative), with `aspects` rubric
    aspects per pair."""
    rng = random.Random(seed)
    extra = random.Random(seed + 1)  # aspects past two: the texts stay potato.pair_texts' for any number
    now = datetime.now(UTC)
    config = matched_config() if matched else load_config().model_dump()
    with engine.begin() as connection:
        study_id = connection.execute(
            insert(Study).values(name="bench", config=config, created_at=now)
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
                    "rubric": []
                    if matched
                    else [
                        {"aspect": aspect, "reason": text(source, 12), "evidence": text(source, 8)}
                        for n, aspect in enumerate(ASPECTS[:aspects])
                        for source in [rng if n < 2 else extra]
                    ],
                    "narrative": long_text(rng, 250, 3) if long else text(rng, 60),
                    "category": "cooking",
                    "chosen": long_text(rng, 600, 6) if long else text(rng, 220),
                    "rejected": long_text(rng, 400, 4) if long else text(rng, 200),
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


#: The next item is drawn: the page marks another item (`arg`: [old item tag, number of questions, old
#: question text, old response A]), the question and both responses are the new ones and visible, every
#: question of the form is visible and unanswered (the form's widgets are the same elements on every
#: item: their values are reset), nothing is stale, and the submit button is enabled and takes input.
NEXT_COMPLETE = """([old, questions, oldQuestion, oldPane]) => {
  const shown = (el) => !!el && el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })
    && el.getClientRects().length > 0;
  const tag = document.body.dataset.psItem;
  if (!tag || tag === old || document.body.dataset.psReady !== tag) return false;
  if (document.querySelector("[data-stale='true']")) return false;
  const groups = [...document.querySelectorAll("[class*='st-key-q_'] [data-testid='stButtonGroup']")];
  if (groups.length !== questions) return false;
  for (const g of groups) {
    if (!shown(g) || !g.querySelector("button")) return false;
    if (g.querySelector("button[aria-checked='true']")) return false;
  }
  const question = document.querySelector("[data-testid='stAlertContentInfo']");
  if (!shown(question) || !question.textContent.trim() || question.textContent === oldQuestion) return false;
  for (const side of ["A", "B"]) {  // a pane only groups its paragraphs: the paragraphs must show
    const pane = document.querySelector(`.st-key-pane_${side}`);
    const texts = pane ? [...pane.querySelectorAll("[data-testid='stMarkdownContainer']")] : [];
    if (texts.length < 2 || !texts.every(shown) || !pane.textContent.trim()) return false;
    if (side === "A" && pane.textContent === oldPane) return false;
  }
  const submit = document.querySelector(".st-key-annotate_submit button");
  return shown(submit) && !submit.disabled && getComputedStyle(submit).pointerEvents !== "none";
}"""
FORM = "q"  # the rating form's widget-key prefix (annotate.FORM_PREFIX)


def on_screen(page: Any) -> list[str]:
    """The item on screen: its tag ("a12r0"), its question and response A (to tell the next one)."""
    return list(
        page.evaluate(
            """() => [document.body.dataset.psItem,
                     document.querySelector("[data-testid='stAlertContentInfo']").textContent,
                     document.querySelector(".st-key-pane_A").textContent]"""
        )
    )


def settle(page: Any) -> None:
    page.wait_for_timeout(100)
    page.locator(IDLE).wait_for(state="attached")


def answer(page: Any, form: dict[str, str]) -> int:
    """Answer every question with its number key, as typed: no Tab, no click (the page focuses the
    first question and moves on after each answer); checks that each key answered the next question
    in page order. Returns the keystrokes."""
    keys = 0
    for key, digit in form.items():
        page.keyboard.press(digit)
        keys += 1
        page.locator(f".st-key-{FORM}_{key} button[aria-checked=true]").wait_for()
    settle(page)
    return keys


#: Page scrolls (one viewport, 90% of its height, each) to bring into view, in page order, every line
#: of the question, the narrative and both responses, every question and the submit button; and how
#: many boxes with text scroll on their own (a box's own scroll is extra work the page scroll hides).
#: On a phone only the response on screen counts (the A/B switch shows the other at the same place).
READING_JS = """() => {
  const main = document.querySelector("[data-testid='stMain']");
  main.scrollTo(0, 0);
  const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  const md = "[data-testid='stMarkdownContainer']";
  const targets = [...document.querySelectorAll(
    `[data-testid='stAlertContentInfo'], [data-testid='stExpanderDetails'] ${md}, .st-key-pane_A ${md},`
    + ` .st-key-pane_B ${md}, [class*='st-key-q_'] [data-testid='stButtonGroup'], .st-key-annotate_submit`,
  )].filter(visible);
  const top = (el) => el.getBoundingClientRect().bottom + main.scrollTop;
  targets.sort((a, b) => top(a) - top(b));
  let actions = 0;
  for (const el of targets) {
    while (el.getBoundingClientRect().bottom > window.innerHeight
           && main.scrollTop + main.clientHeight < main.scrollHeight) {
      main.scrollBy(0, window.innerHeight * 0.9);
      actions += 1;
    }
  }
  const inner = [...main.querySelectorAll("*")].filter((el) => {
    const style = getComputedStyle(el);
    return /(auto|scroll)/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 2
      && el.textContent.trim().length > 0;
  }).length;
  main.scrollTo(0, 0);
  return { scrolls: actions, innerScrollBoxes: inner, height: main.scrollHeight };
}"""


def reading(page: Any) -> dict[str, int]:
    """The page's height, the page scrolls to read and answer an item, the boxes that scroll on their own."""
    return dict(page.evaluate(READING_JS))


def log_in(page: Any, base_url: str) -> None:
    page.goto(base_url)
    settle(page)
    page.locator(".st-key-login_username input").fill("bench")
    page.locator(".st-key-login_password input").fill(PASSWORD)
    page.locator(".st-key-login_submit button").click()
    page.locator(".st-key-annotate_submit button").wait_for()
    settle(page)


def wait_form(page: Any, form: dict[str, str]) -> None:
    page.locator("[class*='st-key-q_'] [data-testid='stButtonGroup']").nth(len(form) - 1).wait_for()
    page.wait_for_function("() => document.body.dataset.psReady === document.body.dataset.psItem")
    settle(page)


def last_draft_save(engine: Engine) -> datetime | None:
    """When a draft was last saved (None: no draft)."""
    with engine.connect() as connection:
        return connection.execute(select(func.max(Draft.updated_at))).scalar()  # type: ignore[arg-type]


def wait_draft_saved(engine: Engine, *, after: datetime | None, timeout_s: float = 30.0) -> None:
    """Wait until the server has saved a draft later than `after` (the answer's rerun saves it)."""
    deadline = time.perf_counter() + timeout_s
    while (saved := last_draft_save(engine)) is None or (after is not None and saved <= after):
        if time.perf_counter() > deadline:
            raise TimeoutError("the answer's draft was not saved")
        time.sleep(0.02)


def measure(url: str, log: Path, *, n: int, form: dict[str, str], reloads: int) -> dict[str, Any]:
    """Submit -> next item (ms, in the page) for `n` items after WARMUP; reload -> draft restored (ms);
    page height and scroll actions per item."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {"submit": [], "reload": []}
    with running_app(url, log) as base_url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(60_000)
        log_in(page, base_url)
        wait_form(page, form)
        out |= reading(page)
        out["keys"] = []
        for k in range(WARMUP + n):
            wait_form(page, form)
            tag, question, pane = on_screen(page)
            keys = answer(page, form)
            ms = measure_in_page(
                page,
                lambda: page.keyboard.press("Control+Enter"),
                NEXT_COMPLETE,
                [tag, len(form), question, pane],
            )
            out["keys"].append(keys + 1)
            if k >= WARMUP:
                out["submit"].append(ms)
        engine = db.make_engine(url)
        key = next(iter(form))
        for k in range(reloads):
            settle(page)
            item = on_screen(page)[1:]  # the tag is new per display; the texts say which item it is
            saved = last_draft_save(engine)
            page.locator(f".st-key-{FORM}_{key} [data-testid='stButtonGroup'] button").first.focus()
            page.keyboard.press("12"[k % 2])  # another answer each time: the same key again would clear it
            page.locator(f".st-key-{FORM}_{key} button[aria-checked=true]").wait_for()
            wait_draft_saved(engine, after=saved)
            settle(page)
            started = time.perf_counter()
            page.reload()
            page.locator(f".st-key-{FORM}_{key} button[aria-checked=true]").wait_for()
            page.locator(".st-key-annotate_submit button").wait_for()
            assert on_screen(page)[1:] == item, "the reload brought back another item"
            out["reload"].append((time.perf_counter() - started) * 1000)
        engine.dispose()
        browser.close()
    return out


#: On a phone: where paragraph 2 of A and of B sit on the page (the A/B switch keeps them level).
PARAGRAPH_TOPS = """() => ["A", "B"].map((side) => Math.round(document.querySelectorAll(
  `.st-key-pane_${side} [data-testid='stMarkdownContainer']`)[2].getBoundingClientRect().top))"""


def whole_page(page: Any, viewport: dict[str, int], height: int, path: Path) -> None:
    """A screenshot of the whole page: Streamlit scrolls inside its own container, so the viewport
    grows to the page's height for the picture and is put back after it."""
    page.set_viewport_size({"width": viewport["width"], "height": height})
    settle(page)
    page.screenshot(path=path)
    page.set_viewport_size(viewport)
    settle(page)


def measure_long(url: str, log: Path, *, n: int, shots: Path | None = None) -> dict[str, Any]:
    """Keystrokes, page scrolls and boxes with their own scroll per long item at 1440x900, and at
    390 px wide on each side of the A/B switch (n items answered at the desktop width); with `shots`,
    a full-page screenshot of the first item at each (desktop.png, phone-A.png, phone-B.png)."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {"keys": []}
    with running_app(url, log) as base_url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(60_000)
        log_in(page, base_url)
        wait_form(page, LONG_FORM)
        out["desktop"] = reading(page)
        if shots is not None:
            whole_page(page, VIEWPORT, out["desktop"]["height"], shots / "desktop.png")
        for _ in range(n):
            wait_form(page, LONG_FORM)
            tag = on_screen(page)[0]
            keys = answer(page, LONG_FORM)
            page.keyboard.press("Control+Enter")
            page.wait_for_function("(old) => document.body.dataset.psItem !== old", arg=tag)
            out["keys"].append(keys + 1)
        phone = browser.new_page(viewport=PHONE)
        phone.set_default_timeout(60_000)
        log_in(phone, base_url)
        wait_form(phone, LONG_FORM)
        out["phone_A"] = reading(phone)
        tops_a = phone.evaluate(PARAGRAPH_TOPS)
        if shots is not None:
            whole_page(phone, PHONE, out["phone_A"]["height"], shots / "phone-A.png")
        phone.get_by_role("button", name="Response B", exact=True).click()
        out["phone_B"] = reading(phone)
        if shots is not None:
            whole_page(phone, PHONE, out["phone_B"]["height"], shots / "phone-B.png")
        tops_b = phone.evaluate(PARAGRAPH_TOPS)
        out["offset"] = abs(tops_a[0] - tops_b[1])  # A's paragraph 2 before the switch, B's after
        browser.close()
    return out


def run_long(*, n: int, folder: Path, shots: Path | None = None) -> dict[str, Any]:
    url = f"sqlite:///{folder / 'bench-long.db'}"
    engine = db.make_engine(url)
    db.upgrade(engine)
    build(engine, 20, queue=20, long=True, aspects=4)
    engine.dispose()
    return measure_long(url, folder / "server-long.log", n=n, shots=shots)


def full_form(aspects: int) -> dict[str, str]:
    """The full form with `aspects` rubric aspects per response (2: 12 questions; 4: 16)."""
    return LONG_FORM if aspects == 4 else FULL_FORM


def run_study(
    n_pairs: int, *, n: int, folder: Path, matched: bool, reloads: int, aspects: int = 4
) -> dict[str, Any]:
    name = f"bench-{n_pairs}-{'matched' if matched else 'full'}"
    url = f"sqlite:///{folder / f'{name}.db'}"
    engine = db.make_engine(url)
    db.upgrade(engine)
    started = time.perf_counter()
    queue = min(n_pairs, 10_000)
    build(engine, n_pairs, queue=queue, matched=matched, aspects=aspects)
    engine.dispose()
    print(f"{name}: built in {time.perf_counter() - started:.1f} s", flush=True)
    form = MATCHED_FORM if matched else full_form(aspects)
    return measure(url, folder / f"server-{name}.log", n=n, form=form, reloads=reloads)


def row(label: str, timings: list[float]) -> str:
    return f"{label:<34} p50 {percentile(timings, 50):6.0f} ms   p95 {percentile(timings, 95):6.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="timed submissions per study")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000], help="study sizes (pairs)")
    parser.add_argument("--reloads", type=int, default=10, help="timed reloads (full form, first size)")
    parser.add_argument("--no-potato", action="store_true", help="skip the Potato baseline")
    parser.add_argument("--screenshots", type=Path, help="save the long item's pages here (PNG)")
    parser.add_argument("--long-only", action="store_true", help="only the long items' counts")
    parser.add_argument(
        "--aspects", type=int, choices=[2, 4], default=4, help="rubric aspects per response in the full form"
    )
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("Debian's chromium is needed (apt-get install chromium)")
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in [] if args.long_only else args.sizes:
            full = run_study(
                size, n=args.n, folder=folder, matched=False, reloads=args.reloads, aspects=args.aspects
            )
            matched = run_study(size, n=args.n, folder=folder, matched=True, reloads=0)
            lines.append(row(f"{size:>6} pairs, Pair Studio full form", full["submit"]))
            lines.append(row(f"{size:>6} pairs, Pair Studio matched", matched["submit"]))
            if not args.no_potato:
                potato = potato_latencies(size, args.n)
                lines.append(row(f"{size:>6} pairs, Potato 2.12.1", potato))
            if full["reload"]:
                lines.append(row(f"{size:>6} pairs, reload -> draft back", full["reload"]))
            lines.append(
                f"{size:>6} pairs, full form ({len(full_form(args.aspects))} questions): "
                f"{max(full['keys'])} keystrokes per item, "
                f"{full['scrolls']} page scroll(s), {full['innerScrollBoxes']} self-scrolling box(es), "
                f"page {full['height']} px at 1440x900; matched form: {max(matched['keys'])} keystrokes, "
                f"{matched['scrolls']} scroll(s), {matched['height']} px"
            )
            print("\n".join(lines[-5:]), flush=True)
        if args.screenshots is not None:
            args.screenshots.mkdir(parents=True, exist_ok=True)
        long = run_long(n=3, folder=folder, shots=args.screenshots)
        desktop, phone_a, phone_b = long["desktop"], long["phone_A"], long["phone_B"]
        lines.append(
            f"long items (400-600 words, 16 questions): {min(long['keys'])}-{max(long['keys'])} keystrokes "
            f"per item; 1440x900: {desktop['scrolls']} page scroll(s), {desktop['innerScrollBoxes']} box(es) "
            f"with their own scroll, page {desktop['height']} px; 390 px: {phone_a['scrolls']} scroll(s) "
            f"for A and its questions ({phone_a['height']} px), {phone_b['scrolls']} for B, "
            f"{phone_a['innerScrollBoxes'] + phone_b['innerScrollBoxes']} box(es) with their own scroll; "
            f"A/B switch: paragraph 2 moves {long['offset']} px"
        )
        print(lines[-1], flush=True)
    print(f"\nclick on submit -> next item drawn (in the page), {args.n} items after {WARMUP} warm-up")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
