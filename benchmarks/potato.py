"""Potato 2.12.1 baseline for "submit -> next item drawn", and the in-page timing both tools share.

Run from the repository root: `python benchmarks/potato.py [--n 30] [--sizes 100 10000]`. It prints
p50/p95 for Potato on 100 and 10,000 pairs. Potato is optional tooling and never goes into the main
Python: `potato_venv()` makes (once, cached under ~/.cache/pairstudio-bench/) a separate virtual
environment with `potato-annotation==2.12.1` from the package mirror (or the wheel in /tmp/potato_dl/),
or uses the one $PAIRSTUDIO_POTATO_VENV names (made beforehand, e.g. under /tmp).

What is measured (the same for Potato and Pair Studio, see `measure_in_page`): inside the page, from
the click event on the submit control (`event.timeStamp`) to the first animation frame
(`requestAnimationFrame`) in which the next item's question, both responses and the form are in the
DOM and visible. Potato loads a whole new page per item (save, POST /annotate, then
`location.replace`), so the click time goes to `sessionStorage` as `performance.timeOrigin +
event.timeStamp` and the new document's first complete frame computes the delta; a MutationObserver
asks for a frame after every DOM change. Streamlit redraws in place; the same script times it.

The Potato project (`write_project`) holds the pairs of benchmarks/bench_submit.py's `build()` (same
word list, same seeded random stream: question, chosen and rejected), a pairwise preference on 5
points (slider, -2..+2, like Pair Studio's preference) and one 5-point Likert (helpfulness): the
question as a text field, both responses drawn by the pairwise scheme.

Other code uses: `potato_latencies(n_pairs, n_items, warmup=3)`, `measure_in_page(page, click,
is_complete_js, arg)`, `PROBE_JS`, `running_potato(project_dir, log)`, `write_project(folder,
n_pairs)`, `percentile(values, q)`.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from the repository root

from annotator.server import BROWSER_ARGS  # noqa: E402

POTATO_VERSION = "2.12.1"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pairstudio-bench"
WHEELS = Path("/tmp/potato_dl")
VENV_VAR = "PAIRSTUDIO_POTATO_VENV"  # a virtual environment that already holds potato-annotation
CHROMIUM_ARGS = list(BROWSER_ARGS)  # no sandbox as root, no background connections
VIEWPORT = {"width": 1440, "height": 900}  # as bench_submit.py: a laptop screen
USERNAME = "bench"
PASSWORD = "bench-password-1234"
WARMUP = 3
#: The word list of bench_submit.py's synthetic texts.
WORDS = "quick vegetarian dinner plan budget time oven pan fresh herbs weekly shopping list".split()

# --------------------------------------------------------------------------------------------------
# In-page timing, shared with the Pair Studio benchmark
# --------------------------------------------------------------------------------------------------

#: Installed in every document of a page (init script): a capture-phase click listener on window that,
#: once armed, stores the click's time in sessionStorage and watches every animation frame (and every
#: DOM mutation) until the registered predicate says the next item is complete. `predicates[name]`
#: are `(arg) => boolean` functions; the result is in `window.__pairProbe.result()` (ms, or null).
PROBE_JS = r"""
(() => {
  if (window.__pairProbe) return;
  const KEY = "__pair_probe";
  const store = window.sessionStorage;
  let state = null;
  try { state = JSON.parse(store.getItem(KEY) || "null"); } catch (e) { state = null; }
  const save = () => store.setItem(KEY, JSON.stringify(state));
  const probe = { predicates: {}, frames: 0 };
  window.__pairProbe = probe;
  let scheduled = false;
  let observer = null;
  const check = () => {
    scheduled = false;
    if (!state || state.status !== "clicked") return;
    probe.frames += 1;
    const predicate = probe.predicates[state.name];
    let complete = false;
    try { complete = !!(predicate && predicate(state.arg)); } catch (e) { complete = false; }
    if (complete) {
      state = Object.assign({}, state, {
        status: "done", ms: performance.timeOrigin + performance.now() - state.t0,
        navigated: performance.timeOrigin > state.t0,
      });
      save();
      if (observer) observer.disconnect();
      return;
    }
    frame();
  };
  const frame = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(check); } };
  const watch = () => {
    if (!observer) {
      observer = new MutationObserver(frame);
      observer.observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
    }
    frame();
  };
  probe.arm = (name, arg) => {
    const predicate = probe.predicates[name];
    if (!predicate) throw new Error("no predicate " + name);
    if (predicate(arg)) throw new Error("the next item is complete before the click");
    state = { status: "armed", name: name, arg: arg };
    save();
  };
  probe.result = () => (state && state.status === "done" ? state.ms : null);
  probe.state = () => state;
  probe.clear = () => { state = null; store.removeItem(KEY); };
  window.addEventListener("click", (event) => {
    if (!state || state.status !== "armed") return;
    state = Object.assign({}, state, { status: "clicked", t0: performance.timeOrigin + event.timeStamp });
    save();
    watch();
  }, true);
  if (state && state.status === "clicked") watch();  // a new document after the click's navigation
})();
"""

TAKE_RESULT = "() => { const probe = window.__pairProbe, ms = probe.result(); probe.clear(); return ms; }"
_installed: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def _register_js(name: str, is_complete_js: str) -> str:
    return f"{PROBE_JS}\nwindow.__pairProbe.predicates[{json.dumps(name)}] = ({is_complete_js});\n"


def install_probe(page: Any, is_complete_js: str) -> str:
    """Install the probe and the predicate in `page` (every later document too); returns its name."""
    name = "p" + hashlib.sha1(is_complete_js.encode()).hexdigest()[:12]
    names = _installed.setdefault(page, set())
    if name not in names:
        script = _register_js(name, is_complete_js)
        page.add_init_script(script=script)
        page.evaluate(f"() => {{\n{script}\n}}")  # the current document (a function: not called with arg)
        names.add(name)
    return name


def measure_in_page(
    page: Any,
    click: Callable[[], object],
    is_complete_js: str,
    arg: Any = None,
    *,
    timeout_ms: float = 60_000,
) -> float:
    """Milliseconds, measured inside the page, from the click event that `click()` causes to the first
    animation frame in which `is_complete_js` (a JS function source `(arg) => boolean`, called with the
    JSON value `arg`) is true. The predicate must be false before the click (checked). Works whether
    the click redraws in place (Streamlit) or loads a new document (Potato)."""
    name = install_probe(page, is_complete_js)
    page.evaluate("([name, arg]) => window.__pairProbe.arm(name, arg)", [name, arg])
    click()
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            page.wait_for_function(
                "() => window.__pairProbe && window.__pairProbe.result() !== null",
                polling=20,
                timeout=max(1.0, (deadline - time.monotonic()) * 1000),
            )
            ms = page.evaluate(TAKE_RESULT)
            return float(ms)
        except Exception as error:  # a navigation destroyed the context mid-poll: poll the new document
            if time.monotonic() >= deadline or "Timeout" in type(error).__name__:
                state = page.evaluate("() => window.__pairProbe ? window.__pairProbe.state() : null")
                message = f"the next item was not complete within {timeout_ms:.0f} ms (probe: {state})"
                raise RuntimeError(message) from error
            page.wait_for_timeout(20)


# --------------------------------------------------------------------------------------------------
# The Potato environment and project
# --------------------------------------------------------------------------------------------------


def potato_venv() -> Path:
    """The `potato` executable of a cached virtual environment with potato-annotation 2.12.1 (made
    once: python -m venv, then pip from the package mirror, /tmp/potato_dl/ as extra find-links), or of
    the environment $PAIRSTUDIO_POTATO_VENV names."""
    given = os.environ.get(VENV_VAR)
    if given:  # an environment made beforehand (e.g. under /tmp): used as it is, never installed into
        exe = Path(given) / "bin" / "potato"
        if not exe.exists():
            raise RuntimeError(f"${VENV_VAR}={given} holds no bin/potato")
        return exe
    venv = CACHE / f"potato-{POTATO_VERSION}"
    exe = venv / "bin" / "potato"
    marker = venv / ".installed"
    if marker.exists() and exe.exists():
        return exe
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"potato-{POTATO_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.exists() and exe.exists()):
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            command = [str(venv / "bin" / "pip"), "install", "-q", f"potato-annotation=={POTATO_VERSION}"]
            if WHEELS.is_dir():
                command += ["--find-links", str(WHEELS)]
            subprocess.run(command, check=True)
            check = "import importlib.metadata as m; print(m.version('potato-annotation'))"
            found = subprocess.run(
                [str(venv / "bin" / "python"), "-c", check], check=True, capture_output=True, text=True
            ).stdout.strip()
            if found != POTATO_VERSION:
                raise RuntimeError(f"{venv} holds potato-annotation {found}, not {POTATO_VERSION}")
            marker.write_text(POTATO_VERSION + "\n")
    return exe


def text(rng: random.Random, n_words: int) -> str:
    """bench_submit.py's `text()`: `n_words` words from WORDS, capitalized, with a full stop."""
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def pair_texts(n_pairs: int, *, seed: int = 0) -> list[dict[str, str]]:
    """The question, chosen and rejected texts of bench_submit.py's `build(engine, n_pairs)`: the same
    seeded stream, drawn in the same order (question, 10 profile posts, 2 rubric aspects, narrative,
    chosen, rejected), keeping only what the Potato project shows."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n_pairs):
        question = f"Question {i}: " + text(rng, 25)
        for _ in range(10):
            text(rng, 60)  # profile post
        for _ in range(2 * 2):
            text(rng, 12 if _ % 2 == 0 else 8)  # rubric aspects: reason, evidence
        text(rng, 60)  # narrative
        chosen, rejected = text(rng, 220), text(rng, 200)
        pairs.append({"id": f"bench-{i}", "question": question, "chosen": chosen, "rejected": rejected})
    return pairs


def config(data_file: str) -> dict[str, Any]:
    """The Potato 2.12.1 project: question shown as text, a pairwise preference on -2..+2 (the
    responses drawn by the scheme) and one 5-point Likert, both required."""
    return {
        "annotation_task_name": "Pair Studio baseline",
        "task_dir": ".",
        "output_annotation_dir": "annotation_output/",
        "output_annotation_format": "json",
        "data_files": [data_file],
        "item_properties": {"id_key": "id", "text_key": "question"},
        "instance_display": {"fields": [{"key": "question", "type": "text", "label": "Question"}]},
        "user_config": {"allow_all_users": True, "users": []},
        "annotation_schemes": [
            {
                "annotation_type": "pairwise",
                "name": "preference",
                "description": "Which response better fits this user?",
                "mode": "scale",
                "items_key": "responses",
                "labels": ["A", "B"],
                "scale": {
                    "min": -2,
                    "max": 2,
                    "step": 1,
                    "default": 0,
                    "labels": {"min": "A much better", "max": "B much better", "center": "Tie"},
                },
                "label_requirement": {"required": True},
            },
            {
                "annotation_type": "likert",
                "name": "helpfulness",
                "description": "How helpful is the better response?",
                "min_label": "Not helpful",
                "max_label": "Very helpful",
                "size": 5,
                "label_requirement": {"required": True},
            },
        ],
        "site_dir": "default",
    }


def write_project(folder: Path, n_pairs: int) -> Path:
    """A Potato project for `n_pairs` pairs in `folder` (data/pairs.jsonl, config.yaml); returns the
    config path. Chosen is on side A for even pairs, B for odd ones."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    with open(folder / "data" / "pairs.jsonl", "w", encoding="utf-8") as out:
        for n, pair in enumerate(pair_texts(n_pairs)):
            sides = [pair["chosen"], pair["rejected"]] if n % 2 == 0 else [pair["rejected"], pair["chosen"]]
            record = {"id": pair["id"], "question": pair["question"], "responses": sides}
            out.write(json.dumps(record) + "\n")
    path = folder / "config.yaml"
    path.write_text(json.dumps(config("data/pairs.jsonl"), indent=2) + "\n")  # JSON is YAML
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_potato(project_dir: Path, log: Path, *, timeout_s: float = 300) -> Iterator[str]:
    """Start `potato start config.yaml` on a free localhost port (output to `log`), wait until it
    answers, yield its base URL; stop it (its own process group) afterwards."""
    exe = potato_venv()
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(exe), "start", "config.yaml", "-p", str(port), "--host", "127.0.0.1"],
            cwd=project_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + timeout_s
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"potato exited with {process.returncode}; see {log}")
                try:
                    with urllib.request.urlopen(url + "/", timeout=5) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"potato did not answer on {url} within {timeout_s:.0f} s; see {log}")
                time.sleep(0.5)
            yield url
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


