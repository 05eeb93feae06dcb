"""A scale per quality dimension (analysis/scale.py): a study whose dimensions are rated 1-5, 1-7 and
yes/no (0/1) asks, checks, analyses and exports each on its own scale; a study from before
per-dimension scales reads as it did."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from analysis.render import methods_paragraph
from analysis.render.plots import difference_range, figure_captions, figures
from analysis.report import Report
from analysis.scale import DEFAULT_SCALE, Scale, report_scales, scale_parameters
from annotator.app.rating_page.form import item_questions
from annotator.app.rating_page.render import key_hint
from annotator.errors import ConfigError, LabelError
from annotator.intake.assign import assign
from annotator.people.authorization import SYSTEM
from annotator.publish import dataset, export
from annotator.rating import labels
from annotator.review import adjudicate
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Assignment, Score, Study, id_of
from annotator.study import load_config, parse_config
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.databases import fresh_db_url
from tests.utils.factories import account_for, make_annotators, make_study
from tests.utils.figures import bands, intervals
from tests.utils.scales import POINTS, TWO_SCALES_TOML, two_scale_config


def test_a_scale_knows_its_points() -> None:
    yes_no = Scale(0, 1, ("0 - No", "1 - Yes"))
    assert (yes_no.values, yes_no.points, yes_no.span, yes_no.text()) == ((0, 1), 2, 1.0, "0-1")
    assert 1 in yes_no and 1.0 in yes_no and 2 not in yes_no and 0.5 not in yes_no and True not in yes_no
    assert (yes_no.label(1), yes_no.words(1)) == ("1 - Yes", "Yes")
    assert Scale.from_dict(yes_no.to_dict()) == yes_no
    assert DEFAULT_SCALE.values == (1, 2, 3, 4, 5) and DEFAULT_SCALE.label(3) == "3"


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((5, 5), ValueError, "a scale's high end must be above its low end, got 5-5"),
        ((1, 3, ("a", "b")), ValueError, "the scale 1-3 needs 3 labels, got 2"),
        ((1.5, 3), TypeError, "a scale's ends must be integers, got 1.5-3"),
    ],
)
def test_a_bad_scale_is_refused(args: tuple, error: type[Exception], message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(error, match=re.escape(message)):
        Scale(*args)


def test_a_dimension_names_its_own_scale_or_takes_the_studys() -> None:
    quality = two_scale_config().quality
    assert {name: list(s.values) for name, s in quality.scales.items()} == POINTS
    assert quality.scale == DEFAULT_SCALE and quality.own_scales
    assert quality.scales["safe"].words(0) == "No: the advice could cause harm"
    assert not load_config().quality.own_scales


def test_a_dimension_whose_labels_do_not_fit_its_scale_is_named() -> None:
    import tomllib

    data = tomllib.loads(TWO_SCALES_TOML.replace('"1 - Yes: safe to follow"', '"1 - Yes", "2 - Maybe"'))
    with pytest.raises(ConfigError, match=re.escape("dimension 'safe' has 3 labels; the scale 0-1 needs 2")):
        parse_config(data)
    data = tomllib.loads(
        TWO_SCALES_TOML.replace("scale_min = 0\nscale_max = 1", "scale_min = 1\nscale_max = 1")
    )
    with pytest.raises(ConfigError, match=re.escape("dimension 'safe': scale_max must be above scale_min")):
        parse_config(data)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"analysis": {"margin": 4.0}},
            "analysis.margin 4 gives 'correctness' a margin of 4, which is not below",
        ),
        ({"analysis": {"margin": 1e308}}, "is not below the span of its 1-5 scale (4 points)"),
        ({"analysis": {"margin": float("inf")}}, "analysis.margin: Input should be a finite number"),
        ({"validation": {"fdr": float("nan")}}, "validation.fdr: Input should be a finite number"),
        ({"safe_margin": 1.0}, "quality dimension 'safe': margin 1 is not below the span of its 0-1 scale"),
    ],
)
def test_a_margin_that_no_ratings_could_fail_is_refused(change: dict[str, Any], said: str) -> None:
    import tomllib

    data = tomllib.loads(TWO_SCALES_TOML)
    if "safe_margin" in change:
        data["quality"]["dimensions"][2]["margin"] = change.pop("safe_margin")
    data.update(change)
    with pytest.raises(ConfigError, match=re.escape(said)):
        parse_config(data, source="study.toml")
    data = tomllib.loads(TWO_SCALES_TOML)
    data["analysis"] = {"margin": 3.99}  # below the span: a wide margin, but one ratings can fail
    assert parse_config(data).margins["correctness"] == 3.99


def test_a_stored_config_from_before_reads_as_the_studys_scale() -> None:
    """A config stored before dimensions had scales (no scale keys on its dimensions) loads with every
    dimension on the study's scale, and stores the same data again (so its study is the same study)."""
    stored = load_config().model_dump()
    assert all(set(d) == {"name", "question", "labels"} for d in stored["quality"]["dimensions"])
    config = parse_config(stored)
    assert (
        set(config.quality.scales.values())
        == {Scale(1, 5, tuple(d["labels"])) for d in stored["quality"]["dimensions"]}
        and len(config.quality.scales) == 3
    )
    assert config.model_dump() == stored
    seven = {**stored, "quality": {**stored["quality"], "scale_max": 7}}
    seven["quality"]["dimensions"] = [
        {**d, "labels": [*d["labels"], "6", "7"]} for d in stored["quality"]["dimensions"]
    ]
    assert {s.text() for s in parse_config(seven).quality.scales.values()} == {"1-7"}


