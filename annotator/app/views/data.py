"""Data: import a pair file, assign, and create accounts (the same checks as the CLI)."""

import tempfile
from pathlib import Path

import streamlit as st

from annotator import accounts, assign, ingest, textguard
from annotator.app.common import engine, require, session
from annotator.errors import UserError
from annotator.store.models import ROLES

account = require("researcher")
st.title("Data")

st.subheader("Import pairs")
with st.form("import_form"):
    upload = st.file_uploader(
        "Pair file",
        type=["jsonl", "json", "csv", "parquet"],
        key="import_file",
        help=f"At most {textguard.MAX_BYTES_DEFAULT // 2**20} MB of text (`annotator import --max-bytes`).",
    )
    study = st.text_input("Study", key="import_study")
    replace = st.checkbox("Replace records that changed under the same id", key="import_replace")
    if st.form_submit_button("Import", type="primary"):
        if upload is None or not study.strip():
            st.error("Choose a file and name the study.")
        else:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / Path(upload.name).name
                path.write_bytes(upload.getvalue())
                try:
                    summary = ingest.import_file(
                        engine(), path, study=study.strip(), replace=replace, account=account
                    )
                    st.success(str(summary))
                except UserError as exc:
                    # Plain text with its line breaks (one line per problem), never Markdown.
                    st.error("The file was not imported:", icon=":material/error:")
                    st.code(str(exc).replace(str(path), upload.name), language=None, wrap_lines=True)

st.subheader("Assign")
with st.form("assign_form"):
    assign_study = st.text_input("Study", key="assign_study")
    overlap = st.number_input("Annotators per pair", min_value=1, value=3, key="assign_overlap")
    seed = st.number_input("Seed", min_value=0, value=0, key="assign_seed")
    if st.form_submit_button("Assign"):
        try:
            with session() as active:
                st.success(
                    str(
                        assign.assign(
                            active,
                            study=assign_study.strip(),
                            overlap=int(overlap),
                            seed=int(seed),
                            account=account,
                        )
                    )
                )
        except UserError as exc:
            st.error(str(exc))

st.subheader("Create an account")
with st.form("account_form"):
    username = st.text_input("Username", key="account_username")
    role = st.selectbox("Role", ROLES, key="account_role")
    if st.form_submit_button("Create"):
        password = accounts.generate_password()
        try:
            with session() as active:
                accounts.add_user(
                    active, username=username.strip(), role=role, password=password, account=account
                )
            st.success(f"Created {role} {username}. Password (shown once): `{password}`")
        except UserError as exc:
            st.error(str(exc))
