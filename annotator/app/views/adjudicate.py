"""Adjudicate: automatic resolution, the queue (lowest agreement first), and decisions on one pair."""

import streamlit as st

from annotator import adjudicate
from annotator.app.common import choose_study, require, safe_md, session
from annotator.errors import UserError

account = require("adjudicator", "researcher")
st.title("Adjudicate")
study = choose_study("adjudicate_study")
if study is not None:
    if st.button("Resolve the clear cases automatically", key="adjudicate_auto", icon=":material/auto_mode:"):
        with session() as active:
            st.success(str(adjudicate.auto_resolve(active, study=study, account=account)))
    with session() as active:
        waiting = adjudicate.queue(active, study=study, account=account)
    st.subheader(f"Queue ({len(waiting)})")
    if waiting.empty:
        st.info("Nothing needs a person right now. Run the automatic resolution after new judgments arrive.")
        st.stop()
    st.dataframe(waiting, hide_index=True, width="stretch")
    show_names = st.toggle("Show annotator names", value=True, key="adjudicate_names")
    pick = st.selectbox(
        "Pair",
        list(waiting.itertuples(index=False)),
        format_func=lambda r: f"{r.pair_id} · {r.reasons}",
        key="adjudicate_pick",
    )
    with session() as active:
        detail = adjudicate.pair_detail(active, pair_id=int(pick.pair_db_id), account=account)
    pair = detail.pair
    st.markdown(f"#### {safe_md(pair['pair_id'] if 'pair_id' in pair else pick.pair_id)}")
    st.info(safe_md(pair.get("question", "")))
    left, right = st.columns(2)
    with left, st.container(border=True):
        st.markdown("**Chosen** (built to follow the rubric)")
        st.markdown(safe_md(pair.get("chosen", "")))
    with right, st.container(border=True):
        st.markdown("**Rejected**")
        st.markdown(safe_md(pair.get("rejected", "")))
    judgments = (
        detail.judgments if show_names else detail.judgments.drop(columns=["annotator"], errors="ignore")
    )
    st.subheader("Judgments")
    st.dataframe(judgments, hide_index=True, width="stretch")
    st.dataframe(detail.scores, hide_index=True, width="stretch")
    if not detail.history.empty:
        st.subheader("History")
        st.dataframe(detail.history, hide_index=True, width="stretch")
    with st.form(f"decide_{pick.pair_db_id}"):
        preference = st.radio("Final preference", adjudicate.PREFERENCES, horizontal=True, key="decide_pref")
        keep = st.checkbox("Keep this pair in the benchmark", value=True, key="decide_keep")
        medians = detail.scores.groupby("item")[["chosen", "rejected"]].median()
        final: dict[str, dict[str, float]] = {"chosen": {}, "rejected": {}}
        with st.expander("Final scores (change only where they should differ from the median)"):
            for item, row in medians.iterrows():
                left, right = st.columns(2)
                for column, response in ((left, "chosen"), (right, "rejected")):
                    median = float(row[response])
                    value = column.number_input(
                        f"{item} · {response}", value=median, step=0.5, key=f"decide_{response}_{item}"
                    )
                    if value != median:
                        final[response][str(item)] = float(value)
        note = st.text_area("Note", key="decide_note")
        if st.form_submit_button("Record decision", type="primary"):
            try:
                with session() as active:
                    adjudicate.decide(
                        active,
                        pair_id=int(pick.pair_db_id),
                        account=account,
                        preference=preference,
                        keep=keep,
                        scores={response: items for response, items in final.items() if items} or None,
                        note=note,
                    )
                st.success("Decision recorded.")
            except UserError as exc:
                st.error(str(exc))
