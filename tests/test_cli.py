"""The `annotator` command line: where the database comes from, and how mistakes are reported."""

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner, Result

from annotator.cli import app
from annotator.store import db
from annotator.store.models import User
from tests.utils.databases import fresh_db_url
from tests.utils.factories import make_record, make_records, write_jsonl

runner = CliRunner()
PASSWORD = "s3cret-passw0rd"


def invoke(args: list[str]) -> Result:
    """Run the CLI; a password after --password goes to stdin (the CLI never takes it as an argument)."""
    args = list(args)
    stdin = None
    if "--password" in args:
        at = args.index("--password")
        if at + 1 < len(args) and not args[at + 1].startswith("--"):
            stdin = args.pop(at + 1) + "\n"
    return runner.invoke(app, args, input=stdin)


def _usernames(url: str) -> list[str]:
    engine = db.make_engine(url)
    with Session(engine) as session:
        names = list(session.exec(select(User.username)))
    engine.dispose()
    return names


def test_db_as_a_global_option(db_url: str) -> None:
    result = runner.invoke(app, ["--db", db_url, "init"])
    assert result.exit_code == 0, result.output
    assert invoke(["--db", db_url, "users", "add", "alice", "--password", PASSWORD]).exit_code == 0
    assert _usernames(db_url) == ["alice"]


def test_db_as_a_command_option(db_url: str) -> None:
    assert runner.invoke(app, ["init", "--db", db_url]).exit_code == 0
    result = invoke(["users", "add", "alice", "--password", PASSWORD, "--db", db_url])
    assert result.exit_code == 0, result.output
    assert _usernames(db_url) == ["alice"]


def test_the_command_option_wins_over_the_global_one(db_url: str, tmp_path: Path) -> None:
    other = fresh_db_url(tmp_path, "other")
    for url in (db_url, other):
        runner.invoke(app, ["init", "--db", url])
    invoke(["--db", other, "users", "add", "alice", "--password", PASSWORD, "--db", db_url])
    assert (_usernames(db_url), _usernames(other)) == (["alice"], [])


def test_the_global_option_does_not_leak_into_the_next_call(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = fresh_db_url(tmp_path, "other")
    runner.invoke(app, ["--db", other, "init"])
    monkeypatch.setenv(db.ENV_VAR, db_url)
    assert runner.invoke(app, ["init"]).exit_code == 0
    invoke(["users", "add", "alice", "--password", PASSWORD])
    assert (_usernames(db_url), _usernames(other)) == (["alice"], [])


def test_the_url_comes_from_the_environment(env_db: str) -> None:
    result = invoke(["users", "add", "alice", "--password", PASSWORD])
    assert result.exit_code == 0, result.output
    assert _usernames(env_db) == ["alice"]


@pytest.mark.nodb  # no database
def test_python_dash_m_annotator_help(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "annotator", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    for command in ("init", "import", "users", "assign"):
        assert command in result.stdout


HEAVY = ("sqlalchemy", "sqlmodel", "alembic", "pandas", "numpy", "scipy", "pyarrow", "streamlit")
LOADED = (
    "import sys\nfrom annotator.cli import main\nsys.argv = ['annotator', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    f"print(','.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))), file=sys.stderr)"
)


@pytest.mark.nodb  # no database
@pytest.mark.parametrize(
    "args", [["--help"], ["users", "--help"], ["analyze", "--help"], ["serve", "--help"]]
)
def test_help_loads_neither_the_database_nor_the_statistics_stack(args: list[str]) -> None:
    """Commands import what they use when they run: `--help` loads Typer and Rich only."""
    result = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=60)
    assert "Usage" in result.stdout, result.stderr
    assert result.stderr.strip().splitlines()[-1:] in ([], [""]), result.stderr


@pytest.mark.sqlite_only
def test_long_output_lines_are_not_wrapped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / ('a-long-folder-name-' * 6)}/annotations.db"
    result = runner.invoke(app, ["init", "--db", url])
    assert result.exit_code == 0, result.output
    assert f"database {url} at schema" in result.stdout


