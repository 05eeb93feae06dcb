"""What leaves the tool: `export`, `backup`."""

from pathlib import Path
from typing import Annotated

import typer

from annotator.cli.common import DbOption, StudyOption, app, db_url, open_sound_db, out, user_errors
from annotator.errors import UserError


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
    license_id: Annotated[
        str | None, typer.Option("--license", help="dataset: the card's license (default: cc-by-4.0)")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="dataset: replace an existing folder")] = False,
    database: DbOption = None,
) -> None:
    """Export raw labels, adjudicated labels or the (validated) pairs as CSV, JSON Lines or Parquet;
    `dataset` writes a Hub-ready folder (Parquet + dataset card), optionally pushed to the Hub."""
    from annotator.people import authorization
    from annotator.publish import export as exporting
    from annotator.store import db

    _check_export_options(kind, fmt=fmt, push_to_hub=push_to_hub, license_id=license_id, overwrite=overwrite)
    if kind == "dataset":
        from annotator.publish.dataset import DEFAULT_LICENSE, publish

        summary = publish(
            open_sound_db(database),
            study=study,
            out=out_path,
            repo=push_to_hub,
            license_id=DEFAULT_LICENSE if license_id is None else license_id,
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


def _check_export_options(
    kind: str, *, fmt: str | None, push_to_hub: str | None, license_id: str | None, overwrite: bool
) -> None:
    """Refuse an option that the kind of export would ignore."""
    options = {
        "--push-to-hub": push_to_hub is not None,
        "--license": license_id is not None,
        "--overwrite": overwrite,
    }
    given = [name for name, on in options.items() if on]
    if kind != "dataset" and given:
        raise UserError(f"{', '.join(given)}: only for `export dataset` (a folder for the Hub)")
    if kind == "dataset" and fmt is not None:
        raise UserError("--format: not for `export dataset` (a folder of Parquet files and a dataset card)")


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
