"""Study settings: create a study in the browser (a pairs file, an optional study.toml, the settings in a
form, a preview of the first items as an annotator sees them) and read a study's registered settings."""

import hashlib
import json
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import streamlit as st

from annotator.app.common import UPLOAD_LIMIT, engine, require, safe_md, session, two_texts
from annotator.app.rating_page.form import Question, item_questions
from annotator.app.tables import show_table
from annotator.errors import UserError
from annotator.intake import ingest, study_settings
from annotator.people.authorization import Account
from annotator.rating import labels
from annotator.rating.labels import ItemView
from annotator.review.study_progress import study_names
from annotator.store.models import Study
from annotator.study import PLATFORMS, StudyConfig, get_study, load_config, study_config

PREVIEW_ITEMS = 2
PAIR_FIELDS = ("question", "narrative", "profile", "rubric", "chosen", "rejected")
CREATED_KEY = "settings_created"
ROUND_KEY = "settings_created_count"  # studies created in this session: the name and pairs fields' keys


def problems(title: str, exc: Exception, upload_name: str = "", path: Path | None = None) -> None:
    """A refusal and its lines as plain text (one line per problem, as the CLI prints them)."""
    text = str(exc)
    if path is not None:
        text = text.replace(str(path), upload_name)
    st.error(title, icon=":material/error:")
    st.code(text, language=None, wrap_lines=True)


