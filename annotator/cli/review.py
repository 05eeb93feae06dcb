"""Reading a study: `quality`, `analyze`, `power`, `adjudicate`, `models queue`, `judges queue`."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from analysis.settings import DEFAULTS, DRIFT_BLOCK
from annotator.cli.common import (
    QUEUE_FORMATS,
    DbOption,
    StudyOption,
    app,
    err,
    finite,
    judges_app,
    models_app,
    open_db,
    open_sound_db,
    out,
    user_errors,
    writable_path,
    write_text,
)
from annotator.cli.planning import (
    check_by_simulation,
    crossed_designs,
    design_table,
    judge_power_table,
    study_power,
)
from annotator.errors import UserError

#: The largest margin or SD `power` plans with, in scale points: the planner works in variances and
#: their squares, which overflow for SDs near 1e77 (no rating scale comes close to this bound).
MOST_POINTS = 1e6

if TYPE_CHECKING:  # the statistics stack loads only for the commands that use it
    import pandas as pd

    from analysis.power import DesignResult
    from analysis.report import Report


@models_app.command("queue")
@user_errors
def models_queue(
    study: StudyOption,
    send_back: Annotated[
        int, typer.Option("--send-back", min=0, help="Give every listed pair to this many more annotators")
    ] = 0,
    validated_only: Annotated[bool, typer.Option(help="Only pairs whose adjudication says keep")] = False,
    database: DbOption = None,
) -> None:
    """The pairs where a model and the human majority disagree; optionally send them back."""
    from annotator.people import authorization
    from annotator.review.predictions import disagreement_queue, send_back_disagreements
    from annotator.store import db

    engine = open_db(database)
    with db.session_scope(engine) as session:
        if send_back > 0:
            queue, created = send_back_disagreements(
                session,
                study=study,
                extra=send_back,
                validated_only=validated_only,
                account=authorization.SYSTEM,
            )
        else:
            queue = disagreement_queue(
                session, study=study, validated_only=validated_only, account=authorization.SYSTEM
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


@judges_app.command("queue")
@user_errors
def judges_queue(
    study: StudyOption,
    judge: Annotated[str | None, typer.Option("--judge", "-j", help="Only this judge")] = None,
    database: DbOption = None,
) -> None:
    """The pairs where a judge's preference and the human majority disagree."""
    from annotator.people import authorization
    from annotator.review.judges import judge_queue
    from annotator.store import db

    engine = open_db(database)
    with db.session_scope(engine) as session:
        queue = judge_queue(session, study=study, judge=judge, account=authorization.SYSTEM)
    for row in queue.to_dict("records"):
        out.print(
            Text(
                f"{row['pair_id']}  {row['judge']} {row['judge_preference']:+.1f}  "
                f"majority {row['majority']} ({row['human_agreement']:.2f} of {row['n_judgments']})"
            ),
            highlight=False,
        )
    out.print(f"{len(queue)} pair(s) where a judge and the human majority disagree", highlight=False)


@app.command()
@user_errors
def quality(
    study: StudyOption,
    drift: Annotated[str | None, typer.Option(help="Also agreement over time: per 'week' or 'block'")] = None,
    block_size: Annotated[
        int | None,
        typer.Option(min=1, help=f"Judgments per block with --drift block (default {DRIFT_BLOCK})"),
    ] = None,
    database: DbOption = None,
) -> None:
    """Per-annotator quality control: gold accuracy, self-consistency, attention, competence, exclusion."""
    from annotator.people import authorization
    from annotator.review.quality import agreement_drift, annotator_quality
    from annotator.store import db

    if block_size is not None and drift != "block":
        raise UserError("--block-size goes with --drift block")
    engine = open_db(database)
    with db.session_scope(engine) as session:
        result = annotator_quality(session, study=study, account=authorization.SYSTEM)
        over_time = None
        if drift is not None:
            over_time = agreement_drift(
                session,
                study=study,
                account=authorization.SYSTEM,
                by=drift,
                block_size=block_size or DRIFT_BLOCK,
            )
    out.print(result.to_text(), highlight=False)
    if over_time is not None:
        table, markers = over_time
        out.print("Agreement over time (main pairs):", highlight=False)
        out.print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"), highlight=False)
        out.print("Guideline versions:", highlight=False)
        out.print(markers.to_string(index=False), highlight=False)


def _check_power_options(
    *, judge: str | None, compare_designs: bool, pairs: int | None, pool: int | None, budget: float | None
) -> None:
    """Refuse the options of one plan given with another or alone (each would be ignored)."""
    if judge is not None and compare_designs:
        raise UserError("give --judge or --compare-designs, not both (they plan different designs)")
    if budget is not None and not compare_designs:
        raise UserError("--budget goes with --compare-designs")
    if pool is not None and judge is None and not compare_designs:
        raise UserError("--pool goes with --judge or --compare-designs")
    if pairs is not None and judge is None and not compare_designs:
        raise UserError("--pairs goes with --judge or --compare-designs")


