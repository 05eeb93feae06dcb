"""A drawn human sample in a pair file: each main pair's ``human_sample.probability`` read back for the
prediction-powered verdicts from files, every problem one line naming the pair and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotator.errors import UserError
from annotator.intake.ingest import load_pairs
from annotator.intake.recorded_draw import file_probabilities, sample_object
from tests.utils.factories import make_records, write_csv, write_jsonl

pytestmark = pytest.mark.nodb  # file checks: no database


def _file(tmp_path: Path, samples: list[Any], *, csv: bool = False) -> tuple[Path, list[dict[str, Any]]]:
    records = make_records(len(samples))
    for record, sample in zip(records, samples, strict=True):
        if sample is not None:
            record["human_sample"] = sample
    path = (write_csv if csv else write_jsonl)(tmp_path / ("pairs.csv" if csv else "pairs.jsonl"), records)
    return path, load_pairs(path)


@pytest.mark.parametrize("csv", [False, True], ids=["jsonl", "csv"])
def test_every_main_pair_s_probability_is_read_by_its_id(tmp_path: Path, csv: bool) -> None:
    samples = [sample_object(0.25, True), sample_object(0.5, False), sample_object(1.0, True)]
    path, records = _file(tmp_path, samples, csv=csv)
    probability = file_probabilities(path, records)
    assert probability is not None
    assert probability.to_dict() == {"pair-0": 0.25, "pair-1": 0.5, "pair-2": 1.0}
    assert sample_object(None, None) is None


def test_a_file_without_a_draw_has_none(tmp_path: Path) -> None:
    path, records = _file(tmp_path, [None, None])
    assert file_probabilities(path, records) is None


@pytest.mark.parametrize(
    ("samples", "said"),
    [
        (
            [{"probability": 0.5}, None, None],
            "pair 'pair-1', field human_sample: missing (2 of 3",
        ),
        (
            [{"probability": 0.5}, {"probability": 0}],
            "pair 'pair-1', field human_sample.probability: expected a number in (0, 1], got 0",
        ),
        (
            [{"probability": 1.5}, {"probability": 0.5}],
            "pair 'pair-0', field human_sample.probability: expected a number in (0, 1], got 1.5",
        ),
        ([{"probability": "x" * 100}], "got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (100 characters)"),
        ([{"probability": True}], "expected a number in (0, 1], got True"),
        ([{"drawn": True}], "field human_sample.probability: expected a number in (0, 1], got None"),
        ([0.3], "field human_sample: expected an object with a probability, got 0.3"),
    ],
    ids=["partial", "zero", "above-one", "long-text", "boolean", "no-probability", "not-an-object"],
)
def test_a_bad_draw_is_one_line_naming_the_pair_and_field(
    tmp_path: Path, samples: list[Any], said: str
) -> None:
    path, records = _file(tmp_path, samples)
    with pytest.raises(UserError) as caught:
        file_probabilities(path, records)
    message = str(caught.value)
    assert message.startswith(f"{path}: pair ") and "\n" not in message and said in message, message
    assert len(message) < 300 + len(str(path))
    json.dumps(message)  # plain text
