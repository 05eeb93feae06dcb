"""Bringing pairs and work in (and undoing it): `import`, `assign` (`--unassign`), `study archive |
restore | delete`, `controls make`, `models import`, `judges import`."""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from annotator import textguard
from annotator.cli.common import (
    DbOption,
    MaxBytesOption,
    R,
    StudyOption,
    app,
    as_system,
    controls_app,
    err,
    judges_app,
    models_app,
    open_db,
    out,
    progress_bar,
    study_app,
    user_errors,
)
from annotator.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@app.command("import")
@user_errors
def import_(
    file: Annotated[Path, typer.Argument(help="Pairs: .jsonl, .json, .csv or .parquet")],
    study: StudyOption,
    config: Annotated[
        Path | None, typer.Option(help="Study TOML for a new study (default data/study.toml)")
    ] = None,
    replace: Annotated[
        bool, typer.Option(help="Update records whose content changed under the same id")
    ] = False,
    strict: Annotated[
        bool, typer.Option(help="Refuse texts with bidirectional controls or zero-width characters")
    ] = False,
    max_bytes: MaxBytesOption = textguard.MAX_BYTES_DEFAULT,
    database: DbOption = None,
) -> None:
    """Import pair records into a study (created on first import); all or nothing."""
    from annotator.intake.ingest import import_file
    from annotator.study import load_config

    engine = open_db(database)
    settings = load_config(config) if config is not None else None
    reading = {"strict": strict, "max_bytes": max_bytes}  # how the file is read
    summary = _read_file(engine, file, import_file, study=study, config=settings, replace=replace, **reading)
    for warning in summary.warnings[:20]:
        err.print(f"warning: {file}: {warning}", highlight=False)
    if len(summary.warnings) > 20:
        err.print(f"warning: ... and {len(summary.warnings) - 20} more", highlight=False)
    out.print(str(summary), highlight=False)


@models_app.command("import")
@user_errors
def models_import(
    file: Annotated[Path, typer.Argument(help="Predictions keyed by pair id (.jsonl, .csv, ...)")],
    study: StudyOption,
    model: Annotated[str, typer.Option("--model", "-m", help="The model's name (re-importing replaces it)")],
    max_bytes: MaxBytesOption = textguard.MAX_BYTES_DEFAULT,
    database: DbOption = None,
) -> None:
    """Import one reward model's per-pair predictions (scores or a choice); all or nothing."""
    from annotator.review.predictions import import_predictions

    summary = _read_file(
        open_db(database), file, import_predictions, study=study, model=model, max_bytes=max_bytes
    )
    out.print(str(summary), highlight=False)


@judges_app.command("import")
@user_errors
def judges_import(
    file: Annotated[
        Path, typer.Argument(help="Judge ratings: pair_id, response, item, value (.jsonl, .csv, ...)")
    ],
    study: StudyOption,
    judge: Annotated[str, typer.Option("--judge", "-j", help="The judge's name (e.g. gpt-4o-rubric)")],
    replace: Annotated[
        bool, typer.Option(help="Update ratings that differ from earlier imported ones")
    ] = False,
    database: DbOption = None,
) -> None:
    """Import one LLM judge's ratings (all or nothing; the same file again is a no-op)."""
    from annotator.review.judges import import_judges

    summary = _read_file(open_db(database), file, import_judges, study=study, judge=judge, replace=replace)
    out.print(str(summary), highlight=False)


def _read_file(engine: "Engine", file: Path, importer: Callable[..., R], /, **kwargs: Any) -> R:
    """`importer(engine, file, **kwargs)` by the system account, with a progress bar over the records."""
    from annotator.people import authorization

    with progress_bar() as bar:
        task = bar.add_task(f"reading {file.name}", total=_record_estimate(file))
        return importer(
            engine, file, **kwargs, account=authorization.SYSTEM, progress=lambda n: bar.advance(task, n)
        )


def _record_estimate(path: Path) -> int | None:
    try:
        if path.suffix.lower() == ".jsonl":
            with path.open("rb") as handle:
                return sum(1 for line in handle if line.strip())
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # the importer reports the real problem
        return None
    return None


def _check_assign_options(
    *,
    unassign: bool,
    needs_more: bool,
    overlap: int | None,
    judge: str | None,
    sample: int | None,
    active: bool,
) -> None:
    """Refuse options that do not go together (one of them would be ignored)."""
    if unassign:
        options = {
            "--overlap": overlap is not None,
            "--needs-more": needs_more,
            "--judge": judge is not None,
            "--sample": sample is not None,
            "--active": active,
        }
        given = [name for name, on in options.items() if on]
        if given:
            raise UserError(f"--unassign removes items and takes only --annotators, not {', '.join(given)}")
        return
    if (judge is None) != (sample is None) or (active and sample is None):
        raise UserError("--judge and --sample go together (and --active with them): the human sample's draw")
    if sample is not None and needs_more:
        raise UserError("--needs-more does not go with --sample")