@app.command()
@user_errors
def power(
    margin: Annotated[
        float, typer.Option(max=MOST_POINTS, callback=finite, help="Equivalence margin (scale points)")
    ] = DEFAULTS.margin,
    sd: Annotated[
        float,
        typer.Option(
            max=MOST_POINTS, callback=finite, help="SD of one annotator's chosen - rejected difference"
        ),
    ] = 1.0,
    annotators: Annotated[int, typer.Option(help="Annotators per pair")] = 3,
    target: Annotated[float, typer.Option("--power", callback=finite, help="Target power")] = 0.8,
    alpha: Annotated[float, typer.Option(callback=finite, help="Level of each one-sided test")] = 0.05,
    true_diff: Annotated[float, typer.Option(callback=finite, help="Assumed true difference")] = 0.0,
    check: Annotated[bool, typer.Option(help="Cross-check by simulation with the simulator's model")] = True,
    annotator_sd: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=MOST_POINTS,
            callback=finite,
            help="SD of the annotator-specific gap (annotators differ in the gap they see)",
        ),
    ] = 0.15,
    pair_sd: Annotated[
        float, typer.Option(min=0.0, max=MOST_POINTS, callback=finite, help="SD of the pair-specific gap")
    ] = 0.0,
    study: Annotated[
        str | None, typer.Option(help="Also report this study's power and variance components (pilot data)")
    ] = None,
    simulations: Annotated[
        int, typer.Option(min=100, help="Simulated studies for the power of a study's overall PASS")
    ] = 2000,
    judge: Annotated[
        str | None,
        typer.Option(help="With --study: the human sample needed when this judge rates every pair"),
    ] = None,
    pairs: Annotated[
        int | None,
        typer.Option(
            min=2,
            help="With --judge: pairs the judge rates (default: those it rated); with --compare-designs: "
            "main pairs planned (default: the pilot's)",
        ),
    ] = None,
    compare_designs: Annotated[
        bool,
        typer.Option(
            "--compare-designs",
            help="With --study: fixed, two-stage and sequential designs side by side (expected judgments, "
            "power of the overall PASS) from the study's variance components",
        ),
    ] = False,
    pool: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --judge or --compare-designs: annotators in the pool each pair's annotators come "
            "from (default: the pilot's)",
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            min=1.0,
            callback=finite,
            help="With --compare-designs: judgments per pair on average (default: the pilot's)",
        ),
    ] = None,
    database: DbOption = None,
) -> None:
    """Pairs and annotators needed to show equivalence on quality (exact TOST power; crossed design)."""
    from analysis.power import MAX_PAIRS, MAX_POOL, Plan, pairs_needed, recommend_design

    _check_power_options(judge=judge, compare_designs=compare_designs, pairs=pairs, pool=pool, budget=budget)
    if judge is not None:
        if study is None:
            raise UserError("--judge needs --study (the pilot: people and the judge on the same pairs)")
        judge_power_table(study, judge, database, pairs=pairs, pool=pool)
        return
    if compare_designs:
        if study is None:
            raise UserError("--compare-designs needs --study (the pilot whose variance components it uses)")
        design_table(study, database, pairs=pairs, pool=pool, budget=budget, simulations=simulations)
        return
    if study is not None:
        study_power(study, database, simulations)

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
        check_by_simulation(
            result, margin=margin, sd=sd, annotators=annotators, alpha=alpha, true_diff=true_diff
        )

    def design_for(per_pair: int) -> "DesignResult":
        plan = Plan(
            n_pairs=MAX_PAIRS,
            per_pair=per_pair,
            pool=MAX_POOL,
            margin=margin,
            pair_var=pair_sd**2,
            annotator_var=annotator_sd**2,
            residual_var=sd**2,
            alpha=alpha,
            true_diff=true_diff,
        )
        return recommend_design(plan, power=target)

    crossed_designs(design_for, annotators=annotators, annotator_sd=annotator_sd, pair_sd=pair_sd)


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
    judges: Annotated[
        list[Path] | None,
        typer.Option(
            "--judges",
            help="With --labels: an LLM judge's ratings (as for judges import; the judge's name from a "
            "judge column or the file name); repeatable",
        ),
    ] = None,
    pairs: Annotated[
        Path | None,
        typer.Option("--pairs", help="With --judges: the pair file (its pairs may include unrated ones)"),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every number as JSON")] = None,
    html_out: Annotated[
        Path | None, typer.Option("--html", help="Write the self-contained HTML report")
    ] = None,
    markdown_out: Annotated[
        Path | None, typer.Option("--markdown", help="Write the report as Markdown")
    ] = None,
    out_files: Annotated[
        list[Path] | None,
        typer.Option(
            "--out",
            help="Write the report to FILE in the format its suffix names (.html, .json, .md); repeatable",
        ),
    ] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples for the agreement CIs")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed")] = 0,
    by_item: Annotated[
        bool | None,
        typer.Option(
            "--by-item/--in-memory",
            help="With --labels: read the labels one item at a time (every verdict; the sections that need "
            "the whole frame are marked not computed) or whole. Default: by item above the in-memory limit "
            "(analysis.label_columns.IN_MEMORY_ROWS score rows)",
        ),
    ] = None,
    database: DbOption = None,
) -> None:
    """Run the validation statistics: equivalence, rubric, preference, reliability, sensitivity."""
    from analysis import render
    from annotator.people import authorization
    from annotator.review import study_report
    from annotator.store import db

    if (study is None) == (labels is None):
        raise UserError("give either --study S (a study in the database) or --labels FILE")
    named = {"json": json_out, "html": html_out, "markdown": markdown_out}
    targets = [(path, render.format_for(name)) for name, path in named.items() if path is not None]
    try:
        targets += [(path, render.format_of_file(path)) for path in out_files or []]
    except KeyError as exc:
        raise UserError(str(exc.args[0])) from None
    for path, _ in targets:  # before the computation: every output can be written, or none is
        writable_path(path)
    if judges and labels is None:
        raise UserError("--judges goes with --labels (a study's judges come from `annotator judges import`)")
    if pairs is not None and not judges:
        raise UserError("--pairs goes with --judges (the pairs the judges rated)")
    if by_item is not None and labels is None:
        raise UserError("--by-item and --in-memory go with --labels")
    if config is not None and labels is None:
        raise UserError("--config goes with --labels (a study in the database has its own settings)")
    with err.status("computing the validation report..."):
        if labels is not None:
            result = study_report.labels_report(
                labels,
                config_path=config,
                n_boot=n_boot,
                seed=seed,
                judges=judges or (),
                pairs=pairs,
                by_item=by_item,
            )
        else:
            engine = open_sound_db(database)
            with db.session_scope(engine) as session:
                result = study_report.study_report(
                    session, study=str(study), n_boot=n_boot, seed=seed, account=authorization.SYSTEM
                )
    print_report(result)
    for path, fmt in targets:
        write_text(path, fmt.render(result))
        out.print(f"wrote {path}", highlight=False)


