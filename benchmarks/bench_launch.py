"""Crowd launch day on real servers: many workers follow a study link within a minute, rate their items
and get the completion code; and many password logins at the same moment.

Run from the repository root:

    python benchmarks/bench_launch.py [--workers 100] [--window 60] [--places 90] [--postgres URL]

Load: every worker is a lightweight client of Streamlit's own websocket protocol (the browser's
BackMsg / ForwardMsg protobufs, one websocket per browser tab, asyncio in one process): it opens the
link, acknowledges the guidelines, answers every question of each item (the widget states a browser
sends) and presses submit (a trigger on the submit button, with the fragment id as the browser
sends it), pausing 1-3 s between items. Arrivals are uniform over `--window` seconds; one worker in
ten opens a second tab with the same link at the same moment. More workers than places arrive, so
the refusal is exercised too. Then `--logins` accounts log in with their passwords at one moment.

Measured: errors (an error alert, an exception or a lost connection; "all places are taken" for the
workers beyond the places is counted apart, as expected), places taken vs places, accounts per
worker id (from the database), finishers with the code, p50/p95 of login (the link visit until the
guidelines screen is drawn) and of submit -> next item (the trigger until the next item's token, or
the completion code, has arrived and the run has finished). The machine's load average is printed
before and after. SQLite: one `annotator serve`; PostgreSQL (`--postgres`): two servers on one database,
workers alternating between them.
"""

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from sqlalchemy import create_engine, func, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from sqlmodel import Session, select  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from annotator.intake import controls, ingest
from annotator.people import accounts  # noqa: E402
from annotator.people.authorization import SYSTEM  # noqa: E402
from annotator.server import background  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.models import CrowdLink, Event, User  # noqa: E402
from annotator.study import load_config, parse_config  # noqa: E402

CODE = "LAUNCH42"
PASSWORD = "bench-launch-password-7731"
TOKEN = re.compile(r'"item": "(i[0-9a-f]{16})"')  # the item's tag in the page script's data
EXPECTED_REFUSAL = "all places in this study are taken"


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"launch-{i}",
            "question": f"How should I plan my week {i}?",
            "profile": [
                {"id": f"p{i}-{k}", "category": "life", "text": f"Post {k} of user {i}."} for k in range(3)
            ],
            "rubric_aspects": [{"aspect": f"Aspect {k}", "reason": "r", "evidence": "e"} for k in range(2)],
            "narrative": "I like short answers.",
            "category": "life",
            "chosen": f"A short plan for week {i}.",
            "rejected": f"A long generic plan for week {i}.",
        }
        for i in range(n)
    ]


