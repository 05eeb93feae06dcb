"""The crowd queue follows the study's registered allocation design: the first stage to every pair,
then the pairs of the design's rule, never past a pair's allocation nor the budget, also when many
workers arrive at once (threads on one engine, SQLite and PostgreSQL); fixed designs unchanged."""

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from analysis.design import Design
from analysis.design_queue import plan_pairs
from annotator.errors import UserError
from annotator.people.authorization import account_of
from annotator.rating import crowd, labels
from annotator.store import db
from annotator.store.models import Assignment, Pair, User, id_of
from tests.utils.crowdhelpers import PROLIFIC, enter, race
from tests.utils.factories import DIMENSIONS, make_form
from tests.utils.qchelpers import qc_study


def _study(engine: Engine, tmp_path: Path, n_pairs: int, items: int, **allocation: Any) -> None:
    qc_study(
        engine,
        tmp_path,
        n_pairs,
        crowd={**PROLIFIC, "places": 200, "items": items},
        allocation=allocation,
        controls={"rate": 0.0},
    )


def _per_pair(engine: Engine) -> Counter[str]:
    """Assignments per main pair, by external id (every main pair listed)."""
    with Session(engine) as session:
        pairs = session.exec(select(Pair.id, Pair.external_id).where(Pair.control == "")).all()
        given = Counter(int(p) for p in session.exec(select(Assignment.pair_id)).all())
    return Counter({external: given[int(pair_id or 0)] for pair_id, external in pairs})


def _answer(engine: Engine, username: str, gaps: dict[str, float]) -> None:
    """Let a worker answer their whole queue with the pair's chosen - rejected gap (a whole number in
    -4..4, default 0) on every dimension: the worse response gets 5 - |gap|, the other 5."""
    with Session(engine) as session:
        account = account_of(session.exec(select(User).where(User.username == username)).one())
    while True:
        with db.session_scope(engine) as session:
            item = labels.next_assignment(session, account=account, study_id=1)
            if item is None:
                return
            pair = session.get(Pair, item.pair_id)
            assert pair is not None
            gap = gaps.get(pair.external_id, 0.0)
            chosen, rejected = 5.0 - max(0.0, -gap), 5.0 - max(0.0, gap)
            side = {"A": chosen, "B": rejected} if item.chosen_side == "A" else {"A": rejected, "B": chosen}
            form = make_form(f"{username}-{item.id}", 0)
            scores = {s: {**form.scores[s], **dict.fromkeys(DIMENSIONS, side[s])} for s in ("A", "B")}
            labels.show(session, assignment_id=id_of(item), account=account)
            labels.submit(
                session, assignment_id=id_of(item), account=account, submission=replace(form, scores=scores)
            )


def _usernames(engine: Engine) -> dict[int, str]:
    with Session(engine) as session:
        return {id_of(u): u.username for u in session.exec(select(User))}


def test_sequential_gives_the_first_stage_then_one_pair_at_a_time(engine: Engine, tmp_path: Path) -> None:
    """12 pairs, 1 first, 1.5 per pair on average (18 judgments), 4 items per worker: three workers
    cover the first stage; once it is rated, the next worker gets the one pair that looks most broken,
    and nobody gets another until that judgment is in; the budget ends the queue with one clear line."""
    _study(engine, tmp_path, 12, 4, design="sequential", first_stage=1, budget=1.5)
    first = [enter(engine, f"w{k}") for k in range(3)]
    assert sorted(_per_pair(engine).values()) == [1] * 12
    with pytest.raises(UserError):
        enter(engine, "early")  # the first stage is given out, not yet rated
    names = _usernames(engine)
    broken = {"pair-3": 3.0, "pair-7": -2.0, "pair-10": 2.0}
    for account in first:
        _answer(engine, names[account.id], broken)
    fourth = enter(engine, "w3")
    with Session(engine) as session:
        mine = session.exec(
            select(Pair.external_id).join(Assignment).where(Assignment.annotator_id == fourth.id)
        ).all()
    assert mine == ["pair-3"]
    with pytest.raises(UserError) as waiting:
        enter(engine, "impatient")
    assert str(waiting.value) == crowd.NO_WORK
    latest, k = fourth, 0
    while True:
        _answer(engine, _usernames(engine)[latest.id], broken)
        try:
            latest = enter(engine, f"next{k}")
        except UserError as exc:  # the one line a worker sees
            assert str(exc) == crowd.NO_WORK
            break
        k += 1
    counts = _per_pair(engine)
    assert sum(counts.values()) == 18 and k == 5
    assert counts["pair-3"] + counts["pair-7"] + counts["pair-10"] == 3 + 6  # the extras went to them


