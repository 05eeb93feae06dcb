"""Data: import a pair file, assign, and create accounts (the same checks as the CLI)."""

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st
from sqlmodel import Session

from annotator.app.common import UPLOAD_LIMIT, choose_study, engine, require, session
from annotator.app.tables import show_table
from annotator.errors import UserError
from annotator.intake import assign, ingest
from annotator.people import accounts
from annotator.people.authorization import Account
from annotator.store.models import ROLES
from annotator.study import study_config


def assign_picker(account: Account) -> None:
    """Assign with a picker: which annotators, the overlap, the seed; the resulting load per annotator
    (and arm) is shown before anything is written, from the very `assign` that then commits."""
    study = choose_study("assign_study")
    if study is None:
        return
    with session() as active:
        people = [u.username for u in accounts.list_users(active, role="annotator") if u.active]
        overlap_default = assign.study_overlap(active, study)
        arms = study_config(active, study).arms.names
    names = st.multiselect("Annotators", people, default=people, key="assign_annotators")
    left, right = st.columns(2)
    overlap = left.number_input(
        "Annotators per pair", min_value=1, value=overlap_default, key="assign_overlap"
    )
    seed = right.number_input("Seed (sides and queue order)", min_value=0, value=0, key="assign_seed")
    st.caption(
        f"Study arms: {', '.join(arms)} (each annotator is randomized to one; pairs are balanced "
        "across them)."
        if arms
        else "This study has no arms."
    )
    chosen = {"study": study, "overlap": int(overlap), "annotators": names, "seed": int(seed)}
    try:
        with Session(engine(), expire_on_commit=False) as active:
            summary, load = assign.preview(active, **chosen, account=account)  # type: ignore[arg-type]
    except UserError as exc:  # the settings chosen so far cannot be assigned: say why, nothing to commit
        st.warning(f"Nothing to assign with these settings: {exc}", icon=":material/warning:")
        return
    st.subheader("Load per annotator if you assign now")
    show_table(pd.DataFrame(load), key="assign_preview")
    st.caption(
        f"Would add {summary.created} assignments ({summary.pairs} pairs, {summary.annotators} annotators)."
    )
    if st.button("Assign", type="primary", key="assign_commit", disabled=summary.created == 0):
        try:
            with session() as active:
                st.success(str(assign.assign(active, **chosen, account=account)))  # type: ignore[arg-type]
        except UserError as exc:
            st.error(str(exc))


account = require("researcher")
st.title("Import and assign")

st.header("Import pairs")
st.caption(
    "Into an existing study, or a new one with the default settings; a new study with its own "
    "settings is set up on the Study settings page."
)
with st.form("import_form"):
    upload = st.file_uploader(
        f"Pair file (JSONL, JSON, CSV or Parquet; {UPLOAD_LIMIT})",
        type=ingest.UPLOAD_TYPES,
        key="import_file",
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

st.header("Assign")
assign_picker(account)

st.header("Create an account")
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