# -------------------------------------------------------------------------------- user mistakes: one line


def _bad_file(folder: Path) -> Path:
    return write_jsonl(folder / "pairs.jsonl", [make_record(0, chosen="")])


MISTAKES: dict[str, tuple[list[str], str]] = {
    "not initialised": (["users", "list"], "run `annotator init` first"),  # SQLite: no file yet
    "bad url": (["--db", "not a url", "init"], "not a database URL"),
    "missing file": (["import", "{tmp}/absent.jsonl", "--study", "s"], "no such file"),
    "unknown extension": (["import", "{tmp}/pairs.xlsx", "--study", "s"], "unknown file type"),
    "missing config": (
        ["import", "{tmp}/ok.jsonl", "-s", "s", "--config", "{tmp}/no.toml"],
        "no such config",
    ),
    "unknown study": (["assign", "--study", "nope", "--overlap", "1"], "no study called 'nope'"),
    "bad username": (["users", "add", "two words", "--password", PASSWORD], "invalid username"),
    "unknown role": (["users", "add", "bob", "--role", "king", "--password", PASSWORD], "unknown role"),
    "short password": (["users", "add", "bob", "--password", "short"], "at least 8 characters"),
    "unknown user": (["users", "deactivate", "ghost"], "no user called 'ghost'"),
}


@pytest.mark.parametrize("case", list(MISTAKES))
def test_a_user_mistake_is_one_line_and_exit_1(case: str, db_url: str, tmp_path: Path) -> None:
    args, message = MISTAKES[case]
    if case != "not initialised":
        runner.invoke(app, ["init", "--db", db_url])
    write_jsonl(tmp_path / "ok.jsonl", make_records(1))
    (tmp_path / "pairs.xlsx").write_bytes(b"PK\x03\x04")  # a file there, of a type the importer does not read
    result = invoke(["--db", db_url, *[a.replace("{tmp}", str(tmp_path)) for a in args]])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert message in lines[0]


