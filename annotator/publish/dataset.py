"""A Hub-ready dataset folder: the validated pairs, the human and adjudicated labels, the model
predictions (Parquet) and a dataset card; optionally uploaded with huggingface_hub.

The folder loads with ``datasets.load_dataset(DIR)`` (the validated pairs, the default config) and
``datasets.load_dataset(DIR, "labels")`` / ``"adjudicated"`` / ``"predictions"``: the card's YAML
``configs`` list names each config's Parquet file. Annotators appear only as stable pseudonyms.
"""

import hashlib
import math
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from analysis.scale import Scale
from annotator.errors import UserError, os_failure
from annotator.people.authorization import Account, require_role
from annotator.publish import export
from annotator.review.predictions import prediction_frame
from annotator.review.readers import label_frame
from annotator.study import StudyConfig, get_study, study_config

__all__ = [
    "CONFIGS",
    "DatasetContents",
    "DatasetSummary",
    "dataset_card",
    "dataset_contents",
    "dataset_request",
    "export_dataset",
    "check_repo",
    "publish",
    "push_to_hub",
]

#: The dataset's configs, in the card's order (the first is the default).
CONFIGS: tuple[str, ...] = ("pairs", "labels", "adjudicated", "predictions")
SPLIT = "test"
DEFAULT_LICENSE = "cc-by-4.0"
NO_TOKEN = (
    "no Hugging Face token is configured: run `hf auth login` or set HF_TOKEN, then push again "
    "(the dataset folder {folder} is ready)"
)


@dataclass(frozen=True)
class DatasetSummary:
    """What an export wrote: rows per config, the folder, and (after a push) the repository URL."""

    study: str
    folder: Path
    rows: dict[str, int]
    url: str = ""
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was mended first (an interrupted run's folders)

    def __str__(self) -> str:
        counts = ", ".join(f"{name} {n}" for name, n in self.rows.items())
        text = f"study {self.study!r}: wrote {self.folder} ({counts})"
        if self.skipped:
            text += f"; no rows for {', '.join(self.skipped)}"
        text += "".join(f"; {note}" for note in self.notes)
        return text + (f"; pushed to {self.url}" if self.url else "")


def _file(config: str, payload: bytes) -> str:
    """The Parquet file of a config, named after its content (as the Hub names converted files):
    `datasets` caches a local folder by its name and the card's paths, so a re-export with other
    content under the same folder name must change the paths, or load_dataset returns the old rows."""
    return f"{config}/{SPLIT}-00000-of-00001-{hashlib.sha256(payload).hexdigest()[:16]}.parquet"


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns Arrow can type: datetimes as ISO text, mixed object columns as text (None kept)."""
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(column):
            out[name] = column.map(lambda v: None if pd.isna(v) else pd.Timestamp(v).isoformat()).astype(
                object
            )
        elif column.dtype == object:
            kinds = {
                type(v) for v in column if v is not None and not (isinstance(v, float) and math.isnan(v))
            }
            if len(kinds) > 1 or (kinds and not kinds <= {str, bool, int, float}):
                out[name] = column.map(lambda v: None if v is None or v is pd.NA else str(v)).astype(object)
    return out


def _tables(session: Session, study: str, account: Account, config: StudyConfig) -> dict[str, Any]:
    final = export.adjudicated_frame(session, study=study, pseudonymize=True)  # read once, used twice
    pairs = export.pairs_records(session, study=study, validated_only=True, final=final)
    kept = {record["id"] for record in pairs}
    labels = label_frame(session, study=study, pseudonymize=True, account=account)
    labels = export.with_scales(labels[labels["pair_id"].isin(kept)].reset_index(drop=True), config)
    final = final[final["pair_id"].isin(kept)].reset_index(drop=True)
    predictions = prediction_frame(session, study=study, account=account)
    predictions = predictions[predictions["pair_id"].isin(kept)].reset_index(drop=True)
    return {"pairs": pairs, "labels": labels, "adjudicated": final, "predictions": predictions}


@dataclass(frozen=True)
class _ReportText:
    """What the card takes from the study's validation report (the one `annotator analyze` writes)."""

    validation: str
    methods: str = ""
    benchmark: pd.DataFrame = field(default_factory=pd.DataFrame)


def _report_text(session: Session, study: str, account: Account) -> _ReportText:
    """The verdicts, the methods paragraph and the models-vs-people accuracy of the study's report,
    built exactly as `annotator analyze --study S` builds it (same resamples, same seed), so the card
    and the report never give two numbers for one thing."""
    from analysis.science.ceiling import ALL
    from annotator.review.study_report import study_report

    try:
        report = study_report(session, study=study, account=account)
    except (UserError, ValueError) as exc:  # too few judgments for the statistics
        return _ReportText(f"No validation report: {_md(exc)}.")
    from analysis.render import methods_paragraph, status_word

    lines = [f"**Overall: {report.overall}** ({_md(report.overall_reason)})", ""]
    lines += [
        f"- **{status_word(v)}** {_md(v.claim)} ({_md(v.test)}): {_md(v.detail)}" for v in report.verdicts
    ]
    lines += _judges_lines(report)
    benchmark = pd.DataFrame()
    if report.benchmark is not None and not report.benchmark.accuracy.empty:
        accuracy = report.benchmark.accuracy
        overall = (accuracy["category"] == ALL) & (accuracy["kind"] != "annotator")
        benchmark = accuracy[overall].reset_index(drop=True)
    return _ReportText("\n".join(lines), _md(methods_paragraph(report)), benchmark)


def _md(value: Any) -> str:
    """A text from the data as inert Markdown (the reports' one escaping rule)."""
    from analysis.render import escape_text

    return escape_text(value, "markdown")


def _judges_lines(report: Any) -> list[str]:
    """The LLM judges' alternative annotator test for the card (none without judge ratings)."""
    section = report.judges
    if section is None or section.table.empty:
        return []
    p = section.parameters
    lines = [
        "",
        "### LLM judges: can a judge replace an annotator?",
        "",
        "The alternative annotator test (Calderon, Reichart & Dror, ACL 2025) on the study's main pairs, "
        f"epsilon {p['epsilon']:g} ({p.get('epsilon_basis', '')}); judge ratings are not part of the "
        "human labels.",
        "",
        "| judge | item | pairs | winning rate | advantage probability | can replace |",
        "|---|---|---|---|---|---|",
    ]
    for row in section.table.itertuples():
        verdict = {True: "yes", False: "no"}.get(row.can_replace, "no verdict")
        lines.append(
            f"| {_md_cell(row.judge)} | {_md_cell(row.item)} | {row.n_pairs} | "
            f"{_md_cell(row.winning_rate)} | {_md_cell(row.advantage_probability)} | {verdict} |"
        )
    return lines


def _md_cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3f}"
    return _md(value)


