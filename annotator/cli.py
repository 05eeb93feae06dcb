"""The `annotator` command: thin Typer commands that parse, call the modules, and print."""

import functools
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError

from annotator import server
from annotator.demo import build_demo
from annotator.errors import UserError
from annotator.intake import assign, ingest, textguard
from annotator.people import accounts
from annotator.publish import export as exporting
from annotator.rating.guidelines import guidelines_text
from annotator.review import adjudicate as adjudication
from annotator.store import db
from annotator.study import load_config
from annotator.synthetic import SimulationSpec
from annotator.synthetic import simulate as run_simulation

if TYPE_CHECKING:  # the statistics stack loads only for the commands that use it
    import pandas as pd

    from analysis.report import Report

app = typer.Typer(
    help="Validate personalized preference pairs with human annotators.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
users_app = typer.Typer(help="Create, list, deactivate, reactivate, unlock accounts.", no_args_is_help=True)
app.add_typer(users_app, name="users")
controls_app = typer.Typer(help="Control pairs: swapped repeats, degraded responses, duplicates.")
app.add_typer(controls_app, name="controls")
models_app = typer.Typer(help="Reward-model predictions on a study's pairs.", no_args_is_help=True)
app.add_typer(models_app, name="models")
judges_app = typer.Typer(
    help="LLM judges' ratings on a study's pairs, compared with people.", no_args_is_help=True
)
app.add_typer(judges_app, name="judges")
# never break a printed URL, path or password across lines; user data is never read as Rich markup
out = Console(soft_wrap=True, markup=False)
err = Console(stderr=True, markup=False, soft_wrap=True)  # one line per message, never wrapped
F = TypeVar("F", bound=Callable[..., Any])
DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $ANNOTATOR_DB_URL or sqlite:///data/annotations.db)"),
]
StudyOption = Annotated[str, typer.Option("--study", "-s", help="Study name.")]
MaxBytesOption = Annotated[
    int,
    typer.Option(
        "--max-bytes",
        help="The most decoded text to read from the file (bytes; default 512 MB, as the browser's upload)",
    ),
]


def user_errors(command: F) -> F:
    """Turn a user mistake or a database fault into one clear line and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UserError as exc:
            err.print(Text.assemble(("error:", "bold red"), f" {exc}"), highlight=False, soft_wrap=True)
        except (DatabaseError, sqlite3.DatabaseError) as exc:
            if isinstance(exc, sqlite3.DatabaseError):  # the raw driver (e.g. the backup API)
                exc = DatabaseError(None, None, exc)
            err.print(
                Text.assemble(("database error:", "bold red"), f" {db.describe_error(exc)}"),
                highlight=False,
                soft_wrap=True,
            )
        except KeyboardInterrupt:
            err.print("interrupted; nothing partial was saved")
        raise typer.Exit(1)

    return wrapper  # type: ignore[return-value]


_global: dict[str, str | None] = {"db": None}


@app.callback()
def _main(database: DbOption = None) -> None:
    """Validate personalized preference pairs with human annotators."""
    _global["db"] = database


def db_url(url: str | None) -> str:
    """The database URL: the command's --db, else the global --db, else $ANNOTATOR_DB_URL or the default."""
    return db.resolve_url(url or _global["db"])


def open_db(url: str | None) -> Engine:
    """An engine for a database that is at the current schema."""
    engine = db.make_engine(db_url(url))
    db.check_schema(engine)
    return engine


def open_sound_db(url: str | None) -> Engine:
    """An engine for a database at the current schema that passes SQLite's quick_check: a damaged file
    is one line and exit 1, never a report or an export read from it (analyze, export)."""
    engine = db.make_engine(db_url(url))
    db.check_integrity(engine)
    db.check_schema(engine)
    return engine


