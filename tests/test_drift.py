"""Agreement over time with guideline-version markers (analysis/drift.py)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from analysis.drift import DRIFT_COLUMNS, agreement_over_time, version_markers
from annotator.intake.assign import assign
from annotator.people.authorization import SYSTEM
from annotator.review.readers import label_frame
from annotator.store import db
from tests.utils.factories import make_annotators
from tests.utils.qchelpers import answer_all, qc_study


def _frame(weeks: int = 2, pairs_per_week: int = 6, noisy_week: int | None = None) -> pd.DataFrame:
    """Three annotators agree perfectly, except in `noisy_week` where their answers are random."""
    rng = np.random.default_rng(0)
    rows = []
    start = pd.Timestamp("2026-11-02", tz="UTC")  # a Monday
    for week in range(weeks):
        for p in range(pairs_per_week):
            pair = f"w{week}p{p}"
            truth = int(rng.integers(-2, 3))
            value = float(rng.integers(1, 6))
            for a, name in enumerate(("a", "b", "c")):
                noisy = week == noisy_week
                preference = int(rng.integers(-2, 3)) if noisy else truth
                score = float(rng.integers(1, 6)) if noisy else value
                when = start + pd.Timedelta(days=7 * week + 1, minutes=10 * p + a)
                for response in ("chosen", "rejected"):
                    rows.append(
                        (
                            pair,
                            name,
                            response,
                            "correctness",
                            score,
                            preference,
                            2.0,
                            60.0,
                            when,
                            f"v{week + 1}",
                            "",
                        )
                    )
    return pd.DataFrame(
        rows,
        columns=[
            "pair_id",
            "annotator",
            "response",
            "item",
            "value",
            "preference",
            "confidence",
            "time_s",
            "submitted_at",
            "guideline_version",
            "control",
        ],
    )


def test_weekly_agreement_has_one_row_per_week() -> None:
    table = agreement_over_time(_frame(weeks=3))
    assert list(table.columns) == list(DRIFT_COLUMNS) and len(table) == 3 and (table["pairs"] == 6).all()


def test_a_week_of_random_answers_shows_as_a_drop() -> None:
    table = agreement_over_time(_frame(weeks=2, noisy_week=1))
    assert table["alpha_preference"].iloc[0] == pytest.approx(1.0)
    assert table["alpha_preference"].iloc[1] < 0.5


def test_blocks_count_judgments_in_submission_order() -> None:
    table = agreement_over_time(_frame(weeks=2), by="block", block_size=18)
    assert list(table["judgments"]) == [18, 18]


def test_each_period_lists_its_guideline_versions() -> None:
    assert list(agreement_over_time(_frame(weeks=2))["guideline_versions"]) == ["v1", "v2"]


def test_version_markers_give_the_first_use_of_each_version() -> None:
    markers = version_markers(_frame(weeks=2))
    assert list(markers["version"]) == ["v1", "v2"] and markers["first_at"].is_monotonic_increasing


def test_drift_needs_submission_times() -> None:
    with pytest.raises(ValueError, match="no 'submitted_at' column"):
        agreement_over_time(_frame().drop(columns=["submitted_at"]))


def test_every_judgment_records_the_guidelines_version(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guidelines = tmp_path / "guidelines.md"
    guidelines.write_text("# Guidelines\nVersion: 2.1\n\nRate carefully.", encoding="utf-8")
    monkeypatch.setenv("ANNOTATOR_GUIDELINES", str(guidelines))
    qc_study(engine, tmp_path, 2)
    make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, account=SYSTEM)
    answer_all(engine, "ann00")
    with Session(engine) as session:
        frame = label_frame(session, study="s1", account=SYSTEM)
    assert set(frame["guideline_version"]) == {"2.1"}
