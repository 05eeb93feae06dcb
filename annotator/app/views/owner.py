"""The profile owner's page: the pairs of their own profile, blinded (A and B), one at a time.

Reached only through an owner link (``?owner_token=...``); the session holds the study and the owner,
and every read and write goes through :mod:`annotator.rating.owners`, which serves this owner's pairs only.
"""

import hashlib
import json

import streamlit as st

from analysis.vocabulary import SIDES
from annotator.app.assets import filled
from annotator.app.common import safe_md, scroll_to_top, session, two_texts
from annotator.errors import AuthError, UserError
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
    """The owner of this browser session: by redeeming the link in the URL once (its token then leaves
    the address and the session's resume token takes its place), else from the resume token (kept in
    the session and the address), checked on every run: a page open from a link revoked or expired
    since is ended. A refusal is shown here, once."""
    token = st.query_params.get("owner_token")
    if token:
        del st.query_params["owner_token"]
        try:
            with session() as active:
                who = owner_links.redeem_owner_link(active, token)
        except UserError as exc:
            refused(exc)
            return None
        st.session_state[OWNER_KEY] = who
        st.query_params[RESUME_PARAM] = who.resume
        return who
    kept = st.session_state.get(OWNER_KEY)
    resume = kept.resume if isinstance(kept, owner_links.OwnerSession) else st.query_params.get(RESUME_PARAM)
    if not resume:
        st.info("Open the link you were sent to rate the answers written for you.")
        return None
    try:
        with session() as active:
            who = owner_links.resume_owner_session(active, resume)
    except UserError as exc:
        refused(exc)
        return None
    st.session_state[OWNER_KEY] = who
    return who


def refused(exc: UserError) -> None:
    """End this browser's owner session (the session and the address forget it) and say why, as one
    sentence, with what to do."""
    st.session_state.pop(OWNER_KEY, None)
    st.query_params.pop(RESUME_PARAM, None)
    said = str(exc)
    st.error(f"{said[:1].upper()}{said[1:]}.", icon=":material/link_off:")


def main() -> None:
    """Show the owner's next unanswered pair and save the answer."""
    st.title("Which answer is written for you?")
    who = owner_session()
    if who is None:
        return
    with session() as active:
        items = owners.owner_items(active, study=who.study, owner=who.owner)
        config = study_config(active, who.study)
    left = [item for item in items if not item.answered]
    done = len(items) - len(left)
    st.caption(f"{done} of {len(items)} done. Your answers are seen only by the researchers.")
    if not left:
        st.success("Thank you: every pair is answered.")
        page_script(None)  # no unsaved answers left to keep
        return
    item = left[0]
    slot = items.index(item)  # the questions' keys: a new pair starts with nothing ticked
    if done:  # the next pair from its top (the page kept the scroll position of the Save button); its
        scroll_to_top(done)  # first question takes the focus from the page script once it is drawn
    st.subheader("Your question")
    st.markdown(safe_md(item.question))
    two_texts("Answer", item.text_a, item.text_b)
    asked = config.owners
    keys = max([len(PREFERENCES), *(len(d.labels) for d in config.quality.dimensions if asked.ask_quality)])
    st.caption(f"Keys: 1-{keys} answer the question in focus, Ctrl+Enter saves.")
    with st.form(key=f"owner_form_{slot}"), st.container(key=f"owner_questions_{slot}"):
        quality = quality_questions(config, slot) if asked.ask_quality else {}
        choice = st.radio(
            "Which answer is written for you?", list(PREFERENCES), index=None, key=f"owner_pref_{slot}"
        )
        confidence = (
            st.radio("How sure are you?", CONFIDENCE, index=None, key=f"owner_conf_{slot}")
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
                    key=f"owner_aspect_{slot}_{k}",
                    horizontal=True,
                )
            )
        sent = st.form_submit_button("Save and continue", type="primary")
    questions = sum(map(len, quality.values())) + 1 + asked.ask_confidence + len(aspects)  # radios drawn
    page_script(
        {"box": f"owner_questions_{slot}", "draft": draft_name(who, item.pair_id), "questions": questions}
    )
    if sent:
        missing = any(p is None for rated in quality.values() for p in rated.values())
        if choice is None or any(a is None for a in answers) or missing:
            st.error("Please answer every question.")
            return
        scales = config.quality.scales
        try:
            with session() as active:
                owner_links.hold_owner_session(active, who)  # revoked since the page was drawn: refused
                owners.submit_owner_answer(
                    active, study=who.study, owner=who.owner, pair_external_id=item.pair_id,
                    preference_ab=PREFERENCES[choice], aspects=[ASPECT_ANSWERS[str(a)] for a in answers],
                    confidence=None if confidence is None else CONFIDENCE.index(confidence) + 1,
                    scores_ab={
                        side: {name: scales[name].low + int(p or 0) for name, p in rated.items()}
                        for side, rated in quality.items()
                    } or None,
                )  # fmt: skip
        except AuthError as exc:
            refused(exc)
            return
        except UserError as exc:
            st.error(str(exc))
            return
        st.rerun()


def draft_name(who: owner_links.OwnerSession, pair_id: str) -> str:
    """The name the page script keeps this pair's unsaved answers under in the tab's storage: a digest
    of the owner session (its resume token, which stays out of the page) and the pair."""
    return hashlib.sha256(
        f"{who.resume}\0{who.study}\0{pair_id}".encode("utf-8", "surrogatepass")
    ).hexdigest()[:32]


def page_script(pair: dict[str, str | int] | None) -> None:
    """The page's keys and its unsaved answers (static/owner.js, installed once per browser tab), told
    the pair on screen (`pair`: the key of its questions' container, its draft name and how many
    questions it asks; None when every pair is answered). The element is new, so its script runs
    again, whenever the pair changes."""
    data = json.dumps(pair).replace("</", "<\\/")
    st.html(f"<script>{filled('owner.js', pair=data)}</script>", unsafe_allow_javascript=True)


def quality_questions(config: StudyConfig, slot: int) -> dict[str, dict[str, int | None]]:
    """The study's quality items for answers A and B, as the rating page labels them (keys of the pair
    at `slot`): {side: {dimension: index of the chosen point, or None}}."""
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
                key=f"owner_quality_{slot}_{side}_{dimension.name}",
                horizontal=True,
            )
    return chosen


main()
