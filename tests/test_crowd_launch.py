"""Crowd launch day at the service level: many first visits, tabs and logins at the same moment (threads
on one engine, SQLite and PostgreSQL), the completion code only for real work, the time limit enforced
by the services, controls that nothing tells apart, and errors that name nothing internal."""

import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotator.errors import AuthError, BusyError, TimeOver, UserError
from annotator.intake import controls
from annotator.intake.assign import assign
from annotator.people import accounts, authorization
from annotator.people.authorization import SYSTEM
from annotator.rating import crowd, drafts, labels
from annotator.store import db
from annotator.store.models import Assignment, CrowdLink, Draft, Event, Pair, Study, User, id_of
from tests.utils.crowdhelpers import PROLIFIC, ConnectionWatch, cheap_hashing, enter, link, race
from tests.utils.factories import PASSWORD, make_annotators, make_form
from tests.utils.qchelpers import answer_all, qc_study


def _links(engine: Engine) -> list[CrowdLink]:
    with Session(engine) as session:
        return list(session.exec(select(CrowdLink)))


# ------------------------------------------------------------------------------------ places, tabs


def test_parallel_first_visits_never_overrun_the_places(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 6, crowd=PROLIFIC)  # places = 3
    entered, errors = race(12, lambda k: enter(engine, f"worker{k}"))
    assert len(entered) == 3 and len({a.id for a in entered}) == 3
    assert [str(e) for e in errors] == [
        "all places in this study are taken; please return the study on the platform"
    ] * 9
    assert len(_links(engine)) == 3


def test_one_worker_in_many_tabs_gets_one_account_and_the_key_is_made_once(
    engine: Engine, tmp_path: Path
) -> None:
    qc_study(engine, tmp_path, 6, crowd=PROLIFIC)
    with Session(engine) as session:
        assert session.exec(select(Study.pseudonym_key)).one() is None  # a fresh study: no key yet
    entered, errors = race(8, lambda _: enter(engine, "sameworker"))
    assert errors == []
    assert len({a.id for a in entered}) == 1 and len(_links(engine)) == 1
    assert enter(engine, "another").id not in {a.id for a in entered}  # the places were not used up


def test_workers_entering_together_all_come_back_to_their_own_account(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 6, crowd=PROLIFIC)
    first, errors = race(3, lambda k: enter(engine, f"w{k}"))
    assert errors == []
    again, errors = race(6, lambda k: enter(engine, f"w{k % 3}"))
    assert errors == []
    by_worker = {a.username: a.id for a in first}
    assert {(a.username, a.id) for a in again} == set(by_worker.items())


def test_the_public_link_names_no_study_and_no_setting(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 2, crowd=PROLIFIC, study="secret-study-name")
    with db.session_scope(engine) as session, pytest.raises(UserError) as raised:
        crowd.enter(session, study="nope", params=link("w1", "nope"))
    assert str(raised.value) == crowd.NO_SUCH_LINK
    assert "secret-study-name" not in str(raised.value)


# ------------------------------------------------------------------------------------------ logins


def _many_users(engine: Engine, n: int, password_hash: str) -> list[str]:
    with db.session_scope(engine) as session:
        users = [
            User(username=f"user{k:02d}", role="annotator", password_hash=password_hash) for k in range(n)
        ]
        session.add_all(users)
    return [user.username for user in users]


def test_thirty_simultaneous_logins_all_get_in_on_one_connection_each(db_url: str, tmp_path: Path) -> None:
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    watch = ConnectionWatch(engine)

    def login(k: int) -> authorization.Account:
        with db.session_scope(engine) as session:
            return accounts.authenticate(session, names[k], PASSWORD)

    with cheap_hashing() as password_hash:
        names = _many_users(engine, 30, password_hash)
        entered, errors = race(30, login)
    engine.dispose()
    assert errors == [] and sorted(a.username for a in entered) == names
    assert max(watch.most.values()) == 1, "a login never holds a second connection"


