"""First draw of every researcher and adjudicator page on the demo database, in headless chromium.

Builds the demo (`annotator demo`'s builder) in a temporary folder unless --db names one, starts the app,
logs in as the demo researcher (and the demo adjudicator for the Adjudicate page) and opens each page by
its address: the time from the navigation until the page's script run has finished and its title is
drawn. The first visit of a page is "cold" (its caches empty); the median of the later visits is "warm".
Goal: every first draw under 2 s. With --shots DIR it also saves a screenshot of each page at 1440x900
and at 390 px wide, and prints the serious or critical axe-core violations of each.
Run: python benchmarks/bench_researcher_pages.py [--visits 3] [--shots DIR] [--db sqlite:///...]

With --pairs N [N ...] it instead times the pages whose work could grow with the study (Progress,
Validation, Adjudicate, Import and assign) on complete studies of N pairs x 3 annotators built by
bench_analyze's bulk builder (kept in --workdir for the next call; --fresh DIR copies DIR/pages-N.db
over it first, so every run starts from the same data), logged in as a researcher. Per page: the first
visit ever ("first": nothing computed yet), the later visits ("warm"), then one judgment is written (a
new revision of an existing one, with its scores) and the next visit is timed ("cold": the first visit
after a change of the data, what a researcher meets during a live study). Logging in lands on Progress,
the server's first page: that draw is timed from the click ("Log in -> Progress"), and every timed visit
starts after it has finished (a visit that overlapped it would pay for both). Where the database stores
results computed ahead of the visit (a `storedresult` table), it then waits until the stored report
and queue cover that judgment: "lag" is the seconds from the write until then. With --stored the
report and the queue are stored on the current data before the server starts (a live study, whose
report worker keeps them): the first visits draw them instead of starting their computation. The
1-minute load average is printed beside each page.
"""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

from annotator.demo import CREDENTIALS, build_demo  # noqa: E402
from annotator.server import BROWSER_ARGS, IDLE_SELECTOR  # noqa: E402
from annotator.server import background as running_app  # noqa: E402

#: (account, path, title) of every page a researcher or adjudicator opens.
PAGES = [
    ("demo_researcher", "progress", "Progress"),
    ("demo_researcher", "validation", "Validation"),
    ("demo_researcher", "annotators", "Annotators"),
    ("demo_researcher", "adjudicate", "Adjudicate"),
    ("demo_researcher", "data", "Import and assign"),
    ("demo_researcher", "settings", "Study settings"),
    ("demo_researcher", "downloads", "Downloads"),
    ("demo_adjudicator", "", "Adjudicate"),
]
TALL = "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain] *')].map(e => e.scrollHeight))"
WIDTHS = {"wide": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


#: (path, title) of the pages whose work could grow with the study, in the order a researcher opens them.
GROWING = [
    ("progress", "Progress"),
    ("validation", "Validation"),
    ("adjudicate", "Adjudicate"),
    ("data", "Import and assign"),
]
RESEARCHER = ("bench_researcher", "a-long-bench-password-7")


def log_in(page: Page, base_url: str, username: str, password: str | None = None) -> float:
    """Log in; seconds from the click until the page it lands on (a researcher's: Progress) has
    finished its run, so that no timed visit overlaps the landing page's."""
    page.goto(base_url)
    page.wait_for_selector(IDLE_SELECTOR, state="attached")
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password or CREDENTIALS[username][1])
    start = time.perf_counter()
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name="Log out").wait_for(timeout=60_000)
    page.wait_for_selector(IDLE_SELECTOR, state="attached", timeout=900_000)
    return time.perf_counter() - start


def first_draw(page: Page, url: str, title: str) -> tuple[float, float]:
    """Seconds from navigating to `url` until its title `title` is drawn, and until its run has
    finished (every element drawn)."""
    start = time.perf_counter()
    page.goto(url)
    page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=900_000)
    drawn = time.perf_counter() - start
    page.wait_for_selector(IDLE_SELECTOR, state="attached", timeout=900_000)
    return drawn, time.perf_counter() - start