def test_report_parameters_name_each_scale_only_when_they_differ() -> None:
    items = ["correctness", "safe"]
    same = scale_parameters(items, DEFAULT_SCALE, {})
    assert same == {"scale_min": 1, "scale_max": 5}
    assert report_scales(same, items) == {"correctness": DEFAULT_SCALE, "safe": DEFAULT_SCALE}
    own = scale_parameters(items, DEFAULT_SCALE, {"safe": Scale(0, 1)})
    assert own["scales"] == {
        "correctness": {"low": 1, "high": 5, "labels": []},
        "safe": {"low": 0, "high": 1, "labels": []},
    }
    assert report_scales(own, items)["safe"] == Scale(0, 1)


def test_each_dimension_has_its_margin_on_its_own_scale() -> None:
    """The study's margin (points of its 1-5 scale) is held to the same share of each dimension's
    scale, unless a dimension sets its own; a study on one scale keeps one margin."""
    import tomllib

    config = two_scale_config()
    assert config.margins == {"correctness": 0.5, "helpfulness": 0.75, "safe": 0.125}
    assert config.quality_margin == config.margins
    data = tomllib.loads(TWO_SCALES_TOML.replace("scale_min = 0\n", "scale_min = 0\nmargin = 0.1\n"))
    assert parse_config(data).margins["safe"] == 0.1
    assert parse_config(data).model_dump()["quality"]["dimensions"][2]["margin"] == 0.1
    default = load_config()
    assert default.quality_margin == 0.5 and set(default.margins.values()) == {0.5}


def test_the_settings_form_keeps_a_dimensions_own_scale() -> None:
    """The form's dimensions table shows name, question and labels; editing a question keeps the
    dimension's scale, which only study.toml sets."""
    from annotator.intake import study_settings

    base = two_scale_config()
    table = study_settings.dimensions_frame(base)
    table.loc[table["name"] == "safe", "question"] = "Could anyone follow it safely?"
    edited = study_settings.build_config(
        base, dimensions=table, training=study_settings.training_frame(base), sections={}
    )
    assert edited.quality.scales["safe"].values == (0, 1) and edited.quality.scales["helpfulness"].high == 7
    assert edited.quality.dimensions[2].question == "Could anyone follow it safely?"


def test_a_simulated_frame_rates_each_item_on_its_scale() -> None:
    """The simulator draws the latent truth on the design's scale and rates an item with its own scale
    on that scale; the report built from it keeps each item's intervals inside its range."""
    import numpy as np

    from analysis.report import ReportSettings, build_report
    from analysis.simulation import SimDesign, SimEffects, simulate_frame

    scales = {"helpfulness": Scale(1, 7), "safe": Scale(0, 1)}
    design = SimDesign(
        n_pairs=40, per_pair=3, pool=6, items=("correctness", "helpfulness", "safe"), scales=scales
    )
    frame = simulate_frame(np.random.default_rng(4), design, SimEffects(noise=0.5))
    seen = frame.groupby("item")["value"].agg(["min", "max"])
    assert set(frame.loc[frame["item"] == "safe", "value"]) == {0.0, 1.0}
    assert seen.at["helpfulness", "max"] > 5 and seen.at["correctness", "max"] <= 5
    margins = {"correctness": 0.5, "helpfulness": 0.75, "safe": 0.125}
    settings = ReportSettings(quality_items=design.items, scales=scales, margins=margins, n_boot=50)
    report = build_report(frame, study="sim", settings=settings)
    crossed = report.validation.crossed.set_index("dimension")
    assert crossed["high"].to_dict() == margins
    assert report.agreement.set_index("item").loc[list(design.items), "krippendorff_alpha"].notna().all()


