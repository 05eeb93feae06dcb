"""The human sample of a judged study: drawn by the tool (uniform or by the judge's uncertainty), each
pair's inclusion probability recorded at the draw, only the drawn pairs assigned, drawn once (a
serialized step), and the report's prediction-powered verdict weighted by the recorded probabilities."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from analysis import render
from analysis.active_ppi import MIN_SHARE
from annotator.cli import app
from annotator.errors import UserError
from annotator.intake.assign import assign
from annotator.intake.human_sample import draw_human_sample
from annotator.people.authorization import SYSTEM
from annotator.review.judges import import_judges, sample_probabilities
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Assignment, Event, Pair
from annotator.synthetic import SimulationSpec, simulate, simulated_users
from tests.utils.factories import make_annotators, make_study, write_csv

runner = CliRunner()
N_PAIRS = 60
ITEMS = ("correctness", "relevance", "helpfulness")


def judged_study(engine: Engine, folder: Path, *, confidence: bool = True, opinions: bool = False) -> None:
    """Study "s1" with 60 pairs no person rated yet and judge "j" on all of them; its confidence runs
    from 0.05 to 0.95 over the pairs (omitted with `confidence=False`); with `opinions` the judge also
    rates both rubric aspects and gives a preference."""
    make_study(engine, folder, N_PAIRS)
    rows: list[dict[str, object]] = []
    for i in range(N_PAIRS):
        items = [*ITEMS, "rubric:0", "rubric:1"] if opinions else list(ITEMS)
        for item in items:
            rubric = item.startswith("rubric:")
            for response, value in (
                ("chosen", 1 + i % 2 if rubric else 3.5 + (i % 3) / 2),
                ("rejected", 0 if rubric else 3.0),
            ):
                rows.append({"pair_id": f"pair-{i}", "response": response, "item": item, "value": value})
        if opinions:
            rows.append(
                {"pair_id": f"pair-{i}", "response": "", "item": "", "value": "", "preference": 1 + i % 2}
            )
    if confidence:
        for row in rows:
            row["confidence"] = round(0.05 + 0.9 * int(str(row["pair_id"])[5:]) / (N_PAIRS - 1), 4)
    import_judges(engine, write_csv(folder / "judge.csv", rows), study="s1", judge="j", account=SYSTEM)


def _pairs(engine: Engine) -> list[Pair]:
    with Session(engine) as session:
        return list(session.exec(select(Pair).order_by(col(Pair.id))))


def _assigned_pairs(engine: Engine) -> set[int]:
    with Session(engine) as session:
        return {int(p) for p in session.exec(select(Assignment.pair_id))}


def test_an_active_draw_records_each_pairs_probability_and_assigns_only_the_drawn_pairs(
    engine: Engine, tmp_path: Path
) -> None:
    judged_study(engine, tmp_path)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        summary = draw_human_sample(session, study="s1", judge="j", size=20, active=True, account=SYSTEM)
    pairs = _pairs(engine)
    p = np.array([pair.sample_probability for pair in pairs], dtype=float)
    assert p.sum() == pytest.approx(20.0) and p.min() >= MIN_SHARE * 20 / N_PAIRS - 1e-12 and p.max() <= 1.0
    assert p[0] > p[-1]  # the least confident pair is the likeliest to be drawn
    drawn = {pair.id for pair in pairs if pair.in_sample}
    assert all(pair.in_sample is not None for pair in pairs)
    assert summary.drawn == len(drawn) and 5 <= len(drawn) <= 40
    assert _assigned_pairs(engine) == drawn
    with Session(engine) as session:
        assert session.exec(select(Assignment)).all().__len__() == 3 * len(drawn)
        event = session.exec(select(Event).where(Event.action == "draw_human_sample")).one()
    assert event.detail["active"] is True and event.detail["drawn"] == len(drawn)
    with db.session_scope(engine) as session:  # a later assign (a raised overlap) keeps to the sample
        make_annotators(engine, 1, prefix="late")
        assign(session, study="s1", overlap=4, account=SYSTEM)
    assert _assigned_pairs(engine) == drawn
    with Session(engine) as session:
        recorded = sample_probabilities(session, study="s1")
    assert recorded.to_dict() == {pair.external_id: pair.sample_probability for pair in pairs}


def test_a_uniform_draw_gives_every_pair_n_over_N_and_is_deterministic_per_seed(
    engine: Engine, tmp_path: Path
) -> None:
    judged_study(engine, tmp_path, confidence=False)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        draw_human_sample(session, study="s1", judge="j", size=15, seed=4, account=SYSTEM)
    pairs = _pairs(engine)
    assert [pair.sample_probability for pair in pairs] == pytest.approx([15 / N_PAIRS] * N_PAIRS)
    rng = np.random.default_rng(4)
    assert [bool(pair.in_sample) for pair in pairs] == list(rng.random(N_PAIRS) < 15 / N_PAIRS)


def test_a_draw_is_refused_twice_after_assignments_without_confidence_or_judge(
    engine: Engine, tmp_path: Path
) -> None:
    judged_study(engine, tmp_path, confidence=False)
    make_annotators(engine, 3)
    cases = [
        ({"judge": "j", "size": 10, "active": True}, "judge 'j': the judge gave no confidence"),
        ({"judge": "nobody", "size": 10}, "study 's1' has no ratings of judge 'nobody' on its main pairs"),
        ({"judge": "j", "size": 61}, "the sample size must be between 2 and the 60 pairs the judge rated"),
    ]
    for kwargs, message in cases:
        with pytest.raises(UserError, match=message), db.session_scope(engine) as session:
            draw_human_sample(session, study="s1", account=SYSTEM, **kwargs)
    assert not _assigned_pairs(engine) and all(pair.in_sample is None for pair in _pairs(engine))
    with db.session_scope(engine) as session:
        draw_human_sample(session, study="s1", judge="j", size=10, account=SYSTEM)
    with pytest.raises(UserError, match="already has a drawn human sample"), db.session_scope(engine) as s:
        draw_human_sample(s, study="s1", judge="j", size=10, account=SYSTEM)


def test_no_draw_after_assignments(engine: Engine, tmp_path: Path) -> None:
    judged_study(engine, tmp_path)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        assign(session, study="s1", account=SYSTEM)
    with pytest.raises(UserError, match="already has assignments"), db.session_scope(engine) as session:
        draw_human_sample(session, study="s1", judge="j", size=10, account=SYSTEM)


def test_two_draws_at_the_same_time_give_one_sample(db_url: str, tmp_path: Path) -> None:
    """Two researchers draw at once (seeds differ): one draw is recorded and assigned, the other is told
    the study already has one; the recorded sample is the assigned one."""
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    try:
        judged_study(engine, tmp_path)
        make_annotators(engine, 3)
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def draw(seed: int) -> None:
            own = db.make_engine(db_url)
            try:
                barrier.wait(timeout=30)
                with db.session_scope(own) as session:
                    draw_human_sample(
                        session, study="s1", judge="j", size=20, active=True, seed=seed, account=SYSTEM
                    )
                outcomes.append("drawn")
            except UserError as exc:
                outcomes.append(str(exc))
            finally:
                own.dispose()

        threads = [threading.Thread(target=draw, args=(seed,)) for seed in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert sorted(outcomes) == ["drawn", "study 's1' already has a drawn human sample; it is drawn once"]
        drawn = {pair.id for pair in _pairs(engine) if pair.in_sample}
        assert _assigned_pairs(engine) == drawn
        with Session(engine) as session:
            assert len(session.exec(select(Event).where(Event.action == "draw_human_sample")).all()) == 1
    finally:
        engine.dispose()


def drawn_and_rated(engine: Engine, folder: Path, *, seed: int) -> None:
    """The judged study with opinions, an active draw of about 25 pairs, and 3 simulated annotators
    on each drawn pair."""
    judged_study(engine, folder, opinions=True)
    spec = SimulationSpec(annotators=3, overlap=3, seed=seed)
    with db.session_scope(engine) as session:
        names = simulated_users(session, spec)
        draw_human_sample(
            session, study="s1", judge="j", size=25, active=True, annotators=names, account=SYSTEM
        )
    simulate(engine, study="s1", spec=spec)


def test_the_report_weights_the_rated_pairs_by_their_recorded_probabilities(
    engine: Engine, tmp_path: Path
) -> None:
    """Simulated annotators rate the drawn pairs: the prediction-powered verdicts (equivalence, rubric,
    preference) speak for all 60 judged pairs and say the sample was the tool's weighted draw."""
    drawn_and_rated(engine, tmp_path, seed=2)
    drawn = sum(bool(pair.in_sample) for pair in _pairs(engine))
    with Session(engine) as session:
        report = study_report(session, study="s1", account=SYSTEM, n_boot=20)
    section = report.prediction_powered
    assert section is not None
    assert set(section.table["n_pairs"]) == {N_PAIRS} and set(section.table["n_rated"]) == {drawn}
    assert "inclusion probability" in section.parameters["sampling"]
    for one_sided in (section.preference, section.rubric):
        assert len(one_sided) == 1 and one_sided["judge"].tolist() == ["j"]
        assert one_sided["n_pairs"].tolist() == [N_PAIRS] and one_sided["n_rated"].tolist() == [drawn]
        assert one_sided["lam"].between(0, 1).all() and (one_sided["ci_low"] < one_sided["ci_high"]).all()
    assert section.rubric["status"].tolist() == ["pass"]  # the simulated rubric gap is 1 point per aspect
    assert (section.table["lam"].between(0, 1)).all()
    markdown = render.to_markdown(report)
    assert "recorded each pair's inclusion probability" in markdown
    assert "preference share is left out" not in markdown
    assert markdown.count("the same weighted estimate without the judge, over every pair of the draw") == 2


