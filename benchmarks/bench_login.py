"""Server-side login time with Argon2id (accounts.authenticate), known vs unknown names.

Run from the repository root: `python benchmarks/bench_login.py [--n 30]`. Builds a temporary SQLite
database with one annotator, then times `accounts.authenticate` (its own session and commit, as the
login page does): correct password, wrong password, and an unknown name; each with a fresh user name
so the throttle never waits. Prints p50 and p95 in milliseconds and the Argon2id parameters. The goal
 is a p50 of 100-500 ms: slow enough to make guessing costly, fast enough for a person.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotator.errors import AuthError  # noqa: E402
from annotator.people import accounts  # noqa: E402
from annotator.store import db  # noqa: E402
from annotator.store.models import User  # noqa: E402

PASSWORD = "bench-login-password-7731"


def _time(engine: object, username: str, password: str) -> float:
    start = time.perf_counter()
    try:
        with db.session_scope(engine) as session:  # type: ignore[arg-type]
            accounts.authenticate(session, username, password)
    except AuthError:
        pass
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="logins per kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        db.upgrade(url)
        engine = db.make_engine(url)
        with db.session_scope(engine) as session:
            for k in range(args.n):
                user = User(
                    username=f"user{k:03d}", role="annotator", password_hash=accounts.hash_password(PASSWORD)
                )
                session.add(user)
        accounts._dummy_hash()  # built once per process
        kinds = {
            "correct password": lambda k: _time(engine, f"user{k:03d}", PASSWORD),
            "wrong password": lambda k: _time(engine, f"user{k:03d}", "not-the-password"),
            "unknown name": lambda k: _time(engine, f"ghost{k:03d}", "not-the-password"),
        }
        hasher = accounts.HASHER
        print(
            f"Argon2id m={hasher.memory_cost} KiB, t={hasher.time_cost}, p={hasher.parallelism}; "
            f"{args.n} logins each"
        )
        for name, run in kinds.items():
            times = sorted(run(k) for k in range(args.n))
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            print(f"{name:>17}: p50 {statistics.median(times):6.0f} ms   p95 {p95:6.0f} ms")
        engine.dispose()


if __name__ == "__main__":
    main()