# ------------------------------------------------------------------------------- asking and checking


@pytest.fixture
def rated(engine: Engine, tmp_path: Path) -> Iterator[tuple[Engine, list[int]]]:
    """Two pairs of the two-scale study, both queued for one annotator; yields the assignment ids."""
    make_study(engine, tmp_path, 2, config=two_scale_config())
    (annotator,) = make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, seed=0, account=SYSTEM)
    with Session(engine) as session:
        found = session.exec(select(Assignment).order_by(Assignment.position)).all()
        assert {a.annotator_id for a in found} == {annotator}
    yield engine, [id_of(a) for a in found]


def _submission(safe: float, helpful: float = 7) -> labels.Submission:
    scores: dict[str, dict[str, float | None]] = {
        side: {"correctness": 4, "helpfulness": helpful, "safe": safe, "rubric:0": 2, "rubric:1": 1}
        for side in ("A", "B")
    }
    return labels.Submission(submission_id=f"s-{safe}-{helpful}", preference=0, scores=scores, confidence=2)


def test_each_question_offers_its_dimensions_points(rated: tuple[Engine, list[int]]) -> None:
    engine, queue = rated
    with db.session_scope(engine) as session:
        account = account_for(session, session.get(Assignment, queue[0]).annotator_id)  # type: ignore[union-attr]
        item = labels.show(session, assignment_id=queue[0], account=account)
    config = two_scale_config()
    questions = {q.name: q for q in item_questions(item, config)}
    for side in ("A", "B"):
        for name, points in POINTS.items():
            assert questions[f"{side}:{name}"].options == points
    assert questions["A:safe"].option_labels == {
        0: "0 No: the advice could cause harm",
        1: "1 Yes: safe to follow",
    }
    assert questions["B:helpfulness"].option_labels[7] == "7 Could not be better"
    assert "(1-5, 1-7 and 0-1 scales, 0-2 rubric)" in key_hint(config)
    assert "(1-5 scales, 0-2 rubric)" in key_hint(load_config())


def test_a_submission_is_checked_on_each_dimensions_scale(rated: tuple[Engine, list[int]]) -> None:
    engine, queue = rated
    with db.session_scope(engine) as session:
        account = account_for(session, session.get(Assignment, queue[0]).annotator_id)  # type: ignore[union-attr]
    for bad, message in (
        (_submission(safe=2), "safe must be 0-1"),
        (_submission(1, helpful=8), "helpfulness must be 1-7"),
    ):
        with pytest.raises(LabelError, match=re.escape(f"Response A: {message}")):
            with db.session_scope(engine) as session:
                labels.submit(session, assignment_id=queue[0], account=account, submission=bad)
    with db.session_scope(engine) as session:
        judgment = labels.submit(session, assignment_id=queue[0], account=account, submission=_submission(0))
    with Session(engine) as session:
        stored = {
            (s.response, s.item): s.value
            for s in session.exec(select(Score).where(Score.judgment_id == judgment.id))
        }
    assert stored[("chosen", "safe")] == 0 and stored[("rejected", "helpfulness")] == 7


def test_adjudication_scores_are_checked_on_each_dimensions_scale(rated: tuple[Engine, list[int]]) -> None:
    engine, _ = rated
    with db.session_scope(engine) as session:
        study = session.exec(select(Study)).one()
        pair_id = study.id and session.exec(select(Assignment.pair_id)).first()
        with pytest.raises(Exception, match=re.escape("scores: chosen safe must be within 0-1, got 3")):
            adjudicate.decide(
                session, pair_id=int(pair_id or 0), account=SYSTEM, preference="chosen", keep=True,
                scores={"chosen": {"safe": 3}},
            )  # fmt: skip


# ------------------------------------------------------------------------- analysing and exporting


@pytest.fixture(scope="module")
def two_scale_study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Report, Path]]:
    """24 pairs of the two-scale study rated by 4 simulated annotators, auto-resolved, with its report
    and its dataset folder."""
    folder = tmp_path_factory.mktemp("scales")
    engine = db.make_engine(fresh_db_url(folder, migrated=True, keep=True))
    db.upgrade(engine)
    make_study(engine, folder, 24, config=two_scale_config())
    simulate(engine, study="s1", spec=SimulationSpec(annotators=4, overlap=3, seed=5, rubric_gap=1.5))
    with db.session_scope(engine) as session:
        adjudicate.auto_resolve(session, study="s1", account=SYSTEM)
    with db.session_scope(engine) as session:
        report = study_report(session, study="s1", account=SYSTEM, n_boot=100)
        dataset.export_dataset(session, study="s1", out=folder / "ds", account=SYSTEM)
    yield engine, report, folder / "ds"
    engine.dispose()


