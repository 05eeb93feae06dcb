"""Downloads: every export (labels, adjudicated labels, validated pairs) in CSV, JSONL or Parquet."""

import streamlit as st

from annotator import export
from annotator.app.common import choose_study, require, session
from annotator.errors import UserError

account = require("researcher")


def log_download(*, kind: str, rows: int, fmt: str, pseudonymized: bool, validated_only: bool) -> None:
    """Record the download in the audit log."""
    with session() as active:
        export.record_export(
            active,
            study=str(study),
            kind=kind,
            rows=rows,
            fmt=fmt,
            account=account,
            target="browser download",
            pseudonymized=pseudonymized,
            validated_only=validated_only,
        )


st.title("Downloads")
study = choose_study("downloads_study")
if study is not None:
    fmt = st.radio("Format", export.FORMATS, horizontal=True, key="downloads_format")
    pseudonymize = st.checkbox("Replace annotator names with stable codes", key="downloads_pseudo")
    validated_only = st.checkbox(
        "Validated pairs only (kept by adjudication)", value=True, key="downloads_valid"
    )
    for kind, title in (("labels", "Labels"), ("adjudicated", "Adjudicated labels"), ("pairs", "Pairs")):
        try:
            with session() as active:
                data = export.build(
                    active,
                    study=study,
                    kind=kind,
                    pseudonymize=pseudonymize,
                    validated_only=validated_only,
                    account=account,
                )
                payload = export.to_bytes(data, fmt)
        except UserError as exc:
            st.warning(f"{title}: {exc}")
            continue
        clicked = st.download_button(
            f"{title} ({len(data)} rows)",
            payload,
            file_name=f"{study}-{kind}.{fmt}",
            key=f"download_{kind}",
            icon=":material/download:",
            on_click="ignore",
        )