def test_two_stage_waits_for_its_first_stage_and_picks_from_it(engine: Engine, tmp_path: Path) -> None:
    """10 pairs, 2 first, then blocks of 3 (budget 2.6 per pair: 6 more judgments, 2 pairs picked):
    while first-stage judgments are still out nobody gets second-stage pairs; then only the two
    broken-looking pairs get more, each up to 2 + 3 and no further."""
    _study(engine, tmp_path, 10, 5, design="two_stage", first_stage=2, budget=2.6, second_stage=3)
    first = [enter(engine, f"w{k}") for k in range(4)]
    assert sorted(_per_pair(engine).values()) == [2] * 10
    names = _usernames(engine)
    with pytest.raises(UserError) as waiting:
        enter(engine, "early")
    assert str(waiting.value) == crowd.NO_WORK
    for account in first:
        _answer(engine, names[account.id], {"pair-2": 2.0, "pair-8": -3.0})
    later = [enter(engine, f"v{k}") for k in range(3)]
    counts = _per_pair(engine)
    assert counts["pair-2"] == counts["pair-8"] == 5
    assert all(n == 2 for pair, n in counts.items() if pair not in ("pair-2", "pair-8"))
    assert sum(counts.values()) == 26 and len(later) == 3


def test_parallel_arrivals_never_pass_a_pairs_allocation_nor_the_budget(
    engine: Engine, tmp_path: Path
) -> None:
    """A two-stage study whose first stage is rated; 30 workers arrive at once for its second stage:
    each picked pair ends at exactly 2 + 4, the others at 2, the total at the budget, and everyone
    else is told there is nothing for them."""
    _study(engine, tmp_path, 20, 10, design="two_stage", first_stage=2, budget=3.0, second_stage=4)
    names_first = [enter(engine, f"w{k}") for k in range(4)]
    names = _usernames(engine)
    broken = {"pair-1": 3.0, "pair-5": 2.0, "pair-9": -3.0, "pair-13": 2.0, "pair-17": -2.0}
    for account in names_first:
        _answer(engine, names[account.id], broken)
    entered, errors = race(30, lambda k: enter(engine, f"burst{k}"))
    counts = _per_pair(engine)
    assert {pair: counts[pair] for pair in broken} == dict.fromkeys(broken, 6)
    assert all(n == 2 for pair, n in counts.items() if pair not in broken)
    assert sum(counts.values()) == 60
    assert len(entered) == 4 and [str(e) for e in errors] == [crowd.NO_WORK] * 26


def test_parallel_first_visits_of_a_sequential_study_give_one_pair_at_a_time(
    engine: Engine, tmp_path: Path
) -> None:
    """40 workers at once on a sequential study (25 pairs, 1 first, budget 1.6, 6 items each): the
    first stage is given out (5 workers) and nothing more while it is being rated; once it is rated,
    of 10 workers arriving at once exactly one gets one pair."""
    _study(engine, tmp_path, 25, 6, design="sequential", first_stage=1, budget=1.6)
    entered, errors = race(40, lambda k: enter(engine, f"burst{k}"))
    assert sorted(_per_pair(engine).values()) == [1] * 25
    assert len(entered) == 5 and [str(e) for e in errors] == [crowd.NO_WORK] * 35
    names = _usernames(engine)
    for account in entered:
        _answer(engine, names[account.id], {"pair-4": 3.0})
    later, refused = race(10, lambda k: enter(engine, f"later{k}"))
    assert len(later) == 1 and [str(e) for e in refused] == [crowd.NO_WORK] * 9
    assert _per_pair(engine)["pair-4"] == 2 and sum(_per_pair(engine).values()) == 26


