"""Study reports as a service: the validation report and the power figures of a study.

One path for the app's Validation page, ``annotator analyze --study S``, ``annotator analyze --labels
FILE`` and ``annotator power --study S``: read the labels (database or file), take the study's
analysis settings, call :func:`analysis.report.build_report` (or the power functions). Nothing here
computes a statistic.
"""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from sqlmodel import Session

from analysis.report import Report, ReportSettings, build_report
from analysis.wording import counted
from annotator.errors import UserError
from annotator.people.authorization import Account
from annotator.review.owner_rows import owner_rows
from annotator.review.readers import label_frame
from annotator.study import StudyConfig, load_config, study_config

if TYPE_CHECKING:
    from analysis.label_columns import LabelColumns


def with_owner_rows(frame: pd.DataFrame, owners: pd.DataFrame) -> pd.DataFrame:
    """The label frame with the owners' rows after it (`frame` itself when there are none)."""
    if owners.empty:
        return frame
    third_party = frame.assign(rater_kind="")
    return pd.concat(
        [third_party.astype({c: object for c in owners.columns if c in frame}), owners], ignore_index=True
    )


@dataclass(frozen=True)
class ReportOptions:
    """What a report is computed with: its bootstrap draws and seed, and the filters (only these
    categories, only these annotators; None: all)."""

    n_boot: int = 1000
    seed: int = 0
    categories: Sequence[str] | None = None
    annotators: Sequence[str] | None = None

    @property
    def whole(self) -> bool:
        """True when no filter is set (the whole study)."""
        return not (self.categories or self.annotators)

    def filter(self, frame: pd.DataFrame, *, by_annotator: bool = True) -> pd.DataFrame:
        """The rows of `frame` in the chosen categories (with `by_annotator`: of the chosen annotators)."""
        if self.categories:
            frame = frame[frame["category"].isin(list(self.categories))]
        if self.annotators and by_annotator:
            frame = frame[frame["annotator"].isin(list(self.annotators))]
        return frame


def study_report(
    session: Session,
    *,
    study: str,
    n_boot: int = 1000,
    seed: int = 0,
    categories: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    account: Account,
    extras: bool = True,
) -> Report:
    """Build the report from the study's current judgments with its own settings.

    Only a researcher (or SYSTEM) may read the labels.
    """
    config = study_config(session, study)
    options = ReportOptions(n_boot, seed, categories, annotators)
    frame = label_frame(session, study=study, account=account)
    owners = owner_rows(session, study=study, account=account)  # the report's own; never the QC's
    from annotator.review.final_labels import final_labels
    from annotator.review.predictions import prediction_frame

    predictions = prediction_frame(session, study=study, account=account)  # models vs people
    final = final_labels(session, study=study) if extras and not predictions.empty else None
    report = report_from_frame(
        with_owner_rows(frame, owners),
        study,
        config,
        options,
        predictions=predictions,
        final=final,
        extras=extras,
        collected_here=True,
    )
    from annotator.review.quality import attach_quality  # annotator QC, verdicts without the excluded

    def rebuild(kept: pd.DataFrame) -> Report:
        return report_from_frame(with_owner_rows(kept, owners), study, config, options, collected_here=True)

    report = attach_quality(
        session, study=study, report=report, frame=frame, account=account, build=rebuild, seed=seed
    )
    return _attach_judges(session, study, report, frame, config, options, account)


def _attach_judges(
    session: Session,
    study: str,
    report: Report,
    frame: pd.DataFrame,
    config: StudyConfig,
    options: ReportOptions,
    account: Account,
) -> Report:
    """The report with its LLM-judges section when the study has judge ratings (the same filters), and
    the prediction-powered section when a judge rated pairs beyond the people's (unfiltered only)."""
    import dataclasses

    from analysis.frames import split_controls
    from annotator.review.judges import judge_frame, sample_probabilities

    judges = judge_frame(session, study=study, account=account)
    if judges.empty:
        return report
    probability = sample_probabilities(session, study=study)
    frame = options.filter(frame)
    report = judge_report(
        report,
        frame,
        judges,
        config,
        n_boot=options.n_boot,
        seed=options.seed,
        whole=options.whole,
        probability=probability,
    )
    if report.owners is not None:  # the judges against the profiles' owners, beside the reward models
        from analysis.owners import score_judges

        owned = options.filter(owner_rows(session, study=study, account=account), by_annotator=False)
        main, _ = split_controls(frame)
        owners = score_judges(
            report.owners, main, split_controls(owned)[0], judges, alpha=config.analysis.alpha
        )
        report = dataclasses.replace(report, owners=owners)
    return report


