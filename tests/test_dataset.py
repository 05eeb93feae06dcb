"""The Hub-ready dataset: a folder datasets.load_dataset reads, its card, and the push path."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.errors import UserError
from annotator.people.authorization import SYSTEM
from annotator.publish import dataset
from annotator.store import db
from annotator.store.models import Event
from tests.utils.databases import fresh_db_url
from tests.utils.factories import make_study
from tests.utils.sciencehelpers import add_models, simulated_study

pytestmark = pytest.mark.derived


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Path]]:
    """One study of 12 pairs with two models, exported once for the tests that only read the folder."""
    tmp_path = tmp_path_factory.mktemp("dataset")
    engine = db.make_engine(fresh_db_url(tmp_path, migrated=True, keep=True))
    db.upgrade(engine)
    simulated_study(engine, tmp_path, 12)
    add_models(engine, tmp_path, 12)
    out = tmp_path / "ds"
    with db.session_scope(engine) as session:
        dataset.export_dataset(session, study="s1", out=out, account=SYSTEM)
    yield engine, out
    engine.dispose()


@pytest.fixture
def folder(exported: tuple[Engine, Path]) -> Path:
    return exported[1]


def test_the_folders_audit_event_says_what_it_holds(exported: tuple[Engine, Path]) -> None:
    """The folder holds only validated pairs with pseudonymized annotators: its export event says so,
    like the .zip and the Hub push (one request for all three)."""
    with Session(exported[0]) as session:
        events = session.exec(select(Event).where(Event.action == "export")).all()
    assert [(e.detail["kind"], e.detail["pseudonymized"], e.detail["validated_only"]) for e in events] == [
        ("dataset", True, True)
    ]


def test_load_dataset_reads_the_validated_pairs(folder: Path) -> None:
    import datasets

    pairs = datasets.load_dataset(str(folder))["test"]
    assert {"id", "question", "profile", "rubric_aspects", "chosen", "rejected", "validation"} <= set(
        pairs.column_names
    )
    assert all(row["validation"]["keep"] for row in pairs)


@pytest.mark.parametrize("config", ["labels", "adjudicated", "predictions"])
def test_every_config_loads(folder: Path, config: str) -> None:
    import datasets

    assert datasets.load_dataset(str(folder), config)["test"].num_rows > 0


def test_labels_are_pseudonymized_and_limited_to_the_validated_pairs(folder: Path) -> None:
    import pandas as pd

    labels = pd.read_parquet(next((folder / "labels").glob("*.parquet")))
    pairs = pd.read_parquet(next((folder / "pairs").glob("*.parquet")))
    assert labels["annotator"].str.match(r"^R[0-9a-f]{8,}$").all()
    assert set(labels["pair_id"]) <= set(pairs["id"])


def test_the_card_has_yaml_metadata_license_and_the_methods(folder: Path) -> None:
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlicense: cc-by-4.0\n")
    assert "- config_name: pairs\n" in card and "  default: true" in card
    assert "## Validation summary" in card
    assert "## Models and the human ceiling" in card and "| strong |" in card


def test_no_validated_pairs_is_one_clear_error(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 3, account=SYSTEM)
    with db.session_scope(engine) as session, pytest.raises(UserError, match="has no validated pairs yet"):
        dataset.export_dataset(session, study="s1", out=tmp_path / "ds", account=SYSTEM)
    assert not (tmp_path / "ds").exists()


def test_a_non_empty_folder_is_not_overwritten(exported: tuple[Engine, Path]) -> None:
    engine, folder = exported
    before = sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("*"))
    with db.session_scope(engine) as session, pytest.raises(UserError, match="exists and is not empty"):
        dataset.export_dataset(session, study="s1", out=folder, account=SYSTEM)
    assert sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("*")) == before


def test_push_without_a_token_fails_with_one_line(
    folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from huggingface_hub import constants

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    with pytest.raises(UserError) as caught:
        dataset.push_to_hub(folder, "someone/pairs")
    assert str(caught.value).startswith("no Hugging Face token is configured")
    assert "\n" not in str(caught.value)


def test_push_uploads_the_folder_as_a_dataset_repo(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    calls: list[tuple[str, dict[str, object]]] = []

    class FakeApi:
        def __init__(self, token: str | None = None) -> None:
            calls.append(("init", {"token": token}))

        def create_repo(self, repo_id: str, **kwargs: object) -> None:
            calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

        def upload_folder(self, **kwargs: object) -> None:
            calls.append(("upload_folder", kwargs))

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    url = dataset.push_to_hub(folder, "someone/pairs", token="hf_fake")
    assert url == "https://huggingface.co/datasets/someone/pairs"
    assert calls[1] == (
        "create_repo",
        {"repo_id": "someone/pairs", "repo_type": "dataset", "private": False, "exist_ok": True},
    )
    assert calls[2][1]["folder_path"] == str(folder) and calls[2][1]["repo_type"] == "dataset"


def test_cli_export_dataset_push_without_token_is_one_line(
    env_db: str, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants
    from typer.testing import CliRunner

    from annotator.cli import app

    simulated_study(engine, tmp_path, 8)
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    out = tmp_path / "ds"
    args = ["export", "dataset", "--study", "s1", "--out", str(out), "--push-to-hub", "me/pairs"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "no Hugging Face token is configured" in result.output and "Traceback" not in result.output
    assert (out / "README.md").is_file()


def test_a_new_export_under_the_same_folder_name_loads_its_own_rows(engine: Engine, tmp_path: Path) -> None:
    import datasets

    from annotator.review import predictions
    from tests.utils.factories import write_jsonl

    simulated_study(engine, tmp_path, 12)
    add_models(engine, tmp_path, 12)
    counts = []
    for place in ("first", "second"):
        out = tmp_path / place / "ds"  # the same folder name: datasets' cache must not mix them up
        with db.session_scope(engine) as session:
            dataset.export_dataset(session, study="s1", out=out, account=SYSTEM)
        counts.append(datasets.load_dataset(str(out), "predictions")["test"].num_rows)
        path = write_jsonl(
            tmp_path / "third.jsonl", [{"id": f"pair-{i}", "choice": "chosen"} for i in range(12)]
        )
        predictions.import_predictions(engine, path, study="s1", model="third", account=SYSTEM)
    assert counts[1] > counts[0]


def test_overwrite_mends_what_a_killed_export_left(engine: Engine, tmp_path: Path) -> None:
    """Killed between the two moves: the old folder lies aside and `out` is gone. The next export puts
    it back (then replaces it), deletes the leftovers (staging and aside copies) and says so; a folder
    of someone else's with a similar name is never touched."""
    simulated_study(engine, tmp_path, 12)
    out = tmp_path / "ds"
    with db.session_scope(engine) as session:
        dataset.export_dataset(session, study="s1", out=out, account=SYSTEM)
    card = (out / "README.md").read_text(encoding="utf-8")
    (out).rename(tmp_path / ".ds.old.abcd1234")  # the old folder moved aside, the new one never came
    (tmp_path / ".ds.zz9_yy8x").mkdir()  # an empty staging folder
    (tmp_path / ".ds.old.keepmine").mkdir()
    (tmp_path / ".ds.old.keepmine" / "notes.txt").write_text("mine", encoding="utf-8")
    with db.session_scope(engine) as session, pytest.raises(UserError) as refused:
        dataset.export_dataset(session, study="s1", out=out, account=SYSTEM)
    assert "restored the previous ds" in str(refused.value) and "pass --overwrite" in str(refused.value)
    assert (out / "README.md").read_text(encoding="utf-8") == card
    (tmp_path / ".ds.old.efgh5678").mkdir()  # another leftover from a second killed run
    with db.session_scope(engine) as session:
        summary = dataset.export_dataset(session, study="s1", out=out, account=SYSTEM, overwrite=True)
    assert "removed 1 folder(s) an interrupted export left beside ds" in str(summary)
    hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".ds."))
    assert hidden == [".ds.old.keepmine"]
    assert dataset._dataset_folder_problem(out) is None