# --------------------------------------------------------------------------------------------------
# Driving Potato
# --------------------------------------------------------------------------------------------------

#: The next item is drawn: a new instance id, the question, both responses, the slider, the five Likert
#: options and the Next button are in the DOM and visible (not display:none / visibility:hidden /
#: opacity 0, with a box), the texts not empty.
POTATO_COMPLETE = """(oldId) => {
  const shown = (el) => !!el && el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })
    && el.getClientRects().length > 0;
  const id = document.getElementById("instance_id");
  if (!id || !id.value || id.value === oldId) return false;
  const question = document.querySelector(".instance-display-container .text-display-content");
  if (!shown(question) || question.textContent.trim().length === 0) return false;
  const responses = document.querySelectorAll("#annotation-forms .pairwise-item-box");
  if (responses.length !== 2) return false;
  for (const box of responses) if (!shown(box) || box.textContent.trim().length === 0) return false;
  if (!shown(document.querySelector("form#preference input.pairwise-scale-slider"))) return false;
  if (document.querySelectorAll("form#helpfulness input.shadcn-likert-input").length !== 5) return false;
  const likert = document.querySelectorAll("form#helpfulness label.shadcn-likert-button");  // drawn radios
  if (likert.length !== 5) return false;
  for (const option of likert) if (!shown(option)) return false;
  return shown(document.getElementById("next-btn"));
}"""