def judge_report(
    report: Report,
    frame: pd.DataFrame,
    judges: pd.DataFrame,
    config: StudyConfig,
    *,
    n_boot: int,
    seed: int,
    whole: bool,
    probability: pd.Series | None = None,
) -> Report:
    """The report with its judge sections from a label frame and a judge frame (no database): the
    alternative annotator test with its content-blind baseline, and, when `whole` (the whole study:
    a filtered view's rated pairs are no uniform sample of the judge's pairs), the prediction-powered
    verdicts over every judged pair (weighted by `probability`, each pair's recorded inclusion
    probability, when the tool drew the human sample). The database path and ``analyze --labels
    --judges`` both call it."""
    import dataclasses

    from analysis.frames import split_controls
    from analysis.judges import judge_section
    from analysis.ppi_report import UNEQUAL_DRAW

    main, _ = split_controls(frame)
    epsilon, basis = config.judge_epsilon
    section = judge_section(
        main,
        judges,
        quality_items=config.dimension_names,
        epsilon=epsilon,
        alpha=config.analysis.alpha,
        n_boot=n_boot,
        seed=seed,
    )
    section.parameters["epsilon_basis"] = basis
    report = dataclasses.replace(report, judges=section)
    if probability is not None and probability.nunique() > 1:  # the people's pairs: not a uniform sample
        report = dataclasses.replace(report, parameters={**report.parameters, UNEQUAL_DRAW: True})
    if not whole:
        return report
    from analysis.ppi_report import prediction_powered_section

    covered = prediction_powered_section(
        main,
        judges,
        quality_items=config.dimension_names,
        margin=config.analysis.margin,
        alpha=config.analysis.alpha,
        control_pairs=_control_pairs(frame),
        probability=probability,
        margins=config.margins,
        max_broken_share=config.validation.max_broken_share,
        min_pairs=config.analysis.min_pairs,
    )
    return dataclasses.replace(report, prediction_powered=covered)


def _control_pairs(frame: pd.DataFrame) -> list[str]:
    """The ids of the frame's control pairs (their judge ratings stay out of the verdicts)."""
    from analysis.frames import CONTROL, PAIR_ID

    if CONTROL not in frame.columns:
        return []
    return frame.loc[frame[CONTROL].fillna("") != "", PAIR_ID].astype(str).unique().tolist()


