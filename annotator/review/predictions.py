"""Reward-model predictions: importing them per pair, reading them back, and the model-vs-people queue.

A prediction file (CSV, JSON Lines, JSON or Parquet, read like a pair file) has one record per pair:
``id`` (or ``pair_id``: the pair's id in the study) and either ``score_chosen`` and ``score_rejected``
(a reward model's scores for the two responses) or ``choice`` (``chosen``, ``rejected`` or ``tie``),
optionally with ``confidence`` (0..1). Importing a model again replaces its predictions. Every problem
is named by line (or row) and field, and nothing is written when there is any.
"""

import math
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import delete, insert
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotator import textguard
from annotator.errors import UserError
from annotator.intake import assign
from annotator.intake.ingest import Progress, collect_records
from annotator.people.authorization import Account, record_event, require_role
from annotator.store.models import Assignment, ModelPrediction, Pair, User, id_of
from annotator.study import get_study

__all__ = [
    "CHOICES",
    "PREDICTION_COLUMNS",
    "PredictionImport",
    "disagreement_queue",
    "import_predictions",
    "load_predictions",
    "prediction_frame",
    "save_predictions",
    "send_back",
    "send_back_disagreements",
    "simulate_models",
]

CHOICES = ("chosen", "rejected", "tie")
MAX_MODEL_NAME = 200
#: The columns of :func:`prediction_frame`.
PREDICTION_COLUMNS = (
    "pair_id",
    "category",
    "model",
    "choice",
    "score_chosen",
    "score_rejected",
    "confidence",
)


@dataclass(frozen=True)
class PredictionImport:
    """What a predictions import did."""

    study: str
    model: str
    imported: int
    replaced: int
    pairs_without: int  # pairs of the study the file has no prediction for

    def __str__(self) -> str:
        text = f"study {self.study!r}, model {self.model!r}: imported {self.imported} predictions"
        if self.replaced:
            text += f" (replacing {self.replaced})"
        if self.pairs_without:
            text += f"; {self.pairs_without} pairs of the study have no prediction"
        return text


# ------------------------------------------------------------------------------------------- reading


def _number(record: dict[str, Any], field: str, problems: list[str]) -> float | None:
    value = record.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        problems.append(f"field {field}: expected a number, got {value!r}")
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float (e.g. 400 digits)
        problems.append(f"field {field}: the number {textguard.shown(value)} is too large")
        return None
    except (TypeError, ValueError):
        problems.append(f"field {field}: expected a number, got {textguard.shown(value)}")
        return None
    if not math.isfinite(number):
        problems.append(f"field {field}: must be a finite number, got {textguard.shown(value)}")
        return None
    return number


def _pair_reference(
    record: dict[str, Any], known: dict[str, int], problems: list[str]
) -> tuple[str, int | None]:
    """The record's external pair id (``id`` or ``pair_id``) and its Pair.id, noting a missing or
    unknown one."""
    key = "id" if "id" in record else "pair_id"
    raw = record.get(key)
    if isinstance(raw, bool | dict | list):  # an id is text or a number, not true or a structure
        problems.append(f"field {key}: expected the pair's id, got {textguard.shown(raw)}")
        return "", None
    external_id = "" if raw is None else str(raw).strip()
    pair_db_id = None
    if not external_id:
        problems.append("field id: missing (the pair's id, as `id` or `pair_id`)")
    else:
        pair_db_id = known.get(external_id)
        if pair_db_id is None:
            problems.append(f"field {key}: no pair {external_id[:80]!r} in this study")
    return external_id, pair_db_id


def _given_choice(record: dict[str, Any], problems: list[str]) -> str | None:
    """The record's own choice (lower case), or None when it gives none or an unknown one (noted)."""
    raw_choice = record.get("choice")
    choice = raw_choice.strip().lower() if isinstance(raw_choice, str) and raw_choice.strip() else None
    if raw_choice is not None and not isinstance(raw_choice, str):
        problems.append(
            f"field choice: expected one of {', '.join(CHOICES)}, got {textguard.shown(raw_choice)}"
        )
    elif choice is not None and choice not in CHOICES:
        problems.append(
            f"field choice: expected one of {', '.join(CHOICES)}, got {textguard.shown(raw_choice)}"
        )
        choice = None
    return choice


