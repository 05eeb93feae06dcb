"""Synthetic annotators with a known truth, saving through the real assignment and submit code.

Model: the latent rating model of analysis/simulation.py (its one home): every pair has a latent
quality per dimension (shared by both responses) and a latent rubric alignment per aspect for
`rejected`; `chosen` gets +quality_gap on quality and +rubric_gap on
rubric alignment. Each annotator has a bias (N(0, bias_sd)) and a noise level (noise x U(0.7, 1.3));
scores are rounded and clipped to their scale. The preference follows the observed rubric difference
through a logistic choice, with ties near zero. Pairs flagged in their `construction_note` carry the
flaw: "flawed:rejected_factual_error" lowers `rejected` correctness by 2 points,
"flawed:chosen_not_aligned" reverses the rubric gap (`rejected` follows the rubric better, as in the
sample's photography-002 and fitness-002; a mere zero gap would hide the flaw by chance in about one
pair in six). With `broken_share`, that share of the main pairs (drawn with the seed) is broken on
top: `rejected` is `broken_gap` points worse on every quality dimension.
"""

import dataclasses
import math
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from analysis.scale import Scale, rescaled
from analysis.simulation import BIAS_SD, NOISE, latent_quality, latent_rubric, rate
from analysis.vocabulary import (
    DUPLICATE,
    POSITIVE,
    RUBRIC_PREFIX,
    SIDES,
    SUPPORT_DOMAIN,
    SWAP,
    rubric_item,
    support_item,
)
from annotator.errors import UserError
from annotator.intake import assign
from annotator.intake.ingest import Progress
from annotator.people import accounts, authorization
from annotator.rating import labels
from annotator.rating.blinding import preference_index, response_of
from annotator.rating.design_queue import design_pairs
from annotator.store.db import lock_study, session_scope
from annotator.store.models import DONE, Assignment, Event, Pair, User, id_of, utcnow
from annotator.study import StudyConfig, get_study, parse_config

FACTUAL_ERROR = "flawed:rejected_factual_error"
NOT_ALIGNED = "flawed:chosen_not_aligned"
BROKEN = "simulated:rejected_worse"
BATCH = 200


@dataclass(frozen=True)
class SimulationSpec:
    """The parameters of a simulated study (gaps and noise in points of the study's scale, which the
    latent truth is drawn on; a dimension with its own scale has its ratings moved onto it)."""

    annotators: int = 3
    overlap: int = 3
    quality_gap: float = 0.0
    rubric_gap: float = 1.0
    noise: float = NOISE
    bias_sd: float = BIAS_SD
    seed: int = 0
    prefix: str = "sim"
    spammers: int = 0  # the last `spammers` annotators answer at random and fast (careless workers)
    broken_share: float = 0.0  # this share of the main pairs: rejected `broken_gap` worse on quality
    broken_gap: float = 1.5
    # Each pair's truth and each judgment drawn from their own seeded streams (pair id, assignment id),
    # so judgments added later (an adaptive design, one at a time) rate the same pair truths with fresh
    # noise; off, one stream over the study in row order (a re-run reproduces the same judgments).
    keyed_draws: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.spammers <= self.annotators:
            raise UserError(
                f"--spammers must be between 0 and --annotators ({self.annotators}), got {self.spammers}"
            )
        if self.overlap > self.annotators:
            raise UserError(
                f"--overlap {self.overlap} needs at least as many --annotators (got {self.annotators})"
            )
        for name in ("quality_gap", "rubric_gap", "broken_gap", "noise", "bias_sd"):
            if not math.isfinite(getattr(self, name)):
                raise UserError(
                    f"--{name.replace('_', '-')} must be a finite number, got {getattr(self, name)}"
                )
        if self.noise < 0 or self.bias_sd < 0:
            raise UserError("--noise and --bias-sd are standard deviations: 0 or more")
        if not 0 <= self.broken_share <= 1:
            raise UserError(f"the broken share must be between 0 and 1, got {self.broken_share}")


@dataclass(frozen=True)
class SimulationSummary:
    study: str
    annotators: list[str]
    judgments: int

    def __str__(self) -> str:
        return f"study {self.study!r}: {self.judgments} simulated judgments by {', '.join(self.annotators)}"


@dataclass(frozen=True)
class SimJudgment:
    """One simulated judgment in chosen/rejected terms (preference: +2 = chosen much better)."""

    scores: dict[str, dict[str, float | None]]
    preference: int
    confidence: int