def labels_report(
    path: Path,
    *,
    config_path: Path | None = None,
    study: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    judges: Sequence[Path] = (),
    pairs: Path | None = None,
    by_item: bool | None = None,
) -> Report:
    """The report of a labels file (CSV, JSONL or Parquet in the long label format) or a Parquet label
    dataset folder, without a database.

    The settings come from `config_path` (a study TOML; default: the default study). `judges` are
    judge files (checked like ``judges import`` against the pairs of `pairs`, a pair file, or else of
    the labels file): the report then has the judge sections too. `by_item`: read the labels one item
    at a time (:mod:`analysis.report_columns`; the verdicts without the sections that need the whole
    frame) or as one frame; None: by item when they hold more than
    :data:`analysis.label_columns.IN_MEMORY_ROWS` score rows.
    """
    from analysis.frames import ITEM, NotInStudy, check_rated

    config = load_config(config_path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    whose = (
        f"the study's settings are {config_path}'s"
        if config_path is not None
        else "the study's settings are the default study's: give yours with --config FILE"
    )
    options = ReportOptions(n_boot, seed)
    source, rows = _label_columns(path, by_item)
    if source is not None and judges:
        raise UserError(
            f"{path}: --judges needs the whole label frame, and these labels are read one item at a "
            f"time ({rows:,} score rows); give --in-memory to read them whole"
        )
    from analysis.label_files import read_labels

    try:
        if source is not None:
            return columns_report(source, study or path.stem, config, options, rows)
        frame = read_labels(path, scales=report_settings(config, options).scale_ends())
        check_rated(frame[ITEM].unique(), config.dimension_names)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except NotInStudy as exc:
        raise UserError(f"{path}: {exc} ({whose})") from None
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: {exc}") from None
    judged, probability = None, None
    if judges:
        from annotator.intake.ingest import load_pairs
        from annotator.intake.recorded_draw import file_probabilities
        from annotator.review.judges import file_study, read_judge_files

        records = load_pairs(pairs) if pairs is not None else []
        facts = file_study(frame, scales=config.quality.scales, pairs=pairs, records=records)
        judged = read_judge_files(judges, facts)
        if pairs is not None:
            probability = file_probabilities(pairs, records)
    report = report_from_frame(frame, study or Path(path).stem, config, options)
    if judged is None:
        return report
    return judge_report(
        report, frame, judged, config, n_boot=n_boot, seed=seed, whole=True, probability=probability
    )


def _label_columns(path: Path, by_item: bool | None) -> tuple["LabelColumns | None", int]:
    """The labels opened for reading item by item, with their row count, when they are to be read
    so (`by_item`, or None and more rows than the in-memory report reads); else (None, 0)."""
    from analysis.label_columns import IN_MEMORY_ROWS, LabelColumns

    if by_item is False:
        return None, 0
    try:
        source = LabelColumns(path)
        rows = source.count_rows()
    except ValueError as exc:
        if by_item:
            raise UserError(f"{path}: {exc}") from None
        return None, 0  # a file type read whole only (JSON lines), or an error read_labels names
    except OSError as exc:
        raise UserError(f"{path}: {exc}") from None
    if by_item or rows > IN_MEMORY_ROWS:
        return source, rows
    return None, 0


def columns_report(
    source: "LabelColumns", study: str, config: StudyConfig, options: ReportOptions, rows: int
) -> Report:
    """The report of labels read one item at a time (:func:`analysis.report_columns.build_columns_report`;
    its ValueError and OSError name what is wrong with the labels)."""
    from analysis.label_columns import IN_MEMORY_ROWS
    from analysis.report_columns import build_columns_report

    return build_columns_report(
        source, study=study, settings=report_settings(config, options), limit=IN_MEMORY_ROWS
    )


def report_from_frame(
    frame: pd.DataFrame,
    study: str,
    config: StudyConfig,
    options: ReportOptions,
    *,
    predictions: pd.DataFrame | None = None,
    final: pd.DataFrame | None = None,
    extras: bool = True,
    collected_here: bool = False,
) -> Report:
    """Filter a label frame (`options`: by category and annotator) and build the report, or explain why not.

    `collected_here`: the labels come from this tool's database (its blinded pages), not a file.

    `predictions` and `final` (model predictions, final labels) feed the benchmark section; without
    `extras` only the verdicts are computed (no descriptive tables, no benchmark section)."""
    frame = options.filter(frame)
    if frame.empty:
        raise UserError(
            f"study {study!r} has no judgments to analyse yet"
            + ("" if options.whole else " with these filters")
        )
    if frame["pair_id"].nunique() < 2:
        raise UserError(f"study {study!r} needs judgments on at least 2 pairs for the statistics")
    try:
        return build_report(
            frame,
            study=study,
            settings=report_settings(config, options, extras=extras, collected_here=collected_here),
            predictions=predictions,
            final=final,
        )
    except ValueError as exc:
        raise UserError(f"cannot analyse study {study!r}: {exc}") from None


def report_settings(
    config: StudyConfig, options: ReportOptions, *, extras: bool = True, collected_here: bool = False
) -> ReportSettings:
    """A study's report settings (its analysis settings, scales, margins and design) with `options`'
    bootstrap draws and seed."""
    return ReportSettings.of(
        config.analysis_settings(),
        quality_items=config.dimension_names,
        scale=config.quality.scale,
        scales=config.quality.scales,
        margins=config.margins,
        n_boot=options.n_boot,
        seed=options.seed,
        extras=extras,
        collected_here=collected_here,
        allocation=config.design,
    )


def study_power(session: Session, *, study: str, account: Account) -> tuple[StudyConfig, pd.DataFrame]:
    """Per quality dimension of an existing study: its achieved power (per-pair TOST, conditional on
    the panel), its variance components and the annotator pool the crossed-model TOST would need for
    the study's target power with its pairs and overlap.

    Returns
    -------
    tuple
        The study's config and a table with columns ``dimension, n_pairs, sd_diff, power,
        n_annotators, per_pair, estimate, pair_var, annotator_var, residual_var, pool_needed,
        power_at_pool_needed``.
    """
    from analysis.frames import split_controls
    from analysis.power import Plan, achieved_power, recommend_design, variance_components

    config = study_config(session, study)
    frame = label_frame(session, study=study, account=account)
    if frame.empty:
        raise UserError(f"study {study!r} has no judgments yet")
    frame, _ = split_controls(frame)
    if frame["pair_id"].nunique() < 2:
        raise UserError(f"study {study!r} needs judgments on at least 2 pairs")
    settings = config.analysis
    items = config.dimension_names
    try:
        achieved = achieved_power(frame, quality_items=items, margin=config.margins, alpha=settings.alpha)
        components = variance_components(frame, quality_items=items)
    except ValueError as exc:
        raise UserError(f"cannot analyse study {study!r}: {exc}") from None
    table = achieved.merge(components.drop(columns=["n_pairs"]), on="dimension")
    needed, power_at = [], []
    for row in table.itertuples():
        try:
            plan = Plan(
                n_pairs=int(row.n_pairs),
                per_pair=max(1, round(float(row.per_pair))),
                pool=1000,
                margin=config.margins[str(row.dimension)],
                pair_var=float(row.pair_var),
                annotator_var=float(row.annotator_var),
                residual_var=float(row.residual_var),
                alpha=settings.alpha,
            )
            rec = recommend_design(plan, power=settings.target_power, keep_pairs=True)
            needed.append(float(rec.pool))
            power_at.append(rec.power)
        except ValueError:
            needed.append(float("nan"))
            power_at.append(float("nan"))
    return config, table.assign(pool_needed=needed, power_at_pool_needed=power_at)


@dataclass(frozen=True)
class Pilot:
    """A study as a pilot: its verdict items with their crossed-model variance components (quality
    dimensions at a true gap of 0, the rubric and the preference at their estimated effects), its
    design, and the statuses of the verdicts that are not simulated."""

    components: pd.DataFrame
    n_pairs: int
    per_pair: int
    pool: int
    statuses: dict[str, str]


def _pilot(session: Session, study: str, account: Account, seed: int) -> Pilot:
    """The study read as a pilot (its report without the extras)."""
    report = study_report(session, study=study, account=account, n_boot=200, seed=seed, extras=False)
    v = report.validation
    parts = ["pair_var", "annotator_var", "residual_var"]
    rows = [
        {"item": r["dimension"], "kind": "equivalence", "effect": 0.0, **{k: r[k] for k in parts}}
        for r in v.crossed.to_dict("records")
    ]
    for table in (v.rubric_crossed, v.preference_crossed):
        if not table.empty:
            r = table.iloc[0]
            effect = float(r["estimate"])
            rows.append(
                {"item": r["dimension"], "kind": "superiority", "effect": effect, **{k: r[k] for k in parts}}
            )
    crossed = v.crossed.iloc[0]
    n_pairs = int(crossed["n_pairs"])
    per_pair = max(1, round(int(crossed["n_obs"]) / max(n_pairs, 1)))
    pool = max(int(crossed["n_annotators"]), per_pair)
    pilot = {
        x.key: str(x.status)
        for x in report.verdicts
        if x.key in ("sample_size", "reliability", "sensitivity")
    }
    return Pilot(pd.DataFrame(rows), n_pairs, per_pair, pool, pilot)


def study_overall_power(
    session: Session, *, study: str, account: Account, n_sim: int = 2000, seed: int = 0
) -> dict[str, object]:
    """The power of the overall PASS at the study's own design, by simulation from its variance
    components (:func:`analysis.power.overall_pass_power`): quality dimensions at a true gap of 0,
    the rubric and the preference at their estimated effects; sample size, reliability and
    sensitivity as they stand in this study.

    Returns
    -------
    dict
        ``power_overall``, ``power_<item>``, ``n_pairs``, ``per_pair``, ``pool``, ``n_sim`` and
        ``pilot`` (the statuses of the verdicts that are not simulated).
    """
    from analysis.power import PassPlan, overall_pass_power

    pilot = _pilot(session, study, account, seed)
    config = study_config(session, study)
    plan = PassPlan(
        pilot.components,
        n_pairs=pilot.n_pairs,
        per_pair=pilot.per_pair,
        pool=pilot.pool,
        margin=config.margins,
        alpha=config.analysis.alpha,
        max_broken_share=config.validation.max_broken_share,
    )
    result: dict[str, object] = dict(overall_pass_power(plan, n_sim=n_sim, seed=seed))
    design = {"n_pairs": pilot.n_pairs, "per_pair": pilot.per_pair, "pool": pilot.pool, "n_sim": n_sim}
    return result | design | {"pilot": pilot.statuses}


def study_design_comparison(
    session: Session,
    *,
    study: str,
    account: Account,
    pairs: int | None = None,
    pool: int | None = None,
    budget: float | None = None,
    n_sim: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, object]]:
    """Fixed, two-stage and sequential designs side by side for a planned study (`pairs` main pairs, a
    pool of `pool` annotators, `budget` judgments per pair on average; each defaults to the pilot's),
    from this study's variance components (:func:`analysis.design_power.compare_overall`).

    Returns
    -------
    tuple
        The table (one row per design: expected judgments, power of the equivalence verdicts, of the
        rubric and preference verdicts, of the overall PASS) and the planned design with the pilot's
        statuses of the verdicts that are not simulated.
    """
    from analysis.design_power import compare_overall
    from analysis.power import PassPlan

    pilot = _pilot(session, study, account, seed)
    config = study_config(session, study)
    n_pairs, pool, budget = pairs or pilot.n_pairs, pool or pilot.pool, budget or float(pilot.per_pair)
    if budget < 1:
        raise UserError(f"a budget of {budget:g} judgments per pair is below 1")
    try:
        plan = PassPlan(
            pilot.components,
            n_pairs=n_pairs,
            per_pair=budget,
            pool=pool,
            margin=config.margins,
            alpha=config.analysis.alpha,
            max_broken_share=config.validation.max_broken_share,
        )
        table = compare_overall(plan, n_sim=n_sim, seed=seed)
    except ValueError as exc:
        raise UserError(f"cannot compare designs for study {study!r}: {exc}") from None
    planned = {"n_pairs": n_pairs, "pool": pool, "budget": budget, "n_sim": n_sim}
    return table, planned | {"pilot": pilot.statuses}


