"""Owner links: a single-use link per profile owner of a study (the same as `annotator owners link`),
the study's links, and revoking an owner's links (unused, or in use by an owner's page)."""

import datetime as dt
from urllib.parse import urlsplit

import pandas as pd
import streamlit as st

from analysis.wording import counted
from annotator.app.common import choose_study, confirmed, requested, require, safe_md, session
from annotator.app.tables import show_table
from annotator.errors import UserError
from annotator.people.authorization import Account
from annotator.rating import owner_links, owners

DEFAULT_ADDRESS = "http://localhost:8501"  # where the address the browser used is not known
REVOKE_KEY = "owner_links_revoke_pending"


def this_address() -> str:
    """The app's own address as this browser reached it (scheme and host), the links' default."""
    try:
        parts = urlsplit(str(st.context.url or ""))
    except (AttributeError, ValueError):
        parts = urlsplit("")
    known = parts.scheme in ("http", "https") and parts.netloc
    return f"{parts.scheme}://{parts.netloc}" if known else DEFAULT_ADDRESS


def revoke_links(study: str, owner: str, account: Account) -> None:
    """Revoke the owner's links (unused or in use), after a confirm: an owner's page open from one
    cannot save any more."""
    if not requested(REVOKE_KEY, (study, owner), "Revoke this owner's links…", key="owner_links_revoke"):
        return
    question = (
        f"Revoke every link of {safe_md(owner)} in this study, unused or in use? An owner's page open "
        "from one can no longer save."
    )
    if confirmed(question, "Confirm: revoke", pending_key=REVOKE_KEY, key="owner_links_revoke"):
        with session() as active:
            n = owner_links.revoke_owner_links(active, study=study, owner=owner, account=account)
        st.success(f"Revoked {counted(n, 'link')}.")


def main() -> None:
    account = require("researcher")
    st.title("Owner links")
    st.caption(
        "A profile's owner rates the pairs of their own profile through a single-use link: blinded like "
        "everyone, never another owner's pairs. Owners' answers never enter the annotators' analysis."
    )
    study = choose_study("owner_links_study")
    if study is not None:
        with session() as active:
            names = owners.study_owners(active, study=study)
        if not names:
            st.info("No pair of this study names its owner (an `owner` or `user_id` key in the pairs file).")
        else:
            owner = st.selectbox("Owner", names, key="owner_links_owner")
            base_url = st.text_input(
                "The app's address as owners reach it", this_address(), key="owner_links_url"
            )
            days = st.number_input(
                "Days the link stays valid", min_value=0.5, value=7.0, step=1.0, key="owner_links_days"
            )
            make, revoke = st.columns(2)
            if make.button("Make a link", type="primary", key="owner_links_make"):
                try:
                    with session() as active:
                        token = owner_links.issue_owner_link(
                            active,
                            study=study,
                            owner=owner,
                            account=account,
                            valid_for=dt.timedelta(days=days),
                        )
                    st.code(f"{base_url.rstrip('/')}/?owner_token={token}", language=None)
                except UserError as exc:
                    st.error(str(exc))
            with revoke:
                revoke_links(study, owner, account)
            with session() as active:
                links = owner_links.list_owner_links(active, study=study, account=account)
            if links:
                show_table(pd.DataFrame(links), key="owner_links_table")


main()