def test_simulated_ratings_lie_on_each_dimensions_scale(two_scale_study: tuple[Engine, Report, Path]) -> None:
    engine, _, _ = two_scale_study
    with db.session_scope(engine) as session:
        frame = export.build(session, export.ExportRequest("s1", "labels"), account=SYSTEM)
    assert isinstance(frame, pd.DataFrame)
    seen = frame.groupby("item")["value"].agg(["min", "max"])
    for name, points in POINTS.items():
        assert points[0] <= seen.at[name, "min"] and seen.at[name, "max"] <= points[-1]
    assert seen.at["helpfulness", "max"] > 5  # the 1-7 scale is used above 5
    assert set(frame.loc[frame["item"] == "safe", "value"]) == {0.0, 1.0}


def test_the_report_uses_each_dimensions_scale(two_scale_study: tuple[Engine, Report, Path]) -> None:
    _, report, _ = two_scale_study
    p = report.parameters
    assert {k: (v["low"], v["high"]) for k, v in p["scales"].items()} == {
        "correctness": (1, 5), "helpfulness": (1, 7), "safe": (0, 1)
    }  # fmt: skip
    assert [difference_range(report, item) for item in POINTS] == [4.0, 6.0, 1.0]
    agreement = report.agreement.set_index("item")
    assert agreement.loc[list(POINTS), "krippendorff_alpha"].notna().all()
    assert "was rated on each dimension's own scale (correctness 1-5, helpfulness 1-7, safe 0-1)" in (
        methods_paragraph(report)
    )
    assert "±4 on correctness, ±6 on helpfulness, ±1 on safe" in figure_captions(report)["categories"]
    margins = {"correctness": 0.5, "helpfulness": 0.75, "safe": 0.125}
    assert p["margins"] == margins and p["margin"] == 0.5
    crossed = report.validation.crossed.set_index("dimension")
    assert crossed["high"].to_dict() == margins and (crossed["low"] == -crossed["high"]).all()
    assert report.validation.broken.set_index("dimension")["margin"].to_dict() == margins
    assert "(correctness +-0.5, helpfulness +-0.75, safe +-0.125;" in methods_paragraph(report)
    assert (
        "band (±0.5 on correctness, ±0.75 on helpfulness, ±0.125 on safe)"
        in figure_captions(report)["forest"]
    )
    forest = figures(report)["forest"]
    assert bands(forest) == {f"margin {k}": (-m, m) for k, m in margins.items()}
    drawn = intervals(forest)
    assert {i.row for i in drawn} == set(margins)
    for interval in drawn:
        width = difference_range(report, interval.row)
        assert -width - 1e-9 <= interval.low and interval.high <= width + 1e-9


def test_the_exports_name_each_dimensions_scale(two_scale_study: tuple[Engine, Report, Path]) -> None:
    engine, _, folder = two_scale_study
    with db.session_scope(engine) as session:
        frame = export.build(session, export.ExportRequest("s1", "labels"), account=SYSTEM)
    assert isinstance(frame, pd.DataFrame)
    ends = frame.drop_duplicates("item").set_index("item")[["scale_low", "scale_high"]]
    assert ends.loc["safe"].tolist() == [0, 1] and ends.loc["helpfulness"].tolist() == [1, 7]
    assert ends.loc[ends.index.str.startswith("rubric:")].isna().all().all()
    shared = pd.read_parquet(next((folder / "labels").glob("*.parquet")))
    assert {"scale_low", "scale_high"} <= set(shared.columns)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "## Quality scales" in card
    assert "| safe | 0-1 | 0 = No: the advice could cause harm; 1 = Yes: safe to follow |" in card
    assert "| helpfulness | 1-7 | 1 = Useless;" in card


def test_a_study_on_one_scale_exports_no_scale_columns(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    with db.session_scope(engine) as session:
        frame = export.build(session, export.ExportRequest("s1", "labels"), account=SYSTEM)
    assert isinstance(frame, pd.DataFrame) and "scale_low" not in frame.columns
    assert "## Quality scales" not in dataset.dataset_card(
        study="s1", rows={"pairs": 1}, license_id="cc-by-4.0", validation="", methods="",
        benchmark=pd.DataFrame(), n_pairs_total=1, files={"pairs": "pairs/x.parquet"},
    )  # fmt: skip