def serious(page: Page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results: Any = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['nodes'][0]['html'][:100]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def study_database(n_pairs: int, folder: Path) -> str:
    """A complete study of `n_pairs` x 3 (built once per folder) with a researcher account."""
    from bench_analyze import build
    from sqlmodel import select

    from annotator.people import accounts
    from annotator.people.authorization import SYSTEM
    from annotator.store import db, tallies
    from annotator.store.models import User

    path = folder / f"pages-{n_pairs}.db"
    url = f"sqlite:///{path}"
    if not path.exists():
        build(url, n_pairs=n_pairs, n_annotators=3, n_aspects=5)
    db.upgrade(url)  # a database built by an older tree
    engine = db.make_engine(url)
    with db.session_scope(engine) as session:
        # the builder writes its rows in bulk, past the services that keep the Progress tallies: count
        # them once, as every write through the tool keeps them (else the first read recounts them)
        tallies.ensure(session)
        if session.exec(select(User).where(User.username == RESEARCHER[0])).first() is None:
            accounts.add_user(
                session, username=RESEARCHER[0], role="researcher", password=RESEARCHER[1], account=SYSTEM
            )
    engine.dispose()
    return url


def store_results(url: str) -> None:
    """Store the study's report and adjudication queue on its current data, as the report worker of a
    live study keeps them, so that the first visits draw them instead of starting their computation."""
    from sqlmodel import select

    from annotator.review import stored_results
    from annotator.store import db
    from annotator.store.models import Study

    engine = db.make_engine(url)
    for kind in ("report", "adjudication"):
        with db.session_scope(engine) as session:
            study = session.exec(select(Study.name)).one()
            version = stored_results.current_version(session, study=study, kind=kind)
        stored_results.compute_and_save(engine, study=study, kind=kind, version=version)
    engine.dispose()


def write_judgment(url: str) -> int:
    """A new revision of the newest judgment (same answers and scores), as a revising annotator leaves
    it; returns its id."""
    from sqlalchemy import func, insert, select, update

    from annotator.store import db
    from annotator.store.models import Assignment, Judgment, Score

    try:
        from annotator.store import tallies
    except ImportError:  # a tree from before the tallies (a "before" run)
        tallies = None  # type: ignore[assignment]
    engine = db.make_engine(url)
    with db.session_scope(engine) as session:
        newest = session.exec(select(Judgment).order_by(Judgment.id.desc()).limit(1)).first()[0]  # type: ignore[union-attr]
        revision = (
            1
            + session.execute(
                select(func.max(Judgment.revision)).where(Judgment.assignment_id == newest.assignment_id)
            ).scalar()
        )
        fields = {c.name: getattr(newest, c.name) for c in Judgment.__table__.columns if c.name != "id"}
        fields |= {"revision": revision, "submission_id": f"bench-{time.time_ns()}"}
        new_id = session.execute(insert(Judgment).values(**fields).returning(Judgment.id)).scalar_one()
        scores = session.execute(
            select(Score.response, Score.item, Score.value).where(Score.judgment_id == newest.id)
        ).all()
        session.execute(
            insert(Score),
            [{"judgment_id": new_id, "response": r, "item": i, "value": v} for r, i, v in scores],
        )
        session.execute(
            update(Assignment)
            .where(Assignment.id == newest.assignment_id)
            .values(current_judgment_id=new_id, revisions=revision)
        )
        if tallies is not None:  # the Progress page's tallies, as the submit keeps them
            owner = session.execute(
                select(Assignment.study_id, Assignment.annotator_id).where(
                    Assignment.id == newest.assignment_id
                )
            ).one()
            tallies.submitted(
                session,
                study_id=owner[0],
                annotator_id=owner[1],
                status="done",
                before=newest.time_on_task_s,
                seconds=newest.time_on_task_s,
                at=newest.submitted_at,
            )
    engine.dispose()
    return int(new_id)


def stored_lag(url: str, judgment_id: int, written: float, *, timeout: float = 900) -> float | None:
    """Seconds from `written` until every stored result covers judgment `judgment_id` (None: the
    database stores none)."""
    from sqlalchemy import inspect, text

    from annotator.store import db

    engine = db.make_engine(url)
    try:
        if "storedresult" not in inspect(engine).get_table_names():
            return None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                oldest = connection.execute(text("SELECT min(newest_judgment) FROM storedresult")).scalar()
            if oldest is None:
                return None
            if oldest >= judgment_id:
                return time.perf_counter() - written
            time.sleep(0.25)
        return float("inf")
    finally:
        engine.dispose()


def by_size(
    sizes: list[int],
    visits: int,
    workdir: Path | None,
    only: list[str] | None = None,
    fresh: Path | None = None,
    stored: bool = False,
) -> None:
    """Each growing page at each study size: title drawn and run done; first, warm, cold after a write,
    and the stored results' lag behind that write."""
    import os

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_pages_") as tmp:
        folder = workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n_pairs in sizes:
            if fresh is not None:
                copy_fresh(fresh / f"pages-{n_pairs}.db", folder / f"pages-{n_pairs}.db")
            url = study_database(n_pairs, folder)
            if stored:
                store_results(url)
            log = Path(tmp) / f"server-{n_pairs}.log"
            with running_app(url, log) as base_url, sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=shutil.which("chromium"), args=list(BROWSER_ARGS)
                )
                page = browser.new_context(viewport=WIDTHS["wide"]).new_page()
                landing = log_in(page, base_url, *RESEARCHER)
                print(
                    f"{n_pairs:>7,} pairs log in -> Progress (the server's first page) {landing:6.2f} s",
                    flush=True,
                )
                no_visit = float("nan")  # the landing has no later visit and no visit after a write
                rows.append(
                    (
                        n_pairs,
                        "Log in -> Progress",
                        landing,
                        no_visit,
                        os.getloadavg()[0],
                        no_visit,
                        no_visit,
                        None,
                    )
                )
                for path, title in GROWING:
                    if only and path not in only:
                        continue
                    load = os.getloadavg()[0]
                    times = [first_draw(page, f"{base_url}/{path}", title) for _ in range(visits)]
                    done = [t[1] for t in times]
                    warm = statistics.median(done[1:]) if len(done) > 1 else float("nan")
                    judgment = write_judgment(url)
                    written = time.perf_counter()
                    cold_load = os.getloadavg()[0]
                    cold = first_draw(page, f"{base_url}/{path}", title)[1]
                    lag = stored_lag(url, judgment, written) if path in ("validation", "adjudicate") else None
                    rows.append((n_pairs, title, done[0], warm, load, cold, cold_load, lag))
                    print(
                        f"{n_pairs:>7,} pairs {title:<18} first {done[0]:6.2f} s, warm {warm:6.2f} s "
                        f"(load {load:.1f}), cold after a write {cold:6.2f} s (load {cold_load:.1f})"
                        + ("" if lag is None else f", stored results cover the write after {lag:6.1f} s"),
                        flush=True,
                    )
                browser.close()
    print("seconds from navigation until the page's run has finished: the first visit ever (first), the")
    print("median of the later visits (warm), the first visit after one judgment was written (cold); lag:")
    print("seconds from that write until the stored report and queue covered it")
    print(
        f"{'pairs':>7} {'page':<18} {'first':>7} {'warm':>7} {'load':>5} {'cold':>7} {'load':>5} {'lag':>6}"
    )
    for n_pairs, title, first, warm, load, cold, cold_load, lag in rows:
        shown = "" if lag is None else f"{lag:6.1f}"
        numbers = f"{first:7.2f} {warm:7.2f} {load:5.1f} {cold:7.2f} {cold_load:5.1f} {shown:>6}"
        print(f"{n_pairs:>7,} {title:<18} {numbers}")


