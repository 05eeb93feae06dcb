"""The researcher's workspace: readable tables, plots that cannot draw impossible intervals, study
settings validated as the CLI validates them, assign with a preview, the report downloads (the same
numbers as `annotator analyze`), and the adjudication queue at 80 columns."""

import base64
import csv
import html
import io
import json
import math
import re
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from analysis.readable import cell, label, readable
from analysis.render import MIN_CATEGORY_PAIRS, figure_captions, figures, svg_figures, to_html
from analysis.report import ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from annotator.app import report_cache
from annotator.app.tables import plain_md
from annotator.cli import app
from annotator.errors import ConfigError
from annotator.intake import assign, study_settings
from annotator.people.authorization import SYSTEM, Account
from annotator.review import study_progress
from annotator.store import db
from annotator.store.models import Assignment, User, id_of
from annotator.study import load_config
from tests.utils.apphelpers import app_for
from tests.utils.factories import make_annotators, make_study
from tests.utils.figures import hollow_points, intervals
from tests.utils.sciencehelpers import simulated_study

runner = CliRunner()


# ------------------------------------------------------------------------------------------- tables


def test_cells_are_rounded_and_missing_values_are_empty() -> None:
    assert [cell(None), cell(float("nan")), cell(pd.NaT), cell(np.float64("inf"))] == ["", "", "", ""]
    assert cell(0.123456, "estimate") == "0.12"
    assert cell(0.0004, "p_value") == "<\u00a00.001" and cell(0.04567, "pvalue") == "0.046"
    assert cell(0.2, "wilcoxon_p_value") == "0.200"
    assert cell(True) == "yes" and cell(np.bool_(False)) == "no"
    assert cell(12.0, "n_pairs") == "12" and cell(3.0, "confidence", integers=True) == "3"
    assert cell(["a", "b"]) == "a, b"


def test_readable_labels_columns_with_units_and_keeps_order() -> None:
    frame = pd.DataFrame(
        {"median_time_s": [12.345, np.nan], "pair_var": [0.5, 0.25], "n_pairs": [3, 4], "odd_name": [1, 2]}
    )
    shown = readable(frame, ["n_pairs", "median_time_s", "pair_var", "odd_name", "missing"])
    assert list(shown.columns) == ["Pairs", "Median time (s)", "Pair variance (points²)", "Odd name"]
    assert shown.iloc[1].tolist() == ["4", "", "0.25", "2"]
    assert label("ci_low") == "CI low" and "_" not in "".join(shown.columns)


@pytest.mark.parametrize(
    "text",
    [
        "![x](http://127.0.0.1:9/x.png) **bold** _it_ `code`",
        "<img src=x onerror=alert(1)> <b>b</b> &amp;",
        "$x^2$ :red[red] :material/home: [link](http://e.com) \\*",
        "| a | b |\n# heading\n- item",
    ],
)
def test_static_table_cells_render_as_typed(text: str) -> None:
    """st.table renders Markdown in its cells: a cell is escaped so CommonMark shows it as typed."""
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").renderInline(plain_md(text))
    assert "<" not in rendered.replace("&lt;", "")
    assert html.unescape(rendered) == text.replace("\n", " ")


# -------------------------------------------------------------------------------------------- plots


def _category_report(big: str = "big") -> object:
    frame = simulate_frame(np.random.default_rng(5), SimDesign(n_pairs=14), SimEffects(noise=1.2))
    pairs = sorted(frame["pair_id"].unique())
    # `big`: 10 pairs (an interval), "one" and "two": 1 and 2 pairs (too few for one).
    kinds = dict.fromkeys(pairs[:10], big) | {pairs[10]: "one"} | dict.fromkeys(pairs[11:13], "two")
    kinds[pairs[13]] = big
    frame["category"] = frame["pair_id"].map(kinds)
    return build_report(frame, study="x", settings=ReportSettings(n_boot=50))


def test_category_plot_draws_no_impossible_interval() -> None:
    report = _category_report()
    figure = figures(report)["categories"]  # type: ignore[arg-type]
    width = report.parameters["scale_max"] - report.parameters["scale_min"]  # type: ignore[attr-defined]
    few = hollow_points(figure)
    assert few and all(name.startswith("too few pairs") for name in few)
    assert {row.split(" (")[0] for rows in few.values() for row in rows} == {"one", "two"}
    assert all("too few pairs" in row for rows in few.values() for row in rows)
    drawn = intervals(figure)
    assert drawn and {i.row.split(" (")[0] for i in drawn} == {"big"}, "no interval for too few pairs"
    for interval in drawn:
        assert -width - 1e-9 <= interval.low <= interval.estimate <= interval.high <= width + 1e-9
    assert MIN_CATEGORY_PAIRS == 3