def standing(report: Report, decided: Collection[str] = ()) -> tuple[str, list[str]]:
    """Where the study stands ("settled: PASS", "settled: FAIL" or "not settled: ...") and the pairs that
    get the next judgments: under a registered adaptive design those of its rule, with the judgments to
    its next look (:mod:`analysis.design_verdict`; sequential: only the next one, its procedure gives
    one judgment at a time), else the cleaning list's "needs more judgments" but the `decided` ones (a
    person decided them; a fixed design has no rule for how many more judgments settle it)."""
    from analysis.cleaning import pairs_needing_more
    from analysis.design_verdict import registered_design
    from analysis.design_verdict import standing as design_standing

    design = registered_design(report.parameters)
    if design is not None:
        words, pairs = design_standing(
            report.overall,
            report.validation,
            report.allocation,
            design,
            margin=report.parameters.get("margins") or float(report.parameters["margin"]),
        )
        if design.kind == "sequential" and pairs:  # one judgment at a time, as it is calibrated
            return words.replace("on these pairs", "one at a time; the next on this pair"), pairs[:1]
        return words, pairs
    if report.overall in ("PASS", "FAIL"):
        return f"settled: {report.overall}", []
    pairs = pairs_needing_more(report.cleaning) if not report.cleaning.empty else []
    settled = set(decided)  # a person's decision settles a pair
    pairs = [pair for pair in pairs if pair not in settled]
    if not pairs:
        return "not settled: see the verdicts", []
    # a fixed design has no rule for how many judgments settle it: these are the cleaning list's pairs
    marked = counted(len(pairs), "pair")
    return f"not settled: see the verdicts; the cleaning list asks for more judgments on {marked}", pairs
