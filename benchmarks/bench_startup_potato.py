"""Start-up against Potato 2.12.1 in the same run: `--help`, launch -> first page drawn, idle memory.

Run from the repository root: `python benchmarks/bench_startup_potato.py [--repeat 5] [--pairs 1000]`
(Potato from benchmarks/potato.py's environment, or $PAIRSTUDIO_POTATO_VENV).

Alternated run by run, Pair Studio then Potato:

1. `annotator --help` against `potato --help`: CPU seconds (user + system) and peak RSS from
   `/usr/bin/time -v`.
2. Launch -> first page drawn: from starting the server (`annotator serve` on a SQLite study of
   `--pairs` pairs, bench_capacity's; `potato start` on benchmarks/potato.py's project of the same
   pairs) until a headless chromium, already running, shows the sign-in form (Pair Studio: username,
   password and the button visible; Potato: its login form visible). The browser polls the address
   every 100 ms until the server answers.
3. Idle RSS: the resident memory of the server's process tree (every descendant, from /proc) 5 s after
   that first page, and the server's CPU seconds from launch to then.

Printed: min / median of `--repeat`, and the 1-minute load average of each run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotator import server  # noqa: E402
from annotator.store.db import ENV_VAR  # noqa: E402
from benchmarks import bench_capacity, potato  # noqa: E402

PS_FORM = ".st-key-login_username input, .st-key-login_password input, .st-key-login_submit button"
POTATO_FORM = "#login-email, #login-pass"


def help_cost(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS MB) of one command under /usr/bin/time -v."""
    result = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, check=True)
    fields = {
        key: float(re.search(pattern, result.stderr).group(1))  # type: ignore[union-attr]
        for key, pattern in (
            ("user", r"User time \(seconds\): ([\d.]+)"),
            ("system", r"System time \(seconds\): ([\d.]+)"),
            ("peak", r"Maximum resident set size \(kbytes\): (\d+)"),
        )
    }
    return fields["user"] + fields["system"], fields["peak"] / 1024


def tree_rss_mb(root: int) -> float:
    """Resident memory of `root` and every live descendant (MB), from /proc/PID/status."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = bench_capacity._stat(int(entry))
            if found:
                parents[int(entry)] = found[0]
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
        except (OSError, AttributeError):
            pass
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


async def first_page(page: Any, url: str, selector: str, started: float) -> float:
    """Seconds from `started` until `selector`'s elements are all visible at `url` (polled every 100 ms
    until the server answers)."""
    while True:
        try:
            await page.goto(url, timeout=120_000)
            break
        except Exception:
            await asyncio.sleep(0.1)
    for part in selector.split(", "):
        await page.locator(part).wait_for(state="visible", timeout=120_000)
    return time.monotonic() - started


async def launch_once(browser: Any, tool: str, folder: Path, url: str) -> tuple[float, float, float]:
    """(launch -> first page s, idle tree RSS MB, server CPU s until then) for one fresh server."""
    port = server.free_port()
    if tool == "pairstudio":
        command = server.command(host="127.0.0.1", port=port)
        env = os.environ | {ENV_VAR: url, "PYTHONUNBUFFERED": "1"}
        cwd, address, selector = server.ROOT, f"http://127.0.0.1:{port}", PS_FORM
    else:
        command = [str(potato.potato_venv()), "start", "config.yaml", "-p", str(port), "--host", "127.0.0.1"]
        env, cwd, address, selector = dict(os.environ), folder, f"http://127.0.0.1:{port}/", POTATO_FORM
    context = await browser.new_context(viewport=potato.VIEWPORT)
    page = await context.new_page()
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        seconds = await first_page(page, address, selector, started)
        await asyncio.sleep(5)
        return seconds, tree_rss_mb(process.pid), bench_capacity.tree_cpu(process.pid)
    finally:
        await context.close()
        os.killpg(process.pid, 15)
        process.wait(timeout=30)


async def launches(repeat: int, folder: Path, url: str) -> dict[str, list[tuple[float, ...]]]:
    from playwright.async_api import async_playwright

    rows: dict[str, list[tuple[float, ...]]] = {"pairstudio": [], "potato": []}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=server.BROWSER_ARGS
        )
        for _ in range(repeat):
            for tool in rows:  # alternated run by run
                before = os.getloadavg()[0]
                rows[tool].append((*await launch_once(browser, tool, folder, url), before))
        await browser.close()
    return rows


def summary(values: list[float], unit: str, digits: int = 2) -> str:
    return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    exe = potato.potato_venv()
    helps: dict[str, list[tuple[float, float, float]]] = {"annotator --help": [], "potato --help": []}
    for _ in range(args.repeat):
        for name, argv in (
            ("annotator --help", [sys.executable, "-m", "annotator", "--help"]),
            ("potato --help", [str(exe), "--help"]),
        ):
            before = os.getloadavg()[0]
            helps[name].append((*help_cost(argv), before))
    for name, rows in helps.items():
        cpus, peaks, loads = (list(column) for column in zip(*rows, strict=True))
        print(
            f"{name:<17}: {summary(cpus, 'CPU-s')}, peak RSS {summary(peaks, 'MB', 0)} (min / median of "
            f"{args.repeat}), load {min(loads):.1f}-{max(loads):.1f}",
            flush=True,
        )
    with tempfile.TemporaryDirectory(prefix="bench_startup_potato_") as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'ps.db'}"
        bench_capacity.build_study(url, 1, args.pairs, matched=True)
        potato.write_project(folder, args.pairs)
        rows = asyncio.run(launches(args.repeat, folder, url))
    for tool, runs in rows.items():
        seconds, rss, cpu, loads = (list(column) for column in zip(*runs, strict=True))
        name = "Pair Studio" if tool == "pairstudio" else f"Potato {potato.POTATO_VERSION}"
        print(
            f"{name:<13}: launch -> first page {summary(seconds, 's')}, idle RSS {summary(rss, 'MB', 0)}, "
            f"server CPU to then {summary(cpu, 'CPU-s')} (min / median of {args.repeat}), "
            f"load {min(loads):.1f}-{max(loads):.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