@app.command()
@user_errors
def init(database: DbOption = None) -> None:
    """Create the database, or bring it to the current schema (safe to run again)."""
    url = db_url(database)
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
    engine = open_db(database)
    study_config = load_config(config) if config is not None else None
    with _progress() as bar:
        task = bar.add_task(f"reading {file.name}", total=_record_estimate(file))
        summary = ingest.import_file(
            engine,
            file,
            study=study,
            config=study_config,
            replace=replace,
            progress=lambda n: bar.advance(task, n),
            account=accounts.SYSTEM,
            strict=strict,
            max_bytes=max_bytes,
        )
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

    engine = open_db(database)
    with _progress() as bar:
        task = bar.add_task(f"reading {file.name}", total=_record_estimate(file))
        summary = import_predictions(
            engine,
            file,
            study=study,
            model=model,
            account=accounts.SYSTEM,
            progress=lambda n: bar.advance(task, n),
            max_bytes=max_bytes,
        )
    out.print(str(summary), highlight=False)


@models_app.command("queue")
@user_errors
def models_queue(
    study: StudyOption,
    send_back: Annotated[
        int, typer.Option("--send-back", help="Give every listed pair to this many more annotators")
    ] = 0,
    validated_only: Annotated[bool, typer.Option(help="Only pairs whose adjudication says keep")] = False,
    database: DbOption = None,
) -> None:
    """The pairs where a model and the human majority disagree; optionally send them back."""
    from annotator.review.predictions import disagreement_queue, send_back_disagreements

    engine = open_db(database)
    with db.session_scope(engine) as session:
        if send_back > 0:
            queue, created = send_back_disagreements(
                session, study=study, extra=send_back, validated_only=validated_only, account=accounts.SYSTEM
            )
        else:
            queue = disagreement_queue(
                session, study=study, validated_only=validated_only, account=accounts.SYSTEM
            )
            created = 0
    for row in queue.to_dict("records"):
        out.print(
            f"{row['pair_id']}  majority {row['majority']} ({row['human_agreement']:.2f} of "
            f"{row['n_judgments']})  disagree: {row['models_disagree']}",
            highlight=False,
        )
    out.print(f"{len(queue)} pair(s) where a model and the human majority disagree", highlight=False)
    if send_back > 0:
        out.print(f"sent back: {created} new assignment(s)", highlight=False)


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

    engine = open_db(database)
    with _progress() as bar:
        task = bar.add_task(f"reading {file.name}", total=_record_estimate(file))
        summary = import_judges(
            engine,
            file,
            study=study,
            judge=judge,
            replace=replace,
            account=accounts.SYSTEM,
            progress=lambda n: bar.advance(task, n),
        )
    out.print(str(summary), highlight=False)


@judges_app.command("queue")
@user_errors
def judges_queue(
    study: StudyOption,
    judge: Annotated[str | None, typer.Option("--judge", "-j", help="Only this judge")] = None,
    database: DbOption = None,
) -> None:
    """The pairs where a judge's preference and the human majority disagree."""
    from annotator.review.judges import judge_queue

    engine = open_db(database)
    with db.session_scope(engine) as session:
        queue = judge_queue(session, study=study, judge=judge, account=accounts.SYSTEM)
    for row in queue.to_dict("records"):
        out.print(
            Text(
                f"{row['pair_id']}  {row['judge']} {row['judge_preference']:+.1f}  "
                f"majority {row['majority']} ({row['human_agreement']:.2f} of {row['n_judgments']})"
            ),
            highlight=False,
        )
    out.print(f"{len(queue)} pair(s) where a judge and the human majority disagree", highlight=False)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
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


@users_app.command("add")
@user_errors
def users_add(
    name: str,
    role: Annotated[str, typer.Option(help="annotator, adjudicator or researcher")] = "annotator",
    ask: Annotated[
        bool,
        typer.Option(
            "--password/--generate",
            help="Read the password from a prompt (or the first line of stdin); --generate prints a new one",
        ),
    ] = False,
    database: DbOption = None,
) -> None:
    """Create an account (the password is never a command-line argument: `ps` would show it)."""
    engine = open_db(database)
    secret = read_password() if ask else accounts.generate_password()
    with db.session_scope(engine) as session:
        accounts.add_user(session, username=name, role=role, password=secret, account=accounts.SYSTEM)
    out.print(f"created {role} {name}", highlight=False)
    if not ask:
        out.print(f"password (shown once): {secret}", highlight=False)


