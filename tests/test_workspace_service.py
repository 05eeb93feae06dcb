"""The workspace services: drafts, resuming after a reload, flagging with a reason, BM25 profile search."""

from pathlib import Path

import pytest

from annotator.errors import AuthError, LabelError
from annotator.rating import drafts, labels, profile_search
from annotator.store import db
from annotator.store.models import User, id_of
from tests.utils.apphelpers import AppDB, build_app_db
from tests.utils.factories import make_form


@pytest.fixture
def app_db(tmp_path: Path) -> AppDB:
    built = build_app_db(tmp_path / "db", acknowledged=["ann1"])
    return built


def first(app_db: AppDB, username: str = "ann1") -> int:
    return id_of(app_db.queue(username)[0])


def test_a_draft_is_kept_and_replaced(app_db: AppDB) -> None:
    assignment = first(app_db)
    user = app_db.account("ann1")
    with db.session_scope(app_db.engine) as session:
        drafts.save_draft(session, assignment_id=assignment, account=user, answers={"A:correctness": 4})
    with db.session_scope(app_db.engine) as session:
        drafts.save_draft(
            session,
            assignment_id=assignment,
            account=user,
            answers={"A:correctness": 5, "comment": "x"},
            opened_posts=[2, 0, 2],
        )
    with db.session_scope(app_db.engine) as session:
        draft = drafts.load_draft(session, assignment_id=assignment, account=user)
    assert draft is not None
    assert draft.answers == {"A:correctness": 5, "comment": "x"}
    assert draft.opened_posts == [0, 2]


def test_another_annotator_cannot_read_or_write_a_draft(app_db: AppDB) -> None:
    assignment = first(app_db)
    with db.session_scope(app_db.engine) as session, pytest.raises(AuthError):
        drafts.save_draft(session, assignment_id=assignment, account=app_db.account("ann2"), answers={})
    with db.session_scope(app_db.engine) as session, pytest.raises(AuthError):
        drafts.load_draft(session, assignment_id=assignment, account=app_db.account("ann2"))


def test_a_deactivated_annotator_can_neither_save_a_draft_nor_flag(app_db: AppDB) -> None:
    """Drafts and flags pass the same ownership check as submits, active check included."""
    assignment = first(app_db)
    with db.session_scope(app_db.engine) as session:
        user = session.get(User, app_db.users["ann1"])
        assert user is not None
        user.active = False
        session.add(user)
    with db.session_scope(app_db.engine) as session, pytest.raises(AuthError, match="deactivated"):
        drafts.save_draft(session, assignment_id=assignment, account=app_db.account("ann1"), answers={})
    with db.session_scope(app_db.engine) as session, pytest.raises(AuthError, match="deactivated"):
        drafts.flag_item(session, assignment_id=assignment, account=app_db.account("ann1"), reason="broken")


def test_the_item_with_the_newest_draft_is_resumed(app_db: AppDB) -> None:
    queue = [id_of(a) for a in app_db.queue("ann1")]
    user = app_db.account("ann1")
    with db.session_scope(app_db.engine) as session:
        assert drafts.resume_assignment(session, account=user, study_id=app_db.study_id) is None
        drafts.save_draft(session, assignment_id=queue[2], account=user, answers={"preference": 1})
    with db.session_scope(app_db.engine) as session:
        assert drafts.resume_assignment(session, account=user, study_id=app_db.study_id) == queue[2]
        drafts.clear_draft(session, assignment_id=queue[2], account=user)
    with db.session_scope(app_db.engine) as session:
        assert drafts.resume_assignment(session, account=user, study_id=app_db.study_id) is None


def test_flag_needs_only_a_reason_and_leaves_the_queue(app_db: AppDB) -> None:
    assignment = first(app_db)
    user = app_db.account("ann1")
    with db.session_scope(app_db.engine) as session, pytest.raises(LabelError):
        drafts.flag_item(session, assignment_id=assignment, account=user, reason="  ")
    with db.session_scope(app_db.engine) as session:
        drafts.flag_item(session, assignment_id=assignment, account=user, reason="text cut off")
    with db.session_scope(app_db.engine) as session:
        following = labels.next_assignment(session, account=user, study_id=app_db.study_id)
        flagged = drafts.flagged_items(session, study="study1", account=app_db.account("res1"))
        done = labels.progress(session, account=user, study_id=app_db.study_id)
    assert following is not None and following.id != assignment
    assert flagged["reason"].tolist() == ["text cut off"] and flagged["annotator"].tolist() == ["ann1"]
    assert (done.flagged, done.done) == (1, 0)


