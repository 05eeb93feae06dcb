"""LLM judges: the alternative annotator test (a hand-worked example, the plain-loop definition,
Benjamini-Yekutieli against statsmodels), the importer (every problem named, nothing written,
idempotent, serialized), and the report's `judges` key."""

import dataclasses
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from analysis import render
from analysis.frames import split_controls
from analysis.judges import EPSILON, alt_test, benjamini_yekutieli, calibration, judge_section
from analysis.report import Report
from annotator.cli import app
from annotator.errors import IngestError, UserError
from annotator.people.authorization import SYSTEM
from annotator.review import judges, simulated_judges, study_progress
from annotator.review.readers import label_frame
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Event, JudgeRating
from tests.utils.factories import make_study, temp_engine, write_csv, write_jsonl, write_parquet_table
from tests.utils.judgehelpers import alt_test_loop, rated_study

runner = CliRunner()

# ------------------------------------------------------------------------------------ the procedure


def test_alt_test_matches_a_hand_worked_example() -> None:
    """Three annotators A, B, C and a judge F label 5 pairs by direction (1 chosen, -1 rejected);
    accuracy against the remaining annotators; epsilon 0.2.

    ====  ==  ==  ==  ==   d = W_h - W_f when leaving out A | B | C
    pair  A   B   C   F
    1     1   1   1   1    0 | 0 | 0
    2     1   1   -1  1    0 | 0 | -1  (C alone says -1; F agrees with A, B)
    3     -1  1   1   1    -1 | 0 | 0  (A alone)
    4     1   -1  -1  -1   -1 | 0 | 0  (A alone)
    5     1   -1  1   1    0 | -1 | 0  (B alone)
    ====  ==  ==  ==  ==

    F never loses, so W_f = 1 everywhere: rho_f = 1 for all three, advantage probability 1.
    A: mean(d) = -0.4, sd = sqrt(1.2 / 4) = 0.5477, t = (-0.4 - 0.2) / (0.5477 / sqrt 5) = -2.449,
    p = T_4(-2.449) = 0.0352. B and C: mean -0.2, sd sqrt(0.8 / 4) = 0.4472, t = -0.4 / 0.2 = -2,
    p = T_4(-2) = 0.0581. Benjamini-Yekutieli with m = 3, H_3 = 11/6: at q = 0.05 the thresholds are
    0.0091, 0.0182, 0.0273, nothing is rejected, winning rate 0; at q = 0.2 they are 0.0364, 0.0727,
    0.1091, all three are rejected, winning rate 1.
    """
    h = np.array([[1, 1, -1, 1, 1], [1, 1, 1, -1, -1], [1, -1, 1, -1, 1]], dtype=float)[..., None]
    f = np.array([1, 1, 1, -1, 1], dtype=float)[:, None]
    strict = alt_test(h, f, epsilon=0.2, q=0.05, scoring="accuracy", min_items=5)
    assert strict.rho_judge.tolist() == [1.0, 1.0, 1.0]
    assert strict.rho_annotator.tolist() == pytest.approx([0.6, 0.8, 0.8])
    assert strict.p_value == pytest.approx([0.035242, 0.058058, 0.058058], abs=1e-6)
    assert strict.p_value[0] == pytest.approx(stats.t.cdf(-0.6 / (np.sqrt(0.3) / np.sqrt(5)), 4))
    assert (float(strict.winning_rate), float(strict.advantage_probability)) == (0.0, 1.0)
    lenient = alt_test(h, f, epsilon=0.2, q=0.2, scoring="accuracy", min_items=5)
    assert lenient.beaten.tolist() == [True, True, True]
    assert float(lenient.winning_rate) == 1.0
    too_few = alt_test(h, f, epsilon=0.2, q=0.2, scoring="accuracy", min_items=6)
    assert int(too_few.n_tested) == 0 and np.isnan(too_few.winning_rate)