def test_every_plot_has_a_title_axis_labels_and_a_caption() -> None:
    report = _category_report()
    plots, captions = figures(report), figure_captions(report)  # type: ignore[arg-type]
    assert set(plots) == set(captions)
    for name, figure in plots.items():
        ax = figure.axes[0]
        assert ax.get_title(loc="left"), name
        assert ax.get_xlabel() and ax.get_ylabel(), name
        assert len(captions[name]) > 40, name


def test_no_text_of_a_figure_leaves_it() -> None:
    """Titles, axis labels, tick labels and legends lie inside their figure (none cut at its edge)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from analysis.render import plots

    report = _category_report("a category whose name goes on and on " * 4)
    for name, figure in figures(report).items():  # type: ignore[arg-type]
        with plots._style():  # the settings the figures are saved with
            FigureCanvasAgg(figure).draw()
            renderer = figure.canvas.get_renderer()
            box = figure.bbox
            parts = [ax.get_tightbbox(renderer) for ax in figure.axes]  # with its drawn labels and title
            parts += [legend.get_window_extent(renderer) for legend in figure.legends]
            for part in parts:
                assert box.x0 - 1 <= part.x0 and part.x1 <= box.x1 + 1, (name, part, box)
                assert box.y0 - 1 <= part.y0 and part.y1 <= box.y1 + 1, (name, part, box)


def test_the_html_download_embeds_the_figures_the_page_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's HTML report takes the figures already drawn (stored with the report): none is drawn
    again."""
    from analysis.render import as_html

    report = _category_report()
    drawn = {
        name: f"<svg xmlns='http://www.w3.org/2000/svg' id='{name}'/>" for name in figure_captions(report)
    }  # type: ignore[arg-type]

    def no_drawing(_: object) -> None:
        raise AssertionError("the figures were drawn again")

    monkeypatch.setattr(as_html, "svg_figures", no_drawing)
    page = report_cache.Published(report, drawn).file("html").decode()  # type: ignore[arg-type]
    for svg in drawn.values():
        assert base64.b64encode(svg.encode()).decode() in page


def test_figures_draw_hostile_names_as_plain_text() -> None:
    """Category names with math and LaTeX markup, an SVG comment's end and a script are drawn, never
    interpreted: the SVG parses as XML and holds no script or foreign element."""
    frame = simulate_frame(np.random.default_rng(5), SimDesign(n_pairs=12), SimEffects(noise=1.2))
    hostile = ["$\\frac{1}{$ (x", "--> <script>alert(1)</script>", "\\textbf{x} $$"]
    frame["category"] = frame["pair_id"].map(
        {p: hostile[i % 3] for i, p in enumerate(sorted(frame["pair_id"].unique()))}
    )
    report = build_report(frame, study="x", settings=ReportSettings(n_boot=50))
    svgs = svg_figures(report)
    rows = [t.get_text() for t in figures(report)["categories"].axes[0].get_yticklabels()]
    drawn = sorted("".join(row.split()).split("(n=")[0] for row in rows)  # wrapped at any character
    assert drawn == sorted("".join(name.split()) for name in hostile)
    for name, svg in svgs.items():
        root = ElementTree.fromstring(svg)
        tags = {element.tag.split("}")[-1] for element in root.iter()}
        assert not tags & {"script", "foreignObject", "iframe"}, name
        assert "<script" not in svg, name


def test_html_report_fits_a_phone_and_has_readable_tables() -> None:
    page = to_html(_category_report())  # type: ignore[arg-type]
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in page
    assert "<th scope='col'>Estimate (points)</th>" in page and ">ci_low<" not in page
    assert ">n/a<" not in page and ">nan<" not in page and ">None<" not in page
    assert page.count("<figcaption>") == 5
    assert "class='table' role='region' tabindex='0'" in page


# ------------------------------------------------------------------------------------------ settings


def _cli_error(tmp_path: Path, toml: str) -> list[str]:
    path = tmp_path / "bad.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return [line.removeprefix(f"{path}: ") for line in str(caught.value).splitlines()]


