"""LLM judges: importing their ratings per pair, reading them back and the judge-vs-people queue
(simulated judges for the demo: :mod:`annotator.review.simulated_judges`). Judge rows live in their
own table and never enter the human label frame; the report compares them with it
(:mod:`analysis.judges`).

A judge file (CSV, JSON Lines, JSON or Parquet, read like a pair file) has one row per rating:
``pair_id`` (the pair's id in the study), ``response`` (``chosen`` | ``rejected``), ``item`` (a quality
dimension of the study or ``rubric:<k>`` for one of the pair's rubric aspects) and ``value`` (on that
item's scale); optional per pair ``preference`` (-2..2, positive = chosen better) and ``confidence``
(0..1), repeated on the pair's rows; optional ``order`` (``chosen_first`` | ``rejected_first``) when the
judge was shown the pair in that order (a pair may be judged in both). A row with empty ``response``,
``item`` and ``value`` carries only the preference. Other columns (a rationale, say) are ignored and
never stored. All or nothing: every problem is named by line (or row) and field and nothing is written.
Re-importing the same file is a no-op; a changed rating is refused unless ``replace``.
"""

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import delete, insert, update
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from analysis.judges import JUDGE_COLUMNS, ORDERS
from analysis.scale import Scale
from analysis.vocabulary import RUBRIC_PREFIX
from annotator import textguard
from annotator.errors import IngestError, UserError
from annotator.intake.ingest import MAX_PROBLEMS, Progress, collect_records
from annotator.people.authorization import Account, require_role
from annotator.store.models import Event, JudgeRating, Pair, Study, id_of
from annotator.study import get_study, parse_config

__all__ = [
    "JudgeImport",
    "file_study",
    "read_judge_files",
    "import_judges",
    "judge_frame",
    "judge_queue",
    "load_judges",
    "save_judges",
]

RESPONSES = ("chosen", "rejected")
MAX_JUDGE_NAME = 200
JUDGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/+@-]*$")
_KEY = ("pair_id", "order", "response", "item")
#: A rubric aspect's index in an item name as the tool writes it: ASCII digits, no leading zero (so
#: "rubric:01", "rubric:\u0661" or "rubric:\u00b2" is no second name of an aspect nor an int() failure).
ASPECT_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")
#: A stored rating's columns, after its pair: order shown, response, item, value, preference, confidence.
_RATED = (
    col(JudgeRating.order_shown),
    col(JudgeRating.response),
    col(JudgeRating.item),
    col(JudgeRating.value),
    col(JudgeRating.preference),
    col(JudgeRating.confidence),
)


@dataclass(frozen=True)
class JudgeImport:
    """What a judges import did."""

    study: str
    judge: str
    imported: int
    unchanged: int
    replaced: int
    pairs: int

    def __str__(self) -> str:
        text = (
            f"study {self.study!r}, judge {self.judge!r}: imported {self.imported} ratings, "
            f"unchanged {self.unchanged}"
        )
        if self.replaced:
            text += f", replaced {self.replaced}"
        return text + f" ({self.pairs} pairs)"


# ------------------------------------------------------------------------------------------- reading


def _number(record: dict[str, Any], field: str, problems: list[str], lo: float, hi: float) -> float | None:
    """The field as a finite number in [lo, hi], None when empty; a problem otherwise."""
    value = record.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        problems.append(f"field {field}: expected a number, got {type(value).__name__}")
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        problems.append(f"field {field}: expected a number, got {textguard.shown(value)}")
        return None
    if not math.isfinite(number):
        problems.append(f"field {field}: must be a finite number, got {textguard.shown(value)}")
        return None
    if not lo <= number <= hi:
        problems.append(f"field {field}: must be between {lo:g} and {hi:g}, got {number:g}")
        return None
    return number


def _text(record: dict[str, Any], field: str, problems: list[str]) -> str:
    value = record.get(field)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        problems.append(f"field {field}: expected text, got {type(value).__name__}")
        return ""
    text = str(value).strip()
    if "\x00" in text:
        problems.append(f"field {field}: contains a NUL character")
        return ""
    return text