def test_bogus_logins_hold_one_connection_each_and_leave_no_lock(engine: Engine, tmp_path: Path) -> None:
    watch = ConnectionWatch(engine)

    def bogus(k: int) -> None:
        with db.session_scope(engine) as session:
            accounts.authenticate(session, "nobody-at-all", f"guess{k}")

    with cheap_hashing() as password_hash:
        names = _many_users(engine, 1, password_hash)
        _, errors = race(12, bogus)
        with db.session_scope(engine) as session:  # another user's login is not held up by them
            assert accounts.authenticate(session, names[0], PASSWORD).username == names[0]
    assert len(errors) == 12 and all(isinstance(e, AuthError) for e in errors)
    assert max(watch.most.values()) == 1
    with Session(engine) as session:
        failed = session.exec(select(Event).where(Event.action == "login_failed")).all()
    assert len(failed) == 12  # every failure is in the audit log although each raised


def test_a_full_pool_fails_fast_with_one_line(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(db.POOL_ENV, "1")
    monkeypatch.setattr(db, "POOL_TIMEOUT_S", 0.5)
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    held = [engine.connect(), engine.connect()]  # pool_size 1 + overflow 1: all taken
    try:
        with pytest.raises(BusyError, match="the server is busy"), db.session_scope(engine) as session:
            session.exec(select(User)).all()
    finally:
        for connection in held:
            connection.close()
        engine.dispose()
    assert "\n" not in db.POOL_BUSY


def test_a_bad_pool_setting_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(db.POOL_ENV, "many")
    with pytest.raises(UserError, match=r"\$ANNOTATOR_DB_POOL must be a whole number"):
        db.make_engine("sqlite:///x.db")


# ---------------------------------------------------------------------------------- completion code


def _worker_queue(engine: Engine, account: authorization.Account) -> list[int]:
    with Session(engine) as session:
        return [
            int(a or 0)
            for a in session.exec(
                select(Assignment.id)
                .where(Assignment.annotator_id == account.id)
                .order_by(col(Assignment.position))
            )
        ]


def test_flagging_everything_earns_no_code_and_says_why(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC)
    account = enter(engine, "flagger")
    for assignment_id in _worker_queue(engine, account):
        with db.session_scope(engine) as session:
            drafts.flag_item(session, assignment_id=assignment_id, account=account, reason="broken")
    with db.session_scope(engine) as session:
        result = crowd.completion(session, account=account, study_id=1)
    assert result is not None and not result.credited and result.code == ""
    assert result.reason.startswith("0 items rated (at least")
    with db.session_scope(engine) as session:  # asked again: still no code, one audit event
        assert crowd.completion(session, account=account, study_id=1) == result
        table = crowd.outcomes(session, study="s1", account=SYSTEM)
    with Session(engine) as session:
        events = session.exec(select(Event).where(Event.action == "crowd_no_credit")).all()
    assert len(events) == 1 and events[0].detail["reason"] == result.reason
    assert table["outcome"].tolist() == [f"no credit: {result.reason}"]


def test_too_many_flags_earn_no_code_and_real_work_does(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 8, crowd=PROLIFIC | {"places": 2, "items": 4, "max_flag_share": 0.5})
    flagger, worker = enter(engine, "flagger"), enter(engine, "worker")
    for number, assignment_id in enumerate(_worker_queue(engine, flagger)):
        with db.session_scope(engine) as session:
            if number < 3:
                drafts.flag_item(session, assignment_id=assignment_id, account=flagger, reason="x")
            else:
                labels.submit(
                    session, assignment_id=assignment_id, account=flagger, submission=make_form("f", 0)
                )
    assert answer_all(engine, worker.username) == 4
    with db.session_scope(engine) as session:
        flagged = crowd.completion(session, account=flagger, study_id=1)
        done = crowd.completion(session, account=worker, study_id=1)
    assert flagged is not None and not flagged.credited and "3 of 4 finished items flagged" in flagged.reason
    assert done == crowd.Completion("C1A2B3", "")


# ------------------------------------------------------------------------------------- time limit


def _late_worker(engine: Engine, tmp_path: Path) -> tuple[authorization.Account, int]:
    """A worker of a 30-minute study whose time ran out with their first item on screen."""
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC | {"session_minutes": 30})
    account = enter(engine, "late")
    with db.session_scope(engine) as session:
        item = labels.next_assignment(session, account=account, study_id=1)
        assert item is not None
        labels.show(session, assignment_id=id_of(item), account=account)
        row = session.exec(select(CrowdLink)).one()
        row.started_at = row.started_at - timedelta(minutes=31)
        session.add(row)
        return account, id_of(item)