def register(page: Any, base_url: str) -> None:
    """Register (and so log in) the benchmark user on Potato's start page; log in if it exists."""
    page.goto(base_url + "/")
    page.locator("#register-tab").click()
    page.locator("#register-email").fill(USERNAME)
    page.locator("#register-pass").fill(PASSWORD)
    page.locator("form[action='/register'] button[type='submit']").click()
    page.locator("#next-btn, #login-email").first.wait_for()
    if page.locator("#next-btn").count() == 0:  # the project already knows the user
        page.locator("#login-email").fill(USERNAME)
        page.locator("#login-pass").fill(PASSWORD)
        page.locator("form[action='/auth'] button[type='submit']").click()
        page.locator("#next-btn").wait_for()


def answer(page: Any, k: int) -> str:
    """Answer the current item (slider by keyboard, one Likert option); returns its instance id."""
    page.locator("#next-btn").wait_for()
    page.wait_for_load_state("load")
    page.wait_for_timeout(100)
    instance_id = page.locator("#instance_id").input_value()
    slider = page.locator("form#preference input.pairwise-scale-slider")
    slider.focus()
    slider.press("ArrowLeft" if k % 2 == 0 else "ArrowRight")
    page.locator(f"#helpfulness_{1 + k % 5}_radio").click()
    page.wait_for_timeout(200)  # let the autosave of the answers finish before the timed click
    return instance_id