def read_password() -> str:
    """A password from a hidden prompt (twice) on a terminal, else the first line of stdin."""
    import sys

    try:
        if sys.stdin.isatty():
            return str(typer.prompt("password", hide_input=True, confirmation_prompt=True))
        return sys.stdin.readline().rstrip("\r\n")
    except UnicodeDecodeError:
        raise UserError("the password is not valid UTF-8 text") from None


@users_app.command("list")
@user_errors
def users_list(database: DbOption = None) -> None:
    """List accounts."""
    engine = open_db(database)
    with db.session_scope(engine) as session:
        users = accounts.list_users(session)
        table = Table("username", "role", "active", "created")
        for user in users:
            table.add_row(
                user.username, user.role, "yes" if user.active else "no", f"{user.created_at:%Y-%m-%d}"
            )
    out.print(table)


@users_app.command("deactivate")
@user_errors
def users_deactivate(name: str, database: DbOption = None) -> None:
    """Deactivate an account (its labels are kept; it can no longer log in)."""
    engine = open_db(database)
    with db.session_scope(engine) as session:
        accounts.set_active(session, username=name, active=False, account=accounts.SYSTEM)
    out.print(f"deactivated {name} (all of its sessions ended)", highlight=False)


@users_app.command("reactivate")
@user_errors
def users_reactivate(name: str, database: DbOption = None) -> None:
    """Reactivate a deactivated account."""
    engine = open_db(database)
    with db.session_scope(engine) as session:
        accounts.set_active(session, username=name, active=True, account=accounts.SYSTEM)
    out.print(f"reactivated {name}", highlight=False)


@users_app.command("reset-password")
@user_errors
def users_reset_password(name: str, database: DbOption = None) -> None:
    """Give an account a new generated password (printed once); ends its sessions."""
    engine = open_db(database)
    with db.session_scope(engine) as session:
        secret = accounts.reset_password(session, username=name, account=accounts.SYSTEM)
    out.print(f"new password for {name} (shown once): {secret}", highlight=False)


@users_app.command("unlock")
@user_errors
def users_unlock(name: str, database: DbOption = None) -> None:
    """Clear an account's wait after failed logins."""
    engine = open_db(database)
    with db.session_scope(engine) as session:
        accounts.unlock(session, username=name, account=accounts.SYSTEM)
    out.print(f"unlocked {name}", highlight=False)


@users_app.command("link")
@user_errors
def users_link(
    name: str,
    base_url: Annotated[
        str, typer.Option(help="The app's address as users reach it")
    ] = "http://localhost:8501",
    days: Annotated[float, typer.Option(help="Days the link stays valid")] = 7.0,
    database: DbOption = None,
) -> None:
    """Print a single-use login link for an account."""
    from datetime import timedelta
    from urllib.parse import quote

    if days <= 0:
        raise UserError("--days must be positive")
    engine = open_db(database)
    with db.session_scope(engine) as session:
        token = accounts.issue_login_token(
            session, username=name, account=accounts.SYSTEM, valid_for=timedelta(days=days)
        )
    out.print(f"{base_url.rstrip('/')}/?token={quote(token)}", highlight=False)


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
    database: DbOption = None,
) -> None:
    """Assign pairs to annotators: K per pair, balanced load and sides; only adds what is missing."""
    engine = open_db(database)
    names = [n.strip() for n in annotators.split(",") if n.strip()] if annotators else None
    with db.session_scope(engine) as session:
        summary = assign.assign(
            session, study=study, overlap=overlap, annotators=names, seed=seed, account=accounts.SYSTEM
        )
    out.print(str(summary), highlight=False)


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

    engine = open_db(database)
    with db.session_scope(engine) as session:
        summary = make_controls(
            session,
            study=study,
            kind=kind,  # type: ignore[arg-type]  # the service refuses an unknown kind in one line
            n=n,
            seed=seed,
            account=accounts.SYSTEM,
        )
    out.print(str(summary), highlight=False)


