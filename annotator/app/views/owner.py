"""The profile owner's page: the pairs of their own profile, blinded (A and B), one at a time.

Reached only through an owner link (``?owner_token=...``); the session holds the study and the owner,
and every read and write goes through :mod:`annotator.rating.owners`, which serves this owner's pairs only.
"""

import streamlit as st

from analysis.vocabulary import SIDES
from annotator.app.common import safe_md, session, two_texts
from annotator.errors import UserError
from annotator.rating import owner_links, owners
from annotator.study import StudyConfig, study_config

OWNER_KEY = "owner_session"
PREFERENCES = {
    "A is much better for me": -2,
    "A is better for me": -1,
    "About the same": 0,
    "B is better for me": 1,
    "B is much better for me": 2,
}
ASPECT_ANSWERS = {"Yes": 2, "Partly": 1, "No": 0}
CONFIDENCE = ("Not sure", "Fairly sure", "Sure")


RESUME_PARAM = "owner_session"  # in the page's address once a link is redeemed: a reload resumes


def owner_session() -> owner_links.OwnerSession | None:
    """The owner of this browser session: from the session, by redeeming the link in the URL once (its
    token then leaves the address and the session's resume token takes its place), or after a reload
    from that resume token."""
    token = st.query_params.get("owner_token")
    resume = st.query_params.get(RESUME_PARAM)
    if token:
        del st.query_params["owner_token"]
        try:
            with session() as active:
                who = owner_links.redeem_owner_link(active, token)
            st.session_state[OWNER_KEY] = who
            st.query_params[RESUME_PARAM] = who.resume
        except UserError as exc:
            st.error(str(exc))
    elif resume and OWNER_KEY not in st.session_state:
        try:
            with session() as active:
                st.session_state[OWNER_KEY] = owner_links.resume_owner_session(active, resume)
        except UserError as exc:
            del st.query_params[RESUME_PARAM]
            st.error(str(exc))
    found = st.session_state.get(OWNER_KEY)
    return found if isinstance(found, owner_links.OwnerSession) else None


def main() -> None:
    """Show the owner's next unanswered pair and save the answer."""
    who = owner_session()
    if who is None:
        st.info("Open the link you were sent to rate the answers written for you.")
        return
    with session() as active:
        items = owners.owner_items(active, study=who.study, owner=who.owner)
        config = study_config(active, who.study)
    left = [item for item in items if not item.answered]
    st.title("Which answer is written for you?")
    st.caption(
        f"{len(items) - len(left)} of {len(items)} done. Your answers are seen only by the researchers."
    )
    if not left:
        st.success("Thank you: every pair is answered.")
        return
    item = left[0]
    st.subheader("Your question")
    st.markdown(safe_md(item.question))
    two_texts("Answer", item.text_a, item.text_b)
    asked = config.owners
    with st.form(key=f"owner_form_{item.pair_id}"):
        quality = quality_questions(config) if asked.ask_quality else {}
        choice = st.radio("Which answer is written for you?", list(PREFERENCES), index=None, key="owner_pref")
        confidence = (
            st.radio("How sure are you?", CONFIDENCE, index=None, key="owner_conf")
            if asked.ask_confidence
            else None
        )
        answers = []
        aspects = item.aspects if asked.ask_rubric else []
        if aspects:
            st.markdown("**Does each point describe what you want?**")
        for k, aspect in enumerate(aspects):
            answers.append(
                st.radio(
                    safe_md(aspect),
                    list(ASPECT_ANSWERS),
                    index=None,
                    key=f"owner_aspect_{k}",
                    horizontal=True,
                )
            )
        sent = st.form_submit_button("Save and continue", type="primary")
    if sent:
        missing = any(p is None for rated in quality.values() for p in rated.values())
        if choice is None or any(a is None for a in answers) or missing:
            st.error("Please answer every question.")
            return
        scales = config.quality.scales
        try:
            with session() as active:
                owners.submit_owner_answer(
                    active, study=who.study, owner=who.owner, pair_external_id=item.pair_id,
                    preference_ab=PREFERENCES[choice], aspects=[ASPECT_ANSWERS[str(a)] for a in answers],
                    confidence=None if confidence is None else CONFIDENCE.index(confidence) + 1,
                    scores_ab={
                        side: {name: scales[name].low + int(p or 0) for name, p in rated.items()}
                        for side, rated in quality.items()
                    } or None,
                )  # fmt: skip
        except UserError as exc:
            st.error(str(exc))
            return
        st.rerun()


def quality_questions(config: StudyConfig) -> dict[str, dict[str, int | None]]:
    """The study's quality items for answers A and B, as the rating page labels them: {side: {dimension:
    index of the chosen point, or None}}."""
    if config.quality.intro:
        st.markdown(safe_md(config.quality.intro))
    chosen: dict[str, dict[str, int | None]] = {side: {} for side in SIDES}
    for dimension in config.quality.dimensions:
        for side in SIDES:
            chosen[side][dimension.name] = st.radio(
                f"Answer {side}: {safe_md(dimension.question)}",
                range(len(dimension.labels)),
                format_func=dimension.labels.__getitem__,
                index=None,
                key=f"owner_quality_{side}_{dimension.name}",
                horizontal=True,
            )
    return chosen


main()