def print_report(result: "Report") -> None:
    """The terminal summary (analysis.render.to_terminal)."""
    from analysis.render import to_terminal

    out.print(Text(to_terminal(result)), highlight=False)


@app.command("adjudicate")
@user_errors
def adjudicate_(
    study: StudyOption,
    auto: Annotated[bool, typer.Option("--auto", help="Resolve every pair that needs no person")] = False,
    show_queue: Annotated[
        bool, typer.Option("--queue", help="List the pairs that need a person, lowest agreement first")
    ] = False,
    limit: Annotated[int, typer.Option(min=0, help="Rows of the queue to show (0: all)")] = 50,
    fmt: Annotated[
        str, typer.Option("--format", help="The queue as a table that wraps to the terminal, or as CSV")
    ] = "table",
    database: DbOption = None,
) -> None:
    """Auto-resolve clear pairs (--auto) and list the ones that need an adjudicator (--queue)."""
    from annotator.people import authorization
    from annotator.review import adjudicate as adjudication
    from annotator.review import adjudication_queue
    from annotator.store import db

    if not auto and not show_queue:
        raise UserError("give --auto, --queue or both")
    if fmt not in QUEUE_FORMATS:
        raise UserError(f"--format must be one of {', '.join(QUEUE_FORMATS)}, not {fmt!r}")
    engine = open_db(database)
    if auto:
        with db.session_scope(engine) as session:
            summary = adjudication.auto_resolve(session, study=study, account=authorization.SYSTEM)
        out.print(str(summary), highlight=False)
    if show_queue:
        with db.session_scope(engine) as session:
            pending = adjudication_queue.queue(session, study=study, account=authorization.SYSTEM)
        shown = pending if limit <= 0 else pending.head(limit)
        if fmt == "csv":
            sys.stdout.write(queue_csv(shown))
            return
        out.print(queue_table(shown))
        more = f" (showing {len(shown)})" if len(shown) < len(pending) else ""
        out.print(f"{len(pending)} pair(s) need a person{more}", highlight=False)


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
