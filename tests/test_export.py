"""Exports: the label frame (sides, current revisions, pseudonyms), the three formats, CSV formula
neutralization, the pairs round trip through the importer and the statistics round trip."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.intake import ingest
from annotator.people import pseudonyms
from annotator.people.authorization import SYSTEM
from annotator.publish import export
from annotator.review import adjudicate, readers
from annotator.store import db
from annotator.store.models import Assignment, Event, Pair, Study, User
from tests.utils.ratings import (
    ANNOTATORS,
    QUALITY,
    STUDY,
    build_study,
    new_engine,
    rate,
    rate_all,
    record,
)

# ----------------------------------------------------------------------------------------- helpers


def frame(engine: Engine, **kwargs: Any) -> pd.DataFrame:
    with db.session_scope(engine) as session:
        return readers.label_frame(session, study=STUDY, **({"account": SYSTEM} | kwargs))


# ------------------------------------------------------------------------------------- label frame


def test_label_frame_maps_sides_to_chosen_and_rejected(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 2)
    for pair in ("p0", "p1"):
        rate_all(
            engine,
            pair,
            [2, 1, -1],
            chosen={"correctness": 5, "rubric:0": 2},
            rejected={"correctness": 2, "rubric:0": 0},
        )
    df = frame(engine)
    assert list(df.columns) == list(readers.LABEL_COLUMNS)
    assert len(df) == 2 * 3 * 10
    assert set(df["side_chosen"]) == {"A", "B"}  # both sides occur, so the mapping is really exercised
    correctness = df[df["item"] == "correctness"].set_index(["pair_id", "annotator", "response"])["value"]
    assert (correctness.xs("chosen", level="response") == 5).all()
    assert (correctness.xs("rejected", level="response") == 2).all()
    aspect = df[df["item"] == "rubric:0"].groupby("response")["value"].unique()
    assert aspect["chosen"].tolist() == [2.0] and aspect["rejected"].tolist() == [0.0]
    preference = df.drop_duplicates(["pair_id", "annotator"]).set_index(["pair_id", "annotator"])[
        "preference"
    ]
    assert preference.loc["p0"].to_dict() == {"ann1": 2, "ann2": 1, "ann3": -1}
    with Session(engine) as session:
        sides = {
            (pair, name): side
            for pair, name, side in session.exec(
                select(Pair.external_id, User.username, Assignment.chosen_side)
                .join(Pair, Pair.id == Assignment.pair_id)
                .join(User, User.id == Assignment.annotator_id)
            )
        }
    assert dict(df.groupby(["pair_id", "annotator"])["side_chosen"].first().items()) == sides


def test_label_frame_has_only_current_revisions(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 1)
    first = rate(engine, "ann1", "p0", preference=-2, chosen={"helpfulness": 1})
    current = rate(engine, "ann1", "p0", preference=2, chosen={"helpfulness": 5})
    rate(engine, "ann2", "p0", preference=1)
    df = frame(engine)
    mine = df[df["annotator"] == "ann1"]
    assert len(mine) == 10 and set(mine["judgment_id"]) == {current} and first not in set(df["judgment_id"])
    assert set(mine["revision_count"]) == {2}
    assert set(df.loc[df["annotator"] == "ann2", "revision_count"]) == {1}
    assert set(mine["preference"]) == {2}
    helpful = mine[(mine["item"] == "helpfulness") & (mine["response"] == "chosen")]["value"]
    assert helpful.tolist() == [5.0]
    assert "ann3" not in set(df["annotator"])  # a pending assignment has no rows


def test_label_frame_meets_the_analysis_contract(tmp_path: Path) -> None:
    frames = pytest.importorskip("analysis.frames")
    engine = build_study(tmp_path, 2)
    rate_all(engine, "p0", [1, 1, 0], comment="fine")
    df = frame(engine)
    clean = frames.validate_frame(df)
    assert clean["preference"].dtype.kind == "i" and clean["value"].dtype.kind == "f"
    assert df["submitted_at"].dt.tz is not None
    assert df["pair_id"].map(type).eq(str).all()
    assert set(df["comment"]) == {"fine"}
    assert df["time_s"].ge(0).all()


def test_label_frame_tolerates_a_judgment_saved_between_its_two_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = build_study(tmp_path, 1)
    rate_all(engine, "p0", [1, 1])
    late = rate(engine, "ann3", "p0", preference=1)
    read = readers.current_judgments

    def without_late(session: Session, **kwargs: Any) -> pd.DataFrame:
        judgments = read(session, **kwargs)
        return judgments[judgments["judgment_id"] != late].reset_index(drop=True)

    monkeypatch.setattr(readers, "current_judgments", without_late)
    df = frame(engine)
    assert len(df) == 20 and late not in set(df["judgment_id"])


def test_label_frame_of_an_empty_study_has_the_columns(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 1)
    df = frame(engine)
    assert df.empty and list(df.columns) == list(readers.LABEL_COLUMNS)


def test_pseudonymize_is_stable_and_hides_names(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 1)
    rate_all(engine, "p0", [1, 1, 1], comment="ok")
    first = frame(engine, pseudonymize=True)
    again = frame(engine, pseudonymize=True)
    names = frame(engine)
    assert first["annotator"].tolist() == again["annotator"].tolist()
    codes = set(first["annotator"])
    assert len(codes) == 3 and all(c.startswith("R") and len(c) == 11 for c in codes)
    assert not codes & set(ANNOTATORS)
    text = first.to_csv()
    assert not any(name in text for name in ANNOTATORS)
    mapping = dict(zip(names["judgment_id"], names["annotator"], strict=True))
    with Session(engine) as session:
        secret = pseudonyms.study_secret(
            session, session.exec(select(Study).where(Study.name == STUDY)).one()
        )
    assert {pseudonyms.pseudonym(secret, mapping[j]) for j in first["judgment_id"]} == codes
    assert pseudonyms.pseudonym(b"another study's secret", "ann1") != pseudonyms.pseudonym(secret, "ann1")


def test_unknown_study_is_a_clear_error(tmp_path: Path) -> None:
    engine = build_study(tmp_path, 1)
    with db.session_scope(engine) as session, pytest.raises(export.UserError, match="no study called 'nope'"):
        readers.label_frame(session, study="nope", account=SYSTEM)


# ------------------------------------------------------------------------------------------ formats


def _judged_study(tmp_path: Path) -> Engine:
    engine = build_study(tmp_path, 3)
    rate_all(engine, "p0", [1, 2, 1])
    rate_all(engine, "p1", [1, -1, 0], comment='=HYPERLINK("http://evil")')  # no majority
    rate_all(engine, "p2", [0, 0, -1])  # a majority for tie: resolved, not kept
    with db.session_scope(engine) as session:
        adjudicate.auto_resolve(session, study=STUDY, account=SYSTEM)
    return engine


@pytest.mark.parametrize("kind", export.EXPORT_KINDS)
@pytest.mark.parametrize("fmt", export.FORMATS)
def test_every_export_writes_every_format(tmp_path: Path, kind: str, fmt: str) -> None:
    engine = _judged_study(tmp_path)
    path = tmp_path / f"{kind}.{fmt}"
    with db.session_scope(engine) as session:
        rows = export.export(session, export.ExportRequest(STUDY, kind), fmt=fmt, path=path, account=SYSTEM)
    expected = {"labels": 3 * 3 * 10, "adjudicated": 3, "pairs": 3}[kind]
    assert rows == expected
    if fmt == "csv":
        back = pd.read_csv(path)
    elif fmt == "jsonl":
        back = pd.read_json(path, lines=True)
    else:
        back = pd.read_parquet(path)
    assert len(back) == expected
    assert "pair_id" in back.columns or "id" in back.columns
    with Session(engine) as session:
        event = session.exec(select(Event).where(Event.action == "export")).one()
    assert event.detail["kind"] == kind and event.detail["rows"] == expected
    assert event.detail["format"] == fmt and event.detail["by"]


def test_the_audit_record_of_an_export_keeps_its_options(tmp_path: Path) -> None:
    """record_export used to drop `pseudonymized` and `validated_only` (swallowed by **options)."""
    engine = build_study(tmp_path, 2)
    rate_all(engine, "p0", [1, 1, 1])
    with db.session_scope(engine) as session:
        export.export(
            session,
            export.ExportRequest(STUDY, "labels", pseudonymize=True),
            fmt="csv",
            path=tmp_path / "l.csv",
            account=SYSTEM,
        )
        export.export(
            session,
            export.ExportRequest(STUDY, "pairs", validated_only=True),
            fmt="jsonl",
            path=tmp_path / "p.jsonl",
            account=SYSTEM,
        )
    with Session(engine) as session:
        events = session.exec(select(Event).where(Event.action == "export").order_by(Event.id)).all()
    assert [(e.detail["pseudonymized"], e.detail["validated_only"]) for e in events] == [
        (True, False),
        (False, True),
    ]


def test_csv_cells_that_look_like_formulas_are_neutralized(tmp_path: Path) -> None:
    records = [record(0, category="=cmd|' /C calc'!A0"), record(1, category="-1+2"), record(2)]
    engine = build_study(tmp_path, 3, records=records)
    rate(engine, "ann1", "p0", comment='=HYPERLINK("http://evil")', flag=True, flag_reason="@SUM(A1)")
    rate(engine, "ann2", "p2", comment="+danger\tx", preference=-1)
    with db.session_scope(engine) as session:
        labels_df = readers.label_frame(session, study=STUDY, account=SYSTEM)
        pairs = export.pairs_records(session, study=STUDY)
    export.write_frame(labels_df, tmp_path / "l.csv", "csv")
    back = pd.read_csv(tmp_path / "l.csv", dtype=str, keep_default_na=False)
    assert set(back.loc[back["annotator"] == "ann1", "comment"]) == {'\'=HYPERLINK("http://evil")'}
    assert set(back.loc[back["annotator"] == "ann1", "flag_reason"]) == {"'@SUM(A1)"}
    assert set(back.loc[back["annotator"] == "ann2", "comment"]) == {"'+danger\tx"}
    assert set(back.loc[back["pair_id"] == "p0", "category"]) == {"'=cmd|' /C calc'!A0"}
    assert set(back["preference"]) == {"1", "-1"}  # numbers stay numbers: a negative one is no formula
    export.write_frame(pairs, tmp_path / "p.csv", "csv")
    pairs_back = pd.read_csv(tmp_path / "p.csv", dtype=str, keep_default_na=False)
    assert pairs_back.set_index("id").loc["p1", "category"] == "'-1+2"
    assert json.loads(pairs_back.set_index("id").loc["p1", "profile"])[0]["text"] == "Post 0."
    # only CSV is neutralized
    export.write_frame(labels_df, tmp_path / "l.jsonl", "jsonl")
    lines = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert {line["comment"] for line in lines if line["annotator"] == "ann1"} == {'=HYPERLINK("http://evil")'}


def test_csv_neutralizes_tabs_carriage_returns_and_headers(tmp_path: Path) -> None:
    df = pd.DataFrame({"=bad": ["\tfoo", "\rbar", "fine", None], "n": [-1, 2, 3, 4]})
    export.write_frame(df, tmp_path / "x.csv", "csv")
    back = pd.read_csv(tmp_path / "x.csv", dtype=str, keep_default_na=False)
    assert list(back.columns) == ["'=bad", "n"]
    assert back["'=bad"].tolist() == ["'\tfoo", "'\rbar", "fine", ""]
    assert back["n"].tolist() == ["-1", "2", "3", "4"]


def test_neutralize_formula_leaves_safe_values() -> None:
    assert export.neutralize_formula("hello") == "hello"
    assert export.neutralize_formula("") == ""
    assert export.neutralize_formula(-3) == -3
    assert export.neutralize_formula("\rx") == "'\rx"


def test_parquet_pairs_keep_profile_and_rubric_as_lists_of_structs(tmp_path: Path) -> None:
    engine = _judged_study(tmp_path)
    path = tmp_path / "pairs.parquet"
    with db.session_scope(engine) as session:
        export.write_frame(export.pairs_records(session, study=STUDY), path, "parquet")
    schema = pq.read_schema(path)
    for name in ("profile", "rubric_aspects"):
        assert pa.types.is_list(schema.field(name).type)
        assert pa.types.is_struct(schema.field(name).type.value_type)
    assert pa.types.is_struct(schema.field("validation").type)
    table = pq.read_table(path).to_pylist()
    assert table[0]["rubric_aspects"][1] == {
        "aspect": "Aspect 1",
        "reason": "Reason 1",
        "evidence": "Evidence 1",
    }


def test_write_frame_refuses_an_unknown_format_and_an_unwritable_path(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1]})
    with pytest.raises(export.UserError, match="unknown format 'xlsx'"):
        export.write_frame(df, tmp_path / "x.xlsx", "xlsx")
    with pytest.raises(export.UserError, match="cannot write"):
        export.write_frame(df, tmp_path / "missing" / "x.csv", "csv")
    with pytest.raises(export.UserError, match="it is a folder"):
        export.write_frame(df, tmp_path, "csv")
    assert not list(tmp_path.glob(".*.part"))


# ------------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("kind", export.EXPORT_KINDS)
def test_validated_only_keeps_the_kept_pairs_in_every_export(tmp_path: Path, kind: str) -> None:
    engine = _judged_study(tmp_path)  # p0 kept; p1 needs a person; p2 resolved, not kept
    with db.session_scope(engine) as session:
        data = export.build(session, export.ExportRequest(STUDY, kind, validated_only=True), account=SYSTEM)
        every = export.build(session, export.ExportRequest(STUDY, kind), account=SYSTEM)
    ids = [r["id"] for r in data] if kind == "pairs" else list(data["pair_id"].unique())
    assert ids == ["p0"]
    assert len(data) == {"labels": 3 * 10, "adjudicated": 1, "pairs": 1}[kind]
    assert len(every) == 3 * len(data)


@pytest.mark.parametrize("fmt", export.FORMATS)
@pytest.mark.parametrize("kind", export.EXPORT_KINDS)
def test_validated_only_before_any_adjudication_writes_empty_files(
    tmp_path: Path, kind: str, fmt: str
) -> None:
    engine = build_study(tmp_path, 2)
    rate_all(engine, "p0", [1, 2, 1])  # judged, not yet adjudicated: nothing is kept
    with db.session_scope(engine) as session:
        data = export.build(session, export.ExportRequest(STUDY, kind, validated_only=True), account=SYSTEM)
    assert len(data) == 0
    export.to_bytes(data, fmt)


def test_validated_pairs_round_trip_through_the_importer(tmp_path: Path) -> None:
    engine = _judged_study(tmp_path)
    url = engine.url.render_as_string(hide_password=False)
    out_file = tmp_path / "valid.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "export",
            "pairs",
            "--study",
            STUDY,
            "--format",
            "jsonl",
            "--out",
            str(out_file),
            "--validated-only",
            "--db",
            url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote 1 rows to {out_file}"
    exported = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["id"] for r in exported] == ["p0"]  # p1 needs a person, p2 is a tie
    assert exported[0]["validation"] == {
        "method": "unanimous",
        "preference": "chosen",
        "keep": True,
        "agreement": 1.0,
        "n_judgments": 3,
    }
    summary = ingest.import_file(engine, out_file, study="validated", account=SYSTEM)
    assert summary.imported == 1
    with Session(engine) as session:
        original, copy = (
            session.exec(select(Pair).join(Study).where(Study.name == name, Pair.external_id == "p0")).one()
            for name in (STUDY, "validated")
        )
    for field in (
        "external_id",
        "question",
        "profile",
        "rubric",
        "narrative",
        "category",
        "chosen",
        "rejected",
    ):
        assert getattr(copy, field) == getattr(original, field)
    assert copy.meta["source"] == "test" and copy.meta["validation"]["keep"] is True
    assert ingest.import_file(engine, out_file, study="validated", account=SYSTEM).unchanged == 1


def test_all_pair_formats_reimport(tmp_path: Path) -> None:
    engine = _judged_study(tmp_path)
    with db.session_scope(engine) as session:
        records = export.pairs_records(session, study=STUDY)
    assert [r["validation"]["keep"] for r in records] == [True, None, False]
    for fmt in export.FORMATS:
        path = tmp_path / f"pairs.{fmt}"
        export.write_frame(records, path, fmt)
        summary = ingest.import_file(engine, path, study=f"copy-{fmt}", account=SYSTEM)
        assert summary.imported == 3


def test_plain_pairs_export_as_prompt_records(tmp_path: Path) -> None:
    plain = [
        {"id": f"q{i}", "prompt": f"Question {i}?", "chosen": f"Good {i}.", "rejected": f"Bad {i}."}
        for i in range(2)
    ]
    engine = new_engine(tmp_path)
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in plain))
    ingest.import_file(engine, path, study=STUDY, account=SYSTEM)
    with db.session_scope(engine) as session:
        records = export.pairs_records(session, study=STUDY)
    assert records[0]["prompt"] == "Question 0?" and "question" not in records[0]
    assert records[0]["validation"]["method"] == "unresolved"
    export.write_frame(records, tmp_path / "back.jsonl", "jsonl")
    assert ingest.import_file(engine, tmp_path / "back.jsonl", study="again", account=SYSTEM).imported == 2


def _differences(df: pd.DataFrame, item: str) -> pd.Series:
    rows = df[df["item"] == item]
    wide = rows.pivot_table(index=["pair_id", "annotator"], columns="response", values="value")
    return (wide["chosen"] - wide["rejected"]).groupby(level="pair_id").mean().sort_index()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_label_export_round_trip_gives_the_same_statistics(tmp_path: Path, fmt: str) -> None:
    engine = build_study(tmp_path, 6)
    rng = np.random.default_rng(7)
    for k in range(6):
        for name in ANNOTATORS:
            chosen = {d: float(rng.integers(3, 6)) for d in QUALITY} | {"rubric:0": 2.0, "rubric:1": 1.0}
            rejected = {d: float(rng.integers(3, 6)) for d in QUALITY} | {"rubric:0": 0.0}
            rate(engine, name, f"p{k}", preference=int(rng.integers(-2, 3)), chosen=chosen, rejected=rejected)
    direct = frame(engine)
    path = tmp_path / f"labels.{fmt}"
    with db.session_scope(engine) as session:
        export.export(session, export.ExportRequest(STUDY, "labels"), fmt=fmt, path=path, account=SYSTEM)
    try:
        from analysis.label_files import read_labels
    except ImportError:  # pragma: no cover - the analysis package is built in parallel
        back = pd.read_csv(path, dtype={"pair_id": str}) if fmt == "csv" else pd.read_parquet(path)
    else:
        back = read_labels(path)
    assert len(back) == len(direct)
    for item in (*QUALITY, "rubric:0"):
        expected = _differences(direct, item)
        got = _differences(back, item)
        pd.testing.assert_series_equal(got, expected, check_names=False)
    try:
        from analysis.equivalence import tost_paired
    except ImportError:  # pragma: no cover
        return
    for item in QUALITY:
        rows_a = direct[direct["item"] == item].pivot_table(
            index="pair_id", columns="response", values="value"
        )
        rows_b = back[back["item"] == item].pivot_table(index="pair_id", columns="response", values="value")
        a = tost_paired(rows_a["chosen"], rows_a["rejected"], low=-0.5, high=0.5)
        b = tost_paired(rows_b["chosen"], rows_b["rejected"], low=-0.5, high=0.5)
        assert a == b


# ---------------------------------------------------------------------------------------------- CLI


def _cli(engine: Engine, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--db", engine.url.render_as_string(hide_password=False)])


def test_cli_export_labels_pseudonymized(tmp_path: Path) -> None:
    engine = _judged_study(tmp_path)
    out_file = tmp_path / "labels.csv"
    result = _cli(engine, "export", "labels", "--study", STUDY, "--out", str(out_file), "--pseudonymize")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote 90 rows to {out_file}"
    text = out_file.read_text()
    assert not any(name in text for name in ANNOTATORS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", "labels", "--study", "nope", "--format", "csv"], "no study called 'nope'"),
        (["export", "labels", "--study", STUDY, "--format", "xlsx"], "unknown format 'xlsx'"),
        (["export", "everything", "--study", STUDY, "--format", "csv"], "unknown export 'everything'"),
    ],
)
def test_cli_export_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    engine = _judged_study(tmp_path)
    result = _cli(engine, *args, "--out", str(tmp_path / "x.out"))
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.nodb
@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        (["labels", "--push-to-hub", "lab/pairs"], "--push-to-hub: only for `export dataset`"),
        (["pairs", "--license", "mit", "--overwrite"], "--license, --overwrite: only for `export dataset`"),
        (["dataset", "--format", "csv"], "--format: not for `export dataset`"),
    ],
)
def test_an_option_the_export_would_ignore_is_refused_in_one_line(
    tmp_path: Path, args: list[str], refusal: str
) -> None:
    kind, *options = args
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(app, ["export", kind, "--study", STUDY, "--out", str(out), *options])
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if line.strip()][0].startswith(f"error: {refusal}")
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


def test_cli_export_to_an_unwritable_path(tmp_path: Path) -> None:
    engine = _judged_study(tmp_path)
    result = _cli(
        engine, "export", "labels", "--study", STUDY, "--out", str(tmp_path / "no" / "dir" / "x.csv")
    )
    assert result.exit_code == 1
    assert "cannot write" in result.output and "Traceback" not in result.output