@pytest.mark.parametrize("scoring", ["neg_rmse", "accuracy"])
def test_the_vectorised_kernel_equals_the_instance_by_instance_definition(scoring: str) -> None:
    rng = np.random.default_rng(11)
    for _ in range(60):
        m, n = int(rng.integers(2, 7)), int(rng.integers(6, 40))
        r = 2 if scoring == "neg_rmse" else 1
        truth = rng.integers(1, 6, size=(n, r)).astype(float)
        h = np.clip(truth + rng.integers(-1, 2, size=(m, n, r)), 1, 5)
        f = np.clip(truth + rng.integers(-1, 2, size=(n, r)) * (rng.random((n, 1)) < 0.5), 1, 5)
        if scoring == "accuracy":
            h, f = np.sign(h - 3), np.sign(f - 3)
        else:
            f = f + rng.choice([0.0, 0.5], size=f.shape)  # fractional judge ratings (two orders)
        h[rng.random((m, n)) < 0.3] = np.nan
        f[rng.random(n) < 0.1] = np.nan
        eps, min_items = float(rng.choice([0.1, 0.15, 0.2])), int(rng.integers(2, 8))
        got = alt_test(h, f, epsilon=eps, scoring=scoring, min_items=min_items)  # type: ignore[arg-type]
        want = alt_test_loop(h, f, epsilon=eps, q=0.05, scoring=scoring, min_items=min_items)
        assert [float(got.winning_rate), float(got.advantage_probability)] == pytest.approx(want, nan_ok=True)
    batch = rng.integers(1, 6, size=(4, 5, 30, 2)).astype(float)
    judge = rng.integers(1, 6, size=(4, 30, 2)).astype(float)
    together = alt_test(batch, judge, epsilon=0.2).p_value
    alone = np.stack([alt_test(batch[s], judge[s], epsilon=0.2).p_value for s in range(4)])
    np.testing.assert_allclose(together, alone)


def test_benjamini_yekutieli_matches_statsmodels() -> None:
    rng = np.random.default_rng(2)
    for _ in range(200):
        p = rng.random(int(rng.integers(1, 12))) ** 3
        q = float(rng.choice([0.05, 0.1, 0.2]))
        expected = multipletests(p, alpha=q, method="fdr_by")[0]
        assert benjamini_yekutieli(p, q).tolist() == expected.tolist()


def test_calibration_against_hand_computed_bins() -> None:
    """Bins [0.9, 1.0): confidence 0.9, accuracy 1; [0.2, 0.3): confidence 0.2, accuracy 0.5.
    ECE = 0.5 * 0.1 + 0.5 * 0.3 = 0.2; Brier = (0.01 + 0.01 + 0.04 + 0.64) / 4 = 0.175."""
    assert calibration([0.9, 0.9, 0.2, 0.2], [1, 1, 0, 1]) == pytest.approx((0.2, 0.175))


def test_the_paper_margins() -> None:
    assert EPSILON == {"expert": 0.2, "skilled": 0.15, "crowd": 0.1}


# ------------------------------------------------------------------------------------ the importer


def _ratings(pair: str = "pair-0", **extra: object) -> list[dict[str, object]]:
    return [
        {"pair_id": pair, "response": "chosen", "item": "correctness", "value": 4} | extra,
        {"pair_id": pair, "response": "rejected", "item": "correctness", "value": 3} | extra,
    ]


def _count(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(JudgeRating)).one())