@st.cache_data(max_entries=8, show_spinner="Checking the pairs file...")
def checked_pairs(data: bytes, name: str) -> tuple[list[dict[str, Any]], str]:
    """The pair records of an uploaded file (validated as `annotator import` does), or its error lines."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(name).name
        path.write_bytes(data)
        try:
            return ingest.load_pairs(path)[:PREVIEW_ITEMS], ""
        except UserError as exc:
            return [], str(exc).replace(str(path), name)


def base_config() -> tuple[StudyConfig | None, str]:
    """The settings to start the form from: an uploaded study.toml (read by the CLI's loader) or the
    defaults; and a tag that changes with the upload (the form starts over for a new file)."""
    upload = st.file_uploader(f"study.toml (optional; {UPLOAD_LIMIT})", type=["toml"], key="settings_toml")
    if upload is None:
        return load_config(), "default"
    data = upload.getvalue()
    with tempfile.TemporaryDirectory() as folder:
        try:
            config = study_settings.upload_config(data, upload.name, Path(folder))
        except UserError as exc:
            problems("This study.toml cannot be used:", exc)
            return None, ""
    return config, hashlib.sha256(data).hexdigest()[:12]


def share_input(
    column: Any, label: str, value: float | None, key: str, step: float | None = None, top: float = 1.0
) -> Any:
    """A number input for a share, from 0 to `top` (an empty one, from a None value, is None)."""
    return column.number_input(label, min_value=0.0, max_value=top, value=value, step=step, key=key)


def count_input(column: Any, label: str, low: int, value: int, key: str) -> Any:
    """A number input for a whole number of at least `low`."""
    return column.number_input(label, min_value=low, value=value, key=key)


def settings_form(base: StudyConfig, tag: str) -> StudyConfig | None:
    """The settings a researcher sets in the browser; the config they make, or None (errors shown)."""
    a, c, x, t, w = base.analysis, base.controls, base.exclusion, base.training, base.crowd
    st.subheader("Quality dimensions")
    st.caption("One row per general-quality question; its labels in order, separated by “ | ”.")
    dimensions = st.data_editor(
        study_settings.dimensions_frame(base), num_rows="dynamic", width="stretch", key=f"settings_dims_{tag}"
    )
    st.subheader("Design and analysis")
    left, middle, right = st.columns(3)
    margin = left.number_input(
        "Equivalence margin (scale points)",
        min_value=0.01,
        value=a.margin,
        step=0.05,
        key=f"settings_margin_{tag}",
    )
    overlap = count_input(middle, "Annotators per pair", 1, a.overlap, f"settings_overlap_{tag}")
    rate = share_input(
        right, "Control pairs (share of each queue)", c.rate, f"settings_rate_{tag}", 0.05, 0.99
    )
    st.subheader("Training")
    st.caption(
        "Practice items with feedback before the real queue (options separated by “ | ”; answer: "
        "the option's number)."
    )
    training = st.data_editor(
        study_settings.training_frame(base),
        num_rows="dynamic",
        width="stretch",
        key=f"settings_training_{tag}",
    )
    left, right = st.columns(2)
    threshold = share_input(
        left, "Share right to pass the training", t.pass_threshold, f"settings_threshold_{tag}", 0.05
    )
    attempts = count_input(
        right, "Comprehension-check attempts", 1, t.comprehension_attempts, f"settings_attempts_{tag}"
    )
    st.subheader("Crowd platform")
    platforms = ["", *PLATFORMS]
    left, middle, right = st.columns(3)
    platform = left.selectbox(
        "Platform",
        platforms,
        index=platforms.index(w.platform),
        format_func=lambda p: p or "none (accounts only)",
        key=f"settings_platform_{tag}",
    )
    places = count_input(middle, "Places (accounts a link may create)", 0, w.places, f"settings_places_{tag}")
    items = count_input(right, "Pairs per worker", 1, w.items, f"settings_items_{tag}")
    left, middle, right = st.columns(3)
    code = left.text_input("Completion code", value=w.completion_code, key=f"settings_code_{tag}")
    completion_url = middle.text_input("Completion URL", value=w.completion_url, key=f"settings_url_{tag}")
    minutes = count_input(
        right, "Session limit (minutes, 0 = none)", 0, w.session_minutes, f"settings_minutes_{tag}"
    )
    st.subheader("Pre-registered exclusion rule")
    rule = st.text_area(
        "The rule in words (it goes into the report)", value=x.rule, key=f"settings_rule_{tag}"
    )
    left, middle, right = st.columns(3)
    gold = share_input(
        left, "Minimum gold accuracy (empty: none)", x.min_gold_accuracy, f"settings_gold_{tag}"
    )
    consistency = share_input(
        middle,
        "Minimum self-consistency (empty: none)",
        x.min_self_consistency,
        f"settings_consistency_{tag}",
    )
    competence = share_input(
        right, "Minimum competence (empty: none)", x.min_competence, f"settings_competence_{tag}"
    )
    left, right = st.columns(2)
    too_fast = left.checkbox(
        "Exclude annotators flagged too fast", value=x.exclude_too_fast, key=f"settings_fast_{tag}"
    )
    straight = right.checkbox(
        "Exclude annotators flagged straight-lining",
        value=x.exclude_straight_lining,
        key=f"settings_straight_{tag}",
    )
    try:
        return study_settings.build_config(
            base,
            dimensions=dimensions,
            training=training,
            sections={
                "analysis": {"margin": float(margin), "overlap": int(overlap)},
                "controls": {"rate": float(rate)},
                "training": {"pass_threshold": float(threshold), "comprehension_attempts": int(attempts)},
                "crowd": {
                    "platform": platform,
                    "places": int(places),
                    "items": int(items),
                    "completion_code": code,
                    "completion_url": completion_url,
                    "session_minutes": int(minutes),
                },
                "exclusion": {
                    "rule": rule,
                    "min_gold_accuracy": gold,
                    "min_self_consistency": consistency,
                    "min_competence": competence,
                    "exclude_too_fast": too_fast,
                    "exclude_straight_lining": straight,
                },
            },
        )
    except UserError as exc:
        problems("These settings cannot be used:", exc)
        return None


def preview_item(row: dict[str, Any], config: StudyConfig, chosen_on: str) -> ItemView:
    """A checked pair row (its list fields are JSON text) as the rating page will show it."""
    fields = {key: json.loads(row[key]) if key in ("profile", "rubric") else row[key] for key in PAIR_FIELDS}
    return labels.item_view(config, study="", pair=SimpleNamespace(**fields), chosen_side=chosen_on)


def question_line(number: int, question: Question) -> str:
    """One question as a numbered Markdown line: its label as the rating page draws it, then its options."""
    options = safe_md(" · ".join(question.option_labels[v] for v in question.options))
    return f"{number}. {question.label}  \n   :gray[{options}]"


def preview(records: list[dict[str, Any]], config: StudyConfig) -> None:
    """The first items as an annotator sees them (chosen on A, then on B: sides are counterbalanced),
    with every question of the rating form, worded and ordered as the rating page asks it."""
    for number, record in enumerate(records, start=1):
        item = preview_item(record, config, "A" if number % 2 else "B")
        with st.container(border=True):
            st.markdown(f"**Item {number}** · {safe_md(item.question)}")
            if item.narrative:
                st.caption(f"The user's own explanation: {safe_md(item.narrative)}")
            if item.profile:
                posts = len(item.profile)
                shown = min(item.profile_shown, posts)
                st.caption(
                    f"The user's past posts: {posts} {'post' if posts == 1 else 'posts'}, the {shown} most "
                    "relevant to the question listed first (all searchable)."
                )
            two_texts("Response", item.text_a, item.text_b)
            questions = item_questions(item, config)
            st.markdown(f"**The {len(questions)} questions, in the rating page's order:**")
            st.markdown("\n".join(question_line(k, q) for k, q in enumerate(questions, start=1)))


def create(account: Account) -> None:
    """A new study: the pairs file, the settings, the preview, then create."""
    st.header("New study")
    created = st.session_state.pop(CREATED_KEY, None)
    if created:
        st.success(created)
        st.toast(created, icon=":material/check_circle:")  # seen where the researcher clicked, too
    emptied = st.session_state.get(ROUND_KEY, 0)
    suffix = f"_{emptied}" if emptied else ""  # new keys after a study is created: empty fields
    name = st.text_input("Study name", key=f"settings_name{suffix}")
    upload = st.file_uploader(
        f"Pairs file (JSONL, JSON, CSV or Parquet; {UPLOAD_LIMIT})",
        type=ingest.UPLOAD_TYPES,
        key=f"settings_pairs{suffix}",
    )
    base, tag = base_config()
    if base is None:
        return
    config = settings_form(base, tag)
    records: list[dict[str, Any]] = []
    if upload is not None:
        records, error = checked_pairs(upload.getvalue(), upload.name)
        if error:
            problems("The pairs file cannot be imported:", UserError(error))
    if config is None:
        return
    if records:
        st.subheader("Preview: the first items as an annotator sees them")
        preview(records, config)
    ready = bool(records) and bool(name.strip())
    if not st.button("Create the study", type="primary", key="settings_create", disabled=not ready):
        if not ready:
            st.caption("Name the study and choose a valid pairs file to create it.")
        return
    assert upload is not None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        try:
            summary = ingest.import_file(engine(), path, study=name.strip(), config=config, account=account)
        except UserError as exc:
            problems("The study was not created:", exc, upload.name, path)
            return
    st.session_state[CREATED_KEY] = f"{summary} The settings are now fixed for this study."
    st.session_state[ROUND_KEY] = emptied + 1
    st.rerun()


def registered(account: Account) -> None:
    """A study's registered settings and when they were fixed (its first import)."""
    st.header("Registered settings")
    with session() as active:
        names = study_names(active)
    if not names:
        st.info("No study yet.")
        return
    name = st.selectbox("Study", names, key="settings_study")
    with session() as active:
        row: Study = get_study(active, name)
        config = study_config(active, name)
        fixed = row.created_at
    st.caption(
        f"Fixed at the study's first import, {fixed:%Y-%m-%d %H:%M} UTC; they cannot change afterwards "
        "(a new study is needed for other settings)."
    )
    rows = study_settings.settings_rows(config)
    for number, (section, table) in enumerate(rows.groupby("section", sort=False)):
        with st.expander(f"[{section}]", expanded=number == 0):
            show_table(table, ["setting", "value"], labels={"setting": "Setting", "value": "Value"})


def main() -> None:
    account = require("researcher")
    st.title("Study settings")
    new_tab, registered_tab = st.tabs(["New study", "Registered settings"])
    with new_tab:
        create(account)
    with registered_tab:
        registered(account)


main()
