"""The Progress page's numbers, counted in the database, equal the same numbers counted over every row:
per annotator (assigned, done, flagged, skipped, open, median time on task, items per hour), the
pairs and complete pairs, a page of the per-pair table, and the judgments-over-time bins."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.app import charts
from annotator.intake import assign
from annotator.people import accounts
from annotator.people.authorization import SYSTEM
from annotator.rating import drafts, labels
from annotator.review import adjudicate, adjudication_queue, study_progress
from annotator.store import db, tallies
from annotator.store.models import Study, id_of
from tests.utils.factories import account_for, make_annotators, make_study, make_user
from tests.utils.qchelpers import answer_all

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def study(engine: Engine, tmp_path: Path) -> str:
    """13 pairs, 4 annotators, overlap 2; three annotators answered everything, one nothing; then
    known times on task, submission times over three days, a flagged item and a skipped one."""
    make_study(engine, tmp_path, 13)
    make_annotators(engine, 4)
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=2, account=SYSTEM)
    for name in ("ann00", "ann01", "ann02"):
        answer_all(engine, name)
    with engine.begin() as connection:
        ids = [row[0] for row in connection.execute(text("SELECT id FROM judgment ORDER BY id"))]
        for k, judgment_id in enumerate(ids):
            at = (START + timedelta(hours=7 * k, seconds=k, microseconds=k + 1)).replace(tzinfo=None)
            connection.execute(
                text("UPDATE judgment SET time_on_task_s = :t, submitted_at = :at WHERE id = :id"),
                {"t": 10.0 + (k * 7) % 23, "at": at, "id": judgment_id},
            )
        undone = connection.execute(
            text("SELECT id FROM assignment WHERE status = 'pending' ORDER BY id")
        ).all()
        connection.execute(
            text("UPDATE assignment SET status = 'flagged', flag_reason = 'broken' WHERE id = :id"),
            {"id": undone[0][0]},
        )
        connection.execute(text("UPDATE assignment SET skip_count = 2 WHERE id = :id"), {"id": undone[1][0]})
    with db.session_scope(engine) as session:  # rows edited by hand: the tallies are counted again
        tallies.rebuild(session)
    return "s1"


def _every_row(engine: Engine) -> pd.DataFrame:
    """Every assignment of the study with its annotator, status, skips and current judgment's time."""
    query = (
        "SELECT u.username AS annotator, u.active, a.status, a.skip_count, j.time_on_task_s AS time_s, "
        'a.pair_id, p.n_done FROM assignment a JOIN "user" u ON u.id = a.annotator_id '
        "JOIN pair p ON p.id = a.pair_id LEFT JOIN judgment j ON j.id = a.current_judgment_id"
    )
    with engine.connect() as connection:
        return pd.read_sql(text(query), connection)


def test_the_annotator_table_equals_the_count_over_every_row(engine: Engine, study: str) -> None:
    rows = _every_row(engine)
    with db.session_scope(engine) as session:
        table = study_progress.annotator_progress(session, study=study, account=SYSTEM)
    assert list(table.columns) == study_progress.PROGRESS_COLUMNS
    assert list(table["annotator"]) == sorted(rows["annotator"].unique())
    for _, row in table.iterrows():
        mine = rows[rows["annotator"] == row["annotator"]]
        assert row["assigned"] == len(mine)
        assert row["done"] == int((mine["status"] == "done").sum())
        assert row["flagged"] == int((mine["status"] == "flagged").sum())
        assert row["skipped"] == int((mine["skip_count"] > 0).sum())
        assert row["open"] == row["assigned"] - row["done"] - row["flagged"]
        times = mine["time_s"].dropna()
        if times.empty:
            assert pd.isna(row["median_time_s"]) and pd.isna(row["items_per_hour"])
        else:
            assert row["median_time_s"] == pytest.approx(times.median(), rel=0.01)
            assert row["items_per_hour"] == pytest.approx(row["done"] / (times.sum() / 3600))
    assert table["flagged"].sum() == 1 and table["skipped"].sum() == 1
    assert table["done"].sum() == int((rows["status"] == "done").sum())


