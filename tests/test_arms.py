"""Study arms and rubric verification: config, randomization, what is shown and asked, the frame."""

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from analysis.science import arm_comparison
from annotator.errors import ConfigError, LabelError, UserError
from annotator.intake import assign
from annotator.people.authorization import SYSTEM, Account, account_of
from annotator.publish import export
from annotator.rating import labels
from annotator.review.readers import label_frame
from annotator.store import db
from annotator.store.models import Assignment, Pair, User
from annotator.study import StudyConfig, load_config, parse_config
from tests.utils.factories import DIMENSIONS, account_for, make_annotators, make_form, make_study

ARMS = {
    "conditions": [
        {"name": "profile_only", "show_rubric": False, "show_narrative": False},
        {"name": "rubric"},
    ]
}


def _config(**changes: Any) -> StudyConfig:
    data = load_config().model_dump()
    for key, value in changes.items():
        data[key] = value
    return parse_config(data)


def _arm_study(
    engine: Engine, tmp_path: Path, *, n_pairs: int = 6, n_annotators: int = 4, overlap: int = 2
) -> None:
    make_study(engine, tmp_path, n_pairs, config=_config(arms=ARMS), account=SYSTEM)
    make_annotators(engine, n_annotators)
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=overlap, seed=1, account=SYSTEM)


def _arms_by_user(engine: Engine) -> dict[int, set[str]]:
    with Session(engine) as session:
        rows = session.exec(select(Assignment.annotator_id, Assignment.arm)).all()
    out: dict[int, set[str]] = {}
    for uid, arm in rows:
        out.setdefault(int(uid), set()).add(arm)
    return out


def test_a_single_arm_is_refused() -> None:
    with pytest.raises(ConfigError, match="declare at least two arms"):
        _config(arms={"conditions": [{"name": "only"}]})


def test_display_for_an_unknown_arm_is_an_error() -> None:
    with pytest.raises(UserError, match="unknown study arm 'x'"):
        _config(arms=ARMS).display_for("x")


def test_the_default_study_has_no_arms_and_no_support_question() -> None:
    display = load_config().display_for("")
    assert (display.show_rubric, display.ask_support) == (True, False)


