"""Annotators: diagnostics (agreement with the others, straight-lining, speed) and account management:
deactivate and reassign (each confirmed first), reactivate, reset a password (shown once), login links."""

from collections.abc import Callable
from urllib.parse import urlsplit

import streamlit as st

from analysis.diagnostics import annotator_diagnostics
from annotator.app.common import engine, opened, safe_md, session, study_page
from annotator.app.tables import show_table
from annotator.errors import AuthError, UserError
from annotator.people import accounts
from annotator.people.authorization import Account
from annotator.review import quality, study_progress
from annotator.review.readers import label_frame

RESULT_KEY = "annotators_result"  # (kind, text) shown after an action (a secret: until hidden)
HIDE_KEY = "annotators_hide_secret"
NAME_KEY = "annotators_name"  # the account the actions are for
SECRET_FOR_KEY = "annotators_secret_for"  # the account a shown password or link belongs to
PENDING_KEY = "annotators_pending"  # (action, username) waiting for its confirmation


def base_url() -> str:
    """The app's own address as this browser reaches it (for login links)."""
    try:
        parts = urlsplit(str(st.context.url))
        return f"{parts.scheme}://{parts.netloc}"
    except Exception:  # no browser (AppTest)
        return "http://localhost:8501"


def run(action: Callable[[], str | None], success: str) -> None:
    """Run an account action; its outcome is shown on the next run (after the dialog closes)."""
    try:
        secret = action()
    except (UserError, AuthError) as exc:
        st.session_state[RESULT_KEY] = ("error", str(exc))
    else:
        st.session_state[RESULT_KEY] = ("secret" if secret else "success", success + (secret or ""))
        st.session_state[SECRET_FOR_KEY] = st.session_state.get(NAME_KEY)
    st.rerun()


def _forget_pending() -> None:
    st.session_state.pop(PENDING_KEY, None)


@st.dialog("Please confirm", on_dismiss=_forget_pending)
def confirm(question: str, action: Callable[[], str | None], success: str, button: str) -> None:
    """A confirmation dialog: nothing happens until the button in it is pressed."""
    st.markdown(question)
    left, right = st.columns(2)
    if left.button(button, type="primary", key="annotators_confirm"):
        _forget_pending()
        run(action, success)
    if right.button("Cancel", key="annotators_cancel"):
        _forget_pending()
        st.rerun()


Action = Callable[[], str | None]  # an account action; a secret it returns is shown once


def account_actions(account: Account, study: str, name: str) -> dict[str, Action]:
    """What can be done to the account `name`, each in its own session, as the logged-in `account`."""

    def set_active(value: bool) -> Callable[[], None]:
        def act() -> None:
            with session() as active:
                accounts.set_active(active, username=name, active=value, account=account)

        return act

    def reassign() -> str:
        with session() as active:
            moved = study_progress.reassign_open(active, account=account, study=study, username=name)
        return f" ({moved} item(s) moved)"

    def reset() -> str:
        with session() as active:
            return accounts.reset_password(active, username=name, account=account)

    def link() -> str:
        with session() as active:
            token = accounts.issue_login_token(active, username=name, account=account)
        return f"{base_url()}/?token={token}"

    return {
        "deactivate": set_active(False),
        "reactivate": set_active(True),
        "reassign": reassign,
        "reset": reset,
        "link": link,
    }


def confirmations(
    study: str, name: str, actions: dict[str, Action]
) -> dict[str, tuple[str, Action, str, str]]:
    """The destructive actions: their question, action, success text and button, for :func:`confirm`."""
    return {
        "deactivate": (
            f"Deactivate **{name}**? They are logged out at once and can no longer log in; "
            "their labels are kept. You can reactivate the account later.",
            actions["deactivate"],
            f"{name} is deactivated; their labels are kept.",
            "Deactivate",
        ),
        "reassign": (
            f"Move every open item of **{name}** in study **{study}** to other annotators?",
            actions["reassign"],
            f"Open items of {name} reassigned",
            "Reassign",
        ),
        "reset": (
            f"Give **{name}** a new generated password? Their current password stops working and "
            "they are logged out. The new one is shown once.",
            actions["reset"],
            f"New password for {name} (shown once; pass it on privately): ",
            "Reset password",
        ),
    }


def action_buttons(name: str, is_active: bool, actions: dict[str, Action]) -> None:
    """The row of buttons: the safe actions run at once, the destructive ones wait for a confirmation."""
    buttons = st.columns(4)
    if is_active:
        if buttons[0].button("Deactivate…", key="annotators_deactivate", icon=":material/block:"):
            st.session_state[PENDING_KEY] = ("deactivate", name)
    elif buttons[0].button("Reactivate", key="annotators_reactivate", icon=":material/check_circle:"):
        run(actions["reactivate"], f"{name} can log in again.")
    if buttons[1].button("Reassign open items…", key="annotators_reassign", icon=":material/swap_horiz:"):
        st.session_state[PENDING_KEY] = ("reassign", name)
    if buttons[2].button("Reset password…", key="annotators_reset", icon=":material/key:"):
        st.session_state[PENDING_KEY] = ("reset", name)
    if buttons[3].button("Login link", key="annotators_link", icon=":material/link:"):
        run(actions["link"], f"Single-use login link for {name} (valid 7 days, shown once): ")


