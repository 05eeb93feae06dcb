"""The storage layer: tables (models.py), engines and sessions (db.py), Alembic migrations, SQLite backup.

Nothing above this package runs SQL by hand; services import the tables and sessions from here.
"""