def copy_fresh(source: Path, target: Path) -> None:
    """Copy the SQLite database `source` to `target` (a consistent copy). Its stored results' files stay
    behind: their rows then name files that are gone, and the first visit computes anew (``--stored``
    stores them again before the server starts)."""
    import sqlite3

    for stale in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
        stale.unlink(missing_ok=True)
    shutil.rmtree(f"{target}-results", ignore_errors=True)
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visits", type=int, default=3, help="visits per page (the first is cold)")
    parser.add_argument("--pairs", type=int, nargs="*", default=None, help="time the growing pages")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the --pairs databases here")
    parser.add_argument("--only", nargs="*", default=None, help="with --pairs: these pages (e.g. progress)")
    parser.add_argument("--fresh", type=Path, default=None, help="with --pairs: copy DIR/pages-N.db first")
    parser.add_argument(
        "--stored", action="store_true", help="with --pairs: store the report and queue before serving"
    )
    parser.add_argument("--shots", type=Path, default=None, help="save screenshots and run axe")
    parser.add_argument("--db", default=None, help="an existing demo database URL")
    args = parser.parse_args()
    if args.pairs:
        by_size(args.pairs, args.visits, args.workdir, args.only, args.fresh, args.stored)
        return
    with tempfile.TemporaryDirectory(prefix="bench_pages_") as tmp:
        url = args.db or build_demo(Path(tmp) / "demo.db", rebuild=True).url
        with running_app(url, Path(tmp) / "server.log") as base_url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=shutil.which("chromium"), args=list(BROWSER_ARGS)
            )
            rows = []
            for user in dict.fromkeys(name for name, _, _ in PAGES):
                context = browser.new_context(viewport=WIDTHS["wide"])
                page = context.new_page()
                log_in(page, base_url, user)
                for name, path, title in PAGES:
                    if name != user:
                        continue
                    times = [first_draw(page, f"{base_url}/{path}", title) for _ in range(args.visits)]
                    drawn, done = [t[0] for t in times], [t[1] for t in times]
                    warm = statistics.median(done[1:]) if len(done) > 1 else float("nan")
                    rows.append((f"{user.removeprefix('demo_')} /{path}", max(drawn), done[0], warm))
                    if args.shots is not None:
                        args.shots.mkdir(parents=True, exist_ok=True)
                        for width, viewport in WIDTHS.items():
                            page.set_viewport_size(viewport)
                            first_draw(page, f"{base_url}/{path}", title)
                            page.wait_for_timeout(1500)  # the charts and grids draw after the run
                            for line in serious(page):
                                print(f"AXE {user} /{path} {width}: {line}")
                            tall = page.evaluate(TALL)  # the app scrolls inside its main pane
                            page.set_viewport_size({"width": viewport["width"], "height": min(tall, 9000)})
                            page.wait_for_timeout(800)
                            shot = args.shots / f"{user}-{path or 'home'}-{width}.png"
                            page.screenshot(path=str(shot))
                        page.set_viewport_size(WIDTHS["wide"])
                context.close()
            browser.close()
    print("seconds from navigation: title drawn (slowest visit); whole run done, first visit (cold) and")
    print("the median of the later visits (warm)")
    print(f"{'page':<28} {'drawn':>7} {'cold':>7} {'warm':>7}")
    for label, drawn_s, cold, warm in rows:
        print(f"{label:<28} {drawn_s:7.2f} {cold:7.2f} {warm:7.2f}")
    slowest_drawn, slowest_warm = max(r[1] for r in rows), max(r[3] for r in rows)
    print(f"slowest title drawn: {slowest_drawn:.2f} s; slowest warm run: {slowest_warm:.2f} s")


if __name__ == "__main__":
    main()