@dataclass(frozen=True)
class StudyFacts:
    """What a judge file is checked against: pair ids, rubric sizes, items and their scales."""

    pairs: dict[str, int]  # external id -> Pair.id
    aspects: dict[str, int]  # external id -> number of rubric aspects
    scales: Mapping[str, Scale]  # quality dimension -> its scale
    where: str = "in this study"  # where a pair id not in `pairs` was looked for

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(self.scales)


def _pair_field(record: dict[str, Any], study: StudyFacts, problems: list[str]) -> str:
    """The record's pair id, noting a missing one or one not in the study."""
    pair = _text(record, "pair_id", problems)
    if not pair and not problems:
        problems.append("field pair_id: missing (the pair's id in the study)")
    elif pair and pair not in study.pairs:
        problems.append(f"field pair_id: no pair {pair[:80]!r} {study.where}")
    return pair


def _order_field(record: dict[str, Any], problems: list[str]) -> str:
    """The record's order (chosen_first, rejected_first or empty), noting any other."""
    order = _text(record, "order", problems)
    if order not in ORDERS:
        problems.append(
            "field order: expected chosen_first or rejected_first (or empty), "
            f"got {textguard.quoted(order, 40)}"
        )
    return order


def _item_scale(study: StudyFacts, pair: str, item: str, problems: list[str]) -> tuple[float, float]:
    """The scale of `item` (a rubric aspect 0-2, a quality dimension the study's), noting an item the
    pair does not have."""
    if item.startswith(RUBRIC_PREFIX):
        index = item.removeprefix(RUBRIC_PREFIX)
        n_aspects = study.aspects.get(pair, 0)
        if not ASPECT_INDEX.fullmatch(index) or int(index) >= n_aspects:
            problems.append(
                f"field item: {textguard.quoted(item, 40)} is not a rubric aspect of this pair "
                f"(it has rubric:0 .. rubric:{n_aspects - 1})"
                if n_aspects
                else f"field item: {textguard.quoted(item, 40)}: this pair has no rubric aspects"
            )
        return 0.0, 2.0
    if item not in study.scales:
        problems.append(
            f"field item: expected one of {', '.join(study.dimensions)} or rubric:<k>, "
            f"got {textguard.quoted(item, 40)}"
        )
        return -math.inf, math.inf
    scale = study.scales[item]
    return float(scale.low), float(scale.high)


def _score_value(
    record: dict[str, Any], study: StudyFacts, pair: str, response: str, item: str, problems: list[str]
) -> float | None:
    """The value of a score row, noting an unknown response or item and a missing or out-of-scale value."""
    if response not in RESPONSES:
        problems.append(f"field response: expected chosen or rejected, got {textguard.quoted(response, 40)}")
    lo, hi = _item_scale(study, pair, item, problems)
    value = _number(record, "value", problems, lo, hi)
    if value is None and not any(p.startswith("field value") for p in problems):
        problems.append("field value: missing")
    return value


def _pair_level_problem(
    known: dict[str, tuple[float, str]], preference: float | None, confidence: float | None, where: str
) -> list[str]:
    """A preference or confidence that differs from the one given earlier for the same pair and order
    (`known`, which records the first of each)."""
    for field, given in (("preference", preference), ("confidence", confidence)):
        if given is None:
            continue
        if field in known and known[field][0] != given:
            return [
                f"field {field}: differs from this pair's {field} at {known[field][1]} "
                "(one per pair and order)"
            ]
        known.setdefault(field, (given, where))
    return []