def test_after_the_time_limit_flag_skip_and_submit_are_refused(engine: Engine, tmp_path: Path) -> None:
    account, item = _late_worker(engine, tmp_path)
    for act in (
        lambda s: drafts.flag_item(s, assignment_id=item, account=account, reason="broken"),
        lambda s: labels.skip(s, assignment_id=item, account=account, reason="later"),
        lambda s: labels.submit(s, assignment_id=item, account=account, submission=make_form("late", 0)),
    ):
        with db.session_scope(engine) as session, pytest.raises(TimeOver):
            act(session)
    with Session(engine) as session:
        assert session.get(Assignment, item).status == "pending"  # type: ignore[union-attr]
        assert crowd.completion(session, account=account, study_id=1) is None
    with db.session_scope(engine) as session:  # the answer can still be kept as a draft
        drafts.save_draft(session, assignment_id=item, account=account, answers={"preference": 1})
    with Session(engine) as session:
        draft = drafts.load_draft(session, assignment_id=item, account=account)
    assert draft is not None and draft.answers == {"preference": 1}


def test_a_worker_who_finished_in_time_may_come_back_for_the_code(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 5, crowd=PROLIFIC | {"session_minutes": 30})
    account = enter(engine, "quick")
    answer_all(engine, account.username)
    with db.session_scope(engine) as session:
        assert crowd.completion(session, account=account, study_id=1) == crowd.Completion("C1A2B3", "")
        row = session.exec(select(CrowdLink)).one()
        row.started_at = row.started_at - timedelta(minutes=31)
        session.add(row)
    assert enter(engine, "quick") == account


# ------------------------------------------------------------------------------- item identity


def test_the_item_view_carries_a_fresh_random_token_per_display(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 3, crowd=PROLIFIC)
    account = enter(engine, "w")
    item = _worker_queue(engine, account)[0]
    with db.session_scope(engine) as session:
        one = labels.show(session, assignment_id=item, account=account)
        two = labels.show(session, assignment_id=item, account=account, resume=True)
    assert one.token != two.token
    assert re.fullmatch(r"i[0-9a-f]{16}", one.token) and re.fullmatch(r"i[0-9a-f]{16}", two.token)


def test_controls_are_shuffled_in_with_the_main_items(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 12, crowd=PROLIFIC | {"places": 12, "items": 6}, controls={"rate": 0.25})
    with db.session_scope(engine) as session:
        controls.make_controls(session, study="s1", kind="duplicate", n=6, account=SYSTEM)
    entered, errors = race(12, lambda k: enter(engine, f"w{k}"))
    assert errors == []
    last_is_control = []
    with Session(engine) as session:
        for account in entered:
            rows = session.exec(
                select(Assignment.id, Assignment.position, Pair.control)
                .join(Pair, col(Pair.id) == col(Assignment.pair_id))
                .where(Assignment.annotator_id == account.id)
                .order_by(col(Assignment.id))
            ).all()
            assert [r[1] for r in rows] == list(range(1, len(rows) + 1))  # one place each, ids in order
            kinds = [r[2] for r in rows]
            assert kinds.count("duplicate") == 2 and kinds.count("") == 6
            last_is_control.append(kinds[-2:] == ["duplicate", "duplicate"])
    # Controls last in every queue (as when they were appended) has chance (1/28)^12 here.
    assert sum(last_is_control) < 6


