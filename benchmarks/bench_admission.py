"""A crowd arriving at once: page open -> first item, Pair Studio against Potato 2.12.1 in the same run.

Run from the repository root: `python benchmarks/bench_admission.py [--annotators 20 50] [--window 10]
[--engines sqlite postgres] [--postgres URL] [--pairs 1000] [--arrival password|link] [--no-potato]
[--profile FILE]`.

For each crowd size N and each engine, a fresh Pair Studio server (bench_capacity.py's study and
accounts bench01..benchNN, SQLite file or a new PostgreSQL database), then a fresh Potato server on the
same pairs (benchmarks/potato.py's project), alternated. One warm-up annotator reaches a first item on
each server before the crowd (a researcher looks at the study before launching it). Then annotator k
opens the page at k * window / N seconds (all N within `--window` seconds) and signs in: Pair Studio's
login form (username, password: Argon2id), Potato's register form (Potato's own password storage).
With `--arrival link`, Pair Studio's annotators arrive as a crowd platform sends them: each opens the
study link with its own worker id (`/?study=bench&PROLIFIC_PID=...`; the study takes Prolific workers,
`[crowd] items` = 20), which creates the account and plans its queue with no password, then reads the
guidelines' acknowledgement button and presses it (a new account's first step), as a worker does.
Timed from Python for both tools: from the page's `goto` to the first item drawn (Pair Studio: the
page's item mark set and ready, the question, both responses' paragraphs, every question of the form
and the enabled submit button visible; Potato: its instance id, question, both responses, slider, five
Likert options and Next visible). Errors: an annotator who did not reach a first item within
`--timeout` seconds, or any exception on the way (a page load that failed, an error shown).

Printed per tool, engine and N: admitted of N, p50 / p95 / max page open -> first item, errors,
server CPU (utime + stime of the server's process tree from /proc) over the arrivals and per admitted
annotator, the browsers' CPU, and the 1-minute load average at the start and the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from annotator import server  # noqa: E402
from benchmarks import bench_capacity, bench_submit, potato  # noqa: E402

PER_BROWSER = 10

#: Pair Studio's first item is drawn: the page marks an item and is ready, nothing is stale, the
#: question and both responses' paragraphs are visible, the form's questions are drawn and the submit
#: button takes input.
PS_FIRST_ITEM = """() => {
  const shown = (el) => !!el && el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })
    && el.getClientRects().length > 0;
  const tag = document.body.dataset.psItem;
  if (!tag || document.body.dataset.psReady !== tag) return false;
  if (document.querySelector("[data-stale='true']")) return false;
  const groups = [...document.querySelectorAll("[class*='st-key-q_'] [data-testid='stButtonGroup']")];
  if (groups.length === 0 || !groups.every(shown)) return false;
  const question = document.querySelector("[data-testid='stAlertContentInfo']");
  if (!shown(question) || !question.textContent.trim()) return false;
  for (const side of ["A", "B"]) {
    const pane = document.querySelector(`.st-key-pane_${side}`);
    const texts = pane ? [...pane.querySelectorAll("[data-testid='stMarkdownContainer']")] : [];
    if (texts.length < 2 || !texts.every(shown)) return false;
  }
  const submit = document.querySelector(".st-key-annotate_submit button");
  return shown(submit) && !submit.disabled && getComputedStyle(submit).pointerEvents !== "none";
}"""
#: An error the page shows instead (Streamlit's exception or error alert).
PS_ERROR = "[data-testid='stException'], [data-testid='stAlertContentError']"


@contextlib.contextmanager
def database(engine_name: str, folder: Path, admin_url: str, tag: str) -> Iterator[str]:
    """A new empty database: a SQLite file in `folder`, or a PostgreSQL database dropped afterwards."""
    if engine_name == "sqlite":
        yield f"sqlite:///{folder / f'ps-{tag}.db'}"
        return
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"annotator_admission_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


async def pair_studio_arrival(page: Any, base_url: str, user: str, timeout_s: float) -> float:
    """Seconds from opening the page to the first item drawn, for one account signing in."""
    started = time.monotonic()
    await page.goto(base_url, timeout=timeout_s * 1000)
    await page.locator(".st-key-login_username input").fill(user)
    await page.locator(".st-key-login_password input").fill(bench_submit.PASSWORD)
    await page.locator(".st-key-login_submit button").click()
    remaining = max(1.0, timeout_s - (time.monotonic() - started)) * 1000
    await page.wait_for_function(
        f"() => ({PS_FIRST_ITEM})() || !!document.querySelector({PS_ERROR!r})", polling=50, timeout=remaining
    )
    if await page.locator(PS_ERROR).count():
        raise RuntimeError("error shown: " + (await page.locator(PS_ERROR).first.inner_text())[:200])
    return time.monotonic() - started


#: A new account's guidelines step on the rating page (views/annotate.py's button).
PS_ACK = ".st-key-ack_guidelines button"


async def pair_studio_link_arrival(page: Any, base_url: str, user: str, timeout_s: float) -> float:
    """Seconds from opening the study link (worker id `user`) to the first item drawn: no password;
    the guidelines' acknowledgement that a new account gets first is pressed on the way."""
    started = time.monotonic()
    await page.goto(
        f"{base_url}/?study=bench&PROLIFIC_PID={user}&STUDY_ID=s1&SESSION_ID={user}", timeout=timeout_s * 1000
    )
    for predicate in (f"!!document.querySelector({PS_ACK!r})", f"({PS_FIRST_ITEM})()"):
        remaining = max(1.0, timeout_s - (time.monotonic() - started)) * 1000
        await page.wait_for_function(
            f"() => ({PS_FIRST_ITEM})() || {predicate} || !!document.querySelector({PS_ERROR!r})",
            polling=50,
            timeout=remaining,
        )
        if await page.locator(PS_ERROR).count():
            raise RuntimeError("error shown: " + (await page.locator(PS_ERROR).first.inner_text())[:200])
        if not await page.locator(PS_ACK).count():
            break
        await page.locator(PS_ACK).click()
    return time.monotonic() - started


