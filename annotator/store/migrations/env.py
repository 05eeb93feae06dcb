"""Alembic environment: runs migrations on the connection handed over by annotator.store.db.upgrade."""

from alembic import context
from sqlmodel import SQLModel

import annotator.store.models  # noqa: F401  (registers the tables)

target_metadata = SQLModel.metadata


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through annotator.store.db.upgrade (annotator init)")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
