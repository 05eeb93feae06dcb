"""The blinding map (annotator/rating/blinding.py): A/B <-> chosen/rejected and the form's preference index
<-> the stored signed preference, for both sides."""

import pytest

from annotator.rating import blinding

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out


@pytest.mark.parametrize("chosen_side", ["A", "B"])
def test_each_side_shows_one_response_and_maps_back_to_it(chosen_side: str) -> None:
    a_text, b_text = blinding.side_texts(chosen_side, chosen="C", rejected="R")
    shown = {"A": a_text, "B": b_text}
    for side in ("A", "B"):
        response = blinding.response_of(side, chosen_side=chosen_side)
        assert shown[side] == ("C" if response == "chosen" else "R")
        assert blinding.side_of(response, chosen_side=chosen_side) == side


def test_a_much_better_is_chosen_much_better_only_when_chosen_is_on_a() -> None:
    assert blinding.signed_preference(0, chosen_side="A") == 2
    assert blinding.signed_preference(0, chosen_side="B") == -2
    assert blinding.signed_preference(2, chosen_side="B") == 0
    assert blinding.signed_preference(3, chosen_side="A") == -1


@pytest.mark.parametrize("chosen_side", ["A", "B"])
def test_the_preference_index_round_trips(chosen_side: str) -> None:
    for index in range(5):
        signed = blinding.signed_preference(index, chosen_side=chosen_side)
        assert blinding.preference_index(signed, chosen_side=chosen_side) == index


def test_a_side_that_is_neither_a_nor_b_is_refused() -> None:
    with pytest.raises(ValueError, match="chosen_side must be 'A' or 'B'"):
        blinding.side_texts("C", chosen="x", rejected="y")
    with pytest.raises(ValueError, match="side must be 'A' or 'B'"):
        blinding.response_of("left", chosen_side="A")