def test_the_median_is_the_middle_time_or_the_mean_of_the_two_middle_times(
    engine: Engine, study: str
) -> None:
    rows = _every_row(engine).dropna(subset=["time_s"])
    sizes = rows.groupby("annotator").size()
    assert {n % 2 for n in sizes} == {0, 1} or len(sizes) == 1  # both cases present in this study
    with db.session_scope(engine) as session:
        table = study_progress.annotator_progress(session, study=study, account=SYSTEM).set_index("annotator")
    for name, times in rows.groupby("annotator")["time_s"]:
        ordered = sorted(times)
        middle = len(ordered) // 2
        expected = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        assert table.loc[name, "median_time_s"] == pytest.approx(expected, rel=0.01)  # bins 2% wide


def test_pairs_complete_and_a_page_of_the_pair_table(engine: Engine, study: str) -> None:
    rows = _every_row(engine)
    assigned = rows.groupby("pair_id").size()
    done = rows.groupby("pair_id")["n_done"].first()
    with db.session_scope(engine) as session:
        counts = study_progress.pair_counts(session, study=study, account=SYSTEM)
        every = study_progress.pair_completion(session, study=study, account=SYSTEM)
        page = study_progress.pair_completion(session, study=study, account=SYSTEM, offset=5, limit=4)
    assert counts == {"pairs": 13, "complete": int((done >= assigned).sum())}
    assert 0 < counts["complete"] < 13
    assert list(every["assigned"]) == list(assigned.sort_index()) and list(every["done"]) == list(
        done.sort_index()
    )
    assert page.reset_index(drop=True).equals(every.iloc[5:9].reset_index(drop=True))
    assert list(every["pair_id"]) == [f"pair-{i:04d}" for i in range(13)] or every["pair_id"].is_unique


def test_the_timeline_bins_hold_every_judgment_once(engine: Engine, study: str) -> None:
    with engine.connect() as connection:
        per_annotator = dict(
            connection.execute(
                text(
                    "SELECT u.username, count(*) FROM judgment j JOIN assignment a ON a.id = j.assignment_id "
                    'JOIN "user" u ON u.id = a.annotator_id GROUP BY u.username'
                )
            ).all()
        )
        first, last = connection.execute(
            text("SELECT min(submitted_at), max(submitted_at) FROM judgment")
        ).one()
    with db.session_scope(engine) as session:
        timeline = study_progress.judgments_over_time(session, study=study, account=SYSTEM, bins=10)
    assert timeline.groupby("annotator")["judgments"].sum().to_dict() == per_annotator
    assert timeline.groupby("annotator").size().max() <= 10
    ends = pd.to_datetime(timeline["submitted_at"])
    first_at, last_at = pd.Timestamp(first).tz_localize(None), pd.Timestamp(last).tz_localize(None)
    # judgments seven hours apart span more than a day: counted per hour
    assert ends.min() > first_at and ends.max() <= last_at.ceil("h")
    running = study_progress.cumulative_judgments(timeline)
    finals = running.groupby("annotator")["judgments"].max().to_dict()
    assert finals == per_annotator
    for _, line in running.groupby("annotator"):
        assert line["judgments"].is_monotonic_increasing


def test_the_adjudication_queue_version_changes_with_judgments_decisions_and_settings(
    engine: Engine, study: str
) -> None:
    def version() -> tuple[object, ...]:
        with db.session_scope(engine) as session:
            return adjudication_queue.queue_version(session, study=study, account=SYSTEM)

    first = version()
    assert version() == first  # nothing changed: the same version (the page reuses its queue)
    answer_all(engine, "ann03")
    second = version()
    assert second[:2] != first[:2]
    with engine.begin() as connection:
        pair_id = connection.execute(text("SELECT id FROM pair ORDER BY id LIMIT 1")).scalar_one()
    with db.session_scope(engine) as session:
        judge = account_for(session, id_of(make_user(session, "adj", role="adjudicator")))
        adjudicate.decide(session, pair_id=pair_id, account=judge, preference="chosen", keep=True, note="")
    third = version()
    assert third[2] != second[2]
    with db.session_scope(engine) as session:
        row = session.exec(select(Study)).one()
        row.config = {**row.config, "note": "changed"}
        session.add(row)
    assert version()[3] != third[3]