@pytest.mark.parametrize("seed", range(8))
def test_a_swapped_repeat_comes_at_least_min_gap_items_after_its_original(
    engine: Engine, tmp_path: Path, seed: int
) -> None:
    qc_study(engine, tmp_path, 14, controls={"min_gap": 5})
    make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, seed=seed, account=SYSTEM)
    served: list[int] = []
    rng = random.Random(seed)
    first_batch = rng.randint(1, 3)
    with Session(engine) as session:
        annotator = authorization.account_of(session.exec(select(User)).one())

    def serve(n: int) -> None:
        for _ in range(n):
            with db.session_scope(engine) as session:
                item = labels.next_assignment(session, account=annotator, study_id=1)
                if item is None:
                    return
                pair = session.get(Pair, item.pair_id)
                assert pair is not None
                served.append(pair.control_of if pair.control == "swap" else -(pair.id or 0))
                labels.submit(
                    session,
                    assignment_id=id_of(item),
                    account=annotator,
                    submission=make_form(f"s{item.id}", 0),
                )

    serve(first_batch)
    with db.session_scope(engine) as session:
        controls.make_controls(session, study="s1", kind="swap", n=first_batch, seed=seed, account=SYSTEM)
    serve(100)
    repeats = [k for k, pair_id in enumerate(served) if pair_id > 0]
    assert len(repeats) == first_batch
    for k in repeats:
        original = served.index(-served[k])
        assert k - original >= 5, (seed, served)


# ---------------------------------------------------------------------------------- get-or-create


def test_two_simulate_runs_at_once_share_the_accounts(engine: Engine, tmp_path: Path) -> None:
    from annotator.synthetic import SimulationSpec, simulate

    qc_study(engine, tmp_path, 6)
    spec = SimulationSpec(annotators=3, overlap=2, seed=1)
    _, errors = race(2, lambda _: simulate(engine, study="s1", spec=spec))
    assert errors == []
    with Session(engine) as session:
        names = session.exec(select(User.username).where(col(User.username).like(f"{spec.prefix}_%"))).all()
        assignments = session.exec(select(Assignment)).all()
    assert len(names) == 3
    assert len(assignments) == 12 and all(a.status == "done" for a in assignments)


def test_drafts_saved_from_many_tabs_at_once_leave_one_draft(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 3, crowd=PROLIFIC)
    account = enter(engine, "tabs")
    item = _worker_queue(engine, account)[0]

    def save(k: int) -> None:
        with db.session_scope(engine) as session:
            drafts.save_draft(
                session, assignment_id=item, account=account, answers={"preference": k}, opened_posts=[k]
            )

    _, errors = race(8, save)
    assert errors == []
    with Session(engine) as session:
        saved = session.exec(select(Draft)).all()
    assert len(saved) == 1 and saved[0].opened_posts == [saved[0].answers["preference"]]


def test_the_same_user_added_at_once_is_one_account_and_clear_refusals(engine: Engine) -> None:
    def add(_: int) -> None:
        with db.session_scope(engine) as session:
            accounts.add_user(session, username="twin", role="annotator", password=PASSWORD, account=SYSTEM)

    with cheap_hashing():
        _, errors = race(6, add)
    assert [str(e) for e in errors] == ["user 'twin' already exists"] * 5
    with Session(engine) as session:
        assert len(session.exec(select(User).where(User.username == "twin")).all()) == 1