def _clip_round(value: float, low: int, high: int) -> int:
    return int(rate(value, low, high))


def simulated_users(session: Session, spec: SimulationSpec) -> list[str]:
    """Create (or reuse) the simulated annotator accounts; race-free: a name another run creates at
    the same moment is taken as it is (INSERT ... ON CONFLICT DO NOTHING on the unique user name)."""
    names = [f"{spec.prefix}_{i + 1:02d}" for i in range(spec.annotators)]
    existing = set(session.exec(select(User.username).where(col(User.username).in_(names))))
    builder = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    for name in names:
        if name in existing:
            continue
        password = secrets.token_urlsafe(16)
        created = session.execute(
            builder(User)
            .values(username=name, role="annotator", password_hash=accounts.hash_password(password))
            .on_conflict_do_nothing(index_elements=["username"])
            .returning(col(User.id))
        ).first()
        if created is not None:
            session.add(
                Event(
                    user_id=int(created[0]),
                    action="user_add",
                    detail={"username": name, "role": "annotator", "by": authorization.SYSTEM.id},
                )
            )
    session.flush()
    return names


PairNotes = dict[int, tuple[int, str]]  # Pair.id -> (number of rubric aspects, construction note)
ControlSources = dict[int, tuple[str, int | None, list[str]]]  # Pair.id -> (kind, source, worse_on)


def _pair_notes(session: Session, study_id: int, spec: SimulationSpec) -> PairNotes:
    """Every pair's rubric size and construction note; `spec.broken_share` of the main pairs, drawn
    from their own random stream (the other draws stay as they were), are noted broken."""
    pairs = {
        id_of(p): (len(p.rubric), str(p.meta.get("construction_note", "")))
        for p in session.exec(select(Pair).where(Pair.study_id == study_id))
    }
    if spec.broken_share > 0:
        main_ids = sorted(
            id_of(p) for p in session.exec(select(Pair).where(Pair.study_id == study_id, Pair.control == ""))
        )
        picked = random.Random(f"broken:{spec.seed}").sample(
            main_ids, round(spec.broken_share * len(main_ids))
        )
        pairs |= {pid: (pairs[pid][0], BROKEN) for pid in picked}
    return pairs


def _control_sources(session: Session, study_id: int) -> ControlSources:
    """Every control pair's kind, the pair it repeats and the dimensions it is worse on: control pairs
    share their source's latent truth (see :func:`_control_latent`)."""
    return {
        id_of(p): (p.control, p.control_of, [str(d) for d in p.meta.get("worse_on", [])])
        for p in session.exec(select(Pair).where(Pair.study_id == study_id, Pair.control != ""))
    }


@dataclass
class _Truths:
    """The latent truth of each pair of a simulated study, drawn once per pair (a control's from its
    source's); `latents` holds those drawn so far."""

    spec: SimulationSpec
    pairs: PairNotes
    controls: ControlSources
    dimensions: list[str]
    latents: dict[int, dict[str, float]] = dataclasses.field(default_factory=dict)

    def of(self, rng: random.Random, pair_id: int) -> dict[str, float]:
        """The latent truth of `pair_id`, drawn on first use from `rng`, or with ``spec.keyed_draws``
        from the pair's own stream (a control's source from the source's own)."""
        if pair_id in self.latents:
            return self.latents[pair_id]
        if not self.spec.keyed_draws:
            self._draw(rng, pair_id)
            return self.latents[pair_id]
        source = self.controls.get(pair_id, ("", None, []))[1]
        if source is not None and source in self.pairs and source not in self.latents:
            self._draw(random.Random(f"latent:{self.spec.seed}:{source}"), source)
        self._draw(random.Random(f"latent:{self.spec.seed}:{pair_id}"), pair_id)
        return self.latents[pair_id]

    def _draw(self, rng: random.Random, pair_id: int) -> None:
        """Draw the latent truth of `pair_id` (a control's from its source's, drawn first when it is
        not there yet)."""
        kind, source, worse_on = self.controls.get(pair_id, ("", None, []))
        if kind in (SWAP, POSITIVE, DUPLICATE) and source is not None and source in self.pairs:
            if source not in self.latents:
                n_source, note_source = self.pairs[source]
                self.latents[source] = _pair_latent(rng, self.dimensions, n_source, note_source, self.spec)
            self.latents[pair_id] = _control_latent(self.latents[source], kind, worse_on)
        else:
            n_aspects, note = self.pairs[pair_id]
            self.latents[pair_id] = _pair_latent(rng, self.dimensions, n_aspects, note, self.spec)


