"""One annotator's first visit, one at a time: what it costs the tab and the server, against Potato 2.12.1.

Run from the repository root: `python benchmarks/bench_first_visit.py [--visits 6] [--pairs 100]
[--no-potato]`. To compare two versions of Pair Studio, run it with PYTHONPATH set to each tree in turn.

A fresh Pair Studio server (bench_capacity.py's study on a SQLite file; the study also takes Prolific
workers by its link) and a fresh Potato server on the same pairs (benchmarks/potato.py's project). One
warm-up visit on each, then `--visits` visits of each path, alternated visit by visit: Pair Studio's
password login (page open -> login form -> Argon2id -> the first item), Pair Studio's crowd study link
(page open -> the account made by the link -> the guidelines' button -> the first item; no password) and
Potato's register form (page open -> register -> the first item), each in a new browser context of one
headless chromium (nothing cached). The first item drawn is bench_admission.py's predicate (Potato:
potato.POTATO_COMPLETE).

Printed per path, median and range over the visits: wall time page open -> first item; the tab's
main-thread time (Chrome's Performance metrics: TaskDuration, of it ScriptDuration, LayoutDuration,
RecalcStyleDuration); requests; websocket messages received; the whole browser's CPU (every chromium
process this benchmark started: the tab, compositing, network) and the server's CPU (utime + stime of
its process tree, from /proc), both over the visit and 0.3 s after; and the 1-minute load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotator import server  # noqa: E402
from benchmarks import bench_admission, bench_capacity, potato  # noqa: E402

METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def own_browsers_cpu() -> float:
    """CPU seconds of the chromium processes this benchmark started (descendants of this process;
    other chromium processes on the machine are not counted)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for pid in bench_capacity.browser_pids():
        found = bench_capacity._stat(pid)
        if found is not None:
            parents[pid], cpu[pid] = found
    me = os.getpid()

    def mine(pid: int) -> bool:
        for _ in range(10):
            if pid == me:
                return True
            parent = parents.get(pid)
            if parent is None:
                stat = bench_capacity._stat(pid)
                parent = stat[0] if stat else 0
            if parent <= 1:
                return False
            pid = parent
        return False

    return sum(value for pid, value in cpu.items() if mine(pid))


async def visit(browser: Any, arrive: Callable[[Any], Awaitable[float]], server_pid: int) -> dict[str, float]:
    """One first visit in a new browser context: wall time, the tab's metrics, requests, messages,
    server CPU."""
    context = await browser.new_context(viewport=potato.VIEWPORT)
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("Performance.enable")
    requests: list[str] = []
    frames: list[int] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("websocket", lambda ws: ws.on("framereceived", lambda _frame: frames.append(1)))
    cpu_start, browsers_start = bench_capacity.tree_cpu(server_pid), own_browsers_cpu()
    wall = await arrive(page)
    await asyncio.sleep(0.3)  # the server's last messages of the visit
    cpu = bench_capacity.tree_cpu(server_pid) - cpu_start
    browsers = own_browsers_cpu() - browsers_start
    metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
    await context.close()
    return {"wall": wall, **{name: metrics[name] for name in METRICS}} | {
        "requests": len(requests),
        "messages": len(frames),
        "server": cpu,
        "browser": browsers,
        "load": os.getloadavg()[0],
    }


def summary(name: str, rows: list[dict[str, float]]) -> str:
    def spread(key: str, scale: float = 1.0, digits: int = 2) -> str:
        values = [row[key] * scale for row in rows]
        return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"

    return (
        f"{name:<22} wall {spread('wall')} s | tab {spread('TaskDuration')} s, script "
        f"{spread('ScriptDuration')}, layout {spread('LayoutDuration')}, "
        f"style {spread('RecalcStyleDuration')}"
        f" | requests {spread('requests', digits=0)} | ws messages {spread('messages', digits=0)}"
        f" | browser {spread('browser')} CPU-s | server {spread('server')} CPU-s"
        f" | load {spread('load', digits=1)}"
    )


async def run(args: argparse.Namespace, folder: Path) -> dict[str, list[dict[str, float]]]:
    from playwright.async_api import async_playwright

    url = f"sqlite:///{folder / 'ps.db'}"
    n = args.visits + 1
    bench_capacity.build_study(url, n, args.pairs, matched=False)
    bench_admission.take_crowd_links(url, n)
    project = folder / "potato"
    potato.write_project(project, args.pairs)
    timeout = args.timeout
    results: dict[str, list[dict[str, float]]] = {"password": [], "link": [], "potato": []}
    with bench_capacity.pair_studio_server(url, folder / "ps.log") as (ps_url, ps_pid):
        potato_server = None if args.no_potato else potato.running_potato(project, project / "server.log")
        potato_url = potato_server.__enter__() if potato_server else ""
        try:
            potato_pid = bench_capacity.listening_pid(int(potato_url.rsplit(":", 1)[1])) if potato_url else 0
            paths: dict[str, tuple[Callable[[Any, int], Awaitable[float]], int]] = {
                "password": (
                    lambda page, k: bench_admission.pair_studio_arrival(
                        page, ps_url, f"bench{k:02d}", timeout
                    ),
                    ps_pid,
                ),
                "link": (
                    lambda page, k: bench_admission.pair_studio_link_arrival(
                        page, ps_url, f"worker{k:02d}", timeout
                    ),
                    ps_pid,
                ),
            }
            if potato_url:
                paths["potato"] = (
                    lambda page, k: bench_admission.potato_arrival(page, potato_url, f"user{k:02d}", timeout),
                    potato_pid,
                )
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=shutil.which("chromium"), args=server.BROWSER_ARGS
                )
                for k in range(n):  # visit 0 warms each server up
                    for name, (arrive, pid) in paths.items():
                        row = await visit(browser, lambda page, a=arrive, k=k: a(page, k + 1), pid)
                        if k > 0:
                            results[name].append(row)
                await browser.close()
        finally:
            if potato_server is not None:
                potato_server.__exit__(None, None, None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visits", type=int, default=6, help="timed visits per path (after one warm-up)")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--no-potato", action="store_true")
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        sys.exit("Debian's chromium is needed (apt-get install chromium)")
    started = time.strftime("%H:%M", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench_first_visit_") as tmp:
        results = asyncio.run(run(args, Path(tmp)))
    ended = time.strftime("%H:%M", time.gmtime())
    print(f"first visit, one at a time, {args.visits} visits per path ({started}-{ended} UTC), tree {ROOT}")
    names = {
        "password": "Pair Studio, password",
        "link": "Pair Studio, study link",
        "potato": "Potato 2.12.1",
    }
    for key, rows in results.items():
        if rows:
            print(summary(names[key], rows))


if __name__ == "__main__":
    main()
