"""The study configuration (rating schema, display options, analysis parameters) from TOML, and the
one place that looks a study up: :func:`get_study` by name, :func:`study_config` for its parsed config."""

import functools
import json
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from sqlmodel import Session, select

from analysis.scale import DEFAULT_SCALE, Margin, Scale, dimension_margins
from analysis.settings import DEFAULTS, AnalysisSettings
from analysis.vocabulary import CONFIDENCE_POINTS, PREFERENCE_POINTS, RUBRIC_POINTS
from annotator import textguard
from annotator.errors import ConfigError, UserError
from annotator.store.models import Study

if TYPE_CHECKING:
    from analysis.design import Design

#: The default study, shipped inside the package (data/study.toml in a checkout is the same file).
DEFAULT_CONFIG: Traversable = files("annotator") / "defaults" / "study.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Dimension(_Strict):
    """One general-quality question, rated for each response, with a label on every point of its scale
    (the study's, unless `scale_min`/`scale_max` give the dimension its own: a 1-7 or a yes/no 0/1 item)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    question: str = Field(min_length=1)
    labels: list[str]
    # Left out of the stored config when not set, so a study from before per-dimension scales reads the same.
    scale_min: int | None = Field(default=None, exclude_if=lambda v: v is None)
    scale_max: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # The equivalence margin in this dimension's points; by default the study's [analysis] margin held
    # to the same share of this dimension's scale (analysis.scale.dimension_margins).
    margin: float | None = Field(default=None, gt=0, exclude_if=lambda v: v is None)


class Quality(_Strict):
    intro: str = ""
    # The study's scale: every dimension's unless it names its own.
    scale_min: int = DEFAULT_SCALE.low
    scale_max: int = DEFAULT_SCALE.high
    dimensions: list[Dimension] = Field(min_length=1)

    @model_validator(mode="after")
    def _labels_cover_scale(self) -> Self:
        if self.scale_max <= self.scale_min:
            raise ValueError("scale_max must be above scale_min")
        names = [d.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be unique, got {names}")
        for dimension in self.dimensions:
            low, high = self._ends(dimension)
            if high <= low:
                raise ValueError(f"dimension {dimension.name!r}: scale_max must be above scale_min")
            if len(dimension.labels) != high - low + 1:
                raise ValueError(
                    f"dimension {dimension.name!r} has {len(dimension.labels)} labels; "
                    f"the scale {low}-{high} needs {high - low + 1}"
                )
        return self

    def _ends(self, dimension: Dimension) -> tuple[int, int]:
        low = self.scale_min if dimension.scale_min is None else dimension.scale_min
        high = self.scale_max if dimension.scale_max is None else dimension.scale_max
        return low, high

    @property
    def scale(self) -> Scale:
        """The study's scale (without labels: each dimension labels its own points)."""
        return Scale(self.scale_min, self.scale_max)

    def scale_of(self, dimension: Dimension) -> Scale:
        """The scale `dimension` is rated on, with its labels."""
        return Scale(*self._ends(dimension), tuple(dimension.labels))

    @property
    def scales(self) -> dict[str, Scale]:
        """Every dimension's scale by name."""
        return {d.name: self.scale_of(d) for d in self.dimensions}

    @property
    def own_scales(self) -> bool:
        """Some dimension is rated on a scale of its own (not the study's): outputs then name each
        dimension's scale."""
        return any(self._ends(d) != (self.scale_min, self.scale_max) for d in self.dimensions)


class Rubric(_Strict):
    question: str = "How well does the response cover this aspect of what the user wants?"
    labels: list[str] = Field(min_length=RUBRIC_POINTS, max_length=RUBRIC_POINTS)
    # Rubric verification: per aspect, is it supported by what the user wrote? Saved as
    # scores "support:<k>" (0 = no, 1 = partly, 2 = yes) on the judgment's `chosen` response.
    verify_support: bool = False
    support_question: str = "Is this aspect supported by what the user wrote (profile and narrative)?"
    support_labels: list[str] = Field(default=["No", "Partly", "Yes"], min_length=3, max_length=3)