def test_every_problem_is_named_by_row_and_field_and_nothing_is_written(
    engine: Engine, tmp_path: Path
) -> None:
    make_study(engine, tmp_path, 3)
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            *_ratings(preference=1),
            {"pair_id": "nope", "response": "chosen", "item": "correctness", "value": 4},
            {"pair_id": "pair-1", "response": "left", "item": "correctness", "value": 4},
            {"pair_id": "pair-1", "response": "chosen", "item": "tone", "value": 4},
            {"pair_id": "pair-1", "response": "chosen", "item": "rubric:7", "value": 1},
            {"pair_id": "pair-1", "response": "chosen", "item": "relevance", "value": 9},
            {"pair_id": "pair-1", "response": "chosen", "item": "helpfulness", "value": "high"},
            {
                "pair_id": "pair-2",
                "response": "chosen",
                "item": "correctness",
                "value": 4,
                "order": "sideways",
            },
            {"pair_id": "pair-0", "response": "chosen", "item": "correctness", "value": 5},
            {"pair_id": "pair-0", "response": "chosen", "item": "relevance", "value": 4, "preference": -1},
            {"pair_id": "pair-2", "response": "chosen", "item": "correctness", "value": 4, "confidence": 2},
        ],
    )
    with pytest.raises(IngestError) as info:
        judges.import_judges(engine, path, study="s1", judge="gpt-x", account=SYSTEM)
    text = str(info.value)
    for expected in (
        "line 3, field pair_id: no pair 'nope' in this study",
        "line 4, field response: expected chosen or rejected, got 'left'",
        "line 5, field item: expected one of correctness, relevance, helpfulness or rubric:<k>, got 'tone'",
        "line 6, field item: 'rubric:7' is not a rubric aspect of this pair (it has rubric:0 .. rubric:1)",
        "line 7, field value: must be between 1 and 5, got 9",
        "line 8, field value: expected a number, got 'high'",
        "line 9, field order: expected chosen_first or rejected_first (or empty), got 'sideways'",
        "line 10, field item: a second rating of this pair, order, response and item (first at line 1)",
        "line 11, field preference: differs from this pair's preference at line 1",
        "line 12, field confidence: must be between 0 and 1, got 2",
    ):
        assert expected in text
    assert _count(engine) == 0


def test_hostile_values_are_refused_with_their_field(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 1)
    path = tmp_path / "nan.jsonl"
    path.write_text(
        '{"pair_id": "pair-0", "response": "chosen", "item": "correctness", "value": NaN}\n'
        '{"pair_id": "pair-0\\u0000", "response": "chosen", "item": "relevance", "value": 3}\n'
        '{"pair_id": "<img src=x onerror=alert(1)>", "response": "chosen", "item": "relevance", '
        '"value": 3}\n',
        encoding="utf-8",
    )
    with pytest.raises(IngestError) as info:
        judges.import_judges(engine, path, study="s1", judge="j", account=SYSTEM)
    text = str(info.value)
    assert "line 1: not valid JSON: NaN is not valid JSON" in text
    assert "line 2, field pair_id: contains a NUL character" in text
    assert "line 3, field pair_id: no pair '<img src=x onerror=alert(1)>' in this study" in text
    with pytest.raises(UserError, match=re.escape("the judge name '<b>x</b>' may hold only letters")):
        judges.import_judges(
            engine,
            write_jsonl(tmp_path / "ok.jsonl", _ratings()),
            study="s1",
            judge="<b>x</b>",
            account=SYSTEM,
        )
    assert _count(engine) == 0


@pytest.mark.parametrize(
    "index", ["01", "\u00b2", "\u0661", "9" * 5000], ids=["leading-zero", "superscript", "arabic", "huge"]
)
def test_a_rubric_index_not_written_as_the_tool_writes_it_is_no_aspect(
    engine: Engine, tmp_path: Path, index: str
) -> None:
    """Judge items "rubric:01" and "rubric:<Arabic 1>" were stored as second names of aspect 1;
    "rubric:<superscript 2>" and 5,000 digits ended in "unexpected error: ValueError" from int()."""
    make_study(engine, tmp_path, 1)
    item = f"rubric:{index}"
    path = write_jsonl(
        tmp_path / "aspect.jsonl", [{"pair_id": "pair-0", "response": "chosen", "item": item, "value": 1}]
    )
    with pytest.raises(IngestError) as info:
        judges.import_judges(engine, path, study="s1", judge="j", account=SYSTEM)
    shown = repr(item) if len(item) <= 40 else f"{item[:40]!r}... ({len(item):,} characters)"
    assert f"line 1, field item: {shown} is not a rubric aspect of this pair" in str(info.value)
    assert _count(engine) == 0