def _settled_choice(
    chosen: float | None, rejected: float | None, choice: str | None, problems: list[str]
) -> str | None:
    """The choice that counts: the one both scores imply (a given choice must agree), else the given
    one; notes a lone score and a row with neither."""
    has_scores = chosen is not None and rejected is not None
    if (chosen is None) != (rejected is None) and not any(p.startswith("field score_") for p in problems):
        missing = "score_rejected" if rejected is None else "score_chosen"
        problems.append(f"field {missing}: missing (give both scores, or a choice)")
    if has_scores:
        implied = "chosen" if chosen > rejected else "rejected" if chosen < rejected else "tie"  # type: ignore[operator]
        if choice is not None and choice != implied:
            problems.append(f"field choice: {choice!r} contradicts the scores (they say {implied!r})")
        choice = implied
    elif choice is None and not problems:
        problems.append("field choice: missing (give score_chosen and score_rejected, or a choice)")
    return choice


def _prediction(record: Any, known: dict[str, int]) -> tuple[dict[str, Any], list[str]]:
    """One record as a ModelPrediction row (without study and model), and its problems.

    The record first passes the pair importer's checks on hostile values (NUL, over-long texts,
    NaN/Infinity, too deep nesting: :func:`annotator.textguard.value_problems`), each named by field.
    """
    if not isinstance(record, dict):
        return {}, [f"expected an object, got {type(record).__name__}"]
    problems: list[str] = []
    limit = textguard.max_text_chars()
    for field, value in record.items():
        problems.extend(textguard.value_problems(value, f"field {field}", limit=limit))
    if problems:
        return {}, problems
    external_id, pair_db_id = _pair_reference(record, known, problems)
    chosen = _number(record, "score_chosen", problems)
    rejected = _number(record, "score_rejected", problems)
    choice = _settled_choice(chosen, rejected, _given_choice(record, problems), problems)
    confidence = _number(record, "confidence", problems)
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        problems.append(f"field confidence: must be between 0 and 1, got {confidence:g}")
    row = {
        "external_id": external_id,
        "pair_id": pair_db_id,
        "score_chosen": chosen,
        "score_rejected": rejected,
        "choice": choice,
        "confidence": confidence,
    }
    return row, problems


def missing_prediction_fields(names: Collection[str]) -> list[str]:
    """The fields every prediction record needs that are not among `names` (quoted, for a message):
    the pair's id (`id` or `pair_id`) and both scores or a choice, as :func:`_prediction` requires them."""
    absent = [] if "id" in names or "pair_id" in names else ["'id' (or 'pair_id')"]
    if "choice" not in names:
        scores = [repr(field) for field in ("score_chosen", "score_rejected") if field not in names]
        absent += [f"{' and '.join(scores)} (or 'choice')"] if scores else []
    return absent


def _known_pairs(session: Session, study_id: int) -> dict[str, int]:
    rows = session.exec(
        select(col(Pair.external_id), col(Pair.id)).where(col(Pair.study_id) == study_id)
    ).all()
    return {str(external_id): int(pair_id or 0) for external_id, pair_id in rows}


def load_predictions(
    path: str | Path,
    known: dict[str, int],
    *,
    progress: Progress | None = None,
    max_bytes: int = textguard.MAX_BYTES_DEFAULT,
) -> list[dict[str, Any]]:
    """Read and check a whole prediction file against the study's pair ids (external id -> Pair.id).

    Raises IngestError listing up to 20 problems, each with its line (or row) and field.
    """
    return collect_records(
        path,
        lambda record, _where: _prediction(record, known),
        what="prediction",
        progress=progress,
        max_bytes=max_bytes,
        missing=missing_prediction_fields,
    )


# ------------------------------------------------------------------------------------------- writing


def _check_model(model: str) -> str:
    name = textguard.stripped_name(model, "the model name", MAX_MODEL_NAME)
    textguard.check_name(name, "the model name")
    return name