def build(url: str, folder: Path, *, places: int, items: int, logins: int) -> None:
    """The study: enough pairs for every place, Prolific links, a few duplicate controls; accounts."""
    db.upgrade(url)
    engine = db.make_engine(url)
    data = load_config().model_dump()
    data["crowd"] = data["crowd"] | {
        "platform": "prolific",
        "places": places,
        "items": items,
        "completion_code": CODE,
        "session_minutes": 60,
    }
    data["controls"] = data["controls"] | {"rate": 0.2}
    path = folder / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records(max(20, places * items // 3 + 5))) + "\n")
    ingest.import_file(engine, path, study="launch", config=parse_config(data), account=SYSTEM)
    with db.session_scope(engine) as session:
        controls.make_controls(session, study="launch", kind="duplicate", n=8, account=SYSTEM)
        hashed = accounts.hash_password(PASSWORD)
        for k in range(logins):
            session.add(User(username=f"person{k:02d}", role="annotator", password_hash=hashed))
        for k in range(2):  # one per server, to warm it up (first runs import every page's modules)
            session.add(User(username=f"warmup{k}", role="annotator", password_hash=hashed))
    engine.dispose()


# --------------------------------------------------------------------------------- the ws client


@dataclass
class Tab:
    """One browser tab speaking Streamlit's websocket protocol."""

    base: str
    socket: Any = None
    widgets: dict[str, str] = field(default_factory=dict)  # user key -> widget id
    fragments: dict[str, str] = field(default_factory=dict)  # widget id -> fragment id
    options: dict[str, list[str]] = field(default_factory=dict)  # button group key -> option labels
    token: str = ""
    code: str = ""
    errors: list[str] = field(default_factory=list)
    refused: bool = False
    states: dict[str, Any] = field(default_factory=dict)  # widget id -> (kind, value)

    async def open(self) -> None:
        uri = self.base.replace("http://", "ws://") + "/_stcore/stream"
        self.socket = await websockets.connect(
            uri, subprotocols=["streamlit"], max_size=None, open_timeout=120, ping_interval=None
        )

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()

    def _element(self, element: Any, fragment: str) -> None:
        kind = element.WhichOneof("type")
        if kind is None:
            return
        body = getattr(element, kind)
        widget_id = getattr(body, "id", "")
        if isinstance(widget_id, str) and widget_id.startswith("$$ID-"):
            key = widget_id.split("-", 2)[2] if widget_id.count("-") >= 2 else widget_id
            self.widgets[key] = widget_id
            self.fragments[widget_id] = fragment
            if kind == "button_group":
                self.options[key] = [option.content for option in body.options]
        if kind == "html":
            found = TOKEN.search(body.body)
            if found:
                self.token = found.group(1)
        elif kind == "code" and body.code_text.strip():
            self.code = body.code_text.strip()
        elif kind == "alert" and body.format == 1:  # ERROR
            if EXPECTED_REFUSAL in body.body:
                self.refused = True
            else:
                self.errors.append(body.body)
        elif kind == "exception":
            self.errors.append(f"exception: {body.message}")

    async def run(
        self,
        *,
        query: str = "",
        trigger: str = "",
        values: dict[str, Any] | None = None,
        until: Any = None,
        timeout: float = 180,
    ) -> float:
        """Send one rerun (the browser's BackMsg) and read until `until(self)` holds after a finished
        run; the seconds it took."""
        message = BackMsg()
        state = message.rerun_script
        state.query_string = query
        for key, value in (values or {}).items():
            widget_id = self.widgets[key]
            self.states[widget_id] = value
        fragment = ""
        for widget_id, value in self.states.items():
            widget = state.widget_states.widgets.add()
            widget.id = widget_id
            if isinstance(value, list):
                widget.string_array_value.data.extend(value)
            elif isinstance(value, str):
                widget.string_value = value
        if trigger:
            widget_id = self.widgets[trigger]
            widget = state.widget_states.widgets.add()
            widget.id = widget_id
            widget.trigger_value = True
            fragment = self.fragments.get(widget_id, "")
        if fragment:
            state.fragment_id = fragment
        start = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        deadline = start + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                self.errors.append(f"timeout after {timeout} s")
                return time.perf_counter() - start
            data = await asyncio.wait_for(self.socket.recv(), timeout=remaining)
            forward = ForwardMsg.FromString(data)
            which = forward.WhichOneof("type")
            if which == "delta" and forward.delta.WhichOneof("type") == "new_element":
                self._element(forward.delta.new_element, forward.delta.fragment_id)
            elif which == "script_finished" and forward.script_finished in (0, 3):  # success, fragment
                if self.errors or self.refused or until is None or until(self):
                    return time.perf_counter() - start


def _answers(tab: Tab, rng: random.Random) -> dict[str, list[str]]:
    """An option for every question of the form on screen (keys q_*)."""
    return {key: [rng.choice(options)] for key, options in tab.options.items() if key.startswith("q_")}


@dataclass
class Result:
    login_s: float | None = None
    submits_s: list[float] = field(default_factory=list)
    code: str = ""
    errors: list[str] = field(default_factory=list)
    refused: bool = False


async def worker(
    base: str, worker_id: str, delay: float, rng: random.Random, second_tab: bool
) -> list[Result]:
    """One crowd worker (and, with `second_tab`, the same link in a second tab at the same moment)."""
    await asyncio.sleep(delay)
    query = f"study=launch&PROLIFIC_PID={worker_id}&STUDY_ID=st1&SESSION_ID=se-{worker_id}"
    tabs = [Tab(base) for _ in range(2 if second_tab else 1)]
    results = [Result() for _ in tabs]
    try:
        for tab in tabs:
            await tab.open()
        times = await asyncio.gather(
            *(tab.run(query=query, until=lambda t: "ack_guidelines" in t.widgets or t.token) for tab in tabs)
        )
        for tab, result, seconds in zip(tabs, results, times, strict=True):
            result.login_s, result.refused, result.errors = seconds, tab.refused, tab.errors
        tab, result = tabs[0], results[0]
        if tab.refused or tab.errors:
            return results
        if "ack_guidelines" in tab.widgets and not tab.token:
            await tab.run(trigger="ack_guidelines", until=lambda t: bool(t.token))
        while not tab.code and not tab.errors:
            await asyncio.sleep(rng.uniform(1, 3))  # reading and answering
            before = tab.token
            seconds = await tab.run(
                values=_answers(tab, rng),
                trigger="annotate_submit",
                until=lambda t, old=before: t.token != old or bool(t.code),
            )
            if tab.token == before and not tab.code:
                tab.errors.append("submit did not lead to the next item")
            result.submits_s.append(seconds)
        result.code, result.errors = tab.code, tab.errors
    except Exception as exc:  # a lost connection or a protocol failure is an error of the run
        results[0].errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        for tab in tabs:
            await tab.close()
    return results


async def password_login(
    base: str, username: str, barrier: asyncio.Event, ready: asyncio.Semaphore, drawn: list[str]
) -> tuple[float, bool, list[str]]:
    """One password login through the login form: the page opened a few tabs at a time (`ready`), then
    every login released together by `barrier`."""
    tab = Tab(base)
    try:
        async with ready:
            await tab.open()
            await tab.run(until=lambda t: "login_submit" in t.widgets)
        drawn.append(username)
        await barrier.wait()
        seconds = await tab.run(
            values={"login_username": username, "login_password": PASSWORD},
            trigger="login_submit",
            until=lambda t: "ack_guidelines" in t.widgets or "logout" in t.widgets,
        )
        return seconds, "logout" in tab.widgets, tab.errors
    except Exception as exc:  # a lost connection is an error of the run
        drawn.append(username)
        return float("nan"), False, [*tab.errors, f"{type(exc).__name__}: {exc}"]
    finally:
        await tab.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


async def launch(bases: list[str], args: argparse.Namespace) -> list[Result]:
    rng = random.Random(args.seed)
    plans = [
        (
            bases[k % len(bases)],
            f"W{k:04d}{uuid.uuid4().hex[:6]}",
            rng.uniform(0, args.window),
            rng.random() < 0.1,
        )
        for k in range(args.workers)
    ]
    runs = await asyncio.gather(
        *(
            worker(base, wid, delay, random.Random(k), tab2)
            for k, (base, wid, delay, tab2) in enumerate(plans)
        )
    )
    return [r for results in runs for r in results]


async def warm_up(bases: list[str]) -> None:
    """One password login per server, drawing the rating page once (not measured)."""
    barrier = asyncio.Event()
    barrier.set()
    for k, base in enumerate(bases):
        await password_login(base, f"warmup{k}", barrier, asyncio.Semaphore(1), [])


async def logins(base: str, n: int) -> list[tuple[float, bool, list[str]]]:
    barrier, ready, drawn = asyncio.Event(), asyncio.Semaphore(4), []
    tasks = [
        asyncio.create_task(password_login(base, f"person{k:02d}", barrier, ready, drawn)) for k in range(n)
    ]
    while len(drawn) < n:  # every login page drawn first ...
        await asyncio.sleep(0.1)
    barrier.set()  # ... then every login at the same moment
    return await asyncio.gather(*tasks)


def check_db(url: str) -> tuple[int, int, int]:
    """Places taken, worker ids with more than one account, completion events."""
    engine = db.make_engine(url)
    with Session(engine) as session:
        taken = session.exec(select(func.count()).select_from(CrowdLink)).one()
        doubles = session.exec(
            select(CrowdLink.worker_hash).group_by(CrowdLink.worker_hash).having(func.count() > 1)
        ).all()
        completed = session.exec(
            select(func.count()).select_from(Event).where(Event.action == "crowd_complete")
        ).one()
    engine.dispose()
    return int(taken), len(doubles), int(completed)


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    name = f"bench_launch_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--places", type=int, default=90)
    parser.add_argument("--items", type=int, default=3)
    parser.add_argument("--logins", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--postgres", default="", help="an admin URL: run two servers on one new database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        url = (
            stack.enter_context(postgres_database(args.postgres))
            if args.postgres
            else f"sqlite:///{folder}/launch.db"
        )
        build(url, folder, places=args.places, items=args.items, logins=args.logins)
        servers = 2 if args.postgres else 1
        bases = [stack.enter_context(background(url, folder / f"server{k}.log")) for k in range(servers)]
        asyncio.run(warm_up(bases))
        load_before = os.getloadavg()
        started = time.perf_counter()
        results = asyncio.run(launch(bases, args))
        launch_s = time.perf_counter() - started
        load_after = os.getloadavg()
        taken, doubles, completed = check_db(url)
        report(args, results, launch_s, load_before, load_after, taken, doubles, completed)
        login_runs = asyncio.run(logins(bases[0], args.logins))
        ok = [s for s, logged_in, errs in login_runs if logged_in and not errs]
        print(
            f"{args.logins} simultaneous password logins (one server, load {os.getloadavg()[0]:.1f}): "
            f"{len(ok)} in; p50 {pct(ok, 0.5):.2f} s, p95 {pct(ok, 0.95):.2f} s, "
            f"max {max(ok, default=float('nan')):.2f} s; "
            f"errors {[e for _, _, errs in login_runs for e in errs][:3]}"
        )
        for k in range(servers):
            tail = (folder / f"server{k}.log").read_text(errors="replace").strip().splitlines()[-3:]
            if any("Traceback" in line or "Error" in line for line in tail):
                print(f"server {k} log ends with: {tail}")


def report(
    args: argparse.Namespace,
    results: list[Result],
    launch_s: float,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    taken: int,
    doubles: int,
    completed: int,
) -> None:
    """Print the launch's figures."""
    admitted = [r for r in results if not r.refused and not r.errors]
    finishers = [r for r in admitted if r.submits_s]
    errors = [e for r in results for e in r.errors]
    login_times = [r.login_s for r in results if r.login_s is not None]
    submits = [s for r in results for s in r.submits_s]
    print(
        f"engine: {'PostgreSQL, 2 servers' if args.postgres else 'SQLite, 1 server'}; {args.workers} workers "
        f"(+{len(results) - args.workers} second tabs) over {args.window:g} s; places {args.places}; "
        f"{args.items} items each (+ controls); whole launch {launch_s:.0f} s"
    )
    print(
        f"load average before {load_before[0]:.1f} / {load_before[1]:.1f}, after {load_after[0]:.1f} / "
        f"{load_after[1]:.1f} (1 / 5 min; {os.cpu_count()} cores)"
    )
    print(f"errors: {len(errors)} {sorted(set(errors))[:5]}")
    print(
        f"places taken: {taken} of {args.places}; refused (all taken): {sum(r.refused for r in results)}; "
        f"worker ids with more than one account: {doubles}"
    )
    with_code = sum(1 for r in finishers if r.code == CODE)
    print(f"finishers with the code: {with_code} of {len(finishers)} (completion events: {completed})")
    print(
        f"login (link -> guidelines screen): p50 {pct(login_times, 0.5):.2f} s, "
        f"p95 {pct(login_times, 0.95):.2f} s (n={len(login_times)})"
    )
    print(
        f"submit -> next item: p50 {pct(submits, 0.5):.2f} s, p95 {pct(submits, 0.95):.2f} s "
        f"(n={len(submits)})"
    )


if __name__ == "__main__":
    main()
