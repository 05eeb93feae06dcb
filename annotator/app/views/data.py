"""Data: import a pair file, assign, and create accounts (the same checks as the CLI)."""

import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st
from sqlmodel import Session

from analysis.vocabulary import SWAP
from analysis.wording import counted
from annotator.app.common import (
    UPLOAD_LIMIT,
    choose_study,
    confirmed,
    engine,
    requested,
    require,
    safe_md,
    session,
)
from annotator.app.tables import show_table
from annotator.errors import UserError
from annotator.intake import assign, controls, human_sample, ingest, study_admin
from annotator.people import accounts
from annotator.people.authorization import Account
from annotator.store.models import ROLES
from annotator.study import study_config

PICKED_FOR_KEY = "assign_annotators_for"  # the study whose annotators the picker was last filled with
CONFIRM_KEY = "assign_confirm_pending"  # the settings and count of a preview waiting for its confirm
CONTROLS_KEY = "controls_confirm_pending"  # the same for making control pairs
CONTROLS_DONE_KEY = "controls_made"  # (succeeded, the line saying so) of the last confirm, shown once


def assign_picker(account: Account, study: str) -> None:
    """Assign with a picker: which annotators (none at first, or those already on the study), the
    overlap, the seed; the load per annotator (and arm) and the count of new assignments are shown,
    and only a confirm of that count writes them (from the very `assign` the preview ran)."""
    with session() as active:
        people = [u.username for u in accounts.list_users(active, role="annotator") if u.active]
        overlap_default = assign.study_overlap(active, study)
        arms = study_config(active, study).arms.names
        already = assign.assigned_annotators(active, study)
    if st.session_state.get(PICKED_FOR_KEY) != study:
        st.session_state[PICKED_FOR_KEY] = study
        st.session_state["assign_annotators"] = [name for name in already if name in people]
        st.session_state.pop(CONFIRM_KEY, None)
    names = st.multiselect(
        "Annotators",
        people,
        key="assign_annotators",
        help="Starts with the annotators already on this study (none for a new study).",
    )
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
    sample = sample_picker(study)
    if not names:
        st.info("Choose the annotators to assign.", icon=":material/group_add:")
        return
    chosen = {"study": study, "overlap": int(overlap), "annotators": names, "seed": int(seed)}
    if sample is not None:
        draw_picker(account, chosen | sample)
        return
    try:
        with Session(engine(), expire_on_commit=False) as active:
            summary, load = assign.preview(active, **chosen, account=account)  # type: ignore[arg-type]
    except UserError as exc:  # the settings chosen so far cannot be assigned: say why, nothing to commit
        st.warning(f"Nothing to assign with these settings: {safe_md(exc)}", icon=":material/warning:")
        return
    st.subheader("Load per annotator if you assign now")
    show_table(pd.DataFrame(load), key="assign_preview")
    st.caption(
        f"Would add {counted(summary.created, 'assignment')} ({counted(summary.pairs, 'pair')}, "
        f"{counted(summary.annotators, 'annotator')})."
    )
    if not requested(
        CONFIRM_KEY,
        (chosen, summary.created),
        "Assign…",
        type="primary",
        key="assign_commit",
        disabled=summary.created == 0,
    ):
        return
    question = (
        f"Add {counted(summary.created, 'new assignment')} for {counted(summary.annotators, 'annotator')}? "
        "They appear in the annotators' queues at once."
    )
    if confirmed(question, f"Confirm: add {summary.created}", pending_key=CONFIRM_KEY, key="assign"):
        carry_out(assign.assign, chosen, account)


SAMPLE_SIZE = 50  # the human sample offered first (at most half the judged pairs)