def take_crowd_links(url: str, places: int) -> None:
    """Let the bench study take Prolific workers by its study link: `places` places, 20 items each."""
    engine = create_engine(url)
    with engine.begin() as connection:
        config = connection.execute(text("SELECT config FROM study WHERE name = 'bench'")).scalar_one()
        config = json.loads(config) if isinstance(config, str) else config
        config["crowd"] |= {"platform": "prolific", "places": places, "items": 20, "completion_code": "BENCH"}
        connection.execute(
            text("UPDATE study SET config = :config WHERE name = 'bench'"), {"config": json.dumps(config)}
        )
    engine.dispose()


async def potato_arrival(page: Any, base_url: str, user: str, timeout_s: float) -> float:
    """Seconds from opening Potato's page to its first item drawn, for one user registering."""
    started = time.monotonic()
    await page.goto(base_url + "/", timeout=timeout_s * 1000)
    await page.locator("#register-tab").click()
    await page.locator("#register-email").fill(user)
    await page.locator("#register-pass").fill(potato.PASSWORD)
    await page.locator("form[action='/register'] button[type='submit']").click()
    remaining = max(1.0, timeout_s - (time.monotonic() - started)) * 1000
    await page.wait_for_function(f"() => ({potato.POTATO_COMPLETE})('')", polling=50, timeout=remaining)
    return time.monotonic() - started


ARRIVALS = {
    "pairstudio": pair_studio_arrival,
    "pairstudio-link": pair_studio_link_arrival,
    "potato": potato_arrival,
}


