"""The profile owner's page (AppTest): reached by the link only, one owner's own pairs, blinded."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotator.intake import ingest
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, account_of
from annotator.rating.owner_links import ENDED, issue_owner_link, revoke_owner_links
from annotator.review.owner_rows import owner_rows
from annotator.store import db
from annotator.store.models import User
from annotator.study import load_config
from tests.utils.apphelpers import MAIN, app_for
from tests.utils.factories import make_records, write_jsonl
from tests.utils.qchelpers import qc_config

HOSTILE = "<script>alert('owner')</script> ![x](http://evil.example/i.png) $x$"


@pytest.fixture
def owned(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """Study s: pairs 0-2 are alice's, 3-5 bob's; the app reads this database."""
    records = make_records(6)
    for k, record in enumerate(records):
        record["owner"] = "alice" if k < 3 else "bob"
        record["question"] = f"question of {record['owner']} {k} {HOSTILE}"
    ingest.import_file(engine, write_jsonl(tmp_path / "pairs.jsonl", records), study="s", account=SYSTEM)
    monkeypatch.setenv(db.ENV_VAR, engine.url.render_as_string(hide_password=False))
    return engine


def _open(engine: Engine, owner: str) -> AppTest:
    with db.session_scope(engine) as session:
        token = issue_owner_link(session, study="s", owner=owner, account=SYSTEM)
    at = AppTest.from_file(str(MAIN), default_timeout=60)
    at.query_params["owner_token"] = token
    return at.run()


def _shown(at: AppTest) -> str:
    return " ".join(str(m.value) for m in at.markdown) + " ".join(str(t.value) for t in at.title)


def test_an_owner_sees_only_their_own_pairs_blinded(owned: Engine) -> None:
    at = _open(owned, "alice")
    assert not at.exception
    shown = _shown(at)
    assert "question of alice" in shown and "question of bob" not in shown
    assert "chosen" not in shown.lower() and "rejected" not in shown.lower()
    assert "![x](" not in shown and "$x$" not in shown  # no image fetched, no LaTeX: shown as typed
    dimensions = load_config().quality.dimensions
    top = len(dimensions[0].labels) - 1
    for slot in range(3):
        assert all(r.value is None for r in at.radio), "a new pair starts with nothing ticked"
        at.radio(key=f"owner_pref_{slot}").set_value("B is better for me")
        for k in range(2):
            at.radio(key=f"owner_aspect_{slot}_{k}").set_value("Yes")
        for dimension in dimensions:  # the study's quality items, as on the rating page: B best, A worst
            at.radio(key=f"owner_quality_{slot}_A_{dimension.name}").set_value(0)
            at.radio(key=f"owner_quality_{slot}_B_{dimension.name}").set_value(top)
        at.button[0].click()
        at.run()
        assert not at.exception and not at.error
        assert "question of bob" not in _shown(at)
    assert any("every pair is answered" in str(s.value) for s in at.success)
    with db.session_scope(owned) as session:
        rows = owner_rows(session, study="s", account=SYSTEM)
    assert set(rows["annotator"]) == {"alice"} and rows["pair_id"].nunique() == 3
    sides = rows.drop_duplicates("pair_id")
    # B preferred: chosen when chosen was shown on B, else rejected
    assert ((sides["side_chosen"] == "B") == (sides["preference"] > 0)).all()
    quality = rows[rows["item"].isin([d.name for d in dimensions])]
    assert len(quality) == 3 * 2 * len(dimensions)
    best = load_config().quality.scale_max
    on_b = quality["response"] == quality["side_chosen"].map({"A": "rejected", "B": "chosen"})
    assert (quality.loc[on_b, "value"] == best).all() and (quality.loc[~on_b, "value"] == 1).all()


def test_a_study_may_ask_owners_only_the_preference(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[owners] ask_quality, ask_rubric and ask_confidence off: the page asks which answer only."""
    records = make_records(2)
    for record in records:
        record["owner"] = "carol"
    config = qc_config(owners={"ask_quality": False, "ask_rubric": False, "ask_confidence": False})
    path = write_jsonl(tmp_path / "pairs.jsonl", records)
    ingest.import_file(engine, path, study="s", config=config, account=SYSTEM)
    monkeypatch.setenv(db.ENV_VAR, engine.url.render_as_string(hide_password=False))
    at = _open(engine, "carol")
    assert [r.key for r in at.radio] == ["owner_pref_0"]
    at.radio(key="owner_pref_0").set_value("A is better for me")
    at.button[0].click()
    at.run()
    assert not at.exception and not at.error
    with db.session_scope(engine) as session:
        rows = owner_rows(session, study="s", account=SYSTEM)
    assert list(rows["item"]) == ["preference"] and rows["confidence"].isna().all()


