"""The report's output formats: one registry that the CLI, the app's report cache and the Validation
page's downloads all read. Adding a format is one entry here (and its renderer)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from analysis.render.as_html import to_html
from analysis.render.as_json import json_text
from analysis.render.as_markdown import to_markdown

__all__ = ["REPORT_FORMATS", "ReportFormat", "format_for", "format_of_file"]


@dataclass(frozen=True)
class ReportFormat:
    """One way to publish the report: its name (the CLI option `--NAME`), the download's title, the
    file suffix, the MIME type, what the CLI option writes, and the renderer (which, when
    `takes_figures`, also takes the report's figures already drawn, so they are not drawn again)."""

    name: str
    title: str
    suffix: str
    mime: str
    help: str
    render: Callable[..., str]
    takes_figures: bool = False


REPORT_FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat(
        "html", "HTML report", "html", "text/html", "Write the self-contained HTML report", to_html, True
    ),
    ReportFormat("json", "JSON report", "json", "application/json", "Write every number as JSON", json_text),
    ReportFormat(
        "markdown", "Markdown report", "md", "text/markdown", "Write the report as Markdown", to_markdown
    ),
)


def format_for(name: str) -> ReportFormat:
    """The registered format called `name` (KeyError naming the known ones otherwise)."""
    for candidate in REPORT_FORMATS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no report format {name!r}; known: {', '.join(f.name for f in REPORT_FORMATS)}")


def format_of_file(path: str | PurePath) -> ReportFormat:
    """The registered format whose suffix `path` has (KeyError naming the known suffixes otherwise)."""
    suffix = PurePath(path).suffix.lower().lstrip(".")
    for candidate in REPORT_FORMATS:
        if candidate.suffix == suffix:
            return candidate
    known = ", ".join("." + f.suffix for f in REPORT_FORMATS)
    raise KeyError(f"{path}: a report file must end in one of {known}")
