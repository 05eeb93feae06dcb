"""The run-time defaults (study.toml, guidelines) ship inside the package: a wheel installed anywhere
imports pairs without --config and shows the real guidelines."""

import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from annotator import study
from annotator.errors import UserError
from annotator.rating import guidelines

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

ROOT = Path(__file__).resolve().parents[1]


def test_the_checkout_copies_are_the_package_defaults() -> None:
    for name in ("study.toml", "guidelines.md"):
        shipped = (study.DEFAULT_CONFIG if name == "study.toml" else guidelines.DEFAULT_GUIDELINES).read_text(
            encoding="utf-8"
        )
        assert (ROOT / "data" / name).read_text(encoding="utf-8") == shipped
        assert (ROOT / "annotator" / "defaults" / name).read_text(encoding="utf-8") == shipped


def test_the_default_config_and_guidelines_are_read_from_the_package() -> None:
    assert study.load_config() == study.parse_config(
        tomllib.loads(study.DEFAULT_CONFIG.read_text(encoding="utf-8"))
    )
    assert guidelines.guidelines_text().startswith("# Annotator guidelines")


def test_an_unreadable_guidelines_file_is_an_error_not_a_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(guidelines.ENV_VAR, str(tmp_path / "missing.md"))
    with pytest.raises(UserError, match="cannot read the guidelines"):
        guidelines.guidelines_text()


def _run(argv: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_an_installed_wheel_imports_pairs_without_a_config(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("annotator", "analysis"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANNOTATOR_DB_URL")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
        cwd=tmp_path,
        env=env,
    )
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob("*.whl"))
    app = ROOT / "annotator" / "app"
    shipped = set(zipfile.ZipFile(wheel).namelist())
    for path in [*(app / "static").iterdir(), *(app / "views").glob("*.py")]:  # the pages and their files
        assert path.relative_to(ROOT).as_posix() in shipped, f"{path.name} is not in the wheel"
    environment = tmp_path / "venv"
    venv.create(environment, system_site_packages=True, with_pip=False)  # this pip installs into it
    python = environment / "bin" / "python"
    installed = _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        cwd=tmp_path,
        env=env,
    )
    assert installed.returncode == 0, installed.stderr

    work = tmp_path / "elsewhere"  # no data/ folder anywhere near: only the package's files
    work.mkdir()
    demo_files = (
        "import json, annotator.demo as d; print(json.dumps([str(d.SAMPLE), str(d.DEMO_DB.resolve())]))"
    )
    found = _run([str(python), "-c", demo_files], cwd=work, env=env)
    assert found.returncode == 0, found.stderr
    sample, demo_db = map(Path, json.loads(found.stdout))
    assert sample.is_relative_to(environment) and sample.is_file(), sample  # the demo's pairs are shipped
    assert demo_db == work / "data" / "demo.db"  # and its database is made where the user works
    url = f"sqlite:///{work / 'study.db'}"
    cli = [str(python), "-m", "annotator", "--db", url]
    assert _run([*cli, "init"], cwd=work, env=env).returncode == 0
    imported = _run([*cli, "import", str(sample), "--study", "s"], cwd=work, env=env)
    assert imported.returncode == 0, imported.stderr
    assert "study 's': imported 39" in imported.stdout
    probe = (
        "import json, sqlite3, sys, annotator, annotator.rating.guidelines as g\n"
        "config = sqlite3.connect(sys.argv[1]).execute('select config from study').fetchone()[0]\n"
        "print(json.dumps([annotator.__file__, g.guidelines_text().splitlines()[0], json.loads(config)]))"
    )
    found = _run([str(python), "-c", probe, str(work / "study.db")], cwd=work, env=env)
    assert found.returncode == 0, found.stderr
    location, first_line, config = json.loads(found.stdout)
    assert Path(location).is_relative_to(environment), location  # the wheel's copy, not the checkout
    assert first_line == "# Annotator guidelines"
    assert config == study.load_config().model_dump(mode="json")