def simulate(
    engine: Engine,
    *,
    study: str,
    spec: SimulationSpec,
    progress: Progress | None = None,
    assign_first: bool = True,
) -> SimulationSummary:
    """Create simulated annotators, assign them, and submit their judgments; deterministic for a seed.

    Work is committed in batches, each judgment atomic with its scores; re-running continues where an
    interrupted run stopped (done assignments are not touched). Without `assign_first`, only the items
    the annotators already have are judged.
    """
    with session_scope(engine) as session:
        lock_study(session, id_of(get_study(session, study)))  # two runs at once: one after the other
        names = simulated_users(session, spec)
        if assign_first:
            assign.assign(
                session,
                study=study,
                overlap=spec.overlap,
                annotators=names,
                seed=spec.seed,
                overlap_among_named=True,
                account=authorization.SYSTEM,
            )
        study_row = get_study(session, study)
        config = parse_config(study_row.config)
        users = {u.username: u for u in session.exec(select(User).where(col(User.username).in_(names)))}
    rng = random.Random(spec.seed)
    own = {name: random.Random(f"rater:{spec.seed}:{name}") if spec.keyed_draws else rng for name in names}
    annotator_bias = {name: own[name].gauss(0, spec.bias_sd) for name in names}
    annotator_noise = {name: spec.noise * own[name].uniform(0.7, 1.3) for name in names}
    annotator_speed = {name: own[name].uniform(0.6, 1.6) for name in names}
    user_ids = [id_of(users[name]) for name in names]
    with Session(engine) as session:
        rows = session.exec(
            select(Assignment.id, Assignment.pair_id, Assignment.annotator_id, Assignment.status)
            .where(Assignment.study_id == study_row.id, col(Assignment.annotator_id).in_(user_ids))
            .order_by(col(Assignment.pair_id), col(Assignment.annotator_id))
        ).all()
        pairs = _pair_notes(session, id_of(study_row), spec)
        truths = _Truths(spec, pairs, _control_sources(session, id_of(study_row)), config.dimension_names)
    spammers = set(names[len(names) - spec.spammers :]) if spec.spammers > 0 else set()
    by_id = {id_of(users[name]): name for name in names}
    acting_as = {
        id_of(user): authorization.account_of(user) for user in users.values()
    }  # each submits as itself
    judged = 0
    pending = []
    for assignment_id, pair_id, annotator_id, status in rows:
        if spec.keyed_draws and status == DONE:
            continue
        n_aspects, _ = pairs[pair_id]
        truth = truths.of(rng, pair_id)
        name = by_id[annotator_id]
        draw = random.Random(f"judgment:{spec.seed}:{assignment_id}") if spec.keyed_draws else rng
        # Draw every random number even for done items, so a re-run reproduces the same values.
        if name in spammers:
            submission, seconds = spam_judgment(draw, config.quality.scales, n_aspects)
            if status != DONE:
                pending.append((assignment_id, annotator_id, submission, seconds))
            continue
        submission, seconds = _judgment(
            draw,
            truth,
            config.quality.scales,
            n_aspects,
            annotator_bias[name],
            annotator_noise[name],
            annotator_speed[name],
            config.quality.scale,
        )
        if status != DONE:
            pending.append((assignment_id, annotator_id, submission, seconds))
    for start in range(0, len(pending), BATCH):
        with session_scope(engine) as session:
            for assignment_id, annotator_id, sides, seconds in pending[start : start + BATCH]:
                assignment = session.get(Assignment, assignment_id)
                if assignment is None or assignment.status == DONE:
                    continue
                assignment.shown_at = utcnow() - timedelta(seconds=seconds)
                session.add(assignment)
                form = _to_ab(sides, assignment.chosen_side, f"sim-{study_row.id}-{assignment_id}")
                labels.submit(
                    session,
                    assignment_id=id_of(assignment),
                    account=acting_as[annotator_id],
                    submission=fit_to_arm(config, assignment, form),
                )
                judged += 1
        if progress is not None:
            progress(min(BATCH, len(pending) - start))
    return SimulationSummary(study, names, judged)