def test_settings_form_gives_the_error_lines_of_the_cli(tmp_path: Path) -> None:
    base = load_config()
    toml = (Path(__file__).resolve().parents[1] / "data" / "study.toml").read_text(encoding="utf-8")
    toml = re.sub(r"(?m)^margin = 0\.5", "margin = -1", re.sub(r"(?m)^rate = 0\.0", "rate = 1.5", toml))
    cli = _cli_error(tmp_path, toml)
    with pytest.raises(ConfigError) as caught:
        study_settings.build_config(
            base,
            dimensions=study_settings.dimensions_frame(base),
            training=study_settings.training_frame(base),
            sections={"analysis": {"margin": -1.0}, "controls": {"rate": 1.5}},
        )
    lines = str(caught.value).splitlines()
    assert [line.removeprefix("study settings: ") for line in lines] == cli
    assert lines[0].startswith("study settings: analysis.margin: ")


def test_settings_form_refuses_a_margin_no_ratings_could_fail_as_the_cli_does(tmp_path: Path) -> None:
    base = load_config()
    toml = (Path(__file__).resolve().parents[1] / "data" / "study.toml").read_text(encoding="utf-8")
    cli = _cli_error(tmp_path, re.sub(r"(?m)^margin = 0\.5", "margin = 4", toml))
    with pytest.raises(ConfigError) as caught:
        study_settings.build_config(
            base,
            dimensions=study_settings.dimensions_frame(base),
            training=study_settings.training_frame(base),
            sections={"analysis": {"margin": 4.0}},
        )
    assert [str(caught.value).removeprefix("study settings: ")] == cli
    assert "no ratings could fail equivalence" in cli[0]


def test_settings_form_builds_the_config_it_shows(tmp_path: Path) -> None:
    base = load_config()
    dims = pd.DataFrame([{"name": "clarity", "question": "Is it clear?", "labels": "1 | 2 | 3 | 4 | 5"}])
    training = pd.DataFrame([{"question": "Pick B", "options": "A | B", "answer": 2, "explanation": "B."}])
    config = study_settings.build_config(
        base,
        dimensions=dims,
        training=training,
        sections={"crowd": {"platform": "prolific", "places": 30}, "exclusion": {"rule": "gold < 0.6"}},
    )
    assert config.dimension_names == ["clarity"] and config.quality.dimensions[0].labels == list("12345")
    assert config.training.items[0].answer == 1 and config.crowd.places == 30
    rows = study_settings.settings_rows(config)
    assert ("exclusion", "rule", "gold < 0.6") in set(rows.itertuples(index=False, name=None))
    bad = pd.DataFrame([{"name": "clarity", "question": "Is it clear?", "labels": "1 | 2"}])
    with pytest.raises(ConfigError, match=r"study settings: quality: .*clarity.* has 2 labels"):
        study_settings.build_config(base, dimensions=bad, training=training, sections={})


def test_an_uploaded_toml_is_read_by_the_cli_loader_and_named_in_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        study_settings.upload_config(b"[analysis]\nmargin = 'x'\n", "mine.toml", tmp_path)
    assert str(caught.value).startswith("mine.toml: ") and str(tmp_path) not in str(caught.value)


# --------------------------------------------------------------------------------------------- assign


def _assignments(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Assignment)).one())


def test_assign_preview_writes_nothing_and_predicts_the_load(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 9, account=SYSTEM)
    make_annotators(engine, 4)
    picked = ["ann00", "ann01", "ann03"]
    with Session(engine) as session:
        summary, load = assign.preview(session, study="s1", overlap=2, annotators=picked, account=SYSTEM)
    assert _assignments(engine) == 0
    assert summary.created == 18 and [r["annotator"] for r in load] == picked
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=2, annotators=picked, account=SYSTEM)
    with Session(engine) as session:
        counted = dict(
            session.exec(
                select(User.username, func.count())
                .join(Assignment, Assignment.annotator_id == User.id)
                .group_by(User.username)
            ).all()
        )
    assert counted == {r["annotator"]: r["new"] for r in load}
    assert all(r["queued"] == 0 and r["total"] == r["new"] for r in load)