@app.command("assign")
@user_errors
def assign_(
    study: StudyOption,
    overlap: Annotated[
        int | None, typer.Option(help="Annotators per pair (default: the study's overlap)")
    ] = None,
    annotators: Annotated[
        str | None, typer.Option(help="Comma-separated usernames (default: all active)")
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed for sides and queue order")] = 0,
    needs_more: Annotated[
        bool,
        typer.Option(
            "--needs-more",
            help="Only the pairs that get the next judgments: under the study's registered adaptive "
            "design the pairs of its rule, else the cleaning list's 'needs more judgments'; one more "
            "annotator each",
        ),
    ] = False,
    unassign: Annotated[
        bool,
        typer.Option(
            "--unassign",
            help="Remove the items not yet started (no judgment, no draft) of --annotators (default: "
            "everyone); started items are listed and kept",
        ),
    ] = False,
    judge: Annotated[
        str | None,
        typer.Option(help="With --sample: draw the human sample from the pairs this LLM judge rated"),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            min=2,
            help="With --judge: draw this many pairs (expected) for people to rate, record each pair's "
            "inclusion probability, and assign only the drawn pairs (once, before any assignment)",
        ),
    ] = None,
    active: Annotated[
        bool,
        typer.Option(
            "--active",
            help="With --sample: draw by the judge's uncertainty (1 - its confidence) instead of uniformly; "
            "no pair below 0.8 of the uniform probability",
        ),
    ] = False,
    database: DbOption = None,
) -> None:
    """Assign pairs to annotators: K per pair, balanced load and sides; only adds what is missing."""
    from annotator.intake import assign, study_admin
    from annotator.people import authorization
    from annotator.store import db

    _check_assign_options(
        unassign=unassign, needs_more=needs_more, overlap=overlap, judge=judge, sample=sample, active=active
    )
    names = [n.strip() for n in annotators.split(",") if n.strip()] if annotators is not None else None
    if names == []:  # an empty list (e.g. an unset shell variable) is no "every annotator"
        raise UserError(
            "--annotators names no annotator; give usernames separated by commas, or leave it out"
        )
    engine = open_db(database)
    if unassign:
        with db.session_scope(engine) as session:
            removed = study_admin.unassign(
                session, study=study, annotators=names, account=authorization.SYSTEM
            )
        out.print(str(removed), highlight=False)
        for username, pair, why in removed.kept:
            out.print(f"  kept: {username} {pair} ({why})", highlight=False)
        return
    if sample is not None:
        from annotator.intake.human_sample import draw_human_sample

        with db.session_scope(engine) as session:
            drawn = draw_human_sample(
                session, study=study, judge=str(judge), size=sample, active=active, overlap=overlap,
                annotators=names, seed=seed, account=authorization.SYSTEM,
            )  # fmt: skip
        out.print(str(drawn), highlight=False)
        return
    with db.session_scope(engine) as session:
        more_for = None
        if needs_more:
            from annotator.review.adjudication_queue import decided_pairs
            from annotator.review.study_report import standing, study_report

            report = study_report(session, study=study, account=authorization.SYSTEM, n_boot=200)
            decided = decided_pairs(session, study=study, account=authorization.SYSTEM)
            words, more_for = standing(report, decided)
            if not more_for:
                out.print(f"study {study!r}: {words}; no pair needs more judgments", highlight=False)
                return
            out.print(f"study {study!r}: {words}", highlight=False)
        summary = assign.assign(
            session,
            study=study,
            overlap=overlap,
            annotators=names,
            seed=seed,
            more_for=more_for,
            account=authorization.SYSTEM,
        )
    out.print(str(summary), highlight=False)


def _set_archived(study: str, database: str | None, *, archived: bool) -> None:
    """Hide a study from the pickers or bring it back, and print what was done."""
    from annotator.intake import study_admin

    line = as_system(database, study_admin.set_archived, study=study, archived=archived)
    out.print(line, highlight=False)


@study_app.command("archive")
@user_errors
def study_archive(study: StudyOption, database: DbOption = None) -> None:
    """Hide a study from every picker; its data are kept and `study restore` brings it back."""
    _set_archived(study, database, archived=True)


@study_app.command("restore")
@user_errors
def study_restore(study: StudyOption, database: DbOption = None) -> None:
    """Bring an archived study back into the pickers."""
    _set_archived(study, database, archived=False)


@study_app.command("delete")
@user_errors
def study_delete(
    study: StudyOption,
    confirm: Annotated[
        str | None, typer.Option(help="The study's name again (asked for when not given)")
    ] = None,
    database: DbOption = None,
) -> None:
    """Delete a study nobody has rated yet (refused once it has judgments: archive it instead)."""
    from annotator.intake import study_admin

    if confirm is None:
        confirm = typer.prompt(f"Type the study's name ({study}) to delete it")
    line = as_system(database, study_admin.delete_study, study=study, confirm=str(confirm))
    out.print(line, highlight=False)


@controls_app.command("make")
@user_errors
def controls_make(
    study: StudyOption,
    kind: Annotated[str, typer.Option(help="swap (repeat, sides exchanged), degrade or duplicate")],
    n: Annotated[int, typer.Option("--n", help="Control pairs to make (swap: repeats per annotator)")],
    seed: Annotated[int, typer.Option(help="Random seed")] = 0,
    database: DbOption = None,
) -> None:
    """Derive control pairs from a study's pairs and mix them, unseen, into the queues."""
    from annotator.intake.controls import make_controls

    summary = as_system(database, make_controls, study=study, kind=kind, n=n, seed=seed)
    out.print(str(summary), highlight=False)