@pytest.mark.parametrize("arrivals", [15, 50, 100])
def test_a_burst_of_first_visits_covers_every_pair_to_its_overlap(
    engine: Engine, tmp_path: Path, arrivals: int
) -> None:
    """15 places x 20 items = 100 pairs x overlap 3: after any burst every pair has 3 +- 1 annotators."""
    crowd_setup = {**PROLIFIC, "places": 15, "items": 20}
    qc_study(engine, tmp_path, 100, crowd=crowd_setup, analysis={"overlap": 3})
    entered, errors = race(arrivals, lambda k: enter(engine, f"burst{k}"))
    assert len(entered) == 15
    assert all("places in this study are taken" in str(e) for e in errors)
    with Session(engine) as session:
        rows = session.exec(select(Assignment.pair_id, Pair.control).join(Pair)).all()
        n_pairs = len(session.exec(select(Pair.id).where(Pair.control == "")).all())
    per_pair: dict[int, int] = {}
    for pair_id, control in rows:
        if control == "":
            per_pair[pair_id] = per_pair.get(pair_id, 0) + 1
    assert len(per_pair) == n_pairs == 100  # no pair left without an annotator
    assert min(per_pair.values()) >= 2 and max(per_pair.values()) <= 4


def test_prolific_ids_that_differ_only_in_case_are_one_worker(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 6, crowd=PROLIFIC)
    first = enter(engine, "casey01")
    assert enter(engine, "CASEY01").id == first.id
    assert len(_links(engine)) == 1


def test_arrivals_waiting_for_the_study_hold_no_connection(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 first visits arrive while another transaction holds the study's lock for longer than the pool's
    timeout (pool of 2 connections + 2 overflow, 2 s): each waits for its turn without holding a
    connection, so when the lock is freed all 30 places fill and the other 10 are told the places are
    taken; nobody is told the server is busy."""
    monkeypatch.setenv(db.POOL_ENV, "2")
    monkeypatch.setattr(db, "POOL_TIMEOUT_S", 2)
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    try:
        qc_study(engine, tmp_path, 40, crowd={**PROLIFIC, "places": 30, "items": 4})
        with Session(engine) as session:
            study_id = id_of(session.exec(select(Study)).one())
        with ThreadPoolExecutor(max_workers=1) as background, Session(engine) as holder:
            db.lock_study(holder, study_id)
            burst = background.submit(race, 40, lambda k: enter(engine, f"queue{k}"))
            time.sleep(3 * db.POOL_TIMEOUT_S)  # the scenario: a lock held past the pool's timeout
            holder.commit()
            entered, errors = burst.result(timeout=120)
        assert [str(e) for e in errors if not isinstance(e, UserError) or isinstance(e, BusyError)] == []
        assert len(entered) == 30 and len(errors) == 10
        assert len(_links(engine)) == 30
    finally:
        engine.dispose()


def test_a_unit_of_work_that_meets_a_lock_runs_again(engine: Engine) -> None:
    """A lock held too long is one BusyError line from session_scope; with_retries runs the work again
    and returns its result, and gives up with that line after its attempts."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    runs: list[int] = []

    def work(session: Session) -> int:
        runs.append(1)
        if len(runs) < 3:
            raise OperationalError("UPDATE study", {}, sqlite3.OperationalError("database is locked"))
        return len(session.exec(select(User)).all())

    assert db.with_retries(engine, work) == 0 and len(runs) == 3
    runs.clear()
    with pytest.raises(BusyError, match="locked") as caught:
        db.with_retries(engine, work, attempts=2)
    assert len(runs) == 2 and "\n" not in str(caught.value)


def test_an_archived_study_closes_its_crowd_link(engine: Engine, tmp_path: Path) -> None:
    """Archiving a crowd study closes its public link to newcomers and to returning workers (the same
    line that names nothing internal); restoring it opens the link again."""
    from annotator.intake.study_admin import set_archived

    qc_study(engine, tmp_path, 6, crowd=PROLIFIC)
    first = enter(engine, "early")
    with db.session_scope(engine) as session:
        set_archived(session, study="s1", archived=True, account=SYSTEM)
    for worker in ("early", "late"):
        with pytest.raises(UserError, match="cannot be used at the moment"):
            enter(engine, worker)
    assert len(_links(engine)) == 1
    with db.session_scope(engine) as session:
        set_archived(session, study="s1", archived=False, account=SYSTEM)
    assert enter(engine, "early").id == first.id