@pytest.mark.sqlite_only  # PostgreSQL's JSON column refuses the broken value the test writes
def test_a_row_broken_outside_the_tool_is_one_line_unless_debugging(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault no check foresaw (here a study's settings edited into invalid JSON by hand) is one line
    naming the error, never a traceback; ANNOTATOR_DEBUG=1 lets the traceback through."""
    assert invoke(["--db", db_url, "init"]).exit_code == 0
    pairs = write_jsonl(tmp_path / "ok.jsonl", make_records(2))
    assert invoke(["--db", db_url, "import", str(pairs), "--study", "s"]).exit_code == 0
    engine = db.make_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE study SET config = '{bad'"))
    engine.dispose()
    result = invoke(["--db", db_url, "assign", "--study", "s", "--overlap", "1"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("unexpected error: JSONDecodeError: "), result.stderr
    assert "ANNOTATOR_DEBUG=1" in lines[0]
    monkeypatch.setenv("ANNOTATOR_DEBUG", "1")
    debugged = invoke(["--db", db_url, "assign", "--study", "s", "--overlap", "1"])
    assert type(debugged.exception).__name__ == "JSONDecodeError"


@pytest.mark.nodb
@pytest.mark.parametrize(
    ("url", "said"),
    [("bogus://x", "no database kind 'bogus'"), ("postgresql+nodriver://x/y", "postgresql+nodriver")],
)
def test_an_unknown_database_kind_is_one_line(url: str, said: str) -> None:
    result = invoke(["--db", url, "users", "list"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.stderr


@pytest.mark.nodb
@pytest.mark.parametrize("address", ["http://x\x1b[2J", "http://[::1", "http://host/a\u202eb"])
def test_a_base_url_that_is_no_address_is_refused_without_traceback(address: str) -> None:
    result = invoke(["owners", "link", "dave", "--study", "s", "--base-url", address])
    assert result.exit_code == 2 and result.exception is not None and "Traceback" not in result.output
    assert "must be an http:// or https:// address" in " ".join(result.output.split())


@pytest.mark.nodb
def test_the_terminal_shows_bidirectional_and_zero_width_characters_as_escapes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A pair id or name from a file reaches tables and lines the CLI prints: a right-to-left override
    would reorder what follows it, a zero-width space hide a difference; both are shown escaped."""
    from annotator.cli.common import err, out

    out.print("pair rtl\u202eevil", highlight=False)
    err.print("model x\u200by", highlight=False)
    captured = capsys.readouterr()
    assert captured.out == "pair rtl\\u202eevil\n" and captured.err == "model x\\u200by\n"


def test_a_bad_pair_file_lists_its_problems_without_traceback(env_db: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", str(_bad_file(tmp_path)), "--study", "s"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.stderr.lstrip().startswith("error: ")
    assert "line 1, field chosen: empty" in result.stderr


def test_a_newer_schema_is_one_line(env_db: str, engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = 'zzzz'"))
    result = runner.invoke(app, ["users", "list"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "newer than this version" in result.stderr


def test_a_missing_option_is_a_usage_error_without_traceback(env_db: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "--study" in result.output


def _number_options() -> list[tuple[list[str], str]]:
    """(the command's words and its required values, the option) for every float option of every command."""
    import typing

    import typer

    found: list[tuple[list[str], str]] = []

    def walk(command: typing.Any, words: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*words, name])
            return
        required: list[str] = []
        for param in command.params:
            if param.param_type_name == "argument":
                required.append("x")
            elif param.required:
                required += [param.opts[0], "x"]
        for param in command.params:
            annotation = param.type_descriptor.annotation
            if param.param_type_name == "option" and float in (annotation, *typing.get_args(annotation)):
                found.append(([*words, *required], param.opts[0]))

    walk(typer.main.get_command(app), [])
    return found


NUMBER_OPTIONS = _number_options()


def test_every_command_with_a_number_option_is_walked() -> None:
    options = {(words[0], option) for words, option in NUMBER_OPTIONS}
    expected = {("power", "--margin"), ("simulate", "--noise"), ("owners", "--days"), ("users", "--days")}
    assert expected <= options


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize(("words", "option"), NUMBER_OPTIONS, ids=lambda v: v if isinstance(v, str) else v[0])
def test_every_number_option_refuses_nan_and_infinity_before_anything_runs(
    words: list[str], option: str, value: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"
    result = runner.invoke(app, ["--db", url, *words, option, value])
    assert result.exit_code == 2, (words, option, result.output)
    assert option in result.output and not (tmp_path / "never.db").exists()


@pytest.mark.parametrize("days", ["0", "-1", "3651", "1e9"])
def test_a_link_lifetime_outside_ten_years_is_one_line(days: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"
    result = runner.invoke(app, ["--db", url, "users", "link", "ann", "--days", days])
    assert result.exit_code == 1 and "--days must be positive and at most 3650" in result.output


@pytest.mark.parametrize(
    "address",
    [
        "javascript:alert(1)",
        "http://a b",
        "ftp://host",
        "localhost:8501",
        "https://",
        # the link appends "/?token=...": it landed in the fragment or a second query (a dead link)
        "http://a.b/path?q=1",
        "http://a.b/#frag",
        "http://a.b:99999",  # no port
        "http://a.b:0",
    ],
)
@pytest.mark.parametrize("words", [["users", "link", "ann"], ["owners", "link", "alice", "--study", "s"]])
def test_a_link_to_an_address_its_user_could_not_open_is_refused(
    words: list[str], address: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"
    result = runner.invoke(app, ["--db", url, *words, "--base-url", address])
    said = " ".join(result.output.replace("│", " ").split())  # the error box wraps its lines
    assert result.exit_code == 2 and "must be an http:// or https:// address with a host" in said
    assert not (tmp_path / "never.db").exists()


def test_a_command_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.power

    def too_big(**_: object) -> None:
        raise MemoryError("Unable to allocate 745. GiB")

    monkeypatch.setattr(analysis.power, "pairs_needed", too_big)
    result = runner.invoke(app, ["power", "--no-check"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip() == "error: not enough memory for this; nothing partial was saved"
