"""Running the tool: `init`, `serve`, `demo`, `simulate`."""

from typing import Annotated

import typer
from rich.table import Table

from annotator.cli.common import (
    DbOption,
    StudyOption,
    absolute_url,
    app,
    db_url,
    err,
    finite,
    open_db,
    out,
    progress_bar,
    user_errors,
)
from annotator.errors import UserError


@app.command()
@user_errors
def init(database: DbOption = None) -> None:
    """Create the database, or bring it to the current schema (safe to run again)."""
    from annotator.store import db

    url = db_url(database)
    engine = db.make_engine(url)
    db.check_integrity(engine)  # a damaged file is refused, never brought to a schema
    engine.dispose()
    before = db.upgrade(url)
    out.print(f"database {db.shown_url(url)} at schema {db.head_revision()} (was {before})", highlight=False)
    engine = db.make_engine(url)
    restored = db.restore_audit(engine)
    engine.dispose()
    if restored:
        out.print(
            f"restored the audit log's append-only triggers ({'; '.join(restored)}): events can no "
            "longer be changed or deleted",
            highlight=False,
        )


@app.command()
@user_errors
def recount(database: DbOption = None) -> None:
    """Count the Progress page's tallies again from the judgments and assignments; repair those that
    differ (after rows were loaded or edited outside the tool)."""
    from annotator.store import db, tallies

    engine = open_db(database)
    with db.session_scope(engine) as session:
        changed = tallies.rebuild(session)
    engine.dispose()
    if changed:
        out.print(f"counted again (they differed): {', '.join(changed)}", highlight=False, markup=False)
    else:
        out.print("every study's tallies agree with its rows", highlight=False)


@app.command()
@user_errors
def simulate(
    study: StudyOption,
    annotators: Annotated[int, typer.Option(min=1, help="Simulated annotators to create or reuse")] = 3,
    overlap: Annotated[int, typer.Option(min=1, help="Simulated annotators per pair")] = 3,
    quality_gap: Annotated[
        float, typer.Option(callback=finite, help="True chosen - rejected gap on quality (points)")
    ] = 0.0,
    rubric_gap: Annotated[
        float, typer.Option(callback=finite, help="True chosen - rejected gap per rubric aspect (0-2 scale)")
    ] = 1.0,
    noise: Annotated[float, typer.Option(min=0.0, callback=finite, help="Rating noise SD (points)")] = 0.6,
    bias_sd: Annotated[
        float, typer.Option(min=0.0, callback=finite, help="SD of the annotators' biases (points)")
    ] = 0.25,
    seed: Annotated[int, typer.Option(help="Random seed")] = 0,
    spammers: Annotated[int, typer.Option(help="How many of the annotators answer at random, fast")] = 0,
    database: DbOption = None,
) -> None:
    """Simulate annotators with a known truth (through the real assignment and submit code)."""
    from annotator.synthetic import SimulationSpec
    from annotator.synthetic import simulate as run_simulation

    spec = SimulationSpec(
        annotators=annotators,
        overlap=overlap,
        quality_gap=quality_gap,
        rubric_gap=rubric_gap,
        noise=noise,
        bias_sd=bias_sd,
        seed=seed,
        spammers=spammers,
    )
    engine = open_db(database)
    with progress_bar() as bar:
        task = bar.add_task("simulating judgments", total=None)
        summary = run_simulation(engine, study=study, spec=spec, progress=lambda n: bar.advance(task, n))
    out.print(str(summary), highlight=False)


@app.command()
@user_errors
def serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free one)")] = 8501,
    host: Annotated[
        str, typer.Option(help="Address to bind (0.0.0.0 to accept other machines)")
    ] = "127.0.0.1",
    database: DbOption = None,
) -> None:
    """Start the web app on the database."""
    from annotator import server
    from annotator.rating.guidelines import guidelines_text
    from annotator.review import report_worker
    from annotator.store import db, integrity

    url = absolute_url(db_url(database))
    engine = open_db(url)
    db.check_audit(engine)  # never start with an audit log that can be rewritten
    guidelines_text()  # nor with guidelines it cannot show
    report_worker.niceness()  # nor with a report worker's priority it cannot set
    # Nor let anyone write to a damaged database: a small file is checked now, a large one by a guard
    # that holds every write until its check has passed and stops the server if it fails.
    path = db.sqlite_file(engine)
    guard = None
    if path is not None and integrity.checked_while_starting(path):
        try:
            guard = integrity.start_guard(path, db.shown_url(url), db.busy_timeout_ms())
        except RuntimeError as exc:
            raise UserError(str(exc)) from None
    else:
        db.check_integrity(engine)
    engine.dispose()
    out.print(f"serving {db.shown_url(url)} at {server.address(host, port)}", highlight=False)
    if guard is not None:
        out.print(
            "checking the database's integrity while the server starts; writes wait for it", highlight=False
        )
        guard.detach()
    raise typer.Exit(server.run(url, host=host, port=port))


@app.command()
@user_errors
def demo(
    rebuild: Annotated[bool, typer.Option(help="Build data/demo.db afresh")] = False,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free one)")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind")] = "127.0.0.1",
    serve_app: Annotated[
        bool, typer.Option("--serve/--no-serve", help="Start the app after building")
    ] = True,
) -> None:
    """Build the demo (sample pairs, demo accounts, three simulated annotators) and start the app."""
    from annotator import server
    from annotator.demo import build_demo

    with err.status("building the demo database..."):
        built = build_demo(rebuild=rebuild)
    out.print(("built " if built.built else "using existing ") + built.url, highlight=False)
    table = Table("username", "role", "password", title="Demo accounts")
    for username, (role, password) in built.credentials.items():
        table.add_row(username, role, password)
    out.print(table)
    if serve_app:
        out.print(f"open {server.address(host, port)}", highlight=False)
        raise typer.Exit(server.run(built.url, host=host, port=port))