def simulate_registered(engine: Engine, *, study: str, spec: SimulationSpec) -> SimulationSummary:
    """Simulate a study under its registered two-stage or sequential design, one judgment at a time.

    The first stage as :func:`simulate` gives it (`spec.overlap` per pair: the design's first stage),
    then, until the design gives out nothing more, the next pair of the queue the crowd uses
    (:func:`annotator.rating.design_queue.design_pairs`, one pair) goes to one more simulated annotator
    (``assign`` with ``more_for``, the path of ``assign --needs-more``), who judges it before the next
    pick. When every annotator has judged the pair picked, a new one joins (as a crowd's newcomer
    does): the design may give one pair many judgments. Needs ``spec.keyed_draws`` (later judgments rate
    the same pair truths; an annotator keeps their bias and noise when others join).
    """
    if not spec.keyed_draws:
        raise UserError("a registered design is simulated one judgment at a time: it needs keyed draws")
    judged = simulate(engine, study=study, spec=spec).judgments
    while True:
        with session_scope(engine) as session:
            study_row = get_study(session, study)
            picked = design_pairs(session, id_of(study_row), parse_config(study_row.config), 1)
            if not picked:
                break
            pair = session.get(Pair, picked[0])
            if _one_more(session, study, spec, pair.external_id if pair else "") == 0:
                spec = dataclasses.replace(spec, annotators=spec.annotators + 1)  # a newcomer takes it
                _one_more(session, study, spec, pair.external_id if pair else "")
        judged += simulate(engine, study=study, spec=spec, assign_first=False).judgments
    return SimulationSummary(study, [f"{spec.prefix}_{i + 1:02d}" for i in range(spec.annotators)], judged)


def _one_more(session: Session, study: str, spec: SimulationSpec, pair: str) -> int:
    """Give `pair` to one more of the simulated annotators (none when all have it); the items added."""
    return assign.assign(
        session, study=study, annotators=simulated_users(session, spec), seed=spec.seed, more_for=[pair],
        account=authorization.SYSTEM,
    ).created  # fmt: skip


def _pair_latent(
    rng: random.Random, dimensions: list[str], n_aspects: int, note: str, spec: SimulationSpec
) -> dict[str, float]:
    latent: dict[str, float] = {}
    for name in dimensions:
        base = latent_quality(rng.gauss(0, 1))
        flaw = 2.0 if note == FACTUAL_ERROR and name == "correctness" else 0.0
        flaw = spec.broken_gap if note == BROKEN else flaw
        latent[f"rejected:{name}"] = base - flaw
        latent[f"chosen:{name}"] = base + spec.quality_gap
    rubric_gap = -spec.rubric_gap if note == NOT_ALIGNED else spec.rubric_gap
    for k in range(n_aspects):
        base = latent_rubric(rng.gauss(0, 1))
        latent[f"rejected:rubric:{k}"] = base
        latent[f"chosen:rubric:{k}"] = base + rubric_gap
    return latent


def _control_latent(source: dict[str, float], kind: str, worse_on: list[str]) -> dict[str, float]:
    """The truth of a control pair from its source's: a swap repeats it, a duplicate shows `chosen`
    twice, a positive control's `rejected` is 2 points worse on the dimensions its defect lowers."""
    latent = dict(source)
    if kind == DUPLICATE:
        for key, value in source.items():
            if key.startswith("chosen:"):
                latent["rejected:" + key.removeprefix("chosen:")] = value
    elif kind == POSITIVE:
        for name in worse_on:
            if f"rejected:{name}" in latent:
                latent[f"rejected:{name}"] -= 2.0
    return latent


def spam_judgment(
    rng: random.Random, scales: Mapping[str, Scale], n_aspects: int
) -> tuple[SimJudgment, float]:
    """A careless worker's judgment: every answer uniformly at random (on each dimension's scale), in a
    few seconds."""
    scores: dict[str, dict[str, float | None]] = {"chosen": {}, "rejected": {}}
    for response in ("chosen", "rejected"):
        for name, scale in scales.items():
            scores[response][name] = rng.randint(scale.low, scale.high)
        for k in range(n_aspects):
            scores[response][rubric_item(k)] = rng.randint(0, 2)
    seconds = rng.lognormvariate(math.log(6.0), 0.4)
    return SimJudgment(scores, rng.randint(-2, 2), rng.randint(1, 3)), seconds