def dataset_card(
    *,
    study: str,
    rows: dict[str, int],
    license_id: str,
    validation: str,
    methods: str,
    benchmark: pd.DataFrame,
    n_pairs_total: int,
    files: dict[str, str],
    scales: Mapping[str, Scale] | None = None,
) -> str:
    """The README.md of the dataset: YAML metadata (license, configs: `files` maps each config with
    rows to its Parquet path) written by PyYAML, then the summary, the quality scales (`scales`, given
    when the dimensions do not share one) and the methods in Markdown, every text from the data escaped
    (`validation` and `methods` come escaped)."""
    import yaml

    configs = [name for name in CONFIGS if rows.get(name)]
    metadata: dict[str, Any] = {
        "license": license_id,
        "language": ["en"],
        "pretty_name": f"{study} (validated pairs)",
        "task_categories": ["text-classification"],
        "tags": ["preference", "reward-modeling", "personalization", "human-evaluation"],
        "size_categories": [_size(rows.get("pairs", 0))],
        "configs": [
            {"config_name": name, "data_files": [{"split": SPLIT, "path": files[name]}]}
            | ({"default": True} if name == configs[0] else {})
            for name in configs
        ],
    }
    header = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = [
        f"# {_md(study)}: validated personalized preference pairs",
        "",
        "Pairs in the Personalized RewardBench format (a `chosen` response that follows one user's rubric "
        "and a `rejected` one of equal general quality), kept after validation with human annotators "
        "(equivalence on general quality, superiority on rubric alignment, adjudication of disagreements).",
        "",
        "## Contents",
        "",
        "| config | rows | what |",
        "|---|---|---|",
        f"| pairs | {rows.get('pairs', 0)} | the validated pairs (of {n_pairs_total} imported), "
        "each with its `validation` record (and `human_sample`, the pair's recorded inclusion "
        "probability, where the tool drew the pairs people rated) |",
        f"| labels | {rows.get('labels', 0)} | every current human score, long form "
        "(annotators pseudonymized) |",
        f"| adjudicated | {rows.get('adjudicated', 0)} | the final label of each validated pair |",
        f"| predictions | {rows.get('predictions', 0)} | reward-model predictions on the validated pairs |",
        "",
        "```python",
        "from datasets import load_dataset",
        'pairs = load_dataset("PATH_OR_REPO")  # or load_dataset("PATH_OR_REPO", "labels")',
        "```",
        "",
        *_scale_lines(scales or {}),
        "## Validation summary",
        "",
        validation or "No validation report.",
        "",
    ]
    if methods:
        body += ["## Methods", "", methods, ""]
    if not benchmark.empty:
        body += [
            "## Models and the human ceiling (validated pairs)",
            "",
            "Accuracy = share of pairs on which the judge prefers `chosen` (ties count as not "
            "preferring it); 95% Wilson intervals (a bootstrap over pairs for the pooled judgments).",
            "",
            "| judge | pairs | accuracy | 95% CI |",
            "|---|---|---|---|",
        ]
        for row in benchmark.itertuples():
            body.append(
                f"| {_md_cell(row.source)} | {row.n_pairs} | {_md_cell(row.accuracy)} | "
                f"{_md_cell(row.ci_low)} - {_md_cell(row.ci_high)} |"
            )
        body.append("")
    body += ["## License", "", f"{_md(license_id)} (see the metadata above).", ""]
    return "---\n" + header + "---\n" + "\n".join(body)


