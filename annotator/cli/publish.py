"""What leaves the tool: `export`, `backup`."""

from pathlib import Path
from typing import Annotated

import typer

from annotator.cli.common import DbOption, StudyOption, app, db_url, open_sound_db, out, user_errors


@app.command("export")
@user_errors
def export_(
    kind: Annotated[str, typer.Argument(help="labels, adjudicated, pairs or dataset")],
    study: StudyOption,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="File to write (dataset: a folder)")],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="csv, jsonl, parquet or parquet-dataset (labels: a folder by item; default: from --out)",
        ),
    ] = None,
    pseudonymize: Annotated[
        bool, typer.Option(help="Replace usernames with stable codes (labels, adjudicated)")
    ] = False,
    validated_only: Annotated[
        bool, typer.Option(help="only the pairs whose latest adjudication says keep, and their labels")
    ] = False,
    push_to_hub: Annotated[
        str | None, typer.Option("--push-to-hub", help="dataset: upload to this Hub repo (OWNER/NAME)")
    ] = None,
    license_id: Annotated[str, typer.Option("--license", help="dataset: the card's license")] = "cc-by-4.0",
    overwrite: Annotated[bool, typer.Option(help="dataset: replace an existing folder")] = False,
    database: DbOption = None,
) -> None:
    """Export raw labels, adjudicated labels or the (validated) pairs as CSV, JSON Lines or Parquet;
    `dataset` writes a Hub-ready folder (Parquet + dataset card), optionally pushed to the Hub."""
    from annotator.people import authorization
    from annotator.publish import export as exporting
    from annotator.store import db

    if kind == "dataset":
        from annotator.publish.dataset import publish

        summary = publish(
            open_sound_db(database),
            study=study,
            out=out_path,
            repo=push_to_hub,
            license_id=license_id,
            overwrite=overwrite,
            account=authorization.SYSTEM,
        )
        out.print(str(summary), highlight=False)
        return
    fmt = fmt or out_path.suffix.lower().lstrip(".")
    engine = open_sound_db(database)
    request = exporting.ExportRequest(study, kind, pseudonymize=pseudonymize, validated_only=validated_only)
    with db.session_scope(engine) as session:
        rows = exporting.export(session, request, fmt=fmt, path=out_path, account=authorization.SYSTEM)
    out.print(f"wrote {rows} rows to {out_path}", highlight=False)


@app.command("backup")
@user_errors
def backup_(
    file: Annotated[Path, typer.Argument(help="The copy to write (a new SQLite file)")],
    force: Annotated[bool, typer.Option(help="Overwrite FILE if it exists")] = False,
    database: DbOption = None,
) -> None:
    """Copy the SQLite database consistently while annotators work (PostgreSQL: explains pg_dump)."""
    from annotator.store import backup as backups

    summary = backups.backup(db_url(database), file, force=force)
    out.print(str(summary), highlight=False)