def test_a_fixed_design_still_covers_the_overlap_and_goes_on(engine: Engine, tmp_path: Path) -> None:
    """Fixed design (the default): the queue is planned as before, beyond the overlap once it is met."""
    qc_study(engine, tmp_path, 6, crowd={**PROLIFIC, "places": 10, "items": 6}, analysis={"overlap": 2})
    for k in range(3):
        enter(engine, f"w{k}")
    assert sorted(_per_pair(engine).values()) == [3] * 6


def test_two_stage_picks_by_the_first_judgments_in_submission_order() -> None:
    """10 pairs, 2 first, 2 pairs picked for 2 more each. Pair 1 (first gaps 3, 3) and pair 0 (1.0,
    1.2) were picked; pair 0's first second-stage judgment came in at -1.0. Its mean over all judgments
    (0.4) is now below pair 2's (0.95), but the picks rest on the first stage: pair 0 still gets its
    last judgment, pair 2 none."""
    rows = [(0, 1, 1.0), (0, 2, 1.2), (1, 3, 3.0), (1, 4, 3.0), (2, 5, 0.9), (2, 6, 1.0)]
    rows += [(p, 10 + 2 * p + j, 0.1 * (-1) ** j) for p in range(3, 10) for j in range(2)]
    rows += [(1, 40, 3.0), (1, 41, 3.0), (0, 42, -1.0)]
    frame = pd.DataFrame(rows, columns=["pair", "order", "q"])
    assigned = [3, 4] + [2] * 8
    design = Design("two_stage", 2, 2.4, 2)
    args = {"dimensions": ["q"], "margin": 0.5, "max_share": 0.1, "limit": 3}
    assert plan_pairs(frame, assigned, [0] * 10, design, **args) == [0]
    late_first = frame.assign(order=frame["order"].where(frame["order"] != 42, 0))  # -1.0 came first
    assert plan_pairs(late_first, assigned, [0] * 10, design, **args) == [2]


def test_the_dimension_furthest_from_settled_sets_the_order() -> None:
    """Two dimensions: the pairs come in the order of the one whose statistic is largest."""
    frame = pd.DataFrame(
        {
            "pair": [0, 0, 1, 1, 2, 2],
            "order": range(6),
            "calm": [0.0, 0.1, 0.1, 0.0, 0.0, 0.1],
            "loud": [0.0, 0.1, 2.0, 2.2, 0.9, 1.1],
        }
    )
    picked = plan_pairs(
        frame, [2, 2, 2], [0, 0, 0], Design("two_stage", 2, 4.0, 2), dimensions=["calm", "loud"],
        margin=0.5, max_share=0.1, limit=3,
    )  # fmt: skip
    assert picked == [1, 2, 0]


def test_nothing_is_given_out_past_the_budget_by_pending_items() -> None:
    """Judgments given out but not made count against the budget, and a sequential pick waits for them."""
    frame = pd.DataFrame({"pair": [0, 1, 2], "order": [1, 2, 3], "q": [1.0, 0.0, 0.0]})
    design = Design("sequential", 1, 2.0)  # 6 judgments
    args = {"dimensions": ["q"], "margin": 0.5, "max_share": 0.1, "limit": 5}
    assert plan_pairs(frame, [1, 1, 1], [0, 0, 0], design, **args) == [0]  # one at a time
    assert plan_pairs(frame, [2, 1, 1], [1, 0, 0], design, **args) == []  # waits for it
    assert plan_pairs(frame, [6, 1, 1], [0, 0, 0], design, **args) == []  # the budget is given out


def test_the_first_stage_comes_before_anything_else() -> None:
    """Pairs below the first stage come first; the rule only once they have all come in."""
    frame = pd.DataFrame({"pair": [0], "order": [1], "q": [3.0]})
    picked = plan_pairs(
        frame, [1, 0, 0, 1], [0, 0, 0, 1], Design("sequential", 1, 3.0), dimensions=["q"], margin=0.5,
        max_share=0.1, limit=5,
    )  # fmt: skip
    assert picked == [1, 2]
