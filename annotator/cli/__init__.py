"""The `annotator` command: thin Typer commands that parse, call the modules, and print.

One module per command group; importing them registers their commands on :data:`app`."""

from annotator.cli import intake, owners, people, publish, review, running  # noqa: F401  (registers commands)
from annotator.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    app()