def _checker(study: StudyFacts) -> Callable[[dict[str, Any], str], tuple[dict[str, Any], list[str]]]:
    seen: dict[tuple[str, str, str, str], str] = {}
    pair_level: dict[tuple[str, str], dict[str, tuple[float, str]]] = {}

    def check(record: Any, where: str) -> tuple[dict[str, Any], list[str]]:
        if not isinstance(record, dict):
            return {}, [f"expected an object, got {type(record).__name__}"]
        problems: list[str] = []
        pair = _pair_field(record, study, problems)
        order = _order_field(record, problems)
        response = _text(record, "response", problems)
        item = _text(record, "item", problems)
        preference = _number(record, "preference", problems, -2, 2)
        confidence = _number(record, "confidence", problems, 0, 1)
        value: float | None = None
        if not response and not item and record.get("value") in (None, ""):
            if preference is None and not any(p.startswith("field preference") for p in problems):
                problems.append(
                    "field preference: missing (a row without response, item and value carries it)"
                )
        else:
            value = _score_value(record, study, pair, response, item, problems)
        if problems:
            return {}, problems
        key = (pair, order, response, item)
        if key in seen:
            return {}, [
                f"field item: a second rating of this pair, order, response and item (first at {seen[key]})"
            ]
        seen[key] = where
        known = pair_level.setdefault((pair, order), {})
        problem = _pair_level_problem(known, preference, confidence, where)
        if problem:
            return {}, problem
        row = {
            "pair_id": study.pairs[pair],
            "order": order,
            "response": response,
            "item": item,
            "value": value,
            "preference": preference,
            "confidence": confidence,
            "where": where,
        }
        return row, []

    return check


def missing_judge_fields(names: Collection[str]) -> list[str]:
    """The fields every judge rating needs that are not among `names` (quoted, for a message), as
    :func:`_checker` requires them: `pair_id`; `value` or `preference`; with values and no
    preference, `response` and `item`."""
    absent = [] if "pair_id" in names else ["'pair_id'"]
    if "value" not in names and "preference" not in names:
        absent.append("'value' (or 'preference')")
    elif "preference" not in names:
        absent += [repr(field) for field in ("response", "item") if field not in names]
    return absent