def save_predictions(
    session: Session,
    *,
    study: str,
    model: str,
    rows: list[dict[str, Any]],
    account: Account,
    source: str = "",
) -> PredictionImport:
    """Replace `model`'s predictions in `study` with `rows` (from :func:`load_predictions`), in the
    caller's transaction. Researchers only."""
    require_role(session, account, "researcher")
    model = _check_model(model)
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    old = session.exec(
        select(col(ModelPrediction.id)).where(
            col(ModelPrediction.study_id) == study_id, col(ModelPrediction.model) == model
        )
    ).all()
    if old:
        session.execute(
            delete(ModelPrediction).where(
                col(ModelPrediction.study_id) == study_id, col(ModelPrediction.model) == model
            )
        )
    values = [
        {
            "study_id": study_id,
            "pair_id": row["pair_id"],
            "model": model,
            "score_chosen": row["score_chosen"],
            "score_rejected": row["score_rejected"],
            "choice": row["choice"],
            "confidence": row["confidence"],
        }
        for row in rows
    ]
    if values:
        session.execute(insert(ModelPrediction), values)
    n_pairs = len(_known_pairs(session, study_id))
    summary = PredictionImport(study, model, len(values), len(old), max(0, n_pairs - len(values)))
    record_event(
        session,
        account,
        "models_import",
        {
            "study": study,
            "model": model,
            "file": source,
            "imported": len(values),
            "replaced": len(old),
        },
    )
    return summary


def import_predictions(
    engine: Engine,
    path: str | Path,
    *,
    study: str,
    model: str,
    account: Account,
    progress: Progress | None = None,
    max_bytes: int = textguard.MAX_BYTES_DEFAULT,
) -> PredictionImport:
    """Import a prediction file for `model` into `study` in one transaction (nothing written on error)."""
    _check_model(model)
    with Session(engine, expire_on_commit=False) as session:
        require_role(session, account, "researcher")
        known = _known_pairs(session, id_of(get_study(session, study)))
    rows = load_predictions(path, known, progress=progress, max_bytes=max_bytes)
    with Session(engine, expire_on_commit=False) as session:
        summary = save_predictions(
            session, study=study, model=model, rows=rows, account=account, source=Path(path).name
        )
        session.commit()
    return summary


# ------------------------------------------------------------------------------------------- reading back


