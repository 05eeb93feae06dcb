"""Capacity: many annotators at once, Pair Studio against Potato 2.12.1 in the same run.

Run from the repository root: `python benchmarks/bench_capacity.py [--annotators 1 10 20]
[--seconds 90] [--pairs 2000] [--form matched|full] [--think S] [--ramp S] [--no-potato]
[--profile FILE]`.

For each crowd size N both tools get a fresh server and N scripted annotators (one headless chromium per
10 annotators, one browser context each, driven by one asyncio Playwright), alternated: Pair Studio, then
Potato. Annotator k arrives k * `--ramp` seconds after the first; every annotator logs in, rates `WARMUP`
items untimed, then all start together and rate as fast as they can for `--seconds` (with `--think S`,
pausing 0.5-1.5 x S seconds after each submit and once at the start); each submit is timed inside the
page from the click to the next item drawn (benchmarks/potato.py's probe and bench_submit.py's
predicate). Printed per tool and N:

- submits in the window, p50 / p95 submit -> next item (all annotators' submits in the window);
- server CPU: utime + stime of the server's process tree (read from /proc, children included) over
  the window, as cores and as seconds per submit (this includes the answer reruns between submits);
- the browsers' CPU over the same window, and the load average (1 min) at the start and the end.

Pair Studio's study is bench_submit.py's (`--form matched`: the Potato project's questions, one
quality dimension per response, preference and confidence; `--form full`: 12 questions), with N
annotators "bench01".."benchNN" who each have the same `--pairs`-long queue; its server is
`annotator serve`'s command line (annotator.server.command) on a SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert, select  # noqa: E402

from annotator import server  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.db import ENV_VAR  # noqa: E402
from annotator.store.models import Assignment, User  # noqa: E402
from benchmarks import bench_submit, potato  # noqa: E402

PER_BROWSER = 10
WARMUP = 2
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------ process CPU


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, utime + stime + cutime + cstime in seconds) of a live process, from /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    ticks = sum(int(fields[k]) for k in (11, 12, 13, 14))
    return int(fields[1]), ticks / CLK_TCK


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of `root` and every live descendant, with their reaped children."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found:
                parents[int(entry)], times[int(entry)] = found
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def listening_pid(port: int) -> int:
    """The pid of the process that listens on 127.0.0.1:`port` (from /proc/net/tcp and the fd links)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(parts[9])
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{entry}/fd"):
                link = os.readlink(f"/proc/{entry}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(entry)
    raise RuntimeError(f"nobody listens on port {port}")


# ------------------------------------------------------------------------------------ the studies


def build_study(url: str, n_annotators: int, n_pairs: int, *, matched: bool) -> None:
    """bench_submit.py's study, plus annotators bench01..benchNN with the bench user's queue."""
    engine = db.make_engine(url)
    db.upgrade(engine)
    bench_submit.build(engine, n_pairs, queue=n_pairs, matched=matched)
    now = datetime.now(UTC)
    with engine.begin() as connection:
        template = connection.execute(
            select(Assignment.__table__).join(User.__table__).where(User.__table__.c.username == "bench")
        ).all()
        for k in range(1, n_annotators + 1):
            user_id = connection.execute(
                insert(User).values(
                    username=f"bench{k:02d}",
                    role="annotator",
                    password_hash=bench_submit.password_hash(),
                    active=True,
                    created_at=now,
                    failed_logins=0,
                    guidelines_ack_at=now,
                )
            ).inserted_primary_key[0]
            rng = random.Random(k)
            rows = []
            for row in template:
                values = dict(row._mapping)
                values.pop("id")
                rows.append(values | {"annotator_id": user_id, "chosen_side": rng.choice("AB")})
            connection.execute(insert(Assignment), rows)
    engine.dispose()


@contextlib.contextmanager
def pair_studio_server(url: str, log: Path) -> Iterator[tuple[str, int]]:
    """`annotator serve`'s command line on `url` (a free port); yields (base URL, server pid)."""
    port = server.free_port()
    env = os.environ | {ENV_VAR: url, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as handle:
        process = subprocess.Popen(
            server.command(host="127.0.0.1", port=port),
            cwd=server.ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            server.wait_healthy(base_url, process, log)
            yield base_url, process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# ------------------------------------------------------------------------------------ driving


@dataclass
class Run:
    """One crowd of annotators on one tool: the shared start signal and what was measured."""

    seconds: float
    think: float = 0.0  # mean pause after each submit (s): 0 = as fast as the page allows
    ready: int = 0
    go: asyncio.Event = field(default_factory=asyncio.Event)
    stop_at: float = 0.0
    submits: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def timed_click(page: Any, predicate: str, arg: Any, click: Any) -> float:
    """potato.measure_in_page for the async API: ms from the click to the next item drawn."""
    name = "p" + str(abs(hash(predicate)))
    script = potato._register_js(name, predicate)
    if not getattr(page, "_probe_installed", False):
        await page.add_init_script(script=script)
        await page.evaluate(f"() => {{\n{script}\n}}")
        page._probe_installed = True
    await page.evaluate("([name, arg]) => window.__pairProbe.arm(name, arg)", [name, arg])
    await click()
    deadline = time.monotonic() + 120
    while True:
        try:
            await page.wait_for_function(
                "() => window.__pairProbe && window.__pairProbe.result() !== null",
                polling=20,
                timeout=max(1.0, (deadline - time.monotonic()) * 1000),
            )
            return float(await page.evaluate(potato.TAKE_RESULT))
        except Exception:
            if time.monotonic() >= deadline:
                raise
            await page.wait_for_timeout(20)


async def pause(run: Run) -> None:
    """An annotator's reading time before the next answer (uniform around `run.think`)."""
    if run.think > 0:
        await asyncio.sleep(random.uniform(0.5, 1.5) * run.think)


async def settle(page: Any) -> None:
    await page.wait_for_timeout(100)
    await page.locator(server.IDLE_SELECTOR).wait_for(state="attached")


async def pair_studio_annotator(page: Any, base_url: str, user: str, form: dict[str, str], run: Run) -> None:
    await page.goto(base_url)
    await settle(page)
    await page.locator(".st-key-login_username input").fill(user)
    await page.locator(".st-key-login_password input").fill(bench_submit.PASSWORD)
    await page.locator(".st-key-login_submit button").click()
    await page.locator(".st-key-annotate_submit button").wait_for()
    await settle(page)
    k = 0
    while True:
        if k == WARMUP:
            run.ready += 1
            await run.go.wait()
            await pause(run)  # with a think time the crowd starts spread out, not as one burst
        if k >= WARMUP and time.monotonic() >= run.stop_at:
            return
        await settle(page)
        tag, question, pane = await page.evaluate(
            """() => [document.body.dataset.psItem,
                     document.querySelector("[data-testid='stAlertContentInfo']").textContent,
                     document.querySelector(".st-key-pane_A").textContent]"""
        )
        for key, digit in form.items():
            await page.locator(f".st-key-q_{key} [data-testid='stButtonGroup'] button").first.focus()
            await page.keyboard.press(digit)
            await page.locator(f".st-key-q_{key} button[aria-checked=true]").wait_for()
            await settle(page)
        submit = page.locator(".st-key-annotate_submit button")
        ms = await timed_click(
            page, bench_submit.NEXT_COMPLETE, [tag, len(form), question, pane], submit.click
        )
        if k >= WARMUP and time.monotonic() <= run.stop_at + 60:
            run.submits.append(ms)
        k += 1
        await pause(run)


async def potato_annotator(page: Any, base_url: str, user: str, run: Run) -> None:
    await page.goto(base_url + "/")
    await page.locator("#register-tab").click()
    await page.locator("#register-email").fill(user)
    await page.locator("#register-pass").fill(potato.PASSWORD)
    await page.locator("form[action='/register'] button[type='submit']").click()
    await page.locator("#next-btn").wait_for()
    k = 0
    while True:
        if k == WARMUP:
            run.ready += 1
            await run.go.wait()
            await pause(run)  # with a think time the crowd starts spread out, not as one burst
        if k >= WARMUP and time.monotonic() >= run.stop_at:
            return
        await page.locator("#next-btn").wait_for()
        await page.wait_for_load_state("load")
        await page.wait_for_timeout(100)
        old = await page.locator("#instance_id").input_value()
        slider = page.locator("form#preference input.pairwise-scale-slider")
        await slider.focus()
        await slider.press("ArrowLeft" if k % 2 == 0 else "ArrowRight")
        await page.locator(f"#helpfulness_{1 + k % 5}_radio").click()
        await page.wait_for_timeout(200)  # the autosave of the answers (as potato.answer)
        ms = await timed_click(page, potato.POTATO_COMPLETE, old, page.locator("#next-btn").click)
        if k >= WARMUP:
            run.submits.append(ms)
        k += 1
        await pause(run)


def browser_pids() -> set[int]:
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and _is_chromium(int(e))}


def _is_chromium(pid: int) -> bool:
    try:
        return "chrom" in Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return False


async def arriving(delay: float, work: Any) -> None:
    """An annotator who arrives `delay` seconds after the first."""
    await asyncio.sleep(delay)
    await work


async def crowd(
    tool: str,
    base_url: str,
    pid: int,
    n: int,
    seconds: float,
    form: dict[str, str],
    profile: str = "",
    think: float = 0.0,
    ramp: float = 0.0,
) -> dict[str, Any]:
    """N annotators on one server (annotator k opens the page k * `ramp` seconds after the first);
    the figures of the timed window."""
    from playwright.async_api import async_playwright

    run = Run(seconds=seconds, think=think)
    async with async_playwright() as playwright:
        browsers = [
            await playwright.chromium.launch(
                executable_path=shutil.which("chromium"), args=server.BROWSER_ARGS
            )
            for _ in range((n + PER_BROWSER - 1) // PER_BROWSER)
        ]
        tasks = []
        for k in range(n):
            context = await browsers[k // PER_BROWSER].new_context(viewport=potato.VIEWPORT)
            context.set_default_timeout(120_000)
            page = await context.new_page()
            user = f"bench{k + 1:02d}"
            if tool == "potato":
                work = potato_annotator(page, base_url, user, run)
            else:
                work = pair_studio_annotator(page, base_url, user, form, run)
            tasks.append(asyncio.create_task(arriving(k * ramp, work)))
        while run.ready < n:
            for task in tasks:
                if task.done() and task.exception():
                    raise task.exception()  # type: ignore[misc]
            await asyncio.sleep(0.2)
        browsers_before = {p: _stat(p) for p in browser_pids()}
        load_start = os.getloadavg()[0]
        profiler = None
        if profile:  # py-spy over the timed window only (its own CPU is not the server's)
            command = ["py-spy", "record", "-o", profile, "-f", "raw", "-p", str(pid), "-r", "100"]
            profiler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu_start, t_start = tree_cpu(pid), time.monotonic()
        run.stop_at = t_start + seconds
        run.go.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.monotonic() - t_start
        cpu = tree_cpu(pid) - cpu_start
        if profiler is not None:
            profiler.send_signal(2)
            profiler.wait(timeout=60)
        load_end = os.getloadavg()[0]
        browsers_after = {p: _stat(p) for p in browser_pids()}
        for browser in browsers:
            await browser.close()
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    browser_cpu = sum(
        after[1] - (browsers_before.get(p) or (0, 0.0))[1] for p, after in browsers_after.items() if after
    )
    return {
        "tool": tool,
        "n": n,
        "submits": run.submits,
        "elapsed": elapsed,
        "server_cpu": cpu,
        "browser_cpu": browser_cpu,
        "load": (load_start, load_end),
        "errors": errors,
    }


def measure_pair_studio(n: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    url = f"sqlite:///{folder / f'ps-{n}.db'}"
    build_study(url, n, args.pairs, matched=args.form == "matched")
    form = bench_submit.MATCHED_FORM if args.form == "matched" else bench_submit.FULL_FORM
    profile = f"{args.profile}-{n}.txt" if args.profile else ""
    with pair_studio_server(url, folder / f"ps-{n}.log") as (base_url, pid):
        return asyncio.run(
            crowd("pairstudio", base_url, pid, n, args.seconds, form, profile, args.think, args.ramp)
        )


def measure_potato(n: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    project = folder / f"potato-{n}"
    potato.write_project(project, args.pairs)
    with potato.running_potato(project, project / "server.log") as base_url:
        pid = listening_pid(int(base_url.rsplit(":", 1)[1]))
        return asyncio.run(crowd("potato", base_url, pid, n, args.seconds, {}, "", args.think, args.ramp))


def line(result: dict[str, Any]) -> str:
    submits = result["submits"]
    name = "Pair Studio" if result["tool"] == "pairstudio" else "Potato 2.12.1"
    if not submits:
        return f"{result['n']:>3} annotators, {name}: no submit ({result['errors'][:2]})"
    cores = result["server_cpu"] / result["elapsed"]
    return (
        f"{result['n']:>3} annotators, {name:<13} {len(submits):>5} submits in {result['elapsed']:.0f} s | "
        f"p50 {potato.percentile(submits, 50):6.0f} ms  p95 {potato.percentile(submits, 95):6.0f} ms | "
        f"server {cores:.2f} core, {result['server_cpu'] / len(submits) * 1000:5.1f} ms CPU/submit | "
        f"browsers {result['browser_cpu'] / result['elapsed']:.2f} core | "
        f"load {result['load'][0]:.1f} -> {result['load'][1]:.1f}"
        + (f" | {len(result['errors'])} errors" if result["errors"] else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, nargs="+", default=[1, 10, 20])
    parser.add_argument("--seconds", type=float, default=90, help="the timed window per crowd")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--form", choices=["matched", "full"], default="matched")
    parser.add_argument("--think", type=float, default=0.0, help="mean pause after a submit (s)")
    parser.add_argument("--ramp", type=float, default=0.0, help="seconds between two annotators' arrivals")
    parser.add_argument("--no-potato", action="store_true")
    parser.add_argument("--profile", help="py-spy raw profile of the Pair Studio server, to FILE-N.txt")
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("Debian's chromium is needed (apt-get install chromium)")
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench_capacity_") as tmp:
        folder = Path(tmp)
        for n in args.annotators:
            for measure in (measure_pair_studio, *(() if args.no_potato else (measure_potato,))):
                result = measure(n, args, folder)
                lines.append(line(result))
                print(lines[-1], flush=True)
                for error in result["errors"][:3]:
                    print("   error:", error[:300], flush=True)
    print(
        f"\nsubmit -> next item (in the page), {args.form} form, {args.seconds:.0f} s per crowd, "
        f"{WARMUP} warm-up, think time {args.think:g} s, arrivals {args.ramp:g} s apart"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