def _fill_pair_level(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every row of a (pair, order) the preference and confidence given on any of them."""
    given: dict[tuple[int, str], dict[str, float]] = {}
    for row in rows:
        known = given.setdefault((row["pair_id"], row["order"]), {})
        for field in ("preference", "confidence"):
            if row[field] is not None:
                known[field] = row[field]
    for row in rows:
        known = given[(row["pair_id"], row["order"])]
        row["preference"], row["confidence"] = known.get("preference"), known.get("confidence")
    return rows


def study_facts(session: Session, study: str) -> StudyFacts:
    """What a judge file of `study` is checked against, read from the database."""
    row = get_study(session, study)
    config = parse_config(row.config, source=f"study {study!r}")
    pairs = session.exec(
        select(col(Pair.external_id), col(Pair.id), col(Pair.rubric)).where(
            col(Pair.study_id) == id_of(row), col(Pair.control) == ""
        )
    ).all()
    return StudyFacts(
        pairs={str(e): int(i or 0) for e, i, _ in pairs},
        aspects={str(e): len(r or []) for e, _, r in pairs},
        scales=config.quality.scales,
    )


def load_judges(
    path: str | Path, study: StudyFacts, *, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """Read and check a whole judge file against the study; raise IngestError naming each problem's
    line (or row) and field (up to 20)."""
    rows = collect_records(
        path, _checker(study), what="judge rating", progress=progress, missing=missing_judge_fields
    )
    return _fill_pair_level(rows)


# ------------------------------------------------------------------------------------ files alone


def file_study(
    frame: pd.DataFrame,
    *,
    scales: Mapping[str, Scale],
    pairs: Path | None = None,
    records: Sequence[dict[str, Any]] = (),
) -> StudyFacts:
    """What judge files are checked against without a database: the main pairs of the pair file
    `pairs` (its `records`, as :func:`annotator.intake.ingest.load_pairs` reads them; it may hold pairs
    no person rated; their rubric sizes) or else of the label frame (a pair's rubric size from the
    highest ``rubric:<k>`` rated on it)."""
    main = frame[frame["control"].fillna("") == ""] if "control" in frame.columns else frame
    if pairs is not None:
        main_records = [r for r in records if not r.get("control")]
        ids = [str(r["external_id"]) for r in main_records]
        aspects = {str(r["external_id"]): len(r.get("rubric") or []) for r in main_records}
        unknown = sorted({str(x) for x in main["pair_id"]} - set(ids))
        if unknown:  # the labels rate other pairs than the file the judges are checked against
            raise UserError(
                f"{pairs}: {len(unknown):,} labelled pair(s) are not in this pair file (e.g. "
                f"{unknown[0]!r}); --pairs is the file of the labelled pairs (and any the judges rated "
                "beyond them)"
            )
    else:
        ids = sorted({str(x) for x in main["pair_id"]})
        items = main[main["item"].astype(str).str.startswith(RUBRIC_PREFIX)]
        index = items["item"].astype(str).str.removeprefix(RUBRIC_PREFIX)
        index = pd.to_numeric(index, errors="coerce")
        sizes = (index.groupby(items["pair_id"].astype(str)).max() + 1).dropna().astype(int)
        aspects = {pair: int(sizes.get(pair, 0)) for pair in ids}
    where = (
        f"in the pair file {pairs}"
        if pairs is not None
        else "in the labels file (give the pair file with --pairs for pairs no person rated)"
    )
    return StudyFacts(
        pairs={pair: k for k, pair in enumerate(ids)}, aspects=aspects, scales=dict(scales), where=where
    )


def _judged_checker(
    study: StudyFacts, default: str
) -> Callable[[dict[str, Any], str], tuple[dict[str, Any], list[str]]]:
    """The judges-import check per row, one per judge named in the row's ``judge`` field (or
    `default` when it is empty)."""
    checkers: dict[str, Callable[[dict[str, Any], str], tuple[dict[str, Any], list[str]]]] = {}

    def check(record: Any, where: str) -> tuple[dict[str, Any], list[str]]:
        if not isinstance(record, dict):
            return {}, [f"expected an object, got {type(record).__name__}"]
        problems: list[str] = []
        judge = _text(record, "judge", problems) or default
        if problems:
            return {}, problems
        if not judge:
            return {}, ["field judge: missing (and the file's name is no judge name to take instead)"]
        if len(judge) > MAX_JUDGE_NAME or not JUDGE_NAME.match(judge):
            return {}, [
                f"field judge: {textguard.quoted(judge, 60)} may hold only letters, digits and "
                ". _ : / + @ - (and starts with a letter or digit)"
            ]
        checker = checkers.setdefault(judge, _checker(study))
        row, found = checker(record, where)
        return ({**row, "judge": judge} if row else row), found

    return check


def read_judge_files(paths: Sequence[Path], study: StudyFacts) -> pd.DataFrame:
    """Judge files read and checked like ``judges import`` (every problem named by file, line or row
    and field; all or nothing) into a judge frame (:data:`analysis.judges.JUDGE_COLUMNS`, pair_id the
    pair's id). A judge's name comes from each row's ``judge`` field, else from the file name; a judge
    may appear in one file only."""
    ids = {k: pair for pair, k in study.pairs.items()}
    frames: list[pd.DataFrame] = []
    owner: dict[str, Path] = {}
    for path in paths:
        path = Path(path)
        default = _default_judge(path)

        def missing(names: Collection[str], default: str = default, stem: str = path.stem) -> list[str]:
            """A judge file's needed fields, and `judge` when its name is no judge name either."""
            absent = missing_judge_fields(names)
            if not default and "judge" not in names:
                absent.append(f"'judge' (the file's name {textguard.quoted(stem, 60)} is no judge name)")
            return absent

        try:
            rows = collect_records(
                path, _judged_checker(study, default), what="judge rating", missing=missing
            )
        except IngestError as exc:  # read for a report, not imported
            raise IngestError(exc.path, exc.problems, exc.total, outcome="nothing was analysed") from None
        rows = _fill_pair_level_by_judge(rows)
        for judge in sorted({r["judge"] for r in rows}):
            if judge in owner:
                raise UserError(
                    f"{path}: judge {judge!r} is already given in {owner[judge]} (one file per judge)"
                )
            owner[judge] = path
        frames.append(
            pd.DataFrame(
                [
                    (
                        ids[r["pair_id"]],
                        r["judge"],
                        r["order"],
                        r["response"],
                        r["item"],
                        r["value"],
                        r["preference"],
                        r["confidence"],
                    )
                    for r in rows
                ],  # fmt: skip
                columns=list(JUDGE_COLUMNS),
            )
        )
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(JUDGE_COLUMNS))
    for name in ("value", "preference", "confidence"):
        frame[name] = frame[name].astype("float64")
    return frame