def potato_latencies(
    n_pairs: int, n_items: int, *, warmup: int = WARMUP, viewport: dict[str, int] | None = None
) -> list[float]:
    """Milliseconds from the click on Potato's Next to the next item drawn, for `n_items` items after
    `warmup` untimed ones, on a fresh Potato project of `n_pairs` pairs (server and browser started
    here and stopped at the end)."""
    from playwright.sync_api import sync_playwright

    if shutil.which("chromium") is None:
        raise RuntimeError("Debian's chromium is needed (apt-get install chromium)")
    if warmup + n_items >= n_pairs:
        raise ValueError(f"{warmup + n_items} items need more than {n_pairs} pairs")
    timings = []
    with tempfile.TemporaryDirectory(prefix="potato-bench-") as tmp:
        folder = Path(tmp)
        write_project(folder, n_pairs)
        with running_potato(folder, folder / "server.log") as base_url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=viewport or VIEWPORT)
            page.set_default_timeout(60_000)
            register(page, base_url)
            next_button = page.locator("#next-btn")
            for k in range(warmup + n_items):
                old = answer(page, k)
                ms = measure_in_page(page, next_button.click, POTATO_COMPLETE, old)
                if k >= warmup:
                    timings.append(ms)
            browser.close()
    return timings


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile (inclusive method), as bench_submit.py computes it."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="timed items per study")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000], help="study sizes (pairs)")
    args = parser.parse_args()
    results = {}
    for size in args.sizes:
        started = time.perf_counter()
        results[size] = potato_latencies(size, args.n)
        print(f"{size:>6} pairs: measured in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"\nPotato {POTATO_VERSION}: click on Next -> next item drawn, {args.n} items, {WARMUP} warm-up")
    for size, timings in results.items():
        print(
            f"{size:>6} pairs: p50 {percentile(timings, 50):6.0f} ms   p95 {percentile(timings, 95):6.0f} ms"
            f"   max {max(timings):6.0f} ms"
        )


if __name__ == "__main__":
    main()