def test_csv_parquet_orders_and_preference_rows(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    csv = write_csv(
        tmp_path / "j.csv",
        [
            {
                "pair_id": "pair-0",
                "order": "chosen_first",
                "response": "chosen",
                "item": "rubric:1",
                "value": "2",
                "preference": "1.5",
                "confidence": "",
            },
            {
                "pair_id": "pair-0",
                "order": "chosen_first",
                "response": "rejected",
                "item": "rubric:1",
                "value": "0",
                "preference": "",
                "confidence": "0.8",
            },
            {
                "pair_id": "pair-0",
                "order": "rejected_first",
                "response": "",
                "item": "",
                "value": "",
                "preference": "-1",
                "confidence": "",
            },
        ],
    )
    assert judges.import_judges(engine, csv, study="s1", judge="j1", account=SYSTEM).imported == 3
    parquet = write_parquet_table(
        tmp_path / "j.parquet",
        {
            "pair_id": ["pair-1", "pair-1"],
            "response": ["chosen", "rejected"],
            "item": ["relevance"] * 2,
            "value": [5.0, 4.5],
            "preference": [2.0, 2.0],
        },
    )
    assert judges.import_judges(engine, parquet, study="s1", judge="j2", account=SYSTEM).imported == 2
    with Session(engine) as session:
        frame = judges.judge_frame(session, study="s1", account=SYSTEM)
        human = label_frame(session, study="s1", account=SYSTEM)
    first = frame[(frame["judge"] == "j1") & (frame["order"] == "chosen_first")]
    assert first[["preference", "confidence"]].drop_duplicates().values.tolist() == [[1.5, 0.8]]
    assert frame.loc[frame["order"] == "rejected_first", "preference"].tolist() == [-1.0]
    assert human.empty  # judge rows never enter the human label frame


def test_reimport_is_a_no_op_and_a_change_needs_replace(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 1)
    path = write_jsonl(tmp_path / "j.jsonl", _ratings(preference=1))
    first = judges.import_judges(engine, path, study="s1", judge="j", account=SYSTEM)
    with Session(engine) as session:
        version = study_progress.data_version(session, "s1", account=SYSTEM)
        events = int(session.exec(select(func.count()).select_from(Event)).one())
    again = judges.import_judges(engine, path, study="s1", judge="j", account=SYSTEM)
    assert (first.imported, again.imported, again.unchanged) == (2, 0, 2)
    with Session(engine) as session:
        assert study_progress.data_version(session, "s1", account=SYSTEM) == version
        assert int(session.exec(select(func.count()).select_from(Event)).one()) == events
    # the refusal names the field that changed (it said "field value" for a changed preference)
    confident = write_jsonl(tmp_path / "j3.jsonl", _ratings(preference=1, confidence=0.5))
    with pytest.raises(
        IngestError, match=re.escape("line 1, field confidence: judge 'j' already has a different")
    ):
        judges.import_judges(engine, confident, study="s1", judge="j", account=SYSTEM)
    changed = write_jsonl(tmp_path / "j2.jsonl", _ratings(preference=2))
    with pytest.raises(
        IngestError, match=re.escape("line 1, field preference: judge 'j' already has a different")
    ):
        judges.import_judges(engine, changed, study="s1", judge="j", account=SYSTEM)
    replaced = judges.import_judges(engine, changed, study="s1", judge="j", account=SYSTEM, replace=True)
    assert (replaced.replaced, _count(engine)) == (2, 2)
    with Session(engine) as session:
        assert study_progress.data_version(session, "s1", account=SYSTEM) != version
        assert set(judges.judge_frame(session, study="s1", account=SYSTEM)["preference"]) == {2.0}


def test_parallel_imports_of_one_file_store_it_once(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 4)
    rows = [r for k in range(4) for r in _ratings(f"pair-{k}", preference=1)]
    path = write_jsonl(tmp_path / "j.jsonl", rows)
    url = engine.url.render_as_string(hide_password=False)
    barrier, results, errors = threading.Barrier(4), [], []

    def run() -> None:
        own = db.make_engine(url)
        try:
            barrier.wait(timeout=30)
            results.append(judges.import_judges(own, path, study="s1", judge="j", account=SYSTEM).imported)
        except Exception as exc:  # reported below
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            own.dispose()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert sorted(results) == [0, 0, 0, 8]
    assert _count(engine) == 8


def test_cli_import_errors_are_one_line_without_traceback(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:
    make_study(engine, tmp_path, 1)
    bad = write_jsonl(
        tmp_path / "bad.jsonl", [{"pair_id": "pair-0", "response": "chosen", "item": "x", "value": 1}]
    )
    result = runner.invoke(app, ["judges", "import", str(bad), "--study", "s1", "--judge", "j"])
    assert result.exit_code == 1
    assert "line 1, field item" in result.output and "Traceback" not in result.output
    good = write_jsonl(tmp_path / "good.jsonl", _ratings())
    result = runner.invoke(app, ["judges", "import", str(good), "--study", "s1", "--judge", "j"])
    assert result.exit_code == 0 and "imported 2 ratings" in result.output


# ------------------------------------------------------------------------------------ the report


@dataclass(frozen=True)
class Judged:
    report: Report
    frame: pd.DataFrame  # the human label frame
    ratings: pd.DataFrame  # the judge frame


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    """A study of 32 pairs rated by 3 simulated annotators and the demo's two simulated judges: its
    report, label frame and judge frame (read once; a PostgreSQL test database lives for one test)."""
    with temp_engine() as engine:
        rated_study(engine, tmp_path_factory.mktemp("judged"))
        simulated_judges.simulate_judges(engine, study="s1", seed=1)
        with db.session_scope(engine) as session:
            return Judged(
                report=study_report(session, study="s1", n_boot=20, account=SYSTEM),
                frame=label_frame(session, study="s1", account=SYSTEM),
                ratings=judges.judge_frame(session, study="s1", account=SYSTEM),
            )


def test_report_has_a_judges_key_per_judge_and_item(judged: Judged) -> None:
    report = judged.report
    data = json.loads(json.dumps(render.to_json(report)))
    jsonschema.validate(data, render.REPORT_SCHEMA)
    rows = pd.DataFrame(data["judges"])
    assert {
        "judge",
        "item",
        "n_pairs",
        "winning_rate",
        "advantage_probability",
        "epsilon",
        "can_replace",
    } <= set(rows)
    assert set(rows["item"]) == {"correctness", "relevance", "helpfulness", "rubric", "preference"}
    assert (rows["n_pairs"] == 32).all() and (rows["epsilon"] == 0.2).all()
    close = rows[rows["judge"] == "demo-judge-close"]
    lenient = rows[(rows["judge"] == "demo-judge-lenient") & (rows["item"] != "preference")]
    assert close["passes_alt_test"].all() and not lenient["can_replace"].any()
    # the sample pairs' chosen response is always the longer one, so a judge that picks the longer
    # response matches the people's preference: no judge can show it adds anything there
    preference = close.set_index("item").loc["preference"]
    assert preference["baseline"] == "longer response" and preference["baseline_advantage"] == 1.0
    assert preference["passes_alt_test"] and not preference["can_replace"]
    # ratings at the top of the scale: always answering 4 aligns with the people about as well as the
    # close judge does (a tie with the left-out annotator counts as a win), so the judge cannot show it
    # adds anything on those dimensions; on the rubric it beats every content-blind judge
    quality = close[close["item"].isin(["correctness", "relevance", "helpfulness"])]
    assert (quality["baseline"] == "same rating 4").all() and not quality["can_replace"].any()
    assert close.set_index("item").loc["rubric", "can_replace"]
    assert (lenient["advantage_probability"] < close["advantage_probability"].min()).all()
    cards = pd.DataFrame(data["judge_cards"]).set_index("judge")
    assert cards.loc["demo-judge-lenient", "first_position_rate"] > 0.9
    assert (
        cards.loc["demo-judge-close", "swap_consistency"]
        > cards.loc["demo-judge-lenient", "swap_consistency"]
    )
    assert "LLM judges: can a judge replace an annotator?" in render.to_markdown(report)
    assert "demo-judge-lenient" in render.to_terminal(report)
    assert "<h2>LLM judges: accuracy against the human majority and bias card</h2>" in render.to_html(report)


def test_judges_do_not_change_the_human_analysis(judged: Judged) -> None:
    assert set(judged.frame["annotator"]) == {"sim_01", "sim_02", "sim_03"}
    with_judges = render.to_json(judged.report)
    without = render.to_json(dataclasses.replace(judged.report, judges=None))
    assert with_judges["verdicts"] == without["verdicts"]
    assert with_judges["agreement"] == without["agreement"]


def test_the_judge_notes_name_columns_as_their_tables_label_them(judged: Judged) -> None:
    """The notes read beside labelled tables (the page, HTML): no raw field name such as
    ``baseline_gap``; each column a note explains appears under its label."""
    from analysis.readable import label
    from analysis.render.text import judge_sections

    sections = judge_sections(judged.report)
    assert len(sections) >= 4  # the alt-test, the baseline, agreement, the bias card
    notes = " ".join(note for _, note, _ in sections)
    assert not re.findall(r"\b[a-z]+_[a-z_]+\b", notes), notes
    for column in ("baseline_gap", "first_position_rate", "position_bias", "length_bias", "can_replace"):
        assert label(column) in notes, column


def test_below_the_paper_minimum_there_is_a_note_not_a_verdict(judged: Judged) -> None:
    main, _ = split_controls(judged.frame[judged.frame["annotator"] != "sim_03"])
    section = judge_section(main, judged.ratings, quality_items=["correctness"], epsilon=0.1, n_boot=5)
    row = section.table.iloc[0]
    assert row["can_replace"] is None
    assert row["note"].startswith("no verdict: 2 of 2 annotators rated at least 30 pairs")


def test_the_dataset_card_lists_the_verdicts_or_says_there_is_none(judged: Judged) -> None:
    from annotator.publish.dataset import _judges_lines

    card = "\n".join(_judges_lines(judged.report))
    assert "### LLM judges: can a judge replace an annotator?" in card
    assert "| demo-judge-close | correctness | 32 | 1.000 |" in card and "| yes |" in card
    main, _ = split_controls(judged.frame[judged.frame["annotator"] != "sim_03"])
    two = judge_section(main, judged.ratings, quality_items=["correctness"], epsilon=0.1, n_boot=5)
    card = "\n".join(_judges_lines(dataclasses.replace(judged.report, judges=two)))
    assert card.count("| no verdict |") == 6  # 2 judges x (correctness, rubric, preference), 2 annotators


@pytest.mark.page
def test_the_validation_page_shows_the_judges(env_db: str, engine: Engine, tmp_path: Path) -> None:
    from annotator.people import accounts
    from annotator.people.authorization import Account
    from annotator.synthetic import SimulationSpec, simulate
    from tests.utils.apphelpers import app_for, shown_tables

    make_study(engine, tmp_path, 8)
    simulate(engine, study="s1", spec=SimulationSpec(annotators=3, overlap=3, seed=3))
    simulated_judges.simulate_judges(engine, study="s1", seed=1)
    with db.session_scope(engine) as session:
        user = accounts.add_user(
            session, username="boss", role="researcher", password="boss-password", account=SYSTEM
        )
        boss = Account(id=user.id or 0, username="boss", role="researcher")
    at = app_for(boss, timeout=180)
    at.switch_page("views/validation.py").run()
    assert not at.exception
    titles = [s.value for s in [*at.header, *at.subheader]]
    assert "LLM judges: can a judge replace an annotator? (alternative annotator test)" in titles
    assert "LLM judges: accuracy against the human majority and bias card" in titles
    assert "LLM judges: against a judge that does not read the responses (content-blind baseline)" in titles
    assert any("A content-blind judge answers from position or length alone" in c.value for c in at.caption)
    assert any(  # the tables as a person reads them (labelled columns, escaped Markdown)
        "no verdict: 0 of 3 annotators rated at least 30 pairs" in str(frame.to_dict()).replace("\\", "")
        for frame in shown_tables(at)
    )