def test_annotators_are_randomized_to_arms_in_equal_numbers(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    arms = _arms_by_user(engine)
    assert all(len(a) == 1 for a in arms.values())
    assert Counter(next(iter(a)) for a in arms.values()) == {"profile_only": 2, "rubric": 2}


def test_every_pair_gets_one_annotator_from_each_arm(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    with Session(engine) as session:
        rows = session.exec(select(Assignment.pair_id, Assignment.arm)).all()
    per_pair: dict[int, Counter[str]] = {}
    for pair_id, arm in rows:
        per_pair.setdefault(int(pair_id), Counter())[arm] += 1
    assert all(count == {"profile_only": 1, "rubric": 1} for count in per_pair.values())


def test_an_annotator_keeps_their_arm_when_assigned_again(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    before = _arms_by_user(engine)
    make_study(engine, tmp_path, 4, start=6, config=_config(arms=ARMS), account=SYSTEM)
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=2, seed=9, account=SYSTEM)
    assert _arms_by_user(engine) == before


def test_a_study_without_arms_assigns_the_empty_arm(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 3, account=SYSTEM)
    make_annotators(engine, 2)
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=2, account=SYSTEM)
    assert set().union(*_arms_by_user(engine).values()) == {""}


def _first_item(engine: Engine, arm: str) -> tuple[int, Account]:
    with Session(engine) as session:
        row = session.exec(
            select(Assignment.id, Assignment.annotator_id)
            .where(Assignment.arm == arm)
            .order_by(Assignment.id)
        ).first()
        assert row is not None
        return int(row[0] or 0), account_for(session, int(row[1]))


def test_the_profile_only_arm_sees_no_rubric_and_no_narrative(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    assignment_id, annotator = _first_item(engine, "profile_only")
    with db.session_scope(engine) as session:
        item = labels.show(session, assignment_id=assignment_id, account=annotator)
    assert (item.rubric, item.narrative) == ([], "")
    assert item.profile


def test_the_rubric_arm_sees_everything(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    assignment_id, annotator = _first_item(engine, "rubric")
    with db.session_scope(engine) as session:
        item = labels.show(session, assignment_id=assignment_id, account=annotator)
    assert len(item.rubric) == 2 and item.narrative


def _no_rubric_form(submission_id: str) -> labels.Submission:
    return labels.Submission(
        submission_id=submission_id,
        preference=1,
        scores={"A": dict.fromkeys(DIMENSIONS, 4), "B": dict.fromkeys(DIMENSIONS, 3)},
        confidence=2,
    )


def test_the_profile_only_arm_submits_without_rubric_ratings(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    assignment_id, annotator = _first_item(engine, "profile_only")
    with db.session_scope(engine) as session:
        labels.show(session, assignment_id=assignment_id, account=annotator)
        judgment = labels.submit(
            session, assignment_id=assignment_id, account=annotator, submission=_no_rubric_form("s-1")
        )
    assert judgment.id is not None


def test_the_label_frame_has_the_arm_of_each_judgment(engine: Engine, tmp_path: Path) -> None:
    _arm_study(engine, tmp_path)
    assignment_id, annotator = _first_item(engine, "profile_only")
    with db.session_scope(engine) as session:
        labels.show(session, assignment_id=assignment_id, account=annotator)
        labels.submit(
            session, assignment_id=assignment_id, account=annotator, submission=_no_rubric_form("s-2")
        )
    with Session(engine) as session:
        frame = label_frame(session, study="s1", account=SYSTEM)
    assert set(frame["arm"]) == {"profile_only"}


def _support_study(engine: Engine, tmp_path: Path) -> tuple[int, Account]:
    rubric = load_config().rubric.model_dump() | {"verify_support": True}
    make_study(engine, tmp_path, 2, config=_config(rubric=rubric), account=SYSTEM)
    make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=1, account=SYSTEM)
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == "ann00")).one()
        first = session.exec(select(Assignment.id).where(Assignment.annotator_id == user.id)).first()
    return int(first or 0), account_of(user)


def test_rubric_verification_asks_every_aspect(engine: Engine, tmp_path: Path) -> None:
    assignment_id, annotator = _support_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        item = labels.show(session, assignment_id=assignment_id, account=annotator)
        assert item.ask_support
        with pytest.raises(LabelError, match="rubric aspect 2: is it supported by what the user wrote"):
            labels.submit(
                session, assignment_id=assignment_id, account=annotator, submission=make_form("x", 1)
            )


def test_support_answers_are_saved_and_prefilled(engine: Engine, tmp_path: Path) -> None:
    assignment_id, annotator = _support_study(engine, tmp_path)
    form = make_form("x", 1)
    form = labels.Submission(**{**form.__dict__, "support": {"support:0": 2, "support:1": 0}})
    with db.session_scope(engine) as session:
        labels.show(session, assignment_id=assignment_id, account=annotator)
        labels.submit(session, assignment_id=assignment_id, account=annotator, submission=form)
    with Session(engine) as session:
        again = labels.current_answers(session, assignment_id=assignment_id, account=annotator)
        frame = label_frame(session, study="s1", account=SYSTEM)
        final = export.adjudicated_frame(session, study="s1")
    assert again is not None and again.support == {"support:0": 2.0, "support:1": 0.0}
    rows = frame[frame["item"].str.startswith("support:")]
    assert set(rows["response"]) == {"chosen"} and sorted(rows["value"]) == [0.0, 2.0]
    assert {"support_0", "support_1"} <= set(final.columns)
    assert not any(name.startswith("rejected_support") for name in final.columns)


def _arm_frame(rate_a: float, rate_b: float, n_pairs: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pairs):
        for annotator, arm, rate in (
            ("a1", "a", rate_a),
            ("a2", "a", rate_a),
            ("b1", "b", rate_b),
            ("b2", "b", rate_b),
        ):
            pref = 1 if rng.random() < rate else -1
            for response in ("chosen", "rejected"):
                rows.append((f"p{i}", annotator, response, "correctness", 4.0, pref, 2, 10.0, arm))
    columns = [
        "pair_id",
        "annotator",
        "response",
        "item",
        "value",
        "preference",
        "confidence",
        "time_s",
        "arm",
    ]
    return pd.DataFrame(rows, columns=columns)


def test_arm_comparison_finds_a_real_difference() -> None:
    _, diff = arm_comparison(_arm_frame(0.95, 0.5), quality_items=["correctness"], n_boot=300)
    accuracy = diff[diff["measure"] == "accuracy"].iloc[0]
    assert accuracy["ci_low"] < accuracy["difference"] < accuracy["ci_high"] < 0


def test_arm_comparison_without_arms_is_empty() -> None:
    per_arm, diff = arm_comparison(_arm_frame(0.9, 0.9).drop(columns=["arm"]), quality_items=["correctness"])
    assert per_arm.empty and diff.empty


# ------------------------------------------------------------------------------------ the rating page


def _page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: StudyConfig, arm: str) -> Any:

    from tests.utils.apphelpers import app_for, build_app_db
    from tests.utils.sciencehelpers import arm_app_study

    app_db = build_app_db(tmp_path / "app", queues={}, acknowledged=["ann1"])
    monkeypatch.setenv(db.ENV_VAR, app_db.url)
    arm_app_study(app_db, tmp_path / "arms", config=config, arm=arm)
    at = app_for(app_db.account("ann1"), timeout=60)
    assert not at.exception
    return at, app_db