class Preference(_Strict):
    question: str = "Which response better fits this user?"
    labels: list[str] = Field(min_length=PREFERENCE_POINTS, max_length=PREFERENCE_POINTS)
    confidence_question: str = "How confident are you?"
    confidence_labels: list[str] = Field(min_length=CONFIDENCE_POINTS, max_length=CONFIDENCE_POINTS)


class Display(_Strict):
    show_profile: bool = True
    profile_posts: int = Field(default=10, ge=0)
    profile_posts_open: int = Field(default=3, ge=0)
    show_narrative: bool = True
    rubric_for_preference: bool = True
    rubric_for_ratings: bool = True
    # The pages of this study: "system" follows the browser's light/dark setting; "light" or "dark" fix it.
    theme: Literal["system", "light", "dark"] = "system"


class Analysis(_Strict):
    """The analysis settings; each field's meaning and default: analysis.settings.AnalysisSettings."""

    margin: float = Field(default=DEFAULTS.margin, gt=0)
    alpha: float = Field(default=DEFAULTS.alpha, gt=0, lt=0.5)
    overlap: int = Field(default=DEFAULTS.overlap, ge=1)
    # The verdict thresholds of analysis.report.build_report:
    reliability_threshold: float = Field(default=DEFAULTS.reliability_threshold, ge=-1, lt=1)
    min_pairs: int = Field(default=DEFAULTS.min_pairs, ge=2)
    min_control_pairs: int = Field(default=DEFAULTS.min_control_pairs, ge=1)
    require_positive_controls: bool = DEFAULTS.require_positive_controls
    target_power: float = Field(default=DEFAULTS.target_power, gt=0, lt=1)


class Validation(_Strict):
    """How few broken pairs an equivalence claim needs, and the error rate of the cleaning list."""

    max_broken_share: float = Field(default=DEFAULTS.max_broken_share, gt=0, lt=1)
    fdr: float = Field(default=DEFAULTS.fdr, gt=0, lt=1)


class Allocation(_Strict):
    """How the main pairs' judgments are spent (analysis.design): registered with the study, and the
    "few broken pairs" test is calibrated for it. fixed: `analysis.overlap` per pair; two_stage:
    `first_stage` per pair, then the rest of `budget` (judgments per pair on average) in blocks of
    `second_stage` to the pairs that look most broken after the first stage; sequential: `first_stage`
    per pair, then one at a time to the pair that looks most broken now. `looks`: registered looks at
    the verdict, evenly over the judgments (analysis.design.look_points); the study may stop at the first
    that passes, and the test holds its error rate for that (analysis.design_looks)."""

    design: Literal["fixed", "two_stage", "sequential"] = "fixed"
    first_stage: int = Field(default=2, ge=1)
    budget: float = Field(default=3.0, gt=0)
    second_stage: int = Field(default=8, ge=1)
    # Up to 10 looks: the most bench_adaptive.py --part looks measured at the boundary.
    looks: int = Field(default=1, ge=1, le=10)

    @model_validator(mode="after")
    def _budget_covers_first_stage(self) -> Self:
        if self.design != "fixed" and self.budget < self.first_stage:
            raise ValueError(
                f"budget {self.budget:g} is below the first stage's {self.first_stage} judgments"
            )
        return self

    @model_validator(mode="after")
    def _sequential_where_valid(self) -> Self:
        """A sequential design only where its test holds its error rate (analysis.design)."""
        if self.design != "sequential":
            return self
        from analysis.design import sequential_is_valid  # NumPy loads only for a sequential design

        if not sequential_is_valid(self.first_stage, self.budget):
            raise ValueError(
                f"a sequential design with first_stage {self.first_stage} and budget {self.budget:g} has "
                "no valid test: use a budget of at most 3, or a first stage of at least 3 and a budget "
                "of at most twice it (or a two_stage design)"
            )
        return self