def manage(account: Account, study: str, names: list[str]) -> None:
    """Actions on one account, the destructive ones behind a confirmation."""
    name = st.selectbox("Account", names, key=NAME_KEY)
    if name is None:
        return
    with session() as active:
        user = accounts.get_user(active, name)
        is_active = user.active
    actions = account_actions(account, study, name)
    confirmed = confirmations(study, name, actions)
    st.caption(f"**{name}** is {'active' if is_active else 'deactivated'}.")
    action_buttons(name, is_active, actions)
    pending = st.session_state.get(PENDING_KEY)
    if pending is not None and pending[1] == name and pending[0] in confirmed:
        confirm(*confirmed[pending[0]])


def show_result() -> None:
    result = st.session_state.get(RESULT_KEY)
    if result is None:
        return
    kind, text = result
    # a new password or link stays until hidden or another account is chosen: another click on the
    # page must not lose it
    if kind != "secret" or st.session_state.get(NAME_KEY) != st.session_state.get(SECRET_FOR_KEY):
        st.session_state.pop(RESULT_KEY, None)
        if kind == "secret":
            return
    if kind == "error":
        st.error(text)
    elif kind == "secret":
        label, secret = text.rsplit(": ", 1)
        st.success(label + ":")
        st.code(secret, language=None, wrap_lines=True)
        if st.button("I have passed it on: hide it", key=HIDE_KEY, icon=":material/visibility_off:"):
            st.session_state.pop(RESULT_KEY, None)
            st.rerun()
    else:
        st.success(text)


QC_SHOWN = [
    "annotator",
    "judgments",
    "gold_accuracy",
    "gold_checks",
    "self_consistency",
    "swap_checks",
    "fast_share",
    "too_fast",
    "straight_lining",
    "competence",
    "competence_preference",
    "ds_ordinal",
    "ds_preference",
    "excluded",
    "reasons",
]


@st.cache_resource(show_spinner=False, max_entries=16)
def cached_quality(
    url: str, study: str, version: tuple[int, ...], _account: Account
) -> quality.QualityResult:
    """The quality-control result of one data version (the competence models take seconds)."""
    with session() as active:
        return quality.annotator_quality(active, study=study, account=_account)


def show_quality(account: Account, study: str) -> None:
    """Quality control: controls, attention, competence (crowd-kit) and the exclusion rule."""
    st.header("Quality control")
    with session() as active:
        version = study_progress.data_version(active, study, account=account)
    with st.spinner("Fitting the competence models (once per change of the data)..."):
        result = cached_quality(str(engine().url), study, version, account)
    if result.table.empty:
        st.info("No judgments yet.")
        return
    show_table(result.table, QC_SHOWN, key="annotators_quality")
    summary = result.summary()
    when = summary["registered_at"] or "never"
    timing = "before the first judgment" if summary["registered_before_data"] else "after data began"
    st.caption(
        "Gold accuracy: share of control checks answered as expected (gold, positive, duplicate pairs); "
        "self-consistency: agreement with one's own earlier answers on swapped repeats (1 = identical); "
        "competence: MACE on the quality and rubric ratings (crowd-kit), and on the preference; "
        "Dawid-Skene: the same with the Dawid-Skene model. "
        f"Exclusion rule, registered {when} ({timing}): {safe_md(summary['rule'])} "
        f"Excluded: {', '.join(result.excluded) or 'nobody'}."
    )
    drift_box = opened("Agreement over time (drift)", "annotators_drift_open", kept=True)
    if drift_box is None:
        return
    with drift_box:
        by = st.radio("Per", ["week", "block"], horizontal=True, key="annotators_drift_by")
        with session() as active:
            drift, markers = quality.agreement_drift(active, study=study, account=account, by=by)
        show_table(drift, key="annotators_drift")
        st.caption("Krippendorff's alpha (ordinal) on the pairs completed in each period.")
        show_table(markers, key="annotators_markers")
        st.caption("Guideline versions: when each was first and last used.")


def main() -> None:
    account, study = study_page("Annotators", "annotators_study")
    if study is not None:
        with session() as active:
            frame = label_frame(active, study=study, account=account)
            progress = study_progress.annotator_progress(active, study=study, account=account)
            everyone = [u.username for u in accounts.list_users(active, role="annotator")]
        if frame.empty:
            st.info("No judgments yet.")
        else:
            st.header("Diagnostics")
            show_table(annotator_diagnostics(frame), key="annotators_diagnostics")
            st.caption(
                "Agreement with the others: Spearman correlation with the mean of the other annotators on "
                "the pairs they share; straight-lining: share of judgments with one value on every quality "
                "scale; under 10 s: share of judgments submitted in less than 10 seconds."
            )
        st.header("Manage")
        show_result()
        names = list(progress["annotator"]) if not progress.empty else []
        names += [name for name in everyone if name not in names]
        if names:
            manage(account, study, names)
        if not frame.empty:  # last: the page is usable while the competence models are fitted
            show_quality(account, study)


main()
