"""Checks on the sample study data: data/sample_pairs.jsonl, data/guidelines.md and data/study.toml."""

import json
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

from annotator.people.authorization import SYSTEM

DATA = Path(__file__).parents[1] / "data"
PAIRS = DATA / "sample_pairs.jsonl"
GUIDELINES = DATA / "guidelines.md"
STUDY = DATA / "study.toml"

TOP_CATEGORIES = {"Arts & Entertainment", "Lifestyle & Personal Development", "Society & Culture"}
REQUIRED_FIELDS: dict[str, type] = {
    "id": str,
    "question": str,
    "profile": list,
    "rubric_aspects": list,
    "narrative": str,
    "category": str,
    "top_category": str,
    "chosen": str,
    "rejected": str,
}
FLAW_KEYS = {"construction_note", "construction_detail"}
FLAW_VALUES = {"flawed:rejected_factual_error", "flawed:chosen_not_aligned"}


def load_records() -> list[dict[str, Any]]:
    with PAIRS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def words(text: str) -> int:
    return len(text.split())


def test_every_line_is_a_json_object() -> None:
    with PAIRS.open(encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert lines, "sample file is empty"
    for number, line in enumerate(lines, 1):
        assert line.strip(), f"line {number} is blank"
        assert isinstance(json.loads(line), dict), f"line {number} is not a JSON object"


def test_records_have_required_fields_with_right_types() -> None:
    for record in load_records():
        for field, kind in REQUIRED_FIELDS.items():
            assert isinstance(record.get(field), kind), f"{record.get('id')}: {field} is not {kind.__name__}"
            if kind is str:
                assert record[field].strip(), f"{record['id']}: {field} is empty"
        assert set(record) - set(REQUIRED_FIELDS) <= FLAW_KEYS, f"{record['id']}: unexpected keys"
        for post in record["profile"]:
            assert set(post) == {"id", "category", "text"}, record["id"]
            assert all(isinstance(post[key], str) and post[key] for key in post), record["id"]
        for aspect in record["rubric_aspects"]:
            assert set(aspect) == {"aspect", "reason", "evidence"}, record["id"]
            assert all(isinstance(aspect[key], str) and aspect[key] for key in aspect), record["id"]


def test_ids_are_unique() -> None:
    ids = [record["id"] for record in load_records()]
    duplicates = [key for key, count in Counter(ids).items() if count > 1]
    assert not duplicates, f"duplicate ids: {duplicates}"


def test_at_least_36_pairs() -> None:
    assert 36 <= len(load_records()) <= 42


def test_at_least_12_pairs_per_top_category() -> None:
    counts = Counter(record["top_category"] for record in load_records())
    assert set(counts) == TOP_CATEGORIES
    assert all(count >= 12 for count in counts.values()), counts


def test_at_least_12_subcategories_in_lowercase() -> None:
    categories = {record["category"] for record in load_records()}
    assert len(categories) >= 12, categories
    assert all(category == category.lower() for category in categories)


def test_profiles_have_5_to_15_titled_posts() -> None:
    for record in load_records():
        profile = record["profile"]
        assert 5 <= len(profile) <= 15, f"{record['id']}: {len(profile)} posts"
        assert len({post["id"] for post in profile}) == len(profile), f"{record['id']}: duplicate post ids"
        for post in profile:
            title, sep, body = post["text"].partition("\n\n")
            assert title.startswith("Title: ") and sep and body.strip(), f"{record['id']}: {post['id']}"


def test_narrative_is_60_to_200_words() -> None:
    for record in load_records():
        assert 60 <= words(record["narrative"]) <= 200, record["id"]


def test_2_to_5_aspects_with_evidence_quoted_from_narrative() -> None:
    for record in load_records():
        aspects = record["rubric_aspects"]
        assert 2 <= len(aspects) <= 5, f"{record['id']}: {len(aspects)} aspects"
        for aspect in aspects:
            assert aspect["evidence"] in record["narrative"], f"{record['id']}: {aspect['aspect']}"


def test_chosen_and_rejected_are_40_to_150_words_and_different() -> None:
    for record in load_records():
        assert 40 <= words(record["chosen"]) <= 150, f"{record['id']}: chosen"
        assert 40 <= words(record["rejected"]) <= 150, f"{record['id']}: rejected"
        assert record["chosen"].strip() != record["rejected"].strip(), record["id"]


def test_chosen_and_rejected_have_similar_length() -> None:
    for record in load_records():
        ratio = words(record["rejected"]) / words(record["chosen"])
        assert 0.75 <= ratio <= 1.25, f"{record['id']}: rejected/chosen word ratio {ratio:.2f}"


def test_exactly_three_of_each_deliberate_flaw() -> None:
    records = load_records()
    notes = Counter(record["construction_note"] for record in records if "construction_note" in record)
    assert notes == dict.fromkeys(FLAW_VALUES, 3)
    for record in records:
        flagged = FLAW_KEYS & set(record)
        assert flagged in (set(), FLAW_KEYS), f"{record['id']}: note and detail must come together"
        if flagged:
            assert record["construction_detail"].strip(), record["id"]


def test_guidelines_mention_every_quality_label() -> None:
    with STUDY.open("rb") as f:
        study = tomllib.load(f)
    text = GUIDELINES.read_text(encoding="utf-8")
    labels = [label for dimension in study["quality"]["dimensions"] for label in dimension["labels"]]
    assert len(labels) == 15
    missing = [label for label in labels if label not in text]
    assert not missing, f"guidelines lack: {missing}"


def test_sample_imports_cleanly(tmp_path: Path) -> None:
    from annotator.intake.ingest import import_file
    from annotator.store.db import make_engine, upgrade
    from tests.utils.databases import fresh_db_url

    n = len(load_records())
    url = fresh_db_url(tmp_path)
    upgrade(url)
    engine = make_engine(url)
    summary = import_file(engine, PAIRS, study="sample", account=SYSTEM)
    assert summary.imported == n
    assert summary.unchanged == 0
    again = import_file(engine, PAIRS, study="sample", account=SYSTEM)
    assert again.imported == 0
    assert again.unchanged == n