def _default_judge(path: Path) -> str:
    """The file's name without its suffix when it is a judge name, else "" (each row then needs a
    judge field)."""
    name = path.stem
    return name if len(name) <= MAX_JUDGE_NAME and JUDGE_NAME.match(name) else ""


def _fill_pair_level_by_judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`_fill_pair_level` per judge."""
    out: list[dict[str, Any]] = []
    for judge in sorted({r["judge"] for r in rows}):
        out.extend(_fill_pair_level([r for r in rows if r["judge"] == judge]))
    return out


# ------------------------------------------------------------------------------------------- writing


def _check_judge(name: str) -> str:
    judge = textguard.stripped_name(name, "the judge name", MAX_JUDGE_NAME)
    if not JUDGE_NAME.match(judge):
        raise UserError(
            f"the judge name {textguard.quoted(judge, 60)} may hold only letters, digits and . _ : / + @ - "
            "(and starts with a letter or digit)"
        )
    return judge


def _changed_field(existing: Mapping[tuple[Any, ...], tuple[Any, ...]], row: dict[str, Any]) -> str:
    """The first of value, preference and confidence in which `row` differs from the stored rating."""
    stored = existing[(row["pair_id"], row["order"], row["response"], row["item"])][1:]
    fields = ("value", "preference", "confidence")
    return next(f for f, old in zip(fields, stored, strict=True) if old != row[f])


def save_judges(
    connection: Connection,
    *,
    study_id: int,
    judge: str,
    rows: list[dict[str, Any]],
    replace: bool = False,
    source: str = "",
    account: Account,
    study: str = "",
) -> JudgeImport:
    """Add `judge`'s rows to the study in the caller's transaction, as one serialized step: the study
    row is written first (a no-op update), which takes the write lock on SQLite and the row lock on
    PostgreSQL, so concurrent imports of one file run one after the other and the later is a no-op.

    Identical ratings are skipped; a changed one is refused (UserError) unless `replace`."""
    connection.execute(update(Study).where(col(Study.id) == study_id).values(name=Study.name))
    existing = {
        (p, o, r, i): (rid, v, pr, c)
        for rid, p, o, r, i, v, pr, c in connection.execute(
            sa_select(col(JudgeRating.id), col(JudgeRating.pair_id), *_RATED).where(
                col(JudgeRating.study_id) == study_id, col(JudgeRating.judge) == judge
            )
        )
    }
    new, changed, unchanged = [], [], 0
    for row in rows:
        key = (row["pair_id"], row["order"], row["response"], row["item"])
        found = existing.get(key)
        values = (row["value"], row["preference"], row["confidence"])
        if found is None:
            new.append(row)
        elif found[1:] == values:
            unchanged += 1
        else:
            changed.append((found[0], row))
    if changed and not replace:
        problems = [
            f"{row['where']}, field {_changed_field(existing, row)}: judge {judge!r} already has a "
            "different rating here (use --replace to update it)"
            for _, row in changed[:MAX_PROBLEMS]
        ]
        raise IngestError(source or "judge file", problems, len(changed))
    if changed:
        connection.execute(delete(JudgeRating).where(col(JudgeRating.id).in_([rid for rid, _ in changed])))
    if new or changed:
        connection.execute(
            insert(JudgeRating),
            [
                {
                    "study_id": study_id,
                    "pair_id": row["pair_id"],
                    "judge": judge,
                    "order_shown": row["order"],
                    "response": row["response"],
                    "item": row["item"],
                    "value": row["value"],
                    "preference": row["preference"],
                    "confidence": row["confidence"],
                }
                for row in [*new, *(row for _, row in changed)]
            ],
        )
    summary = JudgeImport(study, judge, len(new), unchanged, len(changed), len({r["pair_id"] for r in rows}))
    if new or changed:
        connection.execute(
            insert(Event).values(
                user_id=account.id or None,
                action="judges_import",
                detail={
                    "study": study,
                    "judge": judge,
                    "file": source,
                    "imported": summary.imported,
                    "unchanged": summary.unchanged,
                    "replaced": summary.replaced,
                },
            )
        )
    return summary


def import_judges(
    engine: Engine,
    path: str | Path,
    *,
    study: str,
    judge: str,
    account: Account,
    replace: bool = False,
    progress: Progress | None = None,
) -> JudgeImport:
    """Import a judge file for `judge` into `study` in one transaction (nothing written on error).
    Researchers only."""
    judge = _check_judge(judge)
    textguard.check_study_name(study)
    with Session(engine) as session:
        require_role(session, account, "researcher")
        facts = study_facts(session, study)
        study_id = id_of(get_study(session, study))
    rows = load_judges(path, facts, progress=progress)
    with engine.begin() as connection:
        return save_judges(
            connection,
            study_id=study_id,
            judge=judge,
            rows=rows,
            replace=replace,
            source=Path(path).name,
            account=account,
            study=study,
        )


# ------------------------------------------------------------------------------------------- reading back


def judge_frame(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Every judge rating of `study` (:data:`analysis.judges.JUDGE_COLUMNS`; pair_id is the pair's
    external id), sorted by judge, pair, order, response and item. Researchers only."""
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    query = (
        sa_select(
            col(Pair.external_id),
            col(JudgeRating.judge),
            *_RATED,
        )
        .join(Pair, col(Pair.id) == col(JudgeRating.pair_id))
        .where(col(JudgeRating.study_id) == study_row.id)
        .order_by(
            col(JudgeRating.judge),
            col(Pair.external_id),
            col(JudgeRating.order_shown),
            col(JudgeRating.response),
            col(JudgeRating.item),
        )
    )
    rows = session.connection().execute(query).all()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=list(JUDGE_COLUMNS))
    for name in ("value", "preference", "confidence"):
        frame[name] = frame[name].astype("float64")
    return frame


