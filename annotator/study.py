"""The study configuration (rating schema, display options, analysis parameters) from TOML, and the
one place that looks a study up: :func:`get_study` by name, :func:`study_config` for its parsed config."""

import tomllib
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from sqlmodel import Session, select

from annotator.errors import ConfigError, UserError
from annotator.store.models import Study

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "data" / "study.toml"
PREFERENCE_POINTS = 5
CONFIDENCE_POINTS = 3
RUBRIC_POINTS = 3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Dimension(_Strict):
    """One general-quality question, rated for each response, with a label on every point."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    question: str = Field(min_length=1)
    labels: list[str]


class Quality(_Strict):
    intro: str = ""
    scale_min: int = 1
    scale_max: int = 5
    dimensions: list[Dimension] = Field(min_length=1)

    @model_validator(mode="after")
    def _labels_cover_scale(self) -> Self:
        points = self.scale_max - self.scale_min + 1
        if points < 2:
            raise ValueError("scale_max must be above scale_min")
        names = [d.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be unique, got {names}")
        for dimension in self.dimensions:
            if len(dimension.labels) != points:
                raise ValueError(
                    f"dimension {dimension.name!r} has {len(dimension.labels)} labels; "
                    f"the scale {self.scale_min}-{self.scale_max} needs {points}"
                )
        return self

    @property
    def values(self) -> list[int]:
        return list(range(self.scale_min, self.scale_max + 1))


class Rubric(_Strict):
    question: str = "How well does the response cover this aspect of what the user wants?"
    labels: list[str] = Field(min_length=RUBRIC_POINTS, max_length=RUBRIC_POINTS)


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


class Analysis(_Strict):
    margin: float = Field(default=0.5, gt=0)
    alpha: float = Field(default=0.05, gt=0, lt=0.5)
    overlap: int = Field(default=3, ge=1)


class StudyConfig(_Strict):
    """Everything a study fixes: what is asked, what is shown, and how the pairs are judged."""

    quality: Quality
    rubric: Rubric
    preference: Preference
    display: Display = Display()
    analysis: Analysis = Analysis()

    @property
    def dimension_names(self) -> list[str]:
        return [d.name for d in self.quality.dimensions]


def parse_config(data: dict[str, Any], *, source: str = "study config") -> StudyConfig:
    """Validate a config mapping; a problem raises ConfigError naming the key."""
    try:
        return StudyConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"]) or "(top level)"
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown key"
            problems.append(f"{source}: {key}: {message}")
        raise ConfigError("\n".join(problems)) from None


def load_config(path: str | Path | None = None) -> StudyConfig:
    """Read a study TOML file (the default study when `path` is None)."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, source=str(path))


def get_study(session: Session, name: str) -> Study:
    """The study called `name`, or a clear error listing the studies there are."""
    study = session.exec(select(Study).where(Study.name == name)).first()
    if study is None:
        names = list(session.exec(select(Study.name).order_by(Study.name)))
        known = f"; studies: {', '.join(names)}" if names else "; import pairs first"
        raise UserError(f"no study called {name!r}{known}")
    return study


def study_config(session: Session, study: str | int) -> StudyConfig:
    """The parsed configuration of a study, given its name or its id."""
    row = get_study(session, study) if isinstance(study, str) else session.get(Study, study)
    if row is None:
        raise UserError(f"no study with id {study}")
    return parse_config(row.config, source=f"study {row.name!r}")