class Controls(_Strict):
    """Control pairs mixed into every queue: gold, positive, swapped repeats, duplicates."""

    rate: float = Field(default=0.0, ge=0, lt=1)  # share of each annotator's queue that is controls
    min_gap: int = Field(default=5, ge=1)  # a swapped repeat comes at least this many items later
    gold_tolerance: int = Field(default=1, ge=0)  # a gold quality score within this many points is right


class Attention(_Strict):
    """Attention flags per annotator: too fast (server-measured) and straight-lining."""

    min_seconds: float = Field(default=10.0, ge=0)  # a judgment faster than this is too fast
    max_fast_share: float = Field(default=0.5, ge=0, le=1)  # flagged above this share of fast ones
    max_same_share: float = Field(default=0.9, ge=0, le=1)  # straight-lining: the same answers this often
    min_judgments: int = Field(default=5, ge=1)  # no flag on fewer judgments


class Exclusion(_Strict):
    """The pre-registered exclusion rule: fixed with the study before data collection."""

    rule: str = ""  # the rule in words, as it goes into the report
    min_gold_accuracy: float | None = Field(default=None, ge=0, le=1)
    min_self_consistency: float | None = Field(default=None, ge=0, le=1)
    min_competence: float | None = Field(default=None, ge=0, le=1)
    exclude_too_fast: bool = False
    exclude_straight_lining: bool = False
    min_checks: int = Field(default=3, ge=1)  # a gold/consistency figure on fewer checks does not exclude
    # position bias: exclude an annotator whose side-A rate's 95% CI lies beyond this share (or 1 - it)
    max_side_share: float | None = Field(default=None, gt=0.5, le=1)


class TrainingItem(_Strict):
    """One training question with its expected answer and the explanation shown after answering."""

    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=2)
    answer: int = Field(ge=0)  # index into options
    explanation: str = ""

    @model_validator(mode="after")
    def _answer_is_an_option(self) -> Self:
        if self.answer >= len(self.options):
            raise ValueError(f"answer {self.answer} is not an index of the {len(self.options)} options")
        return self


class Training(_Strict):
    """Qualification before the real queue: training with feedback, then a comprehension check."""

    items: list[TrainingItem] = []  # with feedback after each answer
    pass_threshold: float = Field(default=0.8, ge=0, le=1)  # share right to pass the training
    comprehension: list[TrainingItem] = []  # no feedback; all must be right
    comprehension_attempts: int = Field(default=2, ge=1)

    @property
    def required(self) -> bool:
        return bool(self.items or self.comprehension)


#: The crowd platforms a study may take workers from (each has its link parameters in rating/crowd.py).
PLATFORMS: tuple[str, ...] = ("prolific", "mturk", "generic")


class Crowd(_Strict):
    """Crowd-platform links (Prolific, MTurk, any platform that appends a worker id to a link)."""

    platform: str = Field(default="", pattern=rf"^(|{'|'.join(PLATFORMS)})$")  # "" = no crowd entry
    worker_param: str = ""  # the URL parameter with the worker id ("" = the platform's own)
    places: int = Field(default=0, ge=0)  # at most this many accounts from links (0 = no link entry)
    completion_code: str = ""
    completion_url: str = ""  # where the finished screen sends the worker
    session_minutes: int = Field(default=0, ge=0)  # time limit per session (0 = none)
    items: int = Field(default=20, ge=1)  # pairs given to each worker from a link
    min_rated: int = Field(default=1, ge=0)  # the completion code needs at least this many rated items
    max_flag_share: float = Field(default=0.5, ge=0, le=1)  # ... and at most this share of them flagged
    warn_minutes: int = Field(default=5, ge=0)  # the countdown warns this long before the time limit


class DynamicOverlap(_Strict):
    """Pairs whose judgments disagree get further annotators, up to a cap."""

    max_overlap: int = Field(default=0, ge=0)  # 0 = off
    max_spread: int = Field(default=2, ge=1, le=4)  # preferences further apart than this disagree