def judge_queue(session: Session, *, study: str, account: Account, judge: str | None = None) -> pd.DataFrame:
    """The main pairs where a judge's preference direction differs from the human majority (or the
    people have none): :data:`analysis.judges.QUEUE_COLUMNS`. Researchers only."""
    from analysis.frames import split_controls
    from analysis.judges import disagreement_queue
    from annotator.review.readers import label_frame

    judges = judge_frame(session, study=study, account=account)
    if judge:
        if not (judges["judge"] == judge).any():
            raise UserError(f"no judge {textguard.quoted(judge)} in study {study!r}")
        judges = judges[judges["judge"] == judge]
    main, _ = split_controls(label_frame(session, study=study, account=account))
    return disagreement_queue(main, judges)


def sample_probabilities(session: Session, *, study: str) -> pd.Series:
    """The inclusion probability recorded for each pair when the study's human sample was drawn
    (:mod:`annotator.intake.human_sample`), indexed by the pair's external id; empty without a draw."""
    study_row = get_study(session, study)
    rows = session.exec(
        select(col(Pair.external_id), col(Pair.sample_probability)).where(
            Pair.study_id == study_row.id, col(Pair.sample_probability).is_not(None)
        )
    ).all()
    return pd.Series({str(pair): float(p or 0.0) for pair, p in rows}, dtype="float64")
