"""Hostile names in the outputs: the dataset card (YAML by PyYAML, Markdown escaped, the report's own
numbers), the Markdown report (one escaping rule with the HTML report), and `export dataset
--overwrite` (atomic, and only over a dataset folder this tool wrote)."""

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sqlalchemy.engine import Engine

from analysis.render import escape_text, to_html, to_markdown
from analysis.report import ReportSettings, build_report
from annotator.errors import UserError
from annotator.people.authorization import SYSTEM
from annotator.publish import dataset
from annotator.review import predictions
from annotator.review.study_report import study_report
from annotator.store import db
from tests.utils.databases import fresh_db_url
from tests.utils.factories import write_jsonl
from tests.utils.sciencehelpers import simulated_study

pytestmark = pytest.mark.derived

STUDY = "pilot: v2 # {not: yaml} [x]"
HOSTILE_MODEL = "<img src=x onerror=alert(1)> ![t](http://attacker.example/t.png) *m*|x"
# Markup that would do something if it were rendered rather than shown.
LIVE = re.compile(r"(?<!\\)<(img|script)|(?<!\\)!(?<!\\)\[|(?<!\\)\]\(http")


def _export(engine: Engine, out: Path, *, overwrite: bool = False) -> Path:
    with db.session_scope(engine) as session:
        dataset.export_dataset(session, study=STUDY, out=out, account=SYSTEM, overwrite=overwrite)
    return out


@dataclass(frozen=True)
class Exported:
    engine: Engine
    folder: Path  # the dataset folder of the hostile study, written once for the module
    card: str


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    """A study whose name is full of YAML, with a model whose name is full of markup, exported once."""
    base = tmp_path_factory.mktemp("hostile-study")
    engine = db.make_engine(fresh_db_url(base, migrated=True, keep=True))
    db.upgrade(engine)
    simulated_study(engine, base, 12, study=STUDY)
    choices = [{"id": f"pair-{i}", "choice": "chosen" if i % 3 else "rejected"} for i in range(12)]
    path = write_jsonl(base / "model.jsonl", choices)
    predictions.import_predictions(engine, path, study=STUDY, model=HOSTILE_MODEL, account=SYSTEM)
    folder = _export(engine, base / "ds")
    yield Exported(engine, folder, (folder / "README.md").read_text(encoding="utf-8"))
    engine.dispose()


def _copy(exported: Exported, tmp_path: Path) -> Path:
    return Path(shutil.copytree(exported.folder, tmp_path / "ds"))


def test_the_card_of_a_study_with_yaml_characters_in_its_name_loads(exported: Exported) -> None:
    import datasets

    metadata = yaml.safe_load(exported.card.split("---\n", 2)[1])
    assert metadata["pretty_name"] == f"{STUDY} (validated pairs)"
    assert metadata["configs"][0]["config_name"] == "pairs" and metadata["configs"][0]["default"] is True
    assert datasets.load_dataset(str(exported.folder))["test"].num_rows > 0


def test_the_card_shows_model_names_as_text(exported: Exported) -> None:
    body = exported.card.split("---\n", 2)[2]
    assert escape_text(HOSTILE_MODEL, "markdown") in body
    assert escape_text(STUDY, "markdown") in body
    assert not LIVE.search(body), LIVE.search(body)
    rows = [line for line in body.splitlines() if "onerror" in line]
    assert rows and all(line.count("|") - line.count("\\|") == 5 for line in rows)  # 4 cells, one row


def test_the_card_takes_the_reports_numbers(exported: Exported) -> None:
    body = exported.card
    with db.session_scope(exported.engine) as session:
        report = study_report(session, study=STUDY, account=SYSTEM)  # as `annotator analyze` builds it
    for verdict in report.verdicts:
        assert escape_text(verdict.detail, "markdown") in body
    assert report.benchmark is not None
    accuracy = report.benchmark.accuracy
    model = accuracy[(accuracy["source"] == HOSTILE_MODEL) & (accuracy["category"] == "(all)")].iloc[0]
    assert f"{model['ci_low']:.3f} - {model['ci_high']:.3f}" in body


def test_overwrite_refuses_a_folder_this_tool_did_not_write(exported: Exported, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's notes", encoding="utf-8")
    with pytest.raises(UserError, match="not a dataset folder written by"):
        _export(exported.engine, mine, overwrite=True)
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "a user's notes"
    copy = _copy(exported, tmp_path)
    (copy / "notes.txt").write_text("added later", encoding="utf-8")  # a dataset with a user's file in it
    with pytest.raises(UserError, match="notes.txt"):
        _export(exported.engine, copy, overwrite=True)
    assert (copy / "notes.txt").is_file()
    (copy / "notes.txt").unlink()
    (copy / "README.md").write_text("# my own notes\n", encoding="utf-8")  # not a card of this tool
    with pytest.raises(UserError, match="not a dataset card"):
        _export(exported.engine, copy, overwrite=True)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing staged is left


def test_overwrite_is_atomic(exported: Exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _copy(exported, tmp_path)
    # this test is about the folders, not the statistics: the card's report text is not rebuilt
    monkeypatch.setattr(dataset, "_report_text", lambda *_: dataset._ReportText("(not rebuilt)"))
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    real_replace, real_rmtree = os.replace, shutil.rmtree

    def full_disk(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == out and ".old." not in Path(src).name:  # the new folder moving in
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(dataset.os, "replace", full_disk)
    with pytest.raises(UserError, match="No space left"):
        _export(exported.engine, out, overwrite=True)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before  # the old one is back
    monkeypatch.setattr(dataset.os, "replace", real_replace)

    complete_at_delete: list[bool] = []

    def rmtree(path: str | Path, *args: object, **kwargs: object) -> None:
        complete_at_delete.append((out / "README.md").is_file())  # some dataset is in place
        real_rmtree(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(dataset.shutil, "rmtree", rmtree)
    _export(exported.engine, out, overwrite=True)
    assert complete_at_delete and all(complete_at_delete)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


HOSTILE_TEXTS = {
    "annotator": "<script>alert(1)</script>",
    "category": "cook<img src=x onerror=alert(1)>\n| injected | row |\n![x](http://attacker.example/c.png)",
}


def _hostile_frame() -> pd.DataFrame:
    import numpy as np

    from analysis.simulation import SimDesign, simulate_frame

    frame = simulate_frame(np.random.default_rng(2), SimDesign(n_pairs=8, per_pair=3))
    first = frame["annotator"] == frame["annotator"].iloc[0]
    frame.loc[first, "annotator"] = HOSTILE_TEXTS["annotator"]
    frame["category"] = HOSTILE_TEXTS["category"]
    return frame


def test_the_markdown_report_shows_pair_file_text_as_text() -> None:
    report = build_report(_hostile_frame(), study="<b>s</b>", settings=ReportSettings(n_boot=50))
    markdown = to_markdown(report)
    assert not LIVE.search(markdown), LIVE.search(markdown)
    assert "<b>" not in markdown and "| injected | row |" not in markdown
    for text in HOSTILE_TEXTS.values():
        assert escape_text(text, "markdown") in markdown
    html = to_html(report)
    assert "<img src=x" not in html and "<script>alert" not in html and "&lt;b&gt;s&lt;/b&gt;" in html
    assert escape_text(HOSTILE_TEXTS["annotator"], "html") in html