def test_the_queue_and_a_pair_read_with_the_studys_evidence_once_are_the_same(
    engine: Engine, study: str
) -> None:
    with db.session_scope(engine) as session:
        evidence = adjudication_queue.study_evidence(session, study=study, account=SYSTEM)
        fresh = adjudication_queue.queue(session, study=study, account=SYSTEM)
        reused = adjudication_queue.queue(session, study=study, account=SYSTEM, evidence=evidence)
        assert not evidence.empty and not fresh.empty
        assert fresh.equals(reused)
        pair_id = int(fresh["pair_db_id"].iloc[0])
        one = adjudication_queue.pair_detail(session, pair_id=pair_id, account=SYSTEM)
        same = adjudication_queue.pair_detail(session, pair_id=pair_id, account=SYSTEM, evidence=evidence)
    assert one.evaluation == same.evaluation
    assert one.judgments.equals(same.judgments) and one.scores.equals(same.scores)


def test_the_progress_version_changes_with_every_write_that_changes_the_counts(
    engine: Engine, study: str, tmp_path: Path
) -> None:
    """The Progress page keeps its counts per version: a skip, a flag, a submit, new assignments, an
    account deactivated and changed settings each give a new version (and each but the settings of a
    study without a crowd changes a count)."""

    def state() -> tuple[tuple[object, ...], str]:
        with db.session_scope(engine) as session:
            version = study_progress.progress_version(session, study, account=SYSTEM)
            people = study_progress.annotator_progress(session, study=study, account=SYSTEM)
            counts = study_progress.pair_counts(session, study=study, account=SYSTEM)
        return version, people.to_json() + str(counts)

    with engine.connect() as connection:
        ann03, first, second = connection.execute(
            text(
                'SELECT u.id, min(a.id), max(a.id) FROM assignment a JOIN "user" u ON u.id = a.annotator_id '
                "WHERE u.username = 'ann03' GROUP BY u.id"
            )
        ).one()
    with db.session_scope(engine) as session:
        worker = account_for(session, ann03)

    def skip(session: Session) -> None:
        labels.skip(session, assignment_id=first, account=worker, reason="later")

    def flag(session: Session) -> None:
        drafts.flag_item(session, assignment_id=second, account=worker, reason="broken")

    def deactivate(session: Session) -> None:
        accounts.set_active(session, username="ann02", active=False, account=SYSTEM)

    def settings(session: Session) -> None:
        row = session.exec(select(Study)).one()
        row.config = {**row.config, "analysis": {**row.config.get("analysis", {}), "overlap": 4}}
        session.add(row)

    def more_pairs(session: Session) -> None:
        make_study(engine, tmp_path, 2, start=13)
        assign.assign(session, study="s1", overlap=2, account=SYSTEM)

    before = state()
    assert state() == before  # nothing written: the same version and counts
    for write in (skip, flag, lambda _: answer_all(engine, "ann03"), more_pairs, deactivate, settings):
        with db.session_scope(engine) as session:
            write(session)
        after = state()
        assert after[0] != before[0], write
        assert after[1] != before[1] or write is settings, write  # settings: a crowd study's counts
        before = after


def test_the_timeline_chart_draws_each_annotators_running_count_in_utc(engine: Engine, study: str) -> None:
    with db.session_scope(engine) as session:
        timeline = study_progress.judgments_over_time(session, study=study, account=SYSTEM, bins=10)
    running = study_progress.cumulative_judgments(timeline)
    spec = charts.timeline_chart(running)
    source = spec["dataset"][0]["source"]
    assert spec["useUTC"] is True and str(source["submitted_at"].dt.tz) == "UTC"
    assert (source["submitted_at"].dt.tz_localize(None) == running["submitted_at"]).all()  # same instants
    assert spec["yAxis"]["minInterval"] == 1  # counts: whole numbers only
    names = sorted(running["annotator"].unique())
    assert [series["name"] for series in spec["series"]] == names
    for series in spec["series"]:
        # each line reads the dataset filtered to its own annotator
        kept = spec["dataset"][series["datasetIndex"]]["transform"]["config"]
        assert kept == {"dimension": "annotator", "=": series["name"]}
        assert series["encode"] == {"x": "submitted_at", "y": "judgments"}
