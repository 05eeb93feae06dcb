"""The dataset for the browser: the .zip holds exactly the folder `annotator export dataset` writes;
the push goes through huggingface_hub to a fake Hub (tests/utils/fakehub.py, no network); a bad
token, no network, a full disk and a bad repository id are each one clear line. Making control
pairs has a preview that writes nothing and predicts what the make adds."""

import errno
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from analysis.vocabulary import SWAP
from annotator.errors import UserError
from annotator.intake import controls
from annotator.people.authorization import SYSTEM
from annotator.publish import bundle, dataset
from annotator.store import db
from annotator.store.models import Assignment, Event, Pair
from tests.utils.databases import built_once, copy_of, engine_on
from tests.utils.fakehub import FakeHub, fake_hub
from tests.utils.pagehelpers import HOSTILE_STUDY
from tests.utils.sciencehelpers import simulated_study

TOKEN = "hf_test_token_accepted"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """A fake Hub that huggingface_hub talks to (its endpoint; the token it accepts in $HF_TOKEN; a
    home with no token file)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "hf" / "stored_tokens"))
    with fake_hub(TOKEN) as running:
        monkeypatch.setattr(constants, "ENDPOINT", running.endpoint)
        yield running


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database holding study "s1" and the hostile-named study (6 simulated pairs each), built once."""
    folder = tmp_path_factory.mktemp("bundle")

    def build(engine: Engine) -> None:
        simulated_study(engine, folder, 6)
        simulated_study(engine, folder, 6, study=HOSTILE_STUDY)

    return built_once(folder, build)


@pytest.fixture
def studied(source: str, tmp_path: Path) -> Iterator[Engine]:
    """An engine on this test's copy of `source`."""
    with engine_on(copy_of(source, tmp_path)) as engine:
        yield engine


def _events(engine: Engine, action: str) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Event).where(Event.action == action)).one())


@pytest.mark.derived  # the dataset's files; its labels are read on both engines in test_export
def test_the_zip_holds_the_exported_folder_under_a_safe_name(studied: Engine, tmp_path: Path) -> None:
    out = tmp_path / "folder"
    with db.session_scope(studied) as session:
        dataset.export_dataset(session, study=HOSTILE_STUDY, out=out, account=SYSTEM)
    with db.session_scope(studied) as session:
        payload, rows = bundle.dataset_zip(session, study=HOSTILE_STUDY, account=SYSTEM)
    name = bundle.zip_name(HOSTILE_STUDY)
    assert name == "S_img_src_x_onerror_window.__xss_2_x_2-dataset"
    archive = zipfile.ZipFile(io.BytesIO(payload))
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {n: archive.read(n) for n in archive.namelist()} == {f"{name}/{k}": v for k, v in written.items()}
    assert rows["pairs"] >= 1 and f"{name}/README.md" in archive.namelist()
    assert b"license: cc-by-4.0" in archive.read(f"{name}/README.md")


def test_the_zip_of_a_study_without_validated_pairs_is_one_line(engine: Engine, tmp_path: Path) -> None:
    from tests.utils.factories import make_study

    make_study(engine, tmp_path, 3)
    with db.session_scope(engine) as session, pytest.raises(UserError, match="no validated pairs") as err:
        bundle.dataset_zip(session, study="s1", account=SYSTEM)
    assert "\n" not in str(err.value)


@pytest.mark.derived  # the dataset's files; its labels are read on both engines in test_export
def test_push_uploads_the_dataset_through_the_hub_api(studied: Engine, hub: FakeHub) -> None:
    url = bundle.push_study(studied, study="s1", repo="lab/pairs", account=SYSTEM, private=True)
    assert url == f"{hub.endpoint}/datasets/lab/pairs"
    assert hub.repos == [{"name": "pairs", "organization": "lab", "visibility": "private", "type": "dataset"}]
    with db.session_scope(studied) as session:
        payload, _ = bundle.dataset_zip(session, study="s1", account=SYSTEM)
    archive = zipfile.ZipFile(io.BytesIO(payload))
    expected = {n.split("/", 1)[1]: archive.read(n) for n in archive.namelist()}
    assert hub.files["lab/pairs"] == expected
    assert _events(studied, "export") == 2  # the folder's export and the push, in the audit log
    with Session(studied) as session:
        last = session.exec(select(Event).order_by(col(Event.id).desc())).first()
    assert last is not None and last.detail["target"] == url and last.detail["format"] == "hub"