class Arm(_Strict):
    """One between-annotator condition: what its annotators are shown (and so asked)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=100)
    description: str = ""
    show_profile: bool = True
    show_narrative: bool = True
    show_rubric: bool = True  # False: no rubric aspects, so no rubric ratings or support questions


class Arms(_Strict):
    """Study arms: each annotator is randomized to one; pairs are balanced across them. None = no arms."""

    conditions: list[Arm] = Field(default_factory=list)

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        names = [arm.name for arm in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique, got {names}")
        if len(names) == 1:
            raise ValueError("declare at least two arms (or none)")
        return self

    @property
    def names(self) -> list[str]:
        return [arm.name for arm in self.conditions]


class Judges(_Strict):
    """LLM judges against the annotators: the alternative annotator test's cost-benefit margin.

    `epsilon` defaults to Calderon, Reichart & Dror's (ACL 2025) recommendation for the kind of
    annotator: 0.2 expert, 0.15 skilled, 0.1 crowd; `annotators = ""` means crowd when the study
    takes crowd workers (`[crowd] platform`), else expert."""

    annotators: str = Field(default="", pattern=r"^(|expert|skilled|crowd)$")
    epsilon: float | None = Field(default=None, ge=0, lt=1)


class Owners(_Strict):
    """What a profile's owner is asked on their page (from an owner link): which answer is written for
    them is always asked; how sure, each rubric aspect (yes / partly / no) and the quality items (for
    each answer, on the study's scale) unless turned off."""

    ask_confidence: bool = True
    ask_rubric: bool = True
    ask_quality: bool = True


@dataclass(frozen=True)
class ArmDisplay:
    """What an annotator in one arm sees and is asked (the study's display settings and its arm's)."""

    arm: str
    show_profile: bool
    show_narrative: bool
    show_rubric: bool
    ask_support: bool


class StudyConfig(_Strict):
    """Everything a study fixes: what is asked, what is shown, and how the pairs are judged."""

    quality: Quality
    rubric: Rubric
    preference: Preference
    display: Display = Display()
    analysis: Analysis = Analysis()
    validation: Validation = Validation()
    allocation: Allocation = Allocation()
    controls: Controls = Controls()
    attention: Attention = Attention()
    exclusion: Exclusion = Exclusion()
    training: Training = Training()
    crowd: Crowd = Crowd()
    dynamic_overlap: DynamicOverlap = DynamicOverlap()
    arms: Arms = Arms()
    judges: Judges = Judges()
    owners: Owners = Owners()

    @model_validator(mode="after")
    def _margins_inside_their_scales(self) -> Self:
        """A margin as wide as its scale's span or wider could never fail: its equivalence claim would
        say nothing about the pairs."""
        scales = self.quality.scales
        own = {d.name for d in self.quality.dimensions if d.margin is not None}
        for name, margin in self.margins.items():
            if margin >= scales[name].span:
                given = (
                    f"quality dimension {name!r}: margin {margin:g}"
                    if name in own
                    else f"analysis.margin {self.analysis.margin:g} gives {name!r} a margin of {margin:g}, "
                    "which"
                )
                raise ValueError(
                    f"{given} is not below the span of its {scales[name].text()} scale "
                    f"({scales[name].span:g} points): no ratings could fail equivalence"
                )
        return self

    @property
    def judge_epsilon(self) -> tuple[float, str]:
        """The alt-test's epsilon and why: the configured value, or the paper's for the annotators."""
        from analysis.judges import EPSILON

        kind = self.judges.annotators or ("crowd" if self.crowd.platform else "expert")
        if self.judges.epsilon is not None:
            return self.judges.epsilon, "set in the study's [judges] epsilon"
        return EPSILON[kind], f"the paper's value for {kind} annotators"

    @property
    def margins(self) -> dict[str, float]:
        """Each quality dimension's equivalence margin in its own scale's points."""
        quality = self.quality
        own = {d.name: d.margin for d in quality.dimensions if d.margin is not None}
        return dimension_margins(self.analysis.margin, quality.scale, quality.scales, own)

    @property
    def quality_margin(self) -> Margin:
        """The margin of the quality dimensions: the study's, or each dimension's when they differ."""
        margins = self.margins
        return margins if any(m != self.analysis.margin for m in margins.values()) else self.analysis.margin

    def analysis_settings(self) -> AnalysisSettings:
        """The study's [analysis] and [validation] tables as one analysis settings model."""
        return AnalysisSettings(**self.analysis.model_dump(), **self.validation.model_dump())

    @property
    def design(self) -> "Design":
        """The registered allocation as an :class:`analysis.design.Design` (fixed: the overlap)."""
        from analysis.design import Design

        a = self.allocation
        if a.design == "fixed":
            overlap = self.analysis.overlap
            return Design("fixed", overlap, float(overlap), a.second_stage, a.looks)
        return Design(a.design, a.first_stage, a.budget, a.second_stage, a.looks)

    @property
    def dimension_names(self) -> list[str]:
        return [d.name for d in self.quality.dimensions]

    def display_for(self, arm: str = "") -> ArmDisplay:
        """What an annotator in `arm` ("" = no arms) sees and is asked; an unknown arm is an error."""
        display = self.display
        conditions = {a.name: a for a in self.arms.conditions}
        if arm and arm not in conditions:
            raise UserError(f"unknown study arm {arm!r}; the study's arms: {', '.join(conditions) or 'none'}")
        chosen = conditions.get(arm)
        show_rubric = chosen.show_rubric if chosen is not None else True
        return ArmDisplay(
            arm=arm,
            show_profile=display.show_profile and (chosen is None or chosen.show_profile),
            show_narrative=display.show_narrative and (chosen is None or chosen.show_narrative),
            show_rubric=show_rubric,
            ask_support=self.rubric.verify_support and show_rubric,
        )


#: The tables a study must ask its questions with; a config without one takes the default study's.
QUESTION_TABLES = ("quality", "rubric", "preference")


@functools.cache
def _default_questions() -> dict[str, Any]:
    """The question tables of the default study (its TOML text, read once)."""
    data = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    return {name: data[name] for name in QUESTION_TABLES}


def parse_config(data: dict[str, Any], *, source: str = "study config") -> StudyConfig:
    """Validate a config mapping (a question table it leaves out is the default study's); a problem
    raises ConfigError naming the key."""
    if isinstance(data, dict):
        data = {**{k: v for k, v in _default_questions().items() if k not in data}, **data}
    try:
        return StudyConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"])
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown key"
            problems.append(f"{source}: {key}: {message}" if key else f"{source}: {message}")
        raise ConfigError("\n".join(problems)) from None


def load_config(path: str | Path | None = None) -> StudyConfig:
    """Read a study TOML file (the default study, from the package, when `path` is None)."""
    source: Path | Traversable = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{source}: cannot read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    return parse_config(data, source=str(source))


def get_study(session: Session, name: str) -> Study:
    """The study called `name`, or a clear error listing the studies there are."""
    study = session.exec(select(Study).where(Study.name == name)).first()
    if study is None:
        names = list(session.exec(select(Study.name).order_by(Study.name)))
        known = f"; studies: {', '.join(names)}" if names else "; import pairs first"
        raise UserError(f"no study called {textguard.quoted(name)}{known}")
    return study


def study_config(session: Session, study: str | int) -> StudyConfig:
    """The parsed configuration of a study, given its name or its id."""
    row = get_study(session, study) if isinstance(study, str) else session.get(Study, study)
    if row is None:
        raise UserError(f"no study with id {study}")
    return _parsed(json.dumps(row.config, sort_keys=True), f"study {row.name!r}")


@functools.lru_cache(maxsize=64)
def _parsed(config_json: str, source: str) -> StudyConfig:
    """A stored config parsed once per text (every submit and page reads it; the model is frozen)."""
    return parse_config(json.loads(config_json), source=source)
