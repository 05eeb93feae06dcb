"""A burst of simultaneous password logins: how many fail, and how long the slowest waits.

N accounts log in at the same moment (N threads released by one barrier), each with the real Argon2id
hasher and its own session, as the login page does (`accounts.authenticate` inside `db.session_scope`).
Prints the errors by message and p50 / p95 / max login time. SQLite by default; `--db URL` for another
engine (a PostgreSQL URL gets a fresh database of its own, dropped afterwards).

    python benchmarks/bench_login_burst.py [--n 100] [--db postgresql+psycopg://.../postgres]
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, insert, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from annotator.people import accounts  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.models import User  # noqa: E402

PASSWORD = "burst-login-password-5521"


def _database(url: str | None, folder: Path) -> tuple[str, str | None]:
    """(the URL to use, the PostgreSQL database to drop afterwards)."""
    if not url:
        return f"sqlite:///{folder / 'burst.db'}", None
    name = f"burst_{os.getpid()}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False), name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--db", default=None, help="an admin URL of PostgreSQL (default: SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url, dropped = _database(args.db, Path(folder))
        db.upgrade(url)
        engine = db.make_engine(url)
        stored = accounts.hash_password(PASSWORD)
        with engine.begin() as connection:
            rows = [
                {"username": f"u{k:03d}", "role": "annotator", "password_hash": stored} for k in range(args.n)
            ]
            connection.execute(insert(User), rows)
        barrier = threading.Barrier(args.n)
        times: list[float] = []
        errors: collections.Counter[str] = collections.Counter()

        def login(k: int) -> None:
            barrier.wait()
            start = time.perf_counter()
            try:
                with db.session_scope(engine) as session:
                    accounts.authenticate(session, f"u{k:03d}", PASSWORD, client=f"10.0.0.{k % 250}")
                times.append(time.perf_counter() - start)
            except Exception as exc:  # counted by message: the figure this benchmark prints
                errors[f"{type(exc).__name__}: {str(exc)[:90]}"] += 1

        load = os.getloadavg()[0]
        threads = [threading.Thread(target=login, args=(k,)) for k in range(args.n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        engine.dispose()
        if dropped:
            admin = create_engine(args.db, isolation_level="AUTOCOMMIT")
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE "{dropped}"'))
            admin.dispose()
    times.sort()
    engine_name = make_url(url).get_backend_name()
    failed = sum(errors.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.n} simultaneous logins on {engine_name} (load {load:.1f}): {len(times)} in, {failed} errors",
        end="",
    )
    print(f"; peak RSS of this process {peak:.0f} MB")
    for message, count in errors.most_common():
        print(f"  {count} x {message}")
    if times:
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"login time: p50 {statistics.median(times):.1f} s, p95 {p95:.1f} s, max {times[-1]:.1f} s")


if __name__ == "__main__":
    main()