def _judgment(
    rng: random.Random,
    latent: dict[str, float],
    scales: Mapping[str, Scale],
    n_aspects: int,
    bias: float,
    noise: float,
    speed: float,
    study: Scale,
) -> tuple[SimJudgment, float]:
    """A simulated annotator's judgment: the latent truth (drawn on the `study` scale) plus the
    annotator's bias and noise, moved onto each dimension's scale and rounded; a preference that follows
    the rubric and the quality gaps (in points of the study's scale)."""
    scores: dict[str, dict[str, float | None]] = {"chosen": {}, "rejected": {}}
    for response in ("chosen", "rejected"):
        for name, scale in scales.items():
            value = rescaled(latent[f"{response}:{name}"] + bias + rng.gauss(0, noise), scale, study)
            scores[response][name] = _clip_round(value, scale.low, scale.high)
        for k in range(n_aspects):
            value = latent[f"{response}:rubric:{k}"] + rng.gauss(0, noise / 2)
            scores[response][rubric_item(k)] = _clip_round(value, 0, 2)
    rubric_diff = sum(
        float(scores["chosen"][rubric_item(k)] or 0) - float(scores["rejected"][rubric_item(k)] or 0)
        for k in range(n_aspects)
    ) / max(1, n_aspects)
    quality_diff = sum(  # in points of the 1-5 scale
        (float(scores["chosen"][n] or 0) - float(scores["rejected"][n] or 0)) * (study.span / s.span)
        for n, s in scales.items()
    ) / len(scales)
    utility = 2.5 * rubric_diff + 0.5 * quality_diff
    u = rng.random()
    draw = utility + math.log(u / (1 - u)) if 0 < u < 1 else utility
    preference = (
        0 if abs(draw) < 0.5 else (2 if draw > 2.5 else 1) if draw > 0 else (-2 if draw < -2.5 else -1)
    )
    seconds = rng.lognormvariate(math.log(75 * speed), 0.4)
    return SimJudgment(scores, preference, 3 if abs(draw) > 2 else 2), seconds


def fit_to_arm(
    config: StudyConfig, assignment: Assignment, submission: labels.Submission
) -> labels.Submission:
    """The form as filled in the assignment's study arm: no rubric ratings where the arm
    hides the rubric; rubric-support answers where the study asks them (per aspect a pair-level truth,
    mostly "yes", kept by the annotator 80% of the time; deterministic)."""
    display = config.display_for(assignment.arm)
    scores = submission.scores
    n_aspects = len({item for items in scores.values() for item in items if item.startswith(RUBRIC_PREFIX)})
    if not display.show_rubric:
        scores = {
            side: {k: v for k, v in items.items() if not k.startswith(RUBRIC_PREFIX)}
            for side, items in scores.items()
        }
    support: dict[str, float | None] = {}
    if display.ask_support:
        draw = random.Random(support_item(id_of(assignment)))
        for k in range(n_aspects):
            pair_truth = random.Random(f"{support_item(assignment.pair_id)}:{k}")
            truth = pair_truth.choices([2, 1, 0], weights=[7, 2, 1])[0]
            support[support_item(k)] = truth if draw.random() < 0.8 else draw.choice(list(SUPPORT_DOMAIN))
    return dataclasses.replace(submission, scores=scores, support=support)


def _to_ab(judgment: SimJudgment, chosen_side: str, submission_id: str) -> labels.Submission:
    """Express a chosen/rejected judgment in the annotator's A/B terms."""
    return labels.Submission(
        submission_id=submission_id,
        preference=preference_index(judgment.preference, chosen_side=chosen_side),
        scores={side: judgment.scores[response_of(side, chosen_side=chosen_side)] for side in SIDES},
        confidence=judgment.confidence,
    )


def complete_form(
    submission_id: str, k: int, *, dimensions: Sequence[str], n_aspects: int = 2
) -> labels.Submission:
    """A complete A/B form whose answers depend on `k` (so revisions differ): for load and
    concurrency runs that need many valid submissions without a latent model."""
    value = 1 + k % 5
    a_side: dict[str, float | None] = {name: float(value) for name in dimensions}
    b_side: dict[str, float | None] = {name: float(6 - value) for name in dimensions}
    for aspect in range(n_aspects):
        a_side[rubric_item(aspect)] = float(k % 3)
        b_side[rubric_item(aspect)] = float((k + aspect) % 3)
    return labels.Submission(
        submission_id=submission_id,
        preference=k % 5,
        scores={"A": a_side, "B": b_side},
        confidence=1 + k % 3,
    )
