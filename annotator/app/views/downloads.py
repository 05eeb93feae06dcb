"""Downloads: every export (labels, adjudicated labels, validated pairs) in CSV, JSONL or Parquet."""

import streamlit as st

from annotator.app.common import choose_study, require, session
from annotator.errors import UserError
from annotator.publish import export

account = require("researcher")


def log_download(
    *, study_name: str, kind: str, rows: int, fmt: str, pseudonymized: bool, validated_only: bool
) -> None:
    """Record the download in the audit log (the button's callback: runs once per click)."""
    with session() as active:
        export.record_export(
            active,
            study=study_name,
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
        st.download_button(
            f"{title} ({len(data)} {'row' if len(data) == 1 else 'rows'})",
            payload,
            file_name=f"{study}-{kind}.{fmt}",
            key=f"download_{kind}",
            icon=":material/download:",
            on_click=log_download,
            kwargs={
                "study_name": study,
                "kind": kind,
                "rows": len(data),
                "fmt": fmt,
                "pseudonymized": pseudonymize,
                "validated_only": validated_only,
            },
        )