def _keys(at: Any) -> list[str]:
    return [str(w.key) for w in at.segmented_control]


def test_the_rating_page_asks_no_rubric_in_the_profile_only_arm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at, app_db = _page(tmp_path, monkeypatch, _config(arms=ARMS), "profile_only")
    keys = _keys(at)
    assert keys and not any("rubric" in key or "support" in key for key in keys)
    app_db.engine.dispose()


def test_the_rating_page_asks_and_saves_rubric_support(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rubric = load_config().rubric.model_dump() | {"verify_support": True}
    at, app_db = _page(tmp_path, monkeypatch, _config(rubric=rubric), "")
    keys = _keys(at)
    assert len([key for key in keys if key.endswith(("_support_0", "_support_1"))]) == 2
    for key in keys:  # rubric and support 2, quality 4, preference "A better", confidence 3
        last = key.rsplit("_", 1)[-1]
        value = {"preference": 1, "confidence": 3}.get(last, 2 if "rubric" in key or "support" in key else 4)
        at.segmented_control(key=key).set_value(value)
    at.button(key="annotate_submit").click().run()
    assert not at.exception
    with Session(app_db.engine) as session:
        frame = label_frame(session, study="arms", account=SYSTEM)
    assert sorted(frame.loc[frame["item"].str.startswith("support:"), "item"]) == ["support:0", "support:1"]
    app_db.engine.dispose()


def test_support_answers_are_not_final_scores_to_adjudicate(engine: Engine, tmp_path: Path) -> None:
    from annotator.review import adjudication_queue

    assignment_id, annotator = _support_study(engine, tmp_path)
    form = make_form("x", 1)
    form = labels.Submission(**{**form.__dict__, "support": {"support:0": 2, "support:1": 1}})
    with db.session_scope(engine) as session:
        labels.show(session, assignment_id=assignment_id, account=annotator)
        labels.submit(session, assignment_id=assignment_id, account=annotator, submission=form)
        pair_id = session.get(Assignment, assignment_id).pair_id  # type: ignore[union-attr]
    with Session(engine) as session:
        detail = adjudication_queue.pair_detail(session, pair_id=pair_id, account=SYSTEM)
    assert not detail.defaults["item"].astype(str).str.startswith("support:").any()
    assert detail.defaults["rejected"].notna().all()


def test_the_pairs_export_keeps_the_rubric_support(engine: Engine, tmp_path: Path) -> None:
    assignment_id, annotator = _support_study(engine, tmp_path)
    form = make_form("x", 1)
    form = labels.Submission(**{**form.__dict__, "support": {"support:0": 0, "support:1": 2}})
    with db.session_scope(engine) as session:
        labels.show(session, assignment_id=assignment_id, account=annotator)
        labels.submit(session, assignment_id=assignment_id, account=annotator, submission=form)
        pair_id = session.get(Assignment, assignment_id).pair_id  # type: ignore[union-attr]
    with Session(engine) as session:
        records = export.pairs_records(session, study="s1")
        external = session.get(Pair, pair_id).external_id  # type: ignore[union-attr]
    by_id = {record["id"]: record["validation"] for record in records}
    assert by_id[external]["rubric_support"] == [0.0, 2.0]