def test_an_annotator_cannot_list_flagged_items(app_db: AppDB) -> None:
    with db.session_scope(app_db.engine) as session, pytest.raises(AuthError):
        drafts.flagged_items(session, study="study1", account=app_db.account("ann1"))


def test_opened_posts_are_saved_with_the_judgment(app_db: AppDB) -> None:
    assignment = first(app_db)
    user = app_db.account("ann1")
    scores = {
        side: {"correctness": 3, "relevance": 3, "helpfulness": 3, "rubric:0": 1, "rubric:1": 1}
        for side in "AB"
    }
    with db.session_scope(app_db.engine) as session:
        labels.show(session, assignment_id=assignment, account=user)
        labels.submit(
            session,
            assignment_id=assignment,
            account=user,
            submission=labels.Submission(
                submission_id="s1", preference=2, scores=scores, confidence=2, opened_posts=(4, 1)
            ),
        )
    [judgment] = app_db.judgments(assignment)
    assert judgment.opened_posts == [1, 4]


def test_show_gives_the_whole_profile_and_the_rubric_evidence(app_db: AppDB) -> None:
    with db.session_scope(app_db.engine) as session:
        item = labels.show(session, assignment_id=first(app_db), account=app_db.account("ann1"))
    assert len(item.profile) == 3 and item.profile_shown == 10
    assert item.rubric[0]["evidence"] == "post 0"
    assert item.shown_at is not None


def test_profile_posts_are_ranked_by_relevance_to_the_question() -> None:
    posts = [
        {"text": "I went cycling in the mountains"},
        {"text": "Quick vegetarian dinner recipes for two"},
        {"text": "A roast dinner for the family"},
    ]
    index = profile_search.build_index(posts)
    assert profile_search.rank(index, "vegetarian dinners for two people")[0] == 1
    assert profile_search.search(index, "cycling") == [0]
    assert profile_search.search(index, "") == []


def test_a_profile_without_words_ranks_in_its_own_order() -> None:
    index = profile_search.build_index([{"text": ""}, {"text": "!!"}])
    assert profile_search.rank(index, "anything") == [0, 1]


def test_my_work_lists_answers_revisions_skips_and_flags_in_the_annotators_a_b_terms(app_db: AppDB) -> None:
    """Pair 0 has chosen on A for ann1, pair 1 on B: the record gives back what was entered on each."""
    from annotator.rating import work_log

    user = app_db.account("ann1")
    queue = [id_of(a) for a in app_db.queue("ann1")]
    assert [a.chosen_side for a in app_db.queue("ann1")] == ["A", "B", "A"]
    forms = [make_form("s0", 0), make_form("s1", 3)]  # preference 0 ("A much better"), then 3
    with db.session_scope(app_db.engine) as session:
        for form in forms:  # two revisions of the item whose chosen side is B
            labels.show(session, assignment_id=queue[1], account=user)
            labels.submit(session, assignment_id=queue[1], account=user, submission=form)
    with db.session_scope(app_db.engine) as session:
        labels.skip(session, assignment_id=queue[0], account=user, reason="I need to look it up")
        drafts.flag_item(session, assignment_id=queue[2], account=user, reason="response B is cut off")
    with db.session_scope(app_db.engine) as session:
        items = {item.assignment_id: item for item in work_log.my_work(session, account=user)}
    assert set(items) == set(queue)
    done = items[queue[1]]
    assert done.state == work_log.SUBMITTED and [r.preference for r in done.revisions] == [0, 3]
    assert done.revisions[-1].scores == forms[1].scores, "A and B as the annotator saw them"
    assert done.revisions[0].scores == forms[0].scores
    assert done.revisions[-1].confidence == forms[1].confidence
    skipped, flagged = items[queue[0]], items[queue[2]]
    assert (skipped.state, skipped.reason, skipped.skips) == (work_log.SKIPPED, "I need to look it up", 1)
    assert (flagged.state, flagged.reason) == (work_log.FLAGGED_STATE, "response B is cut off")
    assert skipped.revisions == [] and flagged.revisions == []
    with db.session_scope(app_db.engine) as session:
        assert work_log.my_work(session, account=app_db.account("ann2")) == []
