"""Owners' judgments in the database: an owner reaches only their own pairs, the report reads them
apart from the third-party judgments, and a study without owners reports as before."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import col, select
from typer.testing import CliRunner

from analysis.render.as_json import json_text
from annotator.cli import app
from annotator.errors import AuthError, UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.rating.owner_links import (
    OwnerSession,
    hold_owner_session,
    issue_owner_link,
    list_owner_links,
    redeem_owner_link,
    resume_owner_session,
    revoke_owner_links,
)
from annotator.rating.owners import owner_pairs, record_owner_judgment, study_owners, submit_owner_answer
from annotator.review.owner_rows import owner_rows
from annotator.review.readers import label_frame
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.store.models import Event, Study
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.factories import make_records, write_jsonl

HOSTILE = "<img src=x onerror=alert(1)>"


def _owned_study(engine: Engine, folder: Path) -> None:
    records = make_records(6)
    for k, record in enumerate(records):
        record["owner" if k % 2 else "user_id"] = ("alice", "bob", HOSTILE)[k % 3]
    ingest.import_file(engine, write_jsonl(folder / "pairs.jsonl", records), study="s", account=SYSTEM)


def test_an_owner_reaches_only_their_own_pairs(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        alice = {p.external_id for p in owner_pairs(session, study="s", owner="alice")}
        bob = {p.external_id for p in owner_pairs(session, study="s", owner="bob")}
        assert len(alice) == 2 and len(bob) == 2 and not alice & bob
        other = sorted(bob)[0]
        with pytest.raises(UserError, match="is not a pair of this owner"):
            record_owner_judgment(session, study="s", owner="alice", pair_external_id=other, preference=2)
        assert owner_pairs(session, study="s", owner="") == []


def test_owner_answers_are_checked(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        mine = owner_pairs(session, study="s", owner="alice")[0].external_id
        for bad in ({"preference": 3}, {"preference": 1, "aspects": [2]}, {"preference": 1, "confidence": 0}):
            with pytest.raises(UserError):
                record_owner_judgment(session, study="s", owner="alice", pair_external_id=mine, **bad)


def test_owner_judgments_never_enter_the_third_party_label_frame(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        for owner in ("alice", "bob", HOSTILE):
            for pair in owner_pairs(session, study="s", owner=owner):
                record_owner_judgment(
                    session, study="s", owner=owner, pair_external_id=pair.external_id, preference=1,
                    aspects=[2, 1], side_chosen="A",
                )  # fmt: skip
    with db.session_scope(engine) as session:
        assert label_frame(session, study="s", account=SYSTEM).empty
        rows = owner_rows(session, study="s", account=SYSTEM)
    assert len(rows) == 12 and set(rows["rater_kind"]) == {"owner"}
    assert HOSTILE in set(rows["annotator"])


def test_a_second_answer_replaces_the_first(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        mine = owner_pairs(session, study="s", owner="bob")[0].external_id
        record_owner_judgment(session, study="s", owner="bob", pair_external_id=mine, preference=2)
        record_owner_judgment(session, study="s", owner="bob", pair_external_id=mine, preference=-1)
    with db.session_scope(engine) as session:
        rows = owner_rows(session, study="s", account=SYSTEM)
    assert rows["preference"].tolist() == [-1]


def test_an_owner_link_is_single_use_logged_and_revocable(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        token = issue_owner_link(session, study="s", owner="alice", account=SYSTEM)
        spare = issue_owner_link(session, study="s", owner="alice", account=SYSTEM)
        with pytest.raises(UserError, match="no pairs whose owner is 'carol'"):
            issue_owner_link(session, study="s", owner="carol", account=SYSTEM)
    with db.session_scope(engine) as session:
        assert redeem_owner_link(session, token) == OwnerSession(study="s", owner="alice")
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="already used"):
        redeem_owner_link(session, token)
    with db.session_scope(engine) as session:
        assert revoke_owner_links(session, study="s", owner="alice", account=SYSTEM) == 2  # in use, spare
    with db.session_scope(engine) as session, pytest.raises(AuthError):
        redeem_owner_link(session, spare)
    with db.session_scope(engine) as session:
        actions = [e.action for e in session.exec(select(Event).order_by(col(Event.id))).all()]
        links = list_owner_links(session, study="s", account=SYSTEM)
    for action in ("owner_link_issued", "owner_login", "owner_link_failed", "owner_link_revoked"):
        assert action in actions
    assert [link["open"] for link in links] == [False, False]


def test_a_redeemed_link_resumes_its_page_until_revoked_but_never_opens_again(
    engine: Engine, tmp_path: Path
) -> None:
    """A reload of the owner's page resumes it by the session's own token; the link's token stays spent,
    the resume token is no link, and revoking the owner's links ends the page."""
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        token = issue_owner_link(session, study="s", owner="alice", account=SYSTEM)
    with db.session_scope(engine) as session:
        who = redeem_owner_link(session, token)
    assert who.resume and who.resume != token
    with db.session_scope(engine) as session:
        assert resume_owner_session(session, who.resume) == OwnerSession(study="s", owner="alice")
        assert [link["open"] for link in list_owner_links(session, study="s", account=SYSTEM)] == [False]
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="already used"):
        redeem_owner_link(session, token)
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="already used"):
        redeem_owner_link(session, who.resume)  # the page's token opens no link
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="expired or was revoked"):
        resume_owner_session(session, token)
    with db.session_scope(engine) as session:
        assert revoke_owner_links(session, study="s", owner="alice", account=SYSTEM) == 1
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="expired or was revoked"):
        resume_owner_session(session, who.resume)