def prediction_frame(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Every model prediction of `study`, one row per (pair, model): see :data:`PREDICTION_COLUMNS`
    (pair_id is the pair's external id). Sorted by model, then pair. Researchers only."""
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    query = (
        sa_select(
            col(Pair.external_id),
            col(Pair.category),
            col(ModelPrediction.model),
            col(ModelPrediction.choice),
            col(ModelPrediction.score_chosen),
            col(ModelPrediction.score_rejected),
            col(ModelPrediction.confidence),
        )
        .join(Pair, col(Pair.id) == col(ModelPrediction.pair_id))
        .where(col(ModelPrediction.study_id) == study_row.id)
        .order_by(col(ModelPrediction.model), col(Pair.external_id))
    )
    rows = session.connection().execute(query).all()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=list(PREDICTION_COLUMNS))
    for name in ("score_chosen", "score_rejected", "confidence"):
        frame[name] = frame[name].astype("float64")
    for name in ("pair_id", "category", "model", "choice"):
        frame[name] = frame[name].astype(object)
    return frame


# ------------------------------------------------------------------------------ the disagreement queue


def disagreement_queue(
    session: Session, *, study: str, account: Account, validated_only: bool = False
) -> pd.DataFrame:
    """The pairs where a model's choice differs from the human majority (see
    :func:`analysis.science.disagreements`), with the pair's database id (``pair_db_id``) to send back.
    Control pairs never appear. Researchers only."""
    from analysis.science import disagreements, validated_pair_ids
    from annotator.review.final_labels import final_labels
    from annotator.review.readers import label_frame

    require_role(session, account, "researcher")
    frame = label_frame(session, study=study, account=account)
    predictions = prediction_frame(session, study=study, account=account)
    final = final_labels(session, study=study)
    pairs = validated_pair_ids(final) if validated_only else None
    queue = disagreements(frame, predictions, final=final, pairs=pairs)
    ids = _known_pairs(session, id_of(get_study(session, study)))
    queue.insert(0, "pair_db_id", queue["pair_id"].map(ids).astype("Int64"))
    return queue


def send_back(
    session: Session, *, study: str, pair_ids: list[str], extra: int = 1, account: Account, seed: int = 0
) -> int:
    """Raise the overlap of the given pairs (external ids) by `extra` annotators each: every pair goes
    into the queues of the `extra` active annotators who do not have it yet, from the study arm the
    pair has fewest annotators in (a study without arms has one), least-loaded first; sides and
    queue positions as :func:`assign.assign_pairs` gives them. Returns the number of new
    assignments. Researchers only."""
    require_role(session, account, "researcher")
    if extra < 1:
        raise UserError("extra must be at least 1")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    known = _known_pairs(session, study_id)
    unknown = [p for p in pair_ids if p not in known]
    if unknown:
        raise UserError(f"no pair {unknown[0]!r} in study {study!r}")
    annotators = session.exec(
        select(col(User.id), col(User.username))
        .where(col(User.role) == "annotator", col(User.active) == True)  # noqa: E712
        .order_by(col(User.username))
    ).all()
    if not annotators:
        raise UserError("no active annotators to send the pairs to")
    existing = session.exec(
        select(col(Assignment.pair_id), col(Assignment.annotator_id)).where(
            col(Assignment.study_id) == study_id
        )
    ).all()
    load: dict[int, int] = {int(uid or 0): 0 for uid, _ in annotators}
    on_pair: dict[int, set[int]] = {}
    for pair_db_id, uid in existing:
        on_pair.setdefault(int(pair_db_id), set()).add(int(uid))
        if int(uid) in load:
            load[int(uid)] += 1
    name_of = {int(uid or 0): name for uid, name in annotators}
    arm_of = assign.annotator_arms(session, study_id=study_id, user_ids=list(load), seed=seed)
    plan: dict[int, list[int]] = {}
    for external_id in dict.fromkeys(pair_ids):
        pair_db_id = known[external_id]
        on = on_pair.setdefault(pair_db_id, set())
        for _ in range(extra):
            per_arm = Counter(arm_of[uid] for uid in on if uid in arm_of)
            free = [uid for uid in load if uid not in on]
            if not free:
                break
            uid = min(free, key=lambda u: (per_arm[arm_of[u]], load[u], u))
            plan.setdefault(uid, []).append(pair_db_id)
            load[uid] += 1
            on.add(uid)
    created = 0
    for uid, ids in plan.items():
        created += assign.assign_pairs(
            session, study=study, annotator=name_of[uid], pair_ids=ids, seed=seed, arm=arm_of[uid]
        )
    record_event(
        session,
        account,
        "send_back",
        {"study": study, "pairs": len(pair_ids), "extra": extra, "created": created},
    )
    return created


def simulate_models(
    session: Session, *, study: str, models: dict[str, float], account: Account, seed: int = 0
) -> list[PredictionImport]:
    """Simulated reward models (demo, tests): `models` maps a name to its accuracy on sound pairs.

    Each model scores both responses; it prefers `chosen` with its accuracy, except on pairs whose
    `construction_note` says the chosen response does not follow the rubric, where it mostly prefers
    `rejected` (as the people do): so models fail where people disagree. Deterministic per seed.
    """
    import random

    study_id = id_of(get_study(session, study))
    pairs = session.exec(
        select(col(Pair.id), col(Pair.meta)).where(col(Pair.study_id) == study_id).order_by(col(Pair.id))
    ).all()
    summaries = []
    for name, accuracy in models.items():
        rng = random.Random(f"{seed}:{name}")
        rows = []
        for pair_id, meta in pairs:
            flawed = "chosen_not_aligned" in str((meta or {}).get("construction_note", ""))
            right = rng.random() < (0.2 if flawed else accuracy)
            margin = abs(rng.gauss(1.0, 0.5)) + 0.01
            base = rng.gauss(0.0, 1.0)
            chosen, rejected = (base + margin, base) if right else (base, base + margin)
            rows.append(
                {
                    "pair_id": int(pair_id or 0),
                    "score_chosen": round(chosen, 4),
                    "score_rejected": round(rejected, 4),
                    "choice": "chosen" if right else "rejected",
                    "confidence": None,
                }
            )
        summaries.append(
            save_predictions(session, study=study, model=name, rows=rows, account=account, source="simulated")
        )
    return summaries


def send_back_disagreements(
    session: Session,
    *,
    study: str,
    account: Account,
    extra: int = 1,
    validated_only: bool = False,
    seed: int = 0,
) -> tuple[pd.DataFrame, int]:
    """The model-vs-people disagreement queue (:func:`disagreement_queue`), every pair of it sent back
    for `extra` more judgments (:func:`send_back`); returns the queue and the new assignments."""
    queue = disagreement_queue(session, study=study, account=account, validated_only=validated_only)
    if queue.empty:
        return queue, 0
    created = send_back(
        session,
        study=study,
        pair_ids=[str(p) for p in queue["pair_id"]],
        extra=extra,
        account=account,
        seed=seed,
    )
    return queue, created
