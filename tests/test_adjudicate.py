"""Adjudication: the rules, automatic decisions (idempotent, never over a person), the queue, the
unblinded pair view, human decisions (revisable, authorised) and the adjudicated frame."""

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import AuthError, UserError
from annotator.people.authorization import SYSTEM
from annotator.publish import export
from annotator.review import adjudicate, adjudication_queue, adjudication_reads
from annotator.store import db
from annotator.store.models import Adjudication, Event, Pair
from annotator.study import get_study
from tests.utils.ratings import ANNOTATORS, STUDY, account, build_study, rate, rate_all

# pair -> (preferences of ann1..ann3 in chosen terms, extra rate() arguments)
CASES: dict[str, tuple[list[int], dict[str, Any]]] = {
    "p0": ([1, 2, 1], {}),  # unanimous for chosen
    "p1": ([1, 1, -1], {}),  # majority for chosen
    "p2": ([1, -1, 0], {}),  # no majority
    "p3": ([-1, -2, 1], {}),  # majority against chosen
    "p4": ([1, 1, 1], {"chosen": {"correctness": 5}, "rejected": {"correctness": 3}}),  # quality gap
    "p5": ([2, 2], {}),  # flagged (the third judgment below)
    "p6": ([1], {}),  # one judgment: unresolved
    "p7": ([0, 0, 1], {}),  # a majority for tie
}


def crafted(tmp_path: Path) -> Engine:
    engine = build_study(tmp_path, len(CASES), roles={"judge": "adjudicator", "boss": "researcher"})
    for pair, (preferences, kwargs) in CASES.items():
        rate_all(engine, pair, preferences, **kwargs)
    rate(engine, "ann3", "p5", preference=2, flag=True, flag_reason="the rejected text is cut off")
    return engine


def pair_db_id(engine: Engine, external_id: str) -> int:
    with Session(engine) as session:
        return int(session.exec(select(Pair.id).where(Pair.external_id == external_id)).one() or 0)


def auto(engine: Engine) -> adjudicate.AutoSummary:
    with db.session_scope(engine) as session:
        return adjudicate.auto_resolve(session, study=STUDY, account=SYSTEM)


def n_adjudications(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Adjudication)).one())


def latest(engine: Engine, external_id: str) -> Adjudication:
    with Session(engine) as session:
        return session.exec(
            select(Adjudication)
            .where(Adjudication.pair_id == pair_db_id(engine, external_id))
            .order_by(Adjudication.id.desc())  # type: ignore[union-attr]
        ).first()


def evaluation(engine: Engine) -> Any:
    with db.session_scope(engine) as session:
        study = get_study(session, STUDY)
        frame, _ = adjudication_reads.current_evaluation(session, study)
    return frame.set_index("pair_id")


# ------------------------------------------------------------------------------------------- rules


def test_each_rule_fires_on_its_crafted_case(tmp_path: Path) -> None:
    ev = evaluation(crafted(tmp_path))
    assert ev.loc["p0", "rules"] == "" and ev.loc["p0", "method"] == "unanimous"
    assert ev.loc["p1", "rules"] == "" and ev.loc["p1", "method"] == "majority"
    assert ev.loc["p2", "rules"] == "no_majority"
    assert ev.loc["p3", "rules"] == "majority_against_chosen"
    assert ev.loc["p4", "rules"] == "quality_gap" and "correctness +2" in ev.loc["p4", "reasons"]
    assert ev.loc["p5", "rules"] == "flagged"
    assert ev.loc["p6", "status"] == "unresolved" and "not enough judgments" in ev.loc["p6", "reasons"]
    assert ev.loc["p7", "majority"] == "tie" and ev.loc["p7", "status"] == "auto"
    assert set(ev.loc[["p2", "p3", "p4", "p5"], "status"]) == {"needs_person"}
    assert ev.loc["p1", "agreement"] == pytest.approx(2 / 3)
    assert ev.loc["p2", "agreement"] == pytest.approx(1 / 3)
    assert ev.loc["p4", "chosen_correctness"] == 5 and ev.loc["p4", "rejected_correctness"] == 3
    assert ev.loc["p0", "chosen_rubric"] == 1.0  # the mean over the two aspects