def test_an_expired_owner_link_is_refused(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        token = issue_owner_link(
            session, study="s", owner="bob", account=SYSTEM, valid_for=timedelta(seconds=-1)
        )
    with db.session_scope(engine) as session, pytest.raises(AuthError, match="expired"):
        redeem_owner_link(session, token)


def test_owner_link_cli(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    url = str(engine.url.render_as_string(hide_password=False))
    runner = CliRunner()
    made = runner.invoke(
        app, ["--db", url, "owners", "link", "alice", "--study", "s", "--base-url", "http://x"]
    )
    assert made.exit_code == 0 and made.output.startswith("http://x/?owner_token=")
    listed = runner.invoke(app, ["--db", url, "owners", "list", "--study", "s"])
    assert listed.exit_code == 0 and "alice" in listed.output
    revoked = runner.invoke(app, ["--db", url, "owners", "revoke", "alice", "--study", "s"])
    assert revoked.exit_code == 0 and "revoked 1 link(s) of alice" in revoked.output
    wrong = runner.invoke(app, ["--db", url, "owners", "link", "nobody", "--study", "s"])
    assert wrong.exit_code != 0 and "Traceback" not in wrong.output
    mistyped = runner.invoke(app, ["--db", url, "owners", "revoke", "nobody", "--study", "s"])
    assert mistyped.exit_code == 1
    assert mistyped.stderr.strip() == "error: study 's' has no pairs whose owner is 'nobody'"


def test_an_owner_link_redeemed_twice_at_once_admits_one(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        token = issue_owner_link(session, study="s", owner="alice", account=SYSTEM)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def redeem() -> None:
        barrier.wait()
        try:
            with db.session_scope(engine) as session:
                redeem_owner_link(session, token)
            outcomes.append("in")
        except AuthError:
            outcomes.append("refused")

    threads = [threading.Thread(target=redeem) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["in", "refused", "refused", "refused"]


def test_saves_racing_a_revoke_are_all_stored_before_it_or_refused(engine: Engine, tmp_path: Path) -> None:
    """An owner's page saves while the researcher revokes the link: each save holds the link in its
    own transaction, so every save is either stored whole or refused with nothing stored, and no save
    passes once the revoke is done."""
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        who = redeem_owner_link(session, issue_owner_link(session, study="s", owner="alice", account=SYSTEM))
        pairs = [pair.external_id for pair in owner_pairs(session, study="s", owner="alice")]
    barrier = threading.Barrier(len(pairs) + 1)
    outcomes: dict[str, str] = {}

    def save(pair_id: str) -> None:
        barrier.wait()
        try:
            with db.session_scope(engine) as session:
                hold_owner_session(session, who)
                submit_owner_answer(
                    session, study="s", owner="alice", pair_external_id=pair_id, preference_ab=1
                )
            outcomes[pair_id] = "stored"
        except AuthError:
            outcomes[pair_id] = "refused"

    def revoke() -> None:
        barrier.wait()
        with db.session_scope(engine) as session:
            outcomes["revoke"] = str(revoke_owner_links(session, study="s", owner="alice", account=SYSTEM))

    threads = [threading.Thread(target=save, args=(p,)) for p in pairs] + [threading.Thread(target=revoke)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.pop("revoke") == "1" and len(outcomes) == len(pairs)
    with db.session_scope(engine) as session:
        stored = set(owner_rows(session, study="s", account=SYSTEM)["pair_id"])
        revoked_at = list_owner_links(session, study="s", account=SYSTEM)[0]["revoked_at"]
        with pytest.raises(AuthError, match="expired or was revoked"):
            hold_owner_session(session, who)
    assert stored == {p for p, outcome in outcomes.items() if outcome == "stored"}
    assert revoked_at is not None


def test_the_owner_is_stored_on_the_pair_and_a_bad_one_names_the_line(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    with db.session_scope(engine) as session:
        assert study_owners(session, study="s") == sorted(["alice", "bob", HOSTILE])
    records = make_records(3)
    records[1]["owner"] = {"name": "x"}
    bad = write_jsonl(tmp_path / "bad.jsonl", records)
    with pytest.raises(UserError, match=r"line 2.*field owner: expected text or a whole number, got dict"):
        ingest.import_file(engine, bad, study="t", account=SYSTEM)


@pytest.mark.parametrize(
    ("owner", "said"),
    [
        ("car\x1b[2Jol", "contains a control character"),  # a terminal escape, printed by `owners list`
        ("bob\u202eevil", "contains a bidirectional control or zero-width character"),
        ("x" * 201, "has 201 characters; at most 200"),
    ],
)
def test_an_owner_name_the_terminal_or_page_would_misshow_is_refused_by_line(
    engine: Engine, tmp_path: Path, owner: str, said: str
) -> None:
    records = make_records(3)
    records[2]["owner"] = owner
    with pytest.raises(UserError, match=rf"line 3.*field owner: {re.escape(said)}"):
        ingest.import_file(engine, write_jsonl(tmp_path / "bad.jsonl", records), study="t", account=SYSTEM)
    with db.session_scope(engine) as session:
        assert session.exec(select(Study)).first() is None, "nothing is written"


def test_a_study_report_changes_only_by_the_owners_section(engine: Engine, tmp_path: Path) -> None:
    _owned_study(engine, tmp_path)
    simulate(engine, study="s", spec=SimulationSpec(annotators=3, overlap=3, seed=3))
    with db.session_scope(engine) as session:
        before = json.loads(json_text(study_report(session, study="s", account=SYSTEM, n_boot=20)))
        for owner in ("alice", "bob", HOSTILE):
            for pair in owner_pairs(session, study="s", owner=owner):
                record_owner_judgment(
                    session, study="s", owner=owner, pair_external_id=pair.external_id, preference=1
                )
    with db.session_scope(engine) as session:
        after = json.loads(json_text(study_report(session, study="s", account=SYSTEM, n_boot=20)))
    assert "owners" not in before
    assert after["owners"]["endorsement"][0]["n_owners"] == 3
    for key in ("equivalence_crossed", "agreement", "annotator_diagnostics", "quality"):
        assert after[key] == before[key], key
    reason = after["summary"].pop("overall_reason")
    assert reason.endswith("owner_endorsement: not demonstrated")  # 3 owners: too few for a verdict
    before["summary"].pop("overall_reason")
    assert after["summary"] == before["summary"]


def test_llm_judges_are_scored_against_the_owners(engine: Engine, tmp_path: Path) -> None:
    """A judge that always prefers chosen, imported beside owners who do: the owners' section scores it
    against the owner (on every owned pair it rated) beside the reward models."""
    from annotator.review.judges import import_judges

    _owned_study(engine, tmp_path)
    simulate(engine, study="s", spec=SimulationSpec(annotators=3, overlap=3, seed=3))
    with db.session_scope(engine) as session:
        for owner in ("alice", "bob", HOSTILE):
            for pair in owner_pairs(session, study="s", owner=owner):
                record_owner_judgment(
                    session, study="s", owner=owner, pair_external_id=pair.external_id, preference=1
                )
    ratings = [
        {"pair_id": f"pair-{k}", "response": side, "item": "correctness", "value": value, "preference": 1}
        for k in range(5)  # one owned pair left unrated by the judge
        for side, value in (("chosen", 5), ("rejected", 2))
    ]
    import_judges(
        engine, write_jsonl(tmp_path / "judge.jsonl", ratings), study="s", judge="gpt-x", account=SYSTEM
    )
    with db.session_scope(engine) as session:
        report = json.loads(json_text(study_report(session, study="s", account=SYSTEM, n_boot=20)))
    share = report["owners"]["endorsement"][0]["share"]
    (judge,) = [row for row in report["owners"]["models"] if row["model"] == "gpt-x (LLM judge)"]
    assert judge["n_pairs"] == 5 and judge["n_owners"] == 3
    assert share > 0.5 and judge["accuracy_owner"] == pytest.approx(share)  # it always says chosen


def test_owner_quality_ratings_cover_every_dimension_on_the_scale(engine: Engine, tmp_path: Path) -> None:
    """An owner's quality ratings are mapped from the page's A/B to chosen/rejected; a missing dimension
    or a point off the scale is one line naming it, and nothing is saved."""
    from annotator.rating.owners import submit_owner_answer
    from annotator.study import load_config

    _owned_study(engine, tmp_path)
    names = load_config().dimension_names
    with db.session_scope(engine) as session:
        pair = owner_pairs(session, study="s", owner="alice")[0]
        with pytest.raises(UserError, match=f"quality rating {names[0]} of chosen must be 1..5, got 9"):
            record_owner_judgment(
                session, study="s", owner="alice", pair_external_id=pair.external_id, preference=1,
                scores={"chosen": dict.fromkeys(names, 9), "rejected": dict.fromkeys(names, 1)},
            )  # fmt: skip
        with pytest.raises(UserError, match="quality ratings of rejected must cover"):
            record_owner_judgment(
                session, study="s", owner="alice", pair_external_id=pair.external_id, preference=1,
                scores={"chosen": dict.fromkeys(names, 3), "rejected": {names[0]: 2}},
            )  # fmt: skip
        saved = submit_owner_answer(
            session, study="s", owner="alice", pair_external_id=pair.external_id, preference_ab=1,
            scores_ab={"A": dict.fromkeys(names, 2), "B": dict.fromkeys(names, 5)},
        )  # fmt: skip
        on_b = saved.side_chosen == "B"
        assert saved.scores["chosen"] == dict.fromkeys(names, 5 if on_b else 2)
        assert saved.scores["rejected"] == dict.fromkeys(names, 2 if on_b else 5)
    with db.session_scope(engine) as session:
        assert len(owner_rows(session, study="s", account=SYSTEM)) == 1 + 2 * len(names)