@pytest.mark.derived  # the dataset's files; its labels are read on both engines in test_export
def test_a_bad_token_is_one_line(studied: Engine, monkeypatch: pytest.MonkeyPatch, hub: FakeHub) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    with pytest.raises(
        UserError, match=r"^upload to lab/pairs failed \(the Hub refused the token: .*401"
    ) as err:
        bundle.push_study(studied, study="s1", repo="lab/pairs", account=SYSTEM)
    assert "\n" not in str(err.value) and hub.files == {}


@pytest.mark.derived  # the dataset's files; its labels are read on both engines in test_export
def test_no_network_is_one_line(studied: Engine, monkeypatch: pytest.MonkeyPatch, hub: FakeHub) -> None:
    from huggingface_hub import constants

    from annotator.server import free_port

    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nobody listens
    with pytest.raises(UserError, match=r"^upload to lab/pairs failed \(no connection to the Hub\?\)") as err:
        bundle.push_study(studied, study="s1", repo="lab/pairs", account=SYSTEM)
    assert "\n" not in str(err.value)


@pytest.mark.derived  # the dataset's files; its labels are read on both engines in test_export
def test_a_full_disk_is_one_line(studied: Engine, monkeypatch: pytest.MonkeyPatch, hub: FakeHub) -> None:

    def full(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(UserError, match=r"^cannot write .*: No space left on device$"):
        bundle.push_study(studied, study="s1", repo="lab/pairs", account=SYSTEM)
    assert hub.requests == [] and _events(studied, "export") == 0


@pytest.mark.parametrize("repo", ["lab", "lab/pairs/x", "<b>x</b>/y", "lab/$x$", " lab/pairs", "-lab/pairs"])
def test_a_bad_repository_id_is_one_line_before_anything_is_sent(
    engine: Engine, tmp_path: Path, hub: FakeHub, repo: str
) -> None:
    with pytest.raises(UserError, match=r"^invalid repository .*; use OWNER/NAME"):
        bundle.push_study(engine, study="s1", repo=repo, account=SYSTEM)
    assert hub.requests == []


def test_a_token_is_configured_by_hf_token_or_the_token_file(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    assert not bundle.hub_token_configured()
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert bundle.hub_token_configured()
    monkeypatch.delenv("HF_TOKEN")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "token").write_text(TOKEN)
    assert bundle.hub_token_configured()


def _counts(engine: Engine) -> tuple[int, int]:
    with Session(engine) as session:
        pairs = session.exec(select(func.count()).select_from(Pair)).one()
        items = session.exec(select(func.count()).select_from(Assignment)).one()
    return int(pairs), int(items)


@pytest.mark.parametrize("kind", list(controls.MAKE_KINDS))
def test_the_controls_preview_writes_nothing_and_predicts_the_make(studied: Engine, kind: str) -> None:
    with db.session_scope(studied) as session:
        from annotator.study import get_study

        row = get_study(session, "s1")
        row.config = {**row.config, "controls": {**row.config.get("controls", {}), "rate": 0.25}}
        session.add(row)
    before = _counts(studied)
    with Session(studied, expire_on_commit=False) as session:
        preview = controls.make_controls_preview(session, study="s1", kind=kind, n=2, seed=1, account=SYSTEM)  # type: ignore[arg-type]
    assert _counts(studied) == before and _events(studied, "controls_make") == 0
    with db.session_scope(studied) as session:
        made = controls.make_controls(session, study="s1", kind=kind, n=2, seed=1, account=SYSTEM)  # type: ignore[arg-type]
    assert made == preview and made.assignments > 0
    assert made.pairs == 2 if kind != SWAP else made.pairs >= 2
    assert _counts(studied) == (before[0] + made.pairs, before[1] + made.assignments)