@app.command()
@user_errors
def quality(
    study: StudyOption,
    drift: Annotated[str | None, typer.Option(help="Also agreement over time: per 'week' or 'block'")] = None,
    block_size: Annotated[int, typer.Option(help="Judgments per block with --drift block")] = 100,
    database: DbOption = None,
) -> None:
    """Per-annotator quality control: gold accuracy, self-consistency, attention, competence, exclusion."""
    from annotator.review.quality import agreement_drift, annotator_quality

    engine = open_db(database)
    with db.session_scope(engine) as session:
        result = annotator_quality(session, study=study, account=accounts.SYSTEM)
        over_time = None
        if drift is not None:
            over_time = agreement_drift(
                session, study=study, account=accounts.SYSTEM, by=drift, block_size=block_size
            )
    out.print(result.to_text(), highlight=False)
    if over_time is not None:
        table, markers = over_time
        out.print("Agreement over time (main pairs):", highlight=False)
        out.print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"), highlight=False)
        out.print("Guideline versions:", highlight=False)
        out.print(markers.to_string(index=False), highlight=False)


@app.command()
@user_errors
def simulate(
    study: StudyOption,
    annotators: Annotated[int, typer.Option(help="Simulated annotators to create or reuse")] = 3,
    overlap: Annotated[int, typer.Option(help="Simulated annotators per pair")] = 3,
    quality_gap: Annotated[float, typer.Option(help="True chosen - rejected gap on quality (points)")] = 0.0,
    rubric_gap: Annotated[
        float, typer.Option(help="True chosen - rejected gap per rubric aspect (0-2 scale)")
    ] = 1.0,
    noise: Annotated[float, typer.Option(help="Rating noise SD (points)")] = 0.6,
    bias_sd: Annotated[float, typer.Option(help="SD of the annotators' biases (points)")] = 0.25,
    seed: Annotated[int, typer.Option(help="Random seed")] = 0,
    spammers: Annotated[int, typer.Option(help="How many of the annotators answer at random, fast")] = 0,
    database: DbOption = None,
) -> None:
    """Simulate annotators with a known truth (through the real assignment and submit code)."""
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
    with _progress() as bar:
        task = bar.add_task("simulating judgments", total=None)
        summary = run_simulation(engine, study=study, spec=spec, progress=lambda n: bar.advance(task, n))
    out.print(str(summary), highlight=False)


@app.command()
@user_errors
def serve(
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8501,
    host: Annotated[
        str, typer.Option(help="Address to bind (0.0.0.0 to accept other machines)")
    ] = "127.0.0.1",
    database: DbOption = None,
) -> None:
    """Start the web app on the database."""
    url = absolute_url(db_url(database))
    engine = open_db(url)
    db.check_integrity(engine)  # never start as if healthy on a damaged database
    db.check_audit(engine)  # nor with an audit log that can be rewritten
    engine.dispose()
    guidelines_text()  # nor with guidelines it cannot show
    out.print(f"serving {db.shown_url(url)} at http://{host}:{port}", highlight=False)
    raise typer.Exit(server.run(url, host=host, port=port))


@app.command()
@user_errors
def demo(
    rebuild: Annotated[bool, typer.Option(help="Build data/demo.db afresh")] = False,
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind")] = "127.0.0.1",
    serve_app: Annotated[
        bool, typer.Option("--serve/--no-serve", help="Start the app after building")
    ] = True,
) -> None:
    """Build the demo (sample pairs, demo accounts, three simulated annotators) and start the app."""
    with err.status("building the demo database..."):
        built = build_demo(rebuild=rebuild)
    out.print(("built " if built.built else "using existing ") + built.url, highlight=False)
    table = Table("username", "role", "password", title="Demo accounts")
    for username, (role, password) in built.credentials.items():
        table.add_row(username, role, password)
    out.print(table)
    if serve_app:
        out.print(
            f"open http://{'localhost' if host in ('127.0.0.1', '0.0.0.0') else host}:{port}", highlight=False
        )
        raise typer.Exit(server.run(built.url, host=host, port=port))