def test_the_exported_draw_gives_the_files_report_the_database_s_weighted_verdicts(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """`export pairs` writes each main pair's recorded draw; `analyze --labels --judges --pairs` on the
    exported files then weights the rated pairs as the database's report does: the same
    prediction-powered tables (without the draw it assumed a uniform sample)."""
    drawn_and_rated(engine, tmp_path, seed=4)
    pairs, labels = tmp_path / "pairs.jsonl", tmp_path / "labels.csv"
    for kind, out in (("pairs", pairs), ("labels", labels)):
        result = runner.invoke(app, ["export", kind, "--study", "s1", "--out", str(out), "--db", db_url])
        assert result.exit_code == 0, result.output
    exported = [json.loads(line) for line in pairs.read_text().splitlines()]
    recorded = {pair.external_id: pair.sample_probability for pair in _pairs(engine)}
    assert {r["id"]: r["human_sample"]["probability"] for r in exported} == recorded
    assert sum(r["human_sample"]["drawn"] for r in exported) == sum(bool(p.in_sample) for p in _pairs(engine))
    again = tmp_path / "again.jsonl"  # the exported pairs imported into a study that drew no sample
    for args in (
        ["import", str(pairs), "--study", "s2"],
        ["export", "pairs", "--study", "s2", "--out", str(again)],
    ):
        result = runner.invoke(app, [*args, "--db", db_url])
        assert result.exit_code == 0, result.output
    assert not any("human_sample" in json.loads(line) for line in again.read_text().splitlines())
    files, database = tmp_path / "files.json", tmp_path / "database.json"
    base = [
        "analyze",
        "--labels",
        str(labels),
        "--judges",
        str(tmp_path / "judge.csv"),
        "--pairs",
        str(pairs),
    ]
    result = runner.invoke(app, [*base, "--json", str(files)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["analyze", "--study", "s1", "--db", db_url, "--json", str(database)])
    assert result.exit_code == 0, result.output
    from_files, from_db = json.loads(files.read_text()), json.loads(database.read_text())
    for key in ("prediction_powered", "prediction_powered_rubric", "prediction_powered_preference"):
        assert from_files[key], key
        assert len(from_files[key]) == len(from_db[key]), key
        for mine, theirs in zip(from_files[key], from_db[key], strict=True):
            assert mine.pop("judge") == "judge" and theirs.pop("judge") == "j"  # a file's judge: its name
            assert mine.keys() == theirs.keys(), key
            for field, value in mine.items():  # the engines' reads may order the rows differently
                assert value == (
                    pytest.approx(theirs[field], rel=1e-9, nan_ok=True)
                    if isinstance(value, float)
                    else theirs[field]
                )
    plain = tmp_path / "plain.jsonl"  # the same pairs without their recorded draw
    plain.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "human_sample"}) + "\n" for r in exported)
    )
    uniform = runner.invoke(app, [*base[:-1], str(plain), "--json", str(files)])
    assert uniform.exit_code == 0, uniform.output
    assert (
        "uniform random sample" in json.loads(files.read_text())["prediction_powered_verdicts"][0]["sentence"]
    )


def test_cli_draws_the_sample_and_names_a_bad_combination_in_one_line(db_url: str, tmp_path: Path) -> None:
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    try:
        judged_study(engine, tmp_path)
        make_annotators(engine, 3)
    finally:
        engine.dispose()
    base = ["assign", "--study", "s1", "--db", db_url]
    alone = runner.invoke(app, [*base, "--sample", "20"])
    assert alone.exit_code == 1 and "Traceback" not in alone.output
    assert alone.output.strip() == (
        "error: --judge and --sample go together (and --active with them): the human sample's draw"
    )
    result = runner.invoke(app, [*base, "--judge", "j", "--sample", "20", "--active"])
    assert result.exit_code == 0, result.output
    line = " ".join(result.output.split())
    assert line.startswith(
        "study 's1': human sample drawn active (by the judge's uncertainty) from the 60 pairs"
    )
    again = runner.invoke(app, [*base, "--judge", "j", "--sample", "20"])
    assert again.exit_code == 1
    assert (
        " ".join(again.output.split())
        == "error: study 's1' already has a drawn human sample; it is drawn once"
    )