def _scale_lines(scales: Mapping[str, Scale]) -> list[str]:
    """The card's table of each quality dimension's scale (nothing without `scales`)."""
    if not scales:
        return []
    lines = [
        "## Quality scales",
        "",
        "Each quality dimension is rated on its own scale (the `labels` config's `value`; its "
        "`scale_low` and `scale_high` name the scale of each row).",
        "",
        "| dimension | scale | points |",
        "|---|---|---|",
    ]
    for name, scale in scales.items():
        points = "; ".join(f"{v} = {scale.words(v)}" for v in scale.values)
        lines.append(f"| {_md_cell(name)} | {scale.text()} | {_md_cell(points)} |")
    return [*lines, ""]


def _size(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return label
    return "100K<n<1M"


@dataclass(frozen=True)
class DatasetContents:
    """The dataset's files (path in the folder -> bytes: the card README.md and one Parquet file per
    config with rows) and the rows per config."""

    rows: dict[str, int]
    files: dict[str, bytes]

    @property
    def skipped(self) -> list[str]:
        """The configs without rows (no file written)."""
        return [name for name in CONFIGS if not self.rows[name]]


def dataset_contents(
    session: Session, *, study: str, account: Account, license_id: str = DEFAULT_LICENSE
) -> DatasetContents:
    """Every file of the study's dataset folder, in memory (researchers only); one clear line when
    the license id is not one or no pair is validated yet."""
    require_role(session, account, "researcher")
    get_study(session, study)
    config = study_config(session, study)
    if not license_id.strip() or any(c.isspace() for c in license_id):
        raise UserError(f"invalid license id {license_id!r}; use an SPDX-style id such as cc-by-4.0")
    tables = _tables(session, study, account, config)
    if not tables["pairs"]:
        raise UserError(
            f"study {study!r} has no validated pairs yet (none whose adjudication says keep): settle the "
            'pairs first with "Resolve the clear cases automatically" on the Adjudicate page, or '
            f"`annotator adjudicate --study {shlex.quote(study)} --auto`"
        )
    rows = {name: len(tables[name]) for name in CONFIGS}
    payloads = {
        name: export.to_bytes(_arrow_safe(data) if isinstance(data, pd.DataFrame) else data, "parquet")
        for name, data in tables.items()
        if rows[name]
    }
    files = {name: _file(name, payload) for name, payload in payloads.items()}
    report = _report_text(session, study, account)
    card = dataset_card(
        study=study,
        rows=rows,
        license_id=license_id,
        validation=report.validation,
        methods=report.methods,
        benchmark=report.benchmark,
        n_pairs_total=_count_pairs(session, study),
        files=files,
        scales=config.quality.scales if config.quality.own_scales else None,
    )
    written = {files[name]: payload for name, payload in payloads.items()}
    return DatasetContents(rows, {"README.md": card.encode("utf-8"), **written})


def dataset_request(study: str) -> export.ExportRequest:
    """What a dataset release is, for its audit event: the validated pairs with annotators as
    pseudonyms (the folder, its .zip and the Hub push alike)."""
    return export.ExportRequest(study, "dataset", pseudonymize=True, validated_only=True)


def export_dataset(
    session: Session,
    *,
    study: str,
    out: str | Path,
    account: Account,
    license_id: str = DEFAULT_LICENSE,
    overwrite: bool = False,
) -> DatasetSummary:
    """Write the Hub-ready folder `out` for `study` (researchers only).

    The folder is built next to `out` and renamed into place, so a failure never leaves half a
    dataset. An existing non-empty `out` is refused unless `overwrite`, and even then unless it is a
    dataset folder this tool wrote (:func:`_dataset_folder_problem`): the old folder is renamed aside,
    the new one moved in, and only then is the old one deleted, so some complete dataset is always
    in place or aside.
    """
    require_role(session, account, "researcher")
    out = Path(out)
    get_study(session, study)
    study_config(session, study)
    notes = _mend_interrupted(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not overwrite:
            raise UserError(
                "".join(f"{note}; " for note in notes)
                + f"{out} exists and is not empty; choose another folder or pass --overwrite"
            )
        problem = _dataset_folder_problem(out)
        if problem is not None:
            raise UserError(
                f"{out} is not a dataset folder written by `annotator export dataset` ({problem}); "
                "--overwrite replaces only such a folder: choose another folder"
            )
    contents = dataset_contents(session, study=study, account=account, license_id=license_id)
    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    except OSError as exc:
        raise os_failure(f"cannot write {out}", exc) from None
    try:
        for name, payload in contents.files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(payload)
        _swap_in(staging, out)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise os_failure(f"cannot write {out}", exc) from None
    export.record_export(
        session,
        dataset_request(study),
        rows=contents.rows["pairs"],
        fmt="parquet",
        account=account,
        target=out.name,
    )
    return DatasetSummary(study, out, contents.rows, skipped=contents.skipped, notes=notes)


_PARQUET = re.compile(rf"^({'|'.join(CONFIGS)})/{SPLIT}-00000-of-00001-[0-9a-f]{{16}}\.parquet$")


def _dataset_folder_problem(folder: Path) -> str | None:
    """None when `folder` holds exactly what :func:`export_dataset` writes (a README.md whose YAML
    configs name the folder's Parquet files, and those files), else what does not fit."""
    import yaml

    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())
    others = [name for name in found if name != "README.md" and not _PARQUET.match(name)]
    if others or any(p.is_symlink() for p in folder.rglob("*")):
        return f"it holds {others[0] if others else 'a symbolic link'!r}" + (
            f" and {len(others) - 1} more" if len(others) > 1 else ""
        )
    if "README.md" not in found:
        return "no README.md"
    text = (folder / "README.md").read_text(encoding="utf-8", errors="replace")
    try:
        metadata = yaml.safe_load(text.split("---\n", 2)[1]) if text.startswith("---\n") else None
    except yaml.YAMLError:
        metadata = None
    configs = metadata.get("configs") if isinstance(metadata, dict) else None
    try:
        named = sorted(f["path"] for c in configs for f in c["data_files"])  # type: ignore[union-attr]
    except (TypeError, KeyError):
        return "its README.md is not a dataset card of this tool"
    if named != [name for name in found if name != "README.md"]:
        return "its files are not the ones its dataset card names"
    return None


def _leftovers(out: Path) -> tuple[list[Path], list[Path]]:
    """The folders an interrupted export left beside `out`: (old folders renamed aside, newest first;
    staging folders). Only hidden folders named as this tool names them and holding nothing but what it
    writes are counted (so nobody else's folder is ever touched)."""
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(old\.)?[A-Za-z0-9_]{{8}}$")
    aside: list[Path] = []
    staging: list[Path] = []
    parent = out.parent if out.parent.is_dir() else None
    for folder in sorted(
        parent.iterdir() if parent else (), key=lambda p: p.stat().st_mtime_ns, reverse=True
    ):
        found = pattern.match(folder.name)
        if not found or folder.is_symlink() or not folder.is_dir() or not _only_dataset_files(folder):
            continue
        (aside if found.group(1) else staging).append(folder)
    return aside, staging


def _only_dataset_files(folder: Path) -> bool:
    """Whether `folder` holds only a dataset card and this tool's Parquet files (complete or not)."""
    for path in folder.rglob("*"):
        if path.is_symlink():
            return False
        name = path.relative_to(folder).as_posix()
        if path.is_file() and name != "README.md" and not _PARQUET.match(name):
            return False
    return True


def _mend_interrupted(out: Path) -> list[str]:
    """Undo what an export killed part-way left behind: when `out` is gone but its previous folder lies
    aside (killed between the two moves), put that folder back; then delete the other leftovers. Returns
    what was done, in words."""
    aside, staging = _leftovers(out)
    notes: list[str] = []
    try:
        if not out.exists() and aside and _dataset_folder_problem(aside[0]) is None:
            os.replace(aside.pop(0), out)
            notes.append(f"restored the previous {out.name} that an interrupted export had moved aside")
        for folder in aside + staging:
            shutil.rmtree(folder)
    except OSError as exc:
        raise os_failure(f"cannot tidy an interrupted export beside {out}", exc) from None
    if aside or staging:
        notes.append(
            f"removed {len(aside) + len(staging)} folder(s) an interrupted export left beside {out.name}"
        )
    return notes


def _swap_in(staging: Path, out: Path) -> None:
    """Put the finished folder `staging` at `out`: an old `out` is renamed aside first and deleted
    only after the new one is in place (put back if the move fails)."""
    if not out.exists():
        os.replace(staging, out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
    os.replace(out, aside)  # an empty directory as the target: replaced on POSIX
    try:
        os.replace(staging, out)
    except OSError:
        os.replace(aside, out)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _count_pairs(session: Session, study: str) -> int:
    from sqlalchemy import func, select
    from sqlmodel import col

    from annotator.store.models import Pair

    study_id = get_study(session, study).id
    return int(session.execute(select(func.count()).where(col(Pair.study_id) == study_id)).scalar_one())


_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def check_repo(repo_id: str) -> None:
    """One clear line unless `repo_id` is OWNER/NAME, each part as the Hub allows (letters, digits,
    '-', '_' and '.', starting with a letter or digit, at most 96 characters)."""
    if not _REPO_ID.fullmatch(repo_id):
        raise UserError(f"invalid repository {repo_id!r}; use OWNER/NAME (letters, digits, - _ .)")


def push_to_hub(folder: str | Path, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Upload a dataset folder to the Hugging Face Hub as a dataset repository; returns its URL.

    Needs a token (`hf auth login` or $HF_TOKEN); without one, or when the upload fails, one clear
    UserError line.
    """
    from httpx2 import HTTPError as NetworkError  # no network, refused, timed out (huggingface_hub's client)
    from huggingface_hub import HfApi, constants, get_token
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise UserError(
            f"{folder} is not a dataset folder (no README.md); run `annotator export dataset` first"
        )
    check_repo(repo_id)
    token = token or get_token()
    if not token:
        raise UserError(NO_TOKEN.format(folder=folder))
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="dataset",
            commit_message="Upload validated pairs from Pair Studio",
        )
    except HfHubHTTPError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        refused = getattr(exc.response, "status_code", None) in (401, 403)
        hint = " (the Hub refused the token: check it with `hf auth whoami`)" if refused else ""
        raise UserError(f"upload to {repo_id} failed{hint}: {first}") from None
    except NetworkError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"upload to {repo_id} failed (no connection to the Hub?): {first}") from None
    except OSError as exc:
        raise os_failure(f"upload to {repo_id} failed", exc) from None
    return f"{constants.ENDPOINT}/datasets/{repo_id}"


def publish(
    engine: Engine,
    *,
    study: str,
    out: str | Path,
    account: Account,
    repo: str | None = None,
    license_id: str = DEFAULT_LICENSE,
    overwrite: bool = False,
    private: bool = False,
) -> DatasetSummary:
    """Export the dataset folder (committed, with its audit event), then upload it to `repo` if given
    (a second audit event names the repository's URL).

    A failed upload leaves the folder written and says so in one line.
    """
    from dataclasses import replace

    from annotator.store.db import session_scope

    if repo is not None:
        check_repo(repo)
    with session_scope(engine) as session:
        summary = export_dataset(
            session, study=study, out=out, account=account, license_id=license_id, overwrite=overwrite
        )
    if repo is None:
        return summary
    url = push_to_hub(summary.folder, repo, private=private)
    with session_scope(engine) as session:  # the release itself, in the audit log
        export.record_export(
            session,
            dataset_request(study),
            rows=summary.rows["pairs"],
            fmt="hub",
            account=account,
            target=url,
        )
    return replace(summary, url=url)