async def crowd(tool: str, base_url: str, pid: int, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """A warm-up annotator, then N annotators arriving within the window; what was measured."""
    from playwright.async_api import async_playwright

    arrive = {
        "potato": potato_arrival,
        "pairstudio": pair_studio_arrival,
        "pairstudio-link": pair_studio_link_arrival,
    }[tool]
    async with async_playwright() as playwright:
        browsers = [
            await playwright.chromium.launch(
                executable_path=shutil.which("chromium"), args=server.BROWSER_ARGS
            )
            for _ in range((n + PER_BROWSER - 1) // PER_BROWSER)
        ]
        warm = await browsers[0].new_context(viewport=potato.VIEWPORT)
        await arrive(await warm.new_page(), base_url, f"bench{n + 1:02d}", args.timeout)
        await warm.close()
        pages = []
        for k in range(n):  # every context exists before the first arrival: only the visits are timed
            context = await browsers[k // PER_BROWSER].new_context(viewport=potato.VIEWPORT)
            context.set_default_timeout(args.timeout * 1000)
            pages.append(await context.new_page())

        async def one(k: int) -> float:
            await asyncio.sleep(k * args.window / n)
            return await arrive(pages[k], base_url, f"bench{k + 1:02d}", args.timeout)

        profiler = None
        if args.profile and tool.startswith("pairstudio"):
            out = f"{args.profile}-{n}.txt"
            command = [args.py_spy, "record", "-o", out, "-f", "raw", "-p", str(pid), "-r", "100", "-s"]
            profiler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
        browsers_before = {p: bench_capacity._stat(p) for p in bench_capacity.browser_pids()}
        load_start = os.getloadavg()[0]
        cpu_start, t_start = bench_capacity.tree_cpu(pid), time.monotonic()
        results = await asyncio.gather(*(one(k) for k in range(n)), return_exceptions=True)
        elapsed = time.monotonic() - t_start
        cpu = bench_capacity.tree_cpu(pid) - cpu_start
        load_end = os.getloadavg()[0]
        browsers_after = {p: bench_capacity._stat(p) for p in bench_capacity.browser_pids()}
        if profiler is not None:
            profiler.send_signal(2)
            profiler.wait(timeout=60)
        for browser in browsers:
            await browser.close()
    browser_cpu = sum(
        after[1] - (browsers_before.get(p) or (0, 0.0))[1] for p, after in browsers_after.items() if after
    )
    return {
        "tool": tool,
        "n": n,
        "times": [r for r in results if isinstance(r, float)],
        "errors": [
            f"{type(r).__name__}: {str(r).splitlines()[0][:200]}"
            for r in results
            if isinstance(r, BaseException)
        ],
        "elapsed": elapsed,
        "server_cpu": cpu,
        "browser_cpu": browser_cpu,
        "load": (load_start, load_end),
    }


def measure_pair_studio(n: int, engine_name: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    with database(engine_name, folder, args.postgres, f"{engine_name}-{n}") as url:
        bench_capacity.build_study(url, n + 1, args.pairs, matched=True)  # the last one warms up
        tool = "pairstudio"
        if args.arrival == "link":
            take_crowd_links(url, n + 1)
            tool = "pairstudio-link"
        with bench_capacity.pair_studio_server(url, folder / f"ps-{engine_name}-{n}.log") as (base_url, pid):
            result = asyncio.run(crowd(tool, base_url, pid, n, args))
    return result | {"engine": engine_name}


def measure_potato(n: int, engine_name: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    project = folder / f"potato-{engine_name}-{n}"
    potato.write_project(project, args.pairs)
    with potato.running_potato(project, project / "server.log") as base_url:
        pid = bench_capacity.listening_pid(int(base_url.rsplit(":", 1)[1]))
        result = asyncio.run(crowd("potato", base_url, pid, n, args))
    return result | {"engine": f"beside {engine_name}"}


def line(result: dict[str, Any]) -> str:
    times = result["times"]
    name = {"pairstudio": "Pair Studio", "pairstudio-link": "PS study link", "potato": "Potato 2.12.1"}[
        result["tool"]
    ]
    head = f"{result['n']:>3} annotators, {name:<13} {result['engine']:<16}"
    cpu, load = result["server_cpu"], result["load"]
    tail = (
        f"errors {len(result['errors'])} | server {cpu:.1f} CPU-s"
        f" ({cpu / max(1, len(times)):.2f} per admitted)"
        f" | browsers {result['browser_cpu']:.1f} CPU-s | load {load[0]:.1f} -> {load[1]:.1f}"
    )
    if not times:
        return f"{head} admitted 0 of {result['n']} | {tail}"
    return (
        f"{head} admitted {len(times)} of {result['n']} | page open -> first item p50 "
        f"{potato.percentile(times, 50):5.1f} s  p95 {potato.percentile(times, 95):5.1f} s  "
        f"max {max(times):5.1f} s | {tail}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--window", type=float, default=10.0, help="all arrivals within this many seconds")
    parser.add_argument(
        "--engines", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"]
    )
    parser.add_argument(
        "--postgres",
        default="postgresql+psycopg://annotator:annotator@127.0.0.1:5432/postgres",
        help="an admin URL; each run gets a new database",
    )
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds an arrival may take")
    parser.add_argument(
        "--arrival",
        choices=["password", "link"],
        default="password",
        help="Pair Studio's annotators sign in with a password, or arrive by the crowd study link",
    )
    parser.add_argument("--no-potato", action="store_true")
    parser.add_argument("--profile", help="py-spy raw profile of the Pair Studio server, to FILE-N.txt")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("Debian's chromium is needed (apt-get install chromium)")
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench_admission_") as tmp:
        folder = Path(tmp)
        for n in args.annotators:
            for engine_name in args.engines:
                measures = [measure_pair_studio] + ([] if args.no_potato else [measure_potato])
                for measure in measures:
                    result = measure(n, engine_name, args, folder)
                    lines.append(line(result))
                    print(lines[-1], flush=True)
                    for error in result["errors"][:3]:
                        print("   error:", error, flush=True)
    print(f"\npage open -> first item, {args.window:g} s window, warm server, timed from Python")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
