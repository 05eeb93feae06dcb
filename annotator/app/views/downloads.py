"""Downloads: every export (labels, adjudicated labels, validated pairs) in CSV, JSONL or Parquet;
the dataset folder with its card as one .zip, and its push to the Hub when a token is configured."""

import pandas as pd
import streamlit as st

from analysis.wording import counted
from annotator.app.common import confirmed, engine, requested, safe_md, session, study_page
from annotator.errors import UserError
from annotator.people.authorization import Account
from annotator.publish import bundle, dataset, export

ZIP_KEY = "dataset_zip"  # (study, license, the .zip's bytes, rows per config) of the last build
PUSH_KEY = "hub_push_pending"  # the (study, repo, license, private) waiting for its confirm
PUSHED_KEY = "hub_pushed"  # (succeeded, the line saying so) of the last push, shown once


def log_download(*, request: export.ExportRequest, rows: int, fmt: str, account: Account) -> None:
    """Record the download in the audit log (the button's callback: runs once per click)."""
    with session() as active:
        export.record_export(active, request, rows=rows, fmt=fmt, account=account, target="browser download")


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{max(1, round(n / 2**10))} KB"


def dataset_zip(account: Account, study: str, license_id: str) -> None:
    """Build the dataset folder (what `annotator export dataset` writes) as one .zip on request, then
    offer it for download (the download is logged)."""
    if st.button("Build the dataset .zip", key="dataset_build", icon=":material/folder_zip:"):
        st.session_state.pop(ZIP_KEY, None)
        try:
            with session() as active:
                payload, rows = bundle.dataset_zip(
                    active, study=study, account=account, license_id=license_id
                )
            st.session_state[ZIP_KEY] = (study, license_id, payload, rows)
        except UserError as exc:
            st.error(safe_md(exc), icon=":material/error:")
    built = st.session_state.get(ZIP_KEY)
    if built is None or built[:2] != (study, license_id):
        return
    _, _, payload, rows = built
    st.caption("Rows: " + ", ".join(f"{name} {n}" for name, n in rows.items()))
    name = bundle.zip_name(study)
    st.download_button(
        f"Download {name}.zip ({_size(len(payload))})",
        payload,
        file_name=f"{name}.zip",
        mime="application/zip",
        key="dataset_download",
        icon=":material/download:",
        on_click=log_download,
        kwargs={
            "request": dataset.dataset_request(study),
            "rows": rows["pairs"],
            "fmt": "zip",
            "account": account,
        },
    )


def hub_push(account: Account, study: str, license_id: str) -> None:
    """Push the dataset to a Hub dataset repository: only with a token configured, after a confirm."""
    st.subheader("Push to the Hugging Face Hub")
    if not bundle.hub_token_configured():
        st.caption(
            "No Hugging Face token is configured for this server: set HF_TOKEN where it runs (then "
            "restart it) or run `hf auth login` as its user to push from here."
        )
        return
    if PUSHED_KEY in st.session_state:  # the outcome of the push the run before
        pushed, line = st.session_state.pop(PUSHED_KEY)
        if pushed:
            st.success(safe_md(line), icon=":material/cloud_done:")
        else:
            st.error(safe_md(line), icon=":material/error:")
    repo = st.text_input("Hub dataset repository (OWNER/NAME)", key="hub_repo").strip()
    private = st.checkbox("Private repository", key="hub_private")
    chosen = (study, repo, license_id, private)
    if not requested(
        PUSH_KEY,
        chosen,
        "Push to the Hub…",
        key="hub_push",
        check=lambda: dataset.check_repo(repo),
        icon=":material/cloud_upload:",
        disabled=not repo,
    ):
        return
    question = safe_md(
        f"Upload the dataset of study {study!r} to the {'private' if private else 'public'} Hub "
        f"repository {repo}? Everyone who can see the repository can read it."
    )
    if confirmed(question, safe_md(f"Confirm: push to {repo}"), pending_key=PUSH_KEY, key="hub"):
        try:
            with st.spinner("Uploading…"):
                url = bundle.push_study(
                    engine(), study=study, repo=repo, account=account, license_id=license_id, private=private
                )
            st.session_state[PUSHED_KEY] = (True, f"Pushed to {url}")
        except UserError as exc:
            st.session_state[PUSHED_KEY] = (False, str(exc))
        st.rerun()


def main() -> None:
    account, study = study_page("Downloads", "downloads_study")
    if study is not None:
        fmt = st.radio("Format", export.FORMATS, horizontal=True, key="downloads_format")
        pseudonymize = st.checkbox("Replace annotator names with stable codes", key="downloads_pseudo")
        validated_only = st.checkbox(
            "Validated pairs only (kept by adjudication)",
            value=True,
            key="downloads_valid",
            help="Applies to all three files: only the pairs an adjudication kept, and their labels.",
        )
        sizes = []
        for kind, title in (("labels", "Labels"), ("adjudicated", "Adjudicated labels"), ("pairs", "Pairs")):
            request = export.ExportRequest(
                study, kind, pseudonymize=pseudonymize, validated_only=validated_only
            )
            try:
                with session() as active:
                    data = export.build(active, request, account=account)
                    payload = export.to_bytes(data, fmt)
            except UserError as exc:
                st.warning(safe_md(f"{title}: {exc}"))
                continue
            sizes.append(len(data))
            rows = counted(len(data), "row")
            if kind == "adjudicated" and isinstance(data, pd.DataFrame):  # a row per pair, decided or not
                rows += f", {int((data['method'] != 'unresolved').sum())} decided"
            st.download_button(
                f"{title} ({rows})",
                payload,
                file_name=f"{study}-{kind}.{fmt}",
                key=f"download_{kind}",
                icon=":material/download:",
                disabled=len(data) == 0,  # a file with a header alone
                on_click=log_download,
                kwargs={"request": request, "rows": len(data), "fmt": fmt, "account": account},
            )
        if validated_only and sizes and not any(sizes):
            st.info(
                'No pair is validated yet (no adjudication says keep): settle the pairs with "Resolve the '
                'clear cases automatically" on the Adjudicate page, or untick "Validated pairs only" for '
                "every pair.",
                icon=":material/info:",
            )
        st.header("Dataset for the Hub")
        st.caption(
            "The validated pairs, the human labels (annotators as stable codes), the adjudicated labels and "
            "the model predictions as Parquet files with a dataset card (README.md): the folder "
            "`annotator export dataset` writes, which `datasets.load_dataset` reads. The choices above do "
            "not apply to it."
        )
        license_id = st.text_input(
            "License (SPDX id)", value=dataset.DEFAULT_LICENSE, key="dataset_license"
        ).strip()
        dataset_zip(account, study, license_id)
        hub_push(account, study, license_id)


main()
