"""A crowd worker's end of the rating page: the countdown of a timed study (static/countdown.js,
countdown.css), and the completion screen with its code and the way back to the platform
(static/redirect.js), or the "no credit" screen with its reason."""

import json
from datetime import timedelta

import streamlit as st

from annotator.app.assets import filled
from annotator.app.common import safe_md, session
from annotator.app.rating_page.actions import LATE_KEY
from annotator.people.authorization import Account
from annotator.rating import crowd
from annotator.study import study_config

COUNTDOWN = (
    '\n<span class="ps-countdown" role="timer" aria-live="off">'
    'Time left: <b id="ps-countdown">{left}</b></span>'
    "\n<script>\n{script}\n</script>"
    "\n<style>{style}</style>\n"
)


def show_completion(completion: crowd.Completion) -> None:
    """The crowd worker's completion code, and a redirect to the platform's completion URL; or, for
    too little real work, the "no credit" screen with its reason."""
    if not completion.credited:
        st.error(
            f"No completion code: {safe_md(completion.reason)}. Please return the study on the platform.",
            icon=":material/block:",
        )
        return
    if completion.code:
        st.markdown("Your completion code:")
        st.code(completion.code, language=None)
    if crowd.may_redirect(completion.url):  # https, or http to this machine (a local trial)
        st.link_button("Return to the platform", completion.url, type="primary")
        url = json.dumps(completion.url).replace("</", "<" + chr(92) + "/")
        st.html(f"<script>{filled('redirect.js', url=url)}</script>", unsafe_allow_javascript=True)


def time_over(account: Account, study_id: int) -> None:
    """The page once a crowd worker's time is over: why a last answer did not count, then the
    completion code (or no credit) for work finished in time, else a thank-you."""
    late = st.session_state.pop(LATE_KEY, None)
    if late:
        st.warning(late, icon=":material/timer_off:")
    with session() as active:
        earned = crowd.completion(active, account=account, study_id=study_id)
    if earned is not None:  # finished in time: the code (or no credit) stays on screen
        show_completion(earned)
        return
    st.warning("The time for this study is over. Thank you for taking part.")


def config_warn_minutes(study_id: int) -> int:
    """How many minutes before the limit the countdown warns ([crowd] warn_minutes)."""
    with session() as active:
        return study_config(active, study_id).crowd.warn_minutes


def countdown(left: timedelta, warn_minutes: int) -> None:
    """The time left in a timed crowd study, counting down in the browser; a warning once it is short."""
    seconds = int(left.total_seconds())
    body = COUNTDOWN.format(
        left=f"{seconds // 60}:{seconds % 60:02d}",
        script=filled("countdown.js", ms=str(seconds * 1000), warn=str(warn_minutes * 60)),
        style=filled("countdown.css"),
    )
    st.html(body, unsafe_allow_javascript=True)
    if seconds <= warn_minutes * 60:
        st.warning(
            f"Less than {max(1, -(-seconds // 60))} minute(s) left: please submit the item on screen soon. "
            "An answer sent after the limit is kept only as a draft.",
            icon=":material/timer:",
        )