def test_a_gap_within_the_margin_does_not_fire(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 1)
    rate(engine, "ann1", "p0", chosen={"relevance": 5}, rejected={"relevance": 4})
    rate(engine, "ann2", "p0", chosen={"relevance": 4}, rejected={"relevance": 4})
    ev = evaluation(engine)  # medians 4.5 vs 4: a gap of 0.5 is not beyond the margin of 0.5
    assert ev.loc["p0", "rules"] == "" and ev.loc["p0", "method"] == "unanimous"


def test_the_gap_rule_uses_the_study_margin(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 1)
    rate_all(engine, "p0", [1, 1], chosen={"relevance": 5}, rejected={"relevance": 4})
    assert evaluation(engine).loc["p0", "rules"] == "quality_gap"  # 1 > 0.5
    with db.session_scope(engine) as session:
        study = get_study(session, STUDY)
        study.config = study.config | {"analysis": study.config["analysis"] | {"margin": 1.0}}
        session.add(study)
    assert evaluation(engine).loc["p0", "rules"] == ""


# ------------------------------------------------------------------------------------ auto-resolve


def test_auto_resolve_decides_the_clear_pairs_only(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    summary = auto(engine)
    assert summary.decided == {"unanimous": 1, "majority": 2}
    assert (summary.needs_person, summary.unresolved, summary.human) == (4, 1, 0)
    assert "need a person" in str(summary)
    first = latest(engine, "p0")
    assert first.method == "unanimous" and first.keep is True and first.preference == "chosen"
    assert first.adjudicator_id is None and first.rule.startswith("unanimous: all 3 judgments prefer chosen")
    assert first.decision["scores"]["chosen"]["correctness"] == 4.0
    assert first.decision["votes"] == {"chosen": 3, "rejected": 0, "tie": 0}
    assert latest(engine, "p1").method == "majority" and latest(engine, "p1").keep is True
    tie = latest(engine, "p7")
    assert tie.preference == "tie" and tie.keep is False
    for pair in ("p2", "p3", "p4", "p5", "p6"):
        assert latest(engine, pair) is None


def test_auto_resolve_is_idempotent(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    auto(engine)
    rows = n_adjudications(engine)
    again = auto(engine)
    assert n_adjudications(engine) == rows
    assert again.decided == {} and again.unchanged == 3


def test_auto_resolve_follows_a_revision_and_withdraws_a_decision(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    auto(engine)
    rate(engine, "ann2", "p0", preference=-1)  # p0 becomes a 2-of-3 majority
    summary = auto(engine)
    assert summary.decided == {"majority": 1}
    assert latest(engine, "p0").method == "majority"
    rate(engine, "ann1", "p0", preference=1, flag=True, flag_reason="broken")
    summary = auto(engine)
    assert summary.revoked == 1
    withdrawn = latest(engine, "p0")
    assert withdrawn.method == "unresolved" and withdrawn.keep is False and "flagged" in withdrawn.rule
    rows = n_adjudications(engine)
    auto(engine)
    assert n_adjudications(engine) == rows


def test_auto_resolve_never_overrides_a_human_decision(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    auto(engine)
    judge = account(engine, "judge")
    with db.session_scope(engine) as session:
        adjudicate.decide(
            session, pair_id=pair_db_id(engine, "p1"), account=judge, preference="rejected", keep=False
        )
    rate(engine, "ann3", "p1", preference=2)  # now unanimous, but a person decided
    summary = auto(engine)
    assert summary.human == 1
    decision = latest(engine, "p1")
    assert decision.method == "adjudicated" and decision.keep is False
    auto(engine)
    assert latest(engine, "p1").id == decision.id


# ------------------------------------------------------------------------------------------- queue


def test_queue_lists_the_rule_hits_lowest_agreement_first(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    with db.session_scope(engine) as session:
        pending = adjudication_queue.queue(session, study=STUDY, account=SYSTEM)
    assert pending["pair_id"].tolist()[0] == "p2"  # 1/3 agreement
    assert set(pending["pair_id"]) == {"p2", "p3", "p4", "p5"}
    assert pending["agreement"].is_monotonic_increasing
    assert dict(zip(pending["pair_id"], pending["rules"], strict=True))["p5"] == "flagged"
    judge = account(engine, "judge")
    with db.session_scope(engine) as session:
        adjudicate.decide(
            session, pair_id=pair_db_id(engine, "p2"), account=judge, preference="chosen", keep=True
        )
    with db.session_scope(engine) as session:
        assert "p2" not in set(adjudication_queue.queue(session, study=STUDY, account=SYSTEM)["pair_id"])
    rate(engine, "ann1", "p2", preference=-2)  # a later revision reopens the pair
    with db.session_scope(engine) as session:
        pending = adjudication_queue.queue(session, study=STUDY, account=SYSTEM).set_index("pair_id")
    assert pending.loc["p2", "reopened"]


# ----------------------------------------------------------------------------------- one pair, decide


def test_pair_detail_is_unblinded_with_times_and_history(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    auto(engine)
    judge = account(engine, "judge")
    with db.session_scope(engine) as session:
        detail = adjudication_queue.pair_detail(session, pair_id=pair_db_id(engine, "p1"), account=judge)
    assert detail.pair["chosen"] == "A two-person plan for week 1."
    assert detail.pair["rejected"] == "A generic plan for week 1."
    judgments = detail.judgments.set_index("annotator")
    assert list(judgments.index) == list(ANNOTATORS)
    assert judgments.loc["ann3", "direction"] == "rejected"
    assert judgments.loc["ann1", "preference_label"] == "chosen better"
    assert judgments["time_s"].ge(0).all()
    assert set(detail.scores.columns) == {"item", "label", "annotator", "chosen", "rejected", "diff"}
    assert detail.scores["item"].tolist()[:3] == ["correctness"] * 3
    assert detail.history["method"].tolist() == ["majority"]
    assert detail.latest is not None and detail.latest["adjudicator"] is None
    assert detail.evaluation["majority"] == "chosen"


def test_decide_is_revisable_with_history_and_audit(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    pair = pair_db_id(engine, "p3")
    judge, boss = account(engine, "judge"), account(engine, "boss")
    with db.session_scope(engine) as session:
        first = adjudicate.decide(
            session, pair_id=pair, account=judge, preference="rejected", keep=False, note="clearly worse"
        )
    with db.session_scope(engine) as session:
        second = adjudicate.decide(
            session,
            pair_id=pair,
            account=boss,
            preference="chosen",
            keep=True,
            scores={"chosen": {"correctness": 4, "rubric": 1.5}},
            note="on a second reading",
        )
    assert second.id > first.id and second.decision["revision"] == 2
    with db.session_scope(engine) as session:
        detail = adjudication_queue.pair_detail(session, pair_id=pair, account=judge)
        events = session.exec(select(Event).where(Event.action == "adjudicate")).all()
    assert detail.history["adjudicator"].tolist() == ["judge", "boss"]
    assert detail.history["note"].tolist() == ["clearly worse", "on a second reading"]
    assert detail.history["created_at"].is_monotonic_increasing
    assert detail.latest is not None and detail.latest["preference"] == "chosen"
    assert [e.user_id for e in events] == [judge.id, boss.id]
    assert first.decision["basis"]["rules"] == ["majority_against_chosen"]
    with db.session_scope(engine) as session:
        final = export.adjudicated_frame(session, study=STUDY).set_index("pair_id")
    row = final.loc["p3"]
    assert row["method"] == "adjudicated" and row["keep"] is True and row["adjudicator"] == "boss"
    assert row["chosen_correctness"] == 4 and row["chosen_rubric"] == 1.5
    assert row["note"] == "on a second reading"


def test_an_annotator_may_not_adjudicate(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    pair = pair_db_id(engine, "p2")
    annotator = account(engine, "ann1")
    with db.session_scope(engine) as session:
        with pytest.raises(AuthError, match="needs adjudicator or researcher"):
            adjudicate.decide(session, pair_id=pair, account=annotator, preference="chosen", keep=True)
        with pytest.raises(AuthError):
            adjudication_queue.pair_detail(session, pair_id=pair, account=annotator)
        with pytest.raises(AuthError):
            adjudicate.auto_resolve(session, study=STUDY, account=annotator)
    assert n_adjudications(engine) == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"preference": "A"}, "unknown preference 'A'"),
        ({"scores": {"chosen": {"correctness": 9}}}, "must be within 1-5"),
        ({"scores": {"left": {"correctness": 3}}}, "unknown response 'left'"),
        ({"scores": {"chosen": {"rubric:7": 1}}}, "unknown item 'rubric:7'"),
        ({"pair_id": 9999}, "no pair with id 9999"),
    ],
)
def test_decide_refuses_bad_input(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    engine = crafted(tmp_path)
    arguments: dict[str, Any] = {"pair_id": pair_db_id(engine, "p2"), "preference": "chosen", "keep": True}
    with db.session_scope(engine) as session, pytest.raises(UserError, match=message):
        adjudicate.decide(session, account=account(engine, "judge"), **(arguments | kwargs))


# ------------------------------------------------------------------------------------ final labels


def test_adjudicated_frame_has_one_row_per_pair(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    with db.session_scope(engine) as session:
        before = export.adjudicated_frame(session, study=STUDY).set_index("pair_id")
    assert set(before["method"]) == {"unresolved"}
    assert "adjudicate --auto" in before.loc["p0", "rule"] and "no majority" in before.loc["p2", "rule"]
    auto(engine)
    with db.session_scope(engine) as session:
        final = export.adjudicated_frame(session, study=STUDY).set_index("pair_id")
    assert list(final.index) == [f"p{i}" for i in range(8)]
    assert final.loc["p0", ["preference", "keep", "method"]].tolist() == ["chosen", True, "unanimous"]
    assert final.loc["p7", ["preference", "keep", "method"]].tolist() == ["tie", False, "majority"]
    assert final.loc["p2", "preference"] is None and final.loc["p2", "keep"] is None
    assert final.loc["p1", "agreement"] == pytest.approx(2 / 3)
    assert final.loc["p6", "n_judgments"] == 1
    for column in ("chosen_correctness", "rejected_correctness", "chosen_rubric", "rejected_rubric"):
        assert column in final.columns
    assert final.loc["p4", "chosen_correctness"] == 5 and final.loc["p4", "rejected_correctness"] == 3
    assert final.loc["p0", "decided_at"] is not None and final.loc["p0", "adjudicator"] is None
    assert not final["stale"].any()
    rate(engine, "ann1", "p0", preference=2)
    with db.session_scope(engine) as session:
        assert export.adjudicated_frame(session, study=STUDY).set_index("pair_id").loc["p0", "stale"]


# --------------------------------------------------------------------------------------------- CLI


def test_cli_adjudicate_auto_and_queue(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["adjudicate", "--study", STUDY, "--auto", "--db", engine.url.render_as_string(hide_password=False)],
    )
    assert result.exit_code == 0, result.output
    assert "3 new automatic decisions (1 unanimous, 2 majority)" in result.output
    assert "4 need a person" in result.output
    result = runner.invoke(
        app,
        ["adjudicate", "--study", STUDY, "--queue", "--db", engine.url.render_as_string(hide_password=False)],
    )
    assert result.exit_code == 0, result.output
    assert "p2" in result.output and "no_majority" in result.output
    assert "4 pair(s) need a person" in result.output
    result = runner.invoke(
        app,
        ["adjudicate", "--study", "nope", "--auto", "--db", engine.url.render_as_string(hide_password=False)],
    )
    assert result.exit_code == 1 and "no study called 'nope'" in result.output
    result = runner.invoke(
        app, ["adjudicate", "--study", STUDY, "--db", engine.url.render_as_string(hide_password=False)]
    )
    assert result.exit_code == 1 and "give --auto, --queue or both" in result.output


# ------------------------------------------------------------------------------ workspace


def test_per_aspect_rubric_decisions_reach_the_adjudicated_export(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    pair = pair_db_id(engine, "p3")  # every judgment gives 1 on both aspects: the rubric median is 1
    judge = account(engine, "judge")
    with db.session_scope(engine) as session:
        adjudicate.decide(
            session,
            pair_id=pair,
            account=judge,
            preference="chosen",
            keep=True,
            scores={"chosen": {"rubric:0": 2.0}, "rejected": {"rubric:1": 0.0}},
        )
    with db.session_scope(engine) as session:
        final = export.adjudicated_frame(session, study=STUDY).set_index("pair_id")
    assert final.loc["p3", "chosen_rubric"] == pytest.approx(1.5)  # mean of the decided 2 and the median 1
    assert final.loc["p3", "rejected_rubric"] == pytest.approx(0.5)


def test_pair_detail_labels_rubric_scores_by_aspect_name(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    with db.session_scope(engine) as session:
        judge = account(engine, "judge")
        detail = adjudication_queue.pair_detail(session, pair_id=pair_db_id(engine, "p1"), account=judge)
    labels = dict(zip(detail.scores["item"], detail.scores["label"], strict=True))
    assert labels["rubric:0"].startswith("Aspect 1: ") and labels["rubric:0"] != "Aspect 1: "
    assert labels["correctness"] == "correctness"
    assert set(detail.defaults["item"]) == set(detail.scores["item"])


def test_hidden_names_are_hidden_in_every_table_of_a_pair(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    with db.session_scope(engine) as session:
        detail = adjudication_queue.pair_detail(
            session, pair_id=pair_db_id(engine, "p1"), account=account(engine, "judge"), hide_names=True
        )
    shown = set(detail.judgments["annotator"]) | set(detail.scores["annotator"])
    assert shown == {"Annotator 1", "Annotator 2", "Annotator 3"}
    assert not any(name in detail.judgments.to_string() + detail.scores.to_string() for name in ANNOTATORS)


def test_final_defaults_are_the_medians_over_judgments(tmp_path: Path) -> None:
    engine = crafted(tmp_path)
    with db.session_scope(engine) as session:
        judge = account(engine, "judge")
        detail = adjudication_queue.pair_detail(session, pair_id=pair_db_id(engine, "p4"), account=judge)
    row = detail.defaults.set_index("item").loc["correctness"]
    assert (row["chosen"], row["rejected"]) == (5.0, 3.0)


# ------------------------------------------------------------------------- the queue's light reading

CLEAR = {"chosen": {"rubric:0": 2, "rubric:1": 2}, "rejected": {"rubric:0": 0, "rubric:1": 0}}


def evidenced(tmp_path: Path) -> Engine:
    """The crafted cases plus clear pairs: enough pairs for the cleaning list (its evidence decides)."""
    engine = build_study(tmp_path, len(CASES) + 6)
    for pair, (preferences, kwargs) in CASES.items():
        scores = {side: CLEAR[side] | kwargs.get(side, {}) for side in CLEAR}
        rate_all(engine, pair, preferences, **scores)
    rate(engine, "ann3", "p5", preference=2, flag=True, flag_reason="the rejected text is cut off", **CLEAR)
    for k in range(len(CASES), len(CASES) + 6):
        rate_all(engine, f"p{k}", [2, 1, 2], **CLEAR)
    return engine


def test_the_evaluation_without_medians_is_the_full_one_without_its_median_columns(tmp_path: Path) -> None:
    """The queue's evaluation skips the scores (it shows no median) and reads the judgments in the
    columns its rules read, yet decides every pair as the full evaluation does: every other column is
    equal, row for row, and the queue is the full evaluation's pairs that need a person, in the
    queue's order."""
    engine = evidenced(tmp_path)
    with db.session_scope(engine) as session:
        study = get_study(session, STUDY)
        evidence = adjudication_reads.cleaning_evidence(session, study)
        full, judged = adjudication_reads.current_evaluation(session, study, evidence=evidence)
        light, read = adjudication_reads.current_evaluation(session, study, evidence=evidence, medians=False)
        waiting = adjudication_queue.queue(session, study=STUDY, account=SYSTEM, evidence=evidence)
    assert not evidence.empty
    medians = [c for c in full.columns if c.startswith(("chosen_", "rejected_"))]
    assert medians and not any(c in light.columns for c in medians)
    pd.testing.assert_frame_equal(full.drop(columns=medians), light)
    assert set(read.columns) == {*adjudication_reads.EVALUATED, "pair_id", "annotator"}
    pd.testing.assert_frame_equal(judged[read.columns], read)  # the same judgments, fewer columns
    assert set(full["status"]) == {"needs_person", "auto", "unresolved"}
    expected = full[full["status"] == "needs_person"].sort_values(
        ["agreement", "n_flags", "pair_id"], ascending=[True, False, True], kind="stable"
    )
    assert waiting["pair_id"].tolist() == expected["pair_id"].tolist()
    assert waiting["reasons"].tolist() == expected["reasons"].tolist()


def test_a_pair_no_rule_names_has_no_reason_and_a_pair_judged_once_says_so(tmp_path: Path) -> None:
    engine = evidenced(tmp_path)
    with db.session_scope(engine) as session:
        frame, _ = adjudication_reads.current_evaluation(session, get_study(session, STUDY))
    quiet = (frame["status"] == "auto") & (frame["evidence_decision"] != "drop")
    assert quiet.any()
    assert (frame.loc[quiet, "reasons"] == "").all() and (frame.loc[quiet, "rules"] == "").all()
    once = frame[frame["status"] == "unresolved"]
    assert once["pair_id"].tolist() == ["p6"]
    assert once["reasons"].tolist() == ["not enough judgments (1 of 2)"]
    named = frame[frame["status"] == "needs_person"]
    assert not named.empty and (named["reasons"] != "").all() and (named["rules"] != "").all()
    assert frame["reasons"].dtype == frame["rules"].dtype == "str"


def test_an_automatic_run_in_words_agrees_with_its_counts() -> None:
    """The Adjudicate page's sentence: each count with the noun and verb it asks for."""
    one = adjudicate.AutoSummary("s", {"unanimous": 1}, needs_person=1, human=1, unresolved=1, revoked=1)
    assert one.in_words() == (
        "Resolved automatically: 1 new decision (1 unanimous, 0 majority); 0 already recorded as they "
        "are, 1 earlier one withdrawn. 1 pair needs a person; 1 pair was decided by a person before; "
        "1 pair has fewer than 2 judgments."
    )
    many = adjudicate.AutoSummary("s", {"unanimous": 2, "majority": 1}, unchanged=4, needs_person=5, human=2)
    assert many.in_words() == (
        "Resolved automatically: 3 new decisions (2 unanimous, 1 majority); 4 already recorded as they "
        "are. 5 pairs need a person; 2 pairs were decided by a person before; 0 pairs have fewer than 2 "
        "judgments."
    )