@pytest.mark.page
def test_assign_picker_in_the_app_previews_then_commits(engine: Engine, tmp_path: Path, env_db: str) -> None:
    make_study(engine, tmp_path, 6, account=SYSTEM)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        boss = accounts_add(session)
    at = app_for(boss)
    at.switch_page("views/data.py").run()
    assert not at.exception
    assert at.multiselect(key="assign_annotators").value == []  # nobody is picked at first
    at.multiselect(key="assign_annotators").set_value(["ann00", "ann02"]).run()
    at.number_input(key="assign_overlap").set_value(2).run()
    table = at.table[0].value
    assert list(table["Annotator"]) == ["ann00", "ann02"] and list(table["New items"]) == [6, 6]
    assert _assignments(engine) == 0
    at.button(key="assign_commit").click().run()
    assert not at.exception and _assignments(engine) == 0  # a confirm of the count comes first
    at.button(key="assign_confirm").click().run()
    assert not at.exception and _assignments(engine) == 12
    assert "12 new assignments" in at.success[0].value


def accounts_add(session: Session) -> Account:
    from annotator.people import accounts

    user = accounts.add_user(
        session, username="boss", role="researcher", password="boss-password-1", account=SYSTEM
    )
    return Account(id=id_of(user), username="boss", role="researcher")


# ------------------------------------------------------------------------------------- report cache


def test_downloads_have_the_numbers_of_annotator_analyze(engine: Engine, tmp_path: Path) -> None:
    simulated_study(engine, tmp_path, 6)
    url = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "analyze.json"
    result = runner.invoke(app, ["analyze", "--study", "s1", "--json", str(out), "--db", url])
    assert result.exit_code == 0, result.output
    calls: list[str] = []

    def counted(*args: object) -> report_cache.Published:
        calls.append("x")
        return report_cache._compute(*args)  # type: ignore[arg-type]

    with Session(engine) as session:  # the real version: the whole study's report is stored under it
        version = study_progress.data_version(session, "s1", account=SYSTEM)
    key = (url, "s1", version, (), ())
    first = report_cache.request(key, SYSTEM, engine=engine, compute=counted)
    again = report_cache.request(key, SYSTEM, engine=engine, compute=counted)
    published = first.result(timeout=120)
    assert again is first and calls == ["x"], "one build_report per key"
    assert json.loads(published.file("json")) == json.loads(out.read_text(encoding="utf-8"))
    assert published.methods in published.file("markdown").decode("utf-8")
    assert published.file("html").startswith(b"<!DOCTYPE html>")
    assert published.file("html") is published.file("html")  # made once


@pytest.mark.page
def test_validation_page_offers_the_three_files_and_the_methods(
    engine: Engine, tmp_path: Path, env_db: str
) -> None:
    simulated_study(engine, tmp_path, 6)
    with db.session_scope(engine) as session:
        boss = accounts_add(session)
    at = app_for(boss, timeout=180)
    at.switch_page("views/validation.py").run()
    assert not at.exception
    keys = {button.key for button in at.get("download_button")}
    assert {"validation_download_html", "validation_download_json", "validation_download_md"} <= keys
    assert any("General quality" in block.value and "TOST" in block.value for block in at.code)
    overall = next(e.value for e in (*at.success, *at.warning, *at.error) if e.value.startswith("**Overall"))
    assert "not shown" not in overall
    assert any(phrase in overall for phrase in ("Not established by", "Contradicted by", "Every verdict"))
    headers = [h for table in at.table for h in table.value.columns]
    assert "Estimate (points)" in headers and not [h for h in headers if "_" in str(h)]


# ------------------------------------------------------------------------------------------------ CLI


def test_adjudication_queue_fits_80_columns_and_exports_csv(engine: Engine, tmp_path: Path) -> None:
    simulated_study(engine, tmp_path, 12)
    url = engine.url.render_as_string(hide_password=False)
    result = runner.invoke(
        app, ["adjudicate", "--study", "s1", "--queue", "--db", url], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    as_csv = runner.invoke(app, ["adjudicate", "--study", "s1", "--queue", "--format", "csv", "--db", url])
    assert as_csv.exit_code == 0, as_csv.output
    rows = list(csv.DictReader(io.StringIO(as_csv.output)))
    assert rows, "the simulated study has pairs that need a person"
    for row in rows:  # every pair id whole in the table, never cut with an ellipsis
        assert row["pair"] in result.output
    assert "…" not in result.output
    assert not math.isnan(float(rows[0]["agreement"]))
    bad = runner.invoke(app, ["adjudicate", "--study", "s1", "--queue", "--format", "xml", "--db", url])
    assert bad.exit_code == 1 and "--format must be one of table, csv" in bad.output
