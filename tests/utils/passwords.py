"""Password hashing in the test process: Argon2id at its lowest cost for the whole session (a hash costs
0.2 s at the production cost and the suite makes thousands), and the production hasher for the tests
about hashing itself (`production_hashing`). A server started by a test keeps the production cost."""

from collections.abc import Iterator
from contextlib import contextmanager

from argon2 import PasswordHasher

from annotator.people import accounts

PRODUCTION_HASHER = accounts.HASHER  # taken when this module is imported, before any swap
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@contextmanager
def hashing_with(hasher: PasswordHasher) -> Iterator[None]:
    """`hasher` for every hash and verification while the block runs (and a dummy hash made with it)."""
    saved = accounts.HASHER
    accounts.HASHER = hasher
    accounts._dummy_hash.cache_clear()
    try:
        yield
    finally:
        accounts.HASHER = saved
        accounts._dummy_hash.cache_clear()
