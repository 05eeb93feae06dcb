"""The dataset folder for the browser: one .zip built in memory, and the push to the Hub from a
temporary folder (the same folder and upload as `annotator export dataset --push-to-hub`)."""

import io
import re
import tempfile
import zipfile
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotator.errors import os_failure
from annotator.people.authorization import Account
from annotator.publish import dataset

__all__ = ["dataset_zip", "hub_token_configured", "push_study", "zip_name"]


def zip_name(study: str) -> str:
    """The .zip's file name (and its one folder): the study's name in safe characters."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", study).strip("._") or "study") + "-dataset"


def dataset_zip(
    session: Session, *, study: str, account: Account, license_id: str = dataset.DEFAULT_LICENSE
) -> tuple[bytes, dict[str, int]]:
    """The study's dataset folder (card and Parquet files) as the bytes of one .zip, built in memory,
    and the rows per config; nothing is written to disk. One clear line when it cannot be built."""
    contents = dataset.dataset_contents(session, study=study, account=account, license_id=license_id)
    folder = zip_name(study)
    buffer = io.BytesIO()
    try:
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, payload in contents.files.items():
                archive.writestr(f"{folder}/{name}", payload)
    except (OSError, MemoryError) as exc:
        raise os_failure("cannot build the dataset .zip", exc) from None
    return buffer.getvalue(), contents.rows


def hub_token_configured() -> bool:
    """Whether a Hugging Face token is configured for this server (HF_TOKEN or `hf auth login`, as the
    CLI finds it)."""
    from huggingface_hub import get_token

    return bool(get_token())


def push_study(
    engine: Engine,
    *,
    study: str,
    repo: str,
    account: Account,
    license_id: str = dataset.DEFAULT_LICENSE,
    private: bool = False,
) -> str:
    """Write the study's dataset folder into a temporary folder and upload it to the Hub dataset
    repository `repo` (OWNER/NAME); returns its URL. A full disk, a bad token or no network is one
    clear line."""
    dataset.check_repo(repo)
    try:
        scratch = tempfile.TemporaryDirectory(prefix="pair-studio-dataset-", ignore_cleanup_errors=True)
    except OSError as exc:
        raise os_failure("cannot make a temporary folder for the dataset", exc) from None
    with scratch as folder:
        summary = dataset.publish(
            engine,
            study=study,
            out=Path(folder) / zip_name(study),
            account=account,
            repo=repo,
            license_id=license_id,
            private=private,
        )
    return summary.url