@app.command()
@user_errors
def power(
    margin: Annotated[float, typer.Option(help="Equivalence margin (scale points)")] = 0.5,
    sd: Annotated[float, typer.Option(help="SD of one annotator's chosen - rejected difference")] = 1.0,
    annotators: Annotated[int, typer.Option(help="Annotators per pair")] = 3,
    target: Annotated[float, typer.Option("--power", help="Target power")] = 0.8,
    alpha: Annotated[float, typer.Option(help="Level of each one-sided test")] = 0.05,
    true_diff: Annotated[float, typer.Option(help="Assumed true difference")] = 0.0,
    check: Annotated[bool, typer.Option(help="Cross-check by simulation with the simulator's model")] = True,
    annotator_sd: Annotated[
        float, typer.Option(help="SD of the annotator-specific gap (annotators differ in the gap they see)")
    ] = 0.15,
    pair_sd: Annotated[float, typer.Option(help="SD of the pair-specific gap")] = 0.0,
    study: Annotated[
        str | None, typer.Option(help="Also report this study's power and variance components (pilot data)")
    ] = None,
    database: DbOption = None,
) -> None:
    """Pairs and annotators needed to show equivalence on quality (exact TOST power; crossed design)."""
    from analysis.power import pairs_needed, recommend_design, simulated_power

    if study is not None:
        study_power(study, database)

    try:
        result = pairs_needed(
            margin=margin, sd=sd, power=target, alpha=alpha, true_diff=true_diff, annotators=annotators
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out.print(
        f"{result.n_pairs} pairs with {annotators} annotators each reach power {result.power:.3f} "
        f"for margin +-{margin} (per-pair SD {result.sd_diff:.3f}, alpha {alpha}, "
        f"true difference {true_diff})",
        highlight=False,
    )
    if check:
        noise = sd / 2**0.5
        simulated = simulated_power(
            result.n_pairs,
            margin=margin,
            annotators=annotators,
            noise=noise,
            alpha=alpha,
            quality_gap=true_diff,
            bias_sd=0.0,
            n_sim=400,
        )
        out.print(
            f"simulation (rounded 1-5 ratings, noise SD {noise:.2f}, 400 studies): power {simulated:.3f}",
            highlight=False,
        )
    try:
        design = recommend_design(
            margin=margin,
            pair_var=pair_sd**2,
            annotator_var=annotator_sd**2,
            residual_var=sd**2,
            power=target,
            alpha=alpha,
            true_diff=true_diff,
            per_pair=annotators,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out.print(
        f"generalizing over annotators (crossed model, annotator-gap SD {annotator_sd:g}, pair-gap SD "
        f"{pair_sd:g}): {design.n_pairs} pairs, {design.per_pair} annotators per pair from a pool of "
        f"{design.pool} reach power {design.power:.3f}",
        highlight=False,
    )
    designs = Table(
        "overlap", "pairs", "pool", "judgments", "power", title="Designs by overlap (crossed model)"
    )
    for overlap in range(1, 6):
        try:
            option = recommend_design(
                margin=margin,
                pair_var=pair_sd**2,
                annotator_var=annotator_sd**2,
                residual_var=sd**2,
                power=target,
                alpha=alpha,
                true_diff=true_diff,
                per_pair=overlap,
            )
        except ValueError:
            continue
        designs.add_row(
            str(overlap),
            str(option.n_pairs),
            str(option.pool),
            str(option.n_pairs * overlap),
            f"{option.power:.3f}",
        )
    out.print(designs)


def study_power(study: str, database: str | None) -> None:
    """The achieved power of an existing study and the annotators its crossed-model test would need."""
    from annotator.review import study_report

    engine = open_db(database)
    with db.session_scope(engine) as session:
        config, power = study_report.study_power(session, study=study, account=accounts.SYSTEM)
    table = Table(
        "dimension",
        "pairs",
        "SD of per-pair differences",
        "power",
        title=f"Achieved power of {study} (margin +-{config.analysis.margin:g}, true difference 0)",
    )
    components = Table(
        "dimension",
        "pair var",
        "annotator var",
        "residual var",
        "annotators needed",
        title="Variance components",
    )
    for row in power.itertuples():
        table.add_row(row.dimension, str(row.n_pairs), f"{row.sd_diff:.3f}", f"{row.power:.3f}")
        needed = "n/a" if row.pool_needed != row.pool_needed else f"{int(row.pool_needed)}"
        components.add_row(
            row.dimension,
            f"{row.pair_var:.3f}",
            f"{row.annotator_var:.3f}",
            f"{row.residual_var:.3f}",
            needed,
        )
    out.print(table)
    out.print("power: the per-pair TOST, conditional on this panel of annotators", highlight=False)
    out.print(components)
    out.print(
        f"annotators needed: the smallest pool that gives the crossed-model TOST (pairs and annotators in "
        f"general) power {config.analysis.target_power:g} with these pairs and overlap, from the estimated "
        "variance components",
        highlight=False,
    )
    with db.session_scope(engine) as session:
        overall = study_report.study_overall_power(session, study=study, account=accounts.SYSTEM)
    items = ", ".join(
        f"{key.removeprefix('power_')} {value:.3f}"
        for key, value in overall.items()
        if key.startswith("power_") and key != "power_overall" and isinstance(value, float)
    )
    pilot = overall["pilot"]
    assert isinstance(pilot, dict)
    out.print(
        f"overall PASS: power {overall['power_overall']:.3f} with {overall['n_pairs']} pairs, "
        f"{overall['per_pair']} annotators per pair from a pool of {overall['pool']} ({overall['n_sim']} "
        f"simulated studies from the estimated variance components; quality at a true gap of 0, rubric "
        f"and preference at their estimated effects; per verdict: {items}); not simulated, as they stand "
        "in this study: " + ", ".join(f"{k} {v}" for k, v in pilot.items()),
        highlight=False,
    )


@app.command()
@user_errors
def analyze(
    study: Annotated[str | None, typer.Option("--study", "-s", help="Study name (in the database)")] = None,
    labels: Annotated[
        Path | None,
        typer.Option("--labels", help="Analyse a labels file (CSV, JSONL, Parquet; long format) instead"),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Study TOML for --labels (default: the default study)")
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every number as JSON")] = None,
    html_out: Annotated[
        Path | None, typer.Option("--html", help="Write the self-contained HTML report")
    ] = None,
    markdown_out: Annotated[
        Path | None, typer.Option("--markdown", help="Write the report as Markdown")
    ] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples for the agreement CIs")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed")] = 0,
    database: DbOption = None,
) -> None:
    """Run the validation statistics: equivalence, rubric, preference, reliability, sensitivity."""
    from analysis import render
    from annotator.review import study_report

    if (study is None) == (labels is None):
        raise UserError("give either --study S (a study in the database) or --labels FILE")
    with err.status("computing the validation report..."):
        if labels is not None:
            result = study_report.labels_report(labels, config_path=config, n_boot=n_boot, seed=seed)
        else:
            engine = open_sound_db(database)
            with db.session_scope(engine) as session:
                result = study_report.study_report(
                    session, study=str(study), n_boot=n_boot, seed=seed, account=accounts.SYSTEM
                )
    print_report(result)
    for path, text in (
        (json_out, lambda: json.dumps(render.to_json(result), indent=2)),
        (html_out, lambda: render.to_html(result)),
        (markdown_out, lambda: render.to_markdown(result)),
    ):
        if path is not None:
            write_text(path, text())
            out.print(f"wrote {path}", highlight=False)


def write_text(path: Path, text: str) -> None:
    """Write an output file, or explain in one line why it cannot be written."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def print_report(result: "Report") -> None:
    """The terminal summary (analysis.render.to_terminal)."""
    from analysis.render import to_terminal

    out.print(Text(to_terminal(result)), highlight=False)


def absolute_url(url: str) -> str:
    """A SQLite URL with an absolute path, so that the app finds the same file from any folder."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        return parsed.set(database=str(Path(parsed.database).resolve())).render_as_string(hide_password=False)
    return url


@app.command("export")
@user_errors
def export_(
    kind: Annotated[str, typer.Argument(help="labels, adjudicated, pairs or dataset")],
    study: StudyOption,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="File to write (dataset: a folder)")],
    fmt: Annotated[
        str | None, typer.Option("--format", "-f", help="csv, jsonl or parquet (default: from --out)")
    ] = None,
    pseudonymize: Annotated[
        bool, typer.Option(help="Replace usernames with stable codes (labels, adjudicated)")
    ] = False,
    validated_only: Annotated[
        bool, typer.Option(help="pairs: only those whose latest adjudication says keep")
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
    if kind == "dataset":
        from annotator.publish.dataset import publish

        summary = publish(
            open_sound_db(database),
            study=study,
            out=out_path,
            repo=push_to_hub,
            license_id=license_id,
            overwrite=overwrite,
            account=accounts.SYSTEM,
        )
        out.print(str(summary), highlight=False)
        return
    fmt = fmt or out_path.suffix.lower().lstrip(".")
    engine = open_sound_db(database)
    with db.session_scope(engine) as session:
        rows = exporting.export(
            session,
            study=study,
            kind=kind,
            fmt=fmt,
            path=out_path,
            pseudonymize=pseudonymize,
            validated_only=validated_only,
            account=accounts.SYSTEM,
        )
    out.print(f"wrote {rows} rows to {out_path}", highlight=False)


@app.command("adjudicate")
@user_errors
def adjudicate_(
    study: StudyOption,
    auto: Annotated[bool, typer.Option("--auto", help="Resolve every pair that needs no person")] = False,
    show_queue: Annotated[
        bool, typer.Option("--queue", help="List the pairs that need a person, lowest agreement first")
    ] = False,
    limit: Annotated[int, typer.Option(help="Rows of the queue to show (0: all)")] = 50,
    fmt: Annotated[
        str, typer.Option("--format", help="The queue as a table that wraps to the terminal, or as CSV")
    ] = "table",
    database: DbOption = None,
) -> None:
    """Auto-resolve clear pairs (--auto) and list the ones that need an adjudicator (--queue)."""
    if not auto and not show_queue:
        raise UserError("give --auto, --queue or both")
    if fmt not in QUEUE_FORMATS:
        raise UserError(f"--format must be one of {', '.join(QUEUE_FORMATS)}, not {fmt!r}")
    engine = open_db(database)
    if auto:
        with db.session_scope(engine) as session:
            summary = adjudication.auto_resolve(session, study=study, account=accounts.SYSTEM)
        out.print(str(summary), highlight=False)
    if show_queue:
        with db.session_scope(engine) as session:
            pending = adjudication.queue(session, study=study, account=accounts.SYSTEM)
        shown = pending if limit <= 0 else pending.head(limit)
        if fmt == "csv":
            sys.stdout.write(queue_csv(shown))
            return
        out.print(queue_table(shown))
        more = f" (showing {len(shown)})" if len(shown) < len(pending) else ""
        out.print(f"{len(pending)} pair(s) need a person{more}", highlight=False)


QUEUE_FORMATS = ("table", "csv")


def queue_rows(queue: "pd.DataFrame") -> list[dict[str, str]]:
    """The adjudication queue as text rows: pair, db id, judgments, agreement, majority, rules, why."""
    return [
        {
            "pair": str(row.pair_id),
            "db id": str(row.pair_db_id),
            "judgments": str(row.n_judgments),
            "agreement": f"{row.agreement:.2f}",
            "majority": str(row.majority or "none"),
            "rules": str(row.rules),
            "why": str(row.reasons) + (" (reopened)" if row.reopened else ""),
        }
        for row in queue.itertuples(index=False)
    ]


def queue_table(queue: "pd.DataFrame") -> Table:
    """The queue as a table that fits the terminal: pair ids whole (folded, never cut), the reasons
    wrapped at word breaks in the widest column."""
    rows = queue_rows(queue)
    longest = max((len(r["pair"]) for r in rows), default=4)
    table = Table(expand=True, pad_edge=False)
    table.add_column("pair", no_wrap=False, overflow="fold", min_width=min(max(longest, 4), 24))
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("agree", justify="right", no_wrap=True)
    table.add_column("majority", no_wrap=True)
    table.add_column("rules", overflow="fold", max_width=14)
    table.add_column("why", ratio=1, min_width=18, overflow="fold")
    for r in rows:
        table.add_row(
            r["pair"], r["db id"], r["judgments"], r["agreement"], r["majority"], r["rules"], r["why"]
        )
    return table


def queue_csv(queue: "pd.DataFrame") -> str:
    """The queue as CSV (a header and one row per pair; every column, nothing cut)."""
    import csv
    import io

    buffer = io.StringIO()
    rows = queue_rows(queue)
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["pair"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


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


def main() -> None:
    """Entry point for `python -m annotator`."""
    app(prog_name="annotator")
