"""One input rule for every text the app takes (textguard.input_problem), the same on SQLite and
PostgreSQL: a NUL in a skip reason, comment, flag reason, login name or adjudication note is refused
with one clear line and nothing is written; a draft never holds it, so the item can still be submitted."""

from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotator import textguard
from annotator.errors import AuthError, UserError
from annotator.people import accounts
from annotator.people.authorization import SYSTEM
from annotator.rating import drafts, labels
from annotator.review import adjudicate
from annotator.store import db
from annotator.store.models import Adjudication, Assignment, Draft, Judgment, Pair, id_of
from tests.utils.ratings import PASSWORD, account, build_study, rate

NUL = "bad\x00text"


@pytest.fixture
def study(tmp_path: Path) -> Engine:
    return build_study(tmp_path, 2, roles={"judge": "adjudicator"})


def _assignment(engine: Engine, username: str, pair: str = "p0") -> int:
    with Session(engine) as session:
        user = accounts.get_user(session, username)
        found = session.execute(
            select(Assignment.id)
            .join(Pair)
            .where(Pair.external_id == pair, Assignment.annotator_id == user.id)
        ).scalar_one()
        return int(found)


def _count(engine: Engine, table: type) -> int:
    with Session(engine) as session:
        return int(session.execute(select(func.count()).select_from(table)).scalar_one())


@pytest.mark.parametrize(
    ("field", "message"),
    [("comment", "The comment contains a NUL"), ("flag_reason", "problem flag contains a NUL")],
)
def test_a_nul_in_a_judgment_text_is_refused(study: Engine, field: str, message: str) -> None:
    extra = {"comment": NUL} if field == "comment" else {"flag": True, "flag_reason": NUL}
    with pytest.raises(UserError, match=message):
        rate(study, "ann1", "p0", **extra)  # type: ignore[arg-type]
    assert _count(study, Judgment) == 0
    rate(study, "ann1", "p0", comment="fine\nafter all")  # line breaks are text, not controls
    assert _count(study, Judgment) == 1


def test_a_nul_in_a_skip_or_flag_reason_is_refused(study: Engine) -> None:
    user = account(study, "ann1")
    assignment = _assignment(study, "ann1")
    with db.session_scope(study) as session, pytest.raises(UserError, match="skipping contains a NUL"):
        labels.skip(session, assignment_id=assignment, account=user, reason=NUL)
    with db.session_scope(study) as session, pytest.raises(UserError, match="flag contains a NUL"):
        drafts.flag_item(session, assignment_id=assignment, account=user, reason=NUL)
    with Session(study) as session:
        row = session.get(Assignment, assignment)
        assert row is not None and row.status == "pending" and not row.skip_reason and not row.flag_reason


def test_a_draft_never_holds_a_nul_and_the_item_can_still_be_submitted(study: Engine) -> None:
    user = account(study, "ann1")
    assignment = _assignment(study, "ann1")
    with db.session_scope(study) as session:
        drafts.save_draft(
            session,
            assignment_id=assignment,
            account=user,
            answers={"comment": NUL, "preference": 1, "bad\x00key": 2, "score": float("nan")},
        )
    with db.session_scope(study) as session:
        draft = drafts.load_draft(session, assignment_id=assignment, account=user)
    assert draft is not None and draft.answers == {"preference": 1}
    assert _count(study, Draft) == 1
    rate(study, "ann1", "p0", comment="the comment without it")
    assert _count(study, Judgment) == 1


def test_a_nul_in_a_login_name_is_a_failed_login(study: Engine) -> None:
    with db.session_scope(study) as session, pytest.raises(AuthError, match=accounts.BAD_LOGIN):
        accounts.authenticate(session, "ann1\x00", PASSWORD, client="10.0.0.1")
    with db.session_scope(study) as session:
        assert accounts.authenticate(session, "ann1", PASSWORD).username == "ann1"


@pytest.mark.parametrize("name", ["new\x00user", "new\nuser", "newuser\n"])
def test_a_new_account_name_with_a_control_character_is_refused(study: Engine, name: str) -> None:
    with db.session_scope(study) as session, pytest.raises(UserError, match="invalid username"):
        accounts.add_user(session, username=name, role="annotator", password=PASSWORD, account=SYSTEM)


def test_a_nul_in_an_adjudication_note_is_refused(study: Engine) -> None:
    with Session(study) as session:
        pair_id = id_of(session.execute(select(Pair).where(Pair.external_id == "p0")).scalar_one())
    judge = account(study, "judge")
    with db.session_scope(study) as session, pytest.raises(UserError, match="The note contains a NUL"):
        adjudicate.decide(session, pair_id=pair_id, account=judge, preference="chosen", keep=True, note=NUL)
    assert _count(study, Adjudication) == 0


def test_the_rule_itself() -> None:
    assert textguard.input_problem("tabs\tand\nlines\r\n") is None
    assert textguard.input_problem("bell\x07") == "contains a control character"
    assert textguard.input_problem("half \ud800 pair") is not None
    assert textguard.input_problem("x" * (textguard.MAX_INPUT + 1)) is not None
    assert textguard.input_problem("name\t", name=True) is not None