def test_a_spent_link_opens_nothing(owned: Engine) -> None:
    with db.session_scope(owned) as session:
        token = issue_owner_link(session, study="s", owner="bob", account=SYSTEM)
    first = AppTest.from_file(str(MAIN), default_timeout=60)
    first.query_params["owner_token"] = token
    first.run()
    again = AppTest.from_file(str(MAIN), default_timeout=60)
    again.query_params["owner_token"] = token
    again.run()
    assert not again.exception
    assert [str(e.value) for e in again.error] == ["This owner link is not valid or was already used."]
    assert not again.info, "one message, not a second that contradicts it"
    assert "question of bob" not in _shown(again)


def test_a_page_open_from_a_revoked_link_cannot_save(owned: Engine) -> None:
    """The researcher revokes the owner's links while the owner's page is open: the owner's Save is
    refused in one line, nothing is stored, and the page shows no pair any more."""
    at = _open(owned, "bob")
    assert "question of bob" in _shown(at)
    at.radio(key="owner_pref_0").set_value("A is better for me")
    for k in range(2):
        at.radio(key=f"owner_aspect_0_{k}").set_value("Yes")
    for dimension in load_config().quality.dimensions:
        for side in ("A", "B"):
            at.radio(key=f"owner_quality_0_{side}_{dimension.name}").set_value(0)
    with db.session_scope(owned) as session:
        assert revoke_owner_links(session, study="s", owner="bob", account=SYSTEM) == 1
    at.button[0].click()
    at.run()
    assert not at.exception
    assert [str(e.value) for e in at.error] == [f"{ENDED[:1].upper()}{ENDED[1:]}."]
    with db.session_scope(owned) as session:
        assert owner_rows(session, study="s", account=SYSTEM).empty
    at.run()  # the next run of the same page: ended (its address left the page), not the next pair
    assert not at.exception and "question of bob" not in _shown(at)
    assert not [r for r in at.radio if str(r.key).startswith("owner_")]


def test_a_reload_resumes_the_owners_page(owned: Engine) -> None:
    """The redeemed link leaves the address and the page's resume token takes its place: a reload (a
    new session with that address) shows the owner's pairs again; a bad resume token is one line."""
    first = _open(owned, "bob")
    assert "owner_token" not in first.query_params
    resume = first.query_params["owner_session"]
    resume = resume[0] if isinstance(resume, list) else resume
    reloaded = AppTest.from_file(str(MAIN), default_timeout=60)
    reloaded.query_params["owner_session"] = resume
    reloaded.run()
    assert not reloaded.exception
    assert "question of bob" in _shown(reloaded)
    forged = AppTest.from_file(str(MAIN), default_timeout=60)
    forged.query_params["owner_session"] = "not-a-token"
    forged.run()
    assert not forged.exception
    assert any("expired or was revoked" in str(e.value) for e in forged.error)
    assert "question of bob" not in _shown(forged)


@pytest.mark.page
def test_a_researcher_makes_and_revokes_an_owner_link(owned: Engine) -> None:

    with db.session_scope(owned) as session:
        accounts.add_user(
            session, username="res", role="researcher", password="a long enough pass 1", account=SYSTEM
        )
    with db.session_scope(owned) as session:
        researcher = account_of(session.exec(select(User).where(User.username == "res")).one())
    at = app_for(researcher, timeout=60)
    at.switch_page("views/owner_links.py").run()
    assert not at.exception
    assert at.selectbox(key="owner_links_owner").options == ["alice", "bob"]
    at.button(key="owner_links_make").click().run()
    assert not at.exception
    link = at.code[0].value
    assert "/?owner_token=" in link
    at.button(key="owner_links_revoke").click().run()
    assert not at.success, "asked first"
    assert any("Revoke every link of alice" in str(w.value) for w in at.warning)
    at.button(key="owner_links_revoke_confirm").click().run()
    assert any("Revoked 1 link." in str(s.value) for s in at.success)
    opened = AppTest.from_file(str(MAIN), default_timeout=60)
    opened.query_params["owner_token"] = link.split("owner_token=")[1]
    opened.run()
    assert any("not valid or was already used" in str(e.value) for e in opened.error)