def sample_picker(study: str) -> dict[str, object] | None:
    """For a study an LLM judge rated: every pair, or a human sample drawn from the judge's pairs (its
    size, uniform or by the judge's uncertainty); the draw's settings, or None for every pair."""
    with session() as active:
        judges, drawn = human_sample.sample_choices(active, study=study)
    if drawn:
        st.caption("This study's human sample is drawn: assigning gives only the drawn pairs.")
        return None
    if not judges:
        return None
    how = st.radio(
        "Pairs to assign",
        ["Every pair", "A human sample of the judged pairs"],
        key="assign_pairs_mode",
        horizontal=True,
        help="A judge rated this study's pairs: people may rate a sample the tool draws, once, before any "
        "assignment. Each pair's inclusion probability is recorded at the draw, and the report's "
        "prediction-powered verdict weights each rated pair by its inverse.",
    )
    if how == "Every pair":
        return None
    left, middle, right = st.columns(3)
    judge = left.selectbox("Judge", list(judges), key="assign_sample_judge")
    judged = max(judges[judge], 2)
    size = middle.number_input(
        f"Pairs in the sample (expected; of the {judges[judge]:,} judged)",
        min_value=2,
        max_value=judged,
        value=min(SAMPLE_SIZE, max(2, judged // 2)),
        key=f"assign_sample_size_{judge}",  # one per judge: each has its own number of pairs
    )
    active_draw = right.checkbox(
        "Draw by the judge's uncertainty",
        key="assign_sample_active",
        help="Pairs the judge is less confident about are likelier to be drawn (no pair below "
        f"{human_sample.MIN_SHARE:g} of the uniform probability); off: every pair alike.",
    )
    return {"judge": judge, "size": int(size), "active": bool(active_draw)}


def draw_picker(account: Account, chosen: dict[str, object]) -> None:
    """Preview the human sample's draw and its assignments; a confirm draws, records and assigns."""
    try:
        with Session(engine(), expire_on_commit=False) as active:
            summary = human_sample.preview_draw(active, **chosen, account=account)
    except UserError as exc:
        st.warning(f"Nothing to draw with these settings: {safe_md(exc)}", icon=":material/warning:")
        return
    preview = st.empty()  # what a draw would do; gone once it is done (the result says what it did)
    preview.caption(safe_md(f"If you draw now: {summary}"))
    if not requested(
        CONFIRM_KEY, (chosen, summary.drawn), "Draw and assign…", type="primary", key="assign_draw"
    ):
        return
    question = (
        f"Draw {summary.drawn} pairs and add {summary.assigned.created} assignments? The sample is drawn "
        "once for this study."
    )
    if confirmed(
        question, f"Confirm: draw {summary.drawn} pairs", pending_key=CONFIRM_KEY, key="assign_draw"
    ):
        preview.empty()
        carry_out(human_sample.draw_human_sample, chosen, account)


def carry_out(service: Callable[..., object], chosen: dict[str, object], account: Account) -> None:
    """Carry out a confirmed request (`service` with the settings `chosen`) and say what it did, or in
    one line why it could not."""
    try:
        with session() as active:
            st.success(safe_md(service(active, **chosen, account=account)))
    except UserError as exc:
        st.error(safe_md(exc))


def unassign_picker(account: Account, study: str) -> None:
    """Take items not yet started away from chosen annotators: the count and the started items kept
    are shown first; the button names the count."""
    with session() as active:
        on_study = assign.assigned_annotators(active, study)
    if not on_study:
        st.caption("Nobody has items in this study yet.")
        return
    names = st.multiselect("Annotators to unassign", on_study, default=[], key="unassign_annotators")
    if not names:
        st.caption("Choose annotators to see what would be removed.")
        return
    try:
        with Session(engine(), expire_on_commit=False) as active:
            summary = study_admin.unassign_preview(active, study=study, annotators=names, account=account)
    except UserError as exc:
        st.error(safe_md(exc))
        return
    st.caption(
        f"Would remove {counted(summary.removed, 'item')} not yet started; "
        f"{counted(len(summary.kept), 'started item')} (a judgment or a draft) "
        f"{counted(len(summary.kept), 'is', 'are', number=False)} kept."
    )
    if summary.kept:
        kept = pd.DataFrame(summary.kept, columns=["annotator", "pair", "started"])
        show_table(kept, key="unassign_kept")
    if st.button(
        f"Unassign {counted(summary.removed, 'item')}", key="unassign_commit", disabled=summary.removed == 0
    ):
        try:
            with session() as active:
                done = study_admin.unassign(active, study=study, annotators=names, account=account)
            st.success(safe_md(done))
        except UserError as exc:
            st.error(safe_md(exc))


def controls_maker(account: Account, study: str) -> None:
    """Make control pairs (`annotator controls make`): kind, how many, seed; what would be added is
    shown first, and only a confirm of those counts writes them."""
    if CONTROLS_DONE_KEY in st.session_state:  # the outcome of the confirm the run before
        made, line = st.session_state.pop(CONTROLS_DONE_KEY)
        (st.success if made else st.error)(safe_md(line))
    left, middle, right = st.columns([2, 1, 1])
    kind = left.selectbox(
        "Kind", list(controls.MAKE_KINDS), format_func=controls.MAKE_KINDS.__getitem__, key="controls_kind"
    )
    n = middle.number_input(
        "How many", min_value=1, value=5, key="controls_n", help="swap: repeats per annotator"
    )
    seed = right.number_input("Seed", min_value=0, value=0, key="controls_seed")
    chosen = {"study": study, "kind": kind, "n": int(n), "seed": int(seed)}
    try:
        with Session(engine(), expire_on_commit=False) as active:
            summary = controls.make_controls_preview(active, **chosen, account=account)  # type: ignore[arg-type]
            rate = study_config(active, study).controls.rate
    except UserError as exc:
        st.warning(f"No control pairs with these settings: {safe_md(exc)}", icon=":material/warning:")
        return
    counts = (summary.pairs, summary.assignments)
    mixed = (
        "swapped repeats go to the annotators who rated their pairs"
        if kind == SWAP
        else f"queues are topped up to the study's control rate, {rate:.0%} (Study settings)"
    )
    st.caption(
        f"Would add {counted(summary.pairs, f'new {summary.kind} control pair')} and mix "
        f"{counted(summary.assignments, 'control item')} into the annotators' queues ({mixed}; controls "
        "never count toward a pair's "
        "overlap)."
    )
    if not requested(
        CONTROLS_KEY, (chosen, counts), "Make controls…", key="controls_make", disabled=counts == (0, 0)
    ):
        return
    question = (
        f"Add {counted(summary.pairs, 'control pair')} and {counted(summary.assignments, 'queue item')}? "
        "Annotators see them "
        "at once, like any other item."
    )
    if confirmed(question, f"Confirm: make {summary.pairs}", pending_key=CONTROLS_KEY, key="controls"):
        try:
            with session() as active:
                made = controls.make_controls(active, **chosen, account=account)  # type: ignore[arg-type]
            st.session_state[CONTROLS_DONE_KEY] = (True, str(made))
        except UserError as exc:
            st.session_state[CONTROLS_DONE_KEY] = (False, str(exc))
        st.rerun()


def restore_picker(account: Account) -> None:
    """Bring an archived study back into the pickers (nothing shown when none is archived)."""
    with session() as active:
        archived = study_admin.archived_studies(active)
    if not archived:
        return
    st.header("Archived studies")
    back = st.selectbox("Archived study", archived, key="study_restore_pick")
    if st.button("Restore", key="study_restore", icon=":material/unarchive:") and back:
        with session() as active:
            line = study_admin.set_archived(active, study=back, archived=False, account=account)
        st.session_state["study_admin_done"] = line
        st.rerun()


def archive_and_delete(account: Account, study: str) -> None:
    """Archive the study (hidden from every picker, data kept; restored under Archived studies) or
    delete it when nobody has rated it (its name typed again)."""
    left, right = st.columns(2)
    with left:
        st.subheader("Archive")
        st.caption(
            "Hidden from every picker (annotators' too); nothing is deleted; "
            "restore it under Archived studies."
        )
        if st.button("Archive this study", key="study_archive", icon=":material/archive:"):
            with session() as active:
                line = study_admin.set_archived(active, study=study, archived=True, account=account)
            st.session_state["study_admin_done"] = line
            st.rerun()
    with right:
        st.subheader("Delete")
        st.caption("Only a study nobody has rated yet; its pairs and queues are deleted for good.")
        typed = st.text_input("Type the study's name to delete it", key="study_delete_name")
        if st.button(
            "Delete this study", key="study_delete", icon=":material/delete:", disabled=typed != study
        ):
            try:
                with session() as active:
                    line = study_admin.delete_study(active, study=study, confirm=typed, account=account)
                st.session_state["study_admin_done"] = line
                st.rerun()
            except UserError as exc:
                st.error(safe_md(exc))


def main() -> None:
    account = require("researcher")
    st.title("Import and assign")
    st.header("Import pairs")
    st.caption(
        "Into an existing study, or a new one with the default settings; a new study with its own "
        "settings is set up on the Study settings page. An LLM judge's ratings and reward-model "
        "predictions are files of another kind: `annotator judges import` and `annotator models import`."
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
    if "study_admin_done" in st.session_state:  # an archive, restore or delete of the run before
        st.success(safe_md(st.session_state.pop("study_admin_done")))
    chosen_study = choose_study("assign_study")
    if chosen_study is not None:
        assign_picker(account, chosen_study)
        st.header("Unassign")
        unassign_picker(account, chosen_study)
        st.header("Control pairs")
        controls_maker(account, chosen_study)
        st.header("Archive or delete the study")
        archive_and_delete(account, chosen_study)
    restore_picker(account)
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


main()
