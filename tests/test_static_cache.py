"""Streamlit's static files answered from memory: the same bytes, gzip only when asked, the cache
headers Streamlit gives them, and every other request passed on unchanged (no path from a request
reaches the file system)."""

import asyncio
import gzip
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from streamlit import file_util

from annotator.app.static_cache import StaticCache
from tests.utils.apphelpers import running_app
from tests.utils.databases import fresh_db_url


class Downstream:
    """Stands for Streamlit's app: records the paths it is asked for and answers 418."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"downstream"})


def request(
    app: StaticCache, path: str, *, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one HTTP request through the middleware."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A static folder like Streamlit's: index.html at the top, the bundles under static/."""
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "css").mkdir()
    (tmp_path / "index.html").write_text("<html></html>")
    (tmp_path / "secret.txt").write_text("not a static file")
    (tmp_path / "static" / "js" / "index.abc123.js").write_text("console.log('pair');\n" * 500)
    (tmp_path / "static" / "css" / "main.def456.css").write_text("body { color: red; }\n" * 100)
    return tmp_path


def test_a_bundle_is_sent_gzipped_when_accepted_with_streamlits_cache_headers(folder: Path) -> None:
    downstream = Downstream()
    app = StaticCache(downstream, str(folder))
    on_disk = (folder / "static" / "js" / "index.abc123.js").read_bytes()
    status, headers, body = request(
        app, "/static/js/index.abc123.js", headers={"Accept-Encoding": "gzip, br"}
    )
    assert status == 200
    assert headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == on_disk
    assert len(body) < len(on_disk)
    assert int(headers["content-length"]) == len(body)
    assert headers["cache-control"] == "public, immutable, max-age=31536000"
    assert headers["content-type"] in ("application/javascript", "text/javascript; charset=utf-8")
    assert headers["vary"] == "Accept-Encoding"
    assert downstream.paths == []


def test_a_browser_that_does_not_accept_gzip_gets_the_plain_file(folder: Path) -> None:
    app = StaticCache(Downstream(), str(folder))
    status, headers, body = request(app, "/static/css/main.def456.css")
    assert status == 200
    assert "content-encoding" not in headers
    assert body == (folder / "static" / "css" / "main.def456.css").read_bytes()
    assert headers["content-type"] == "text/css; charset=utf-8"


def test_a_known_etag_is_answered_with_not_modified(folder: Path) -> None:
    app = StaticCache(Downstream(), str(folder))
    _, headers, _ = request(app, "/static/js/index.abc123.js")
    status, again, body = request(
        app, "/static/js/index.abc123.js", headers={"If-None-Match": headers["etag"]}
    )
    assert (status, body) == (304, b"")
    assert again["etag"] == headers["etag"]
    status, _, body = request(app, "/static/js/index.abc123.js", headers={"If-None-Match": '"other"'})
    assert status == 200 and body


def test_head_sends_the_headers_only(folder: Path) -> None:
    app = StaticCache(Downstream(), str(folder))
    status, headers, body = request(app, "/static/js/index.abc123.js", method="HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["content-length"]) == (folder / "static" / "js" / "index.abc123.js").stat().st_size


@pytest.mark.parametrize(
    ("path", "method", "headers"),
    [
        ("/static/../secret.txt", "GET", {}),  # a path outside static/: never joined, passed on
        ("/static/js/../../secret.txt", "GET", {}),
        ("/static/%2e%2e/secret.txt", "GET", {}),
        ("/static/js/missing.js", "GET", {}),  # Streamlit answers unknown files (its page fallback)
        ("/static", "GET", {}),
        ("/", "GET", {}),  # the page itself stays Streamlit's (no-cache)
        ("/index.html", "GET", {}),
        ("/_stcore/health", "GET", {}),
        ("/static/js/index.abc123.js", "POST", {}),
        ("/static/js/index.abc123.js", "GET", {"Range": "bytes=0-10"}),
    ],
)
def test_every_other_request_goes_on_to_streamlit(
    folder: Path, path: str, method: str, headers: dict[str, str]
) -> None:
    downstream = Downstream()
    app = StaticCache(downstream, str(folder))
    status, _, body = request(app, path, method=method, headers=headers)
    assert (status, body) == (418, b"downstream")
    assert downstream.paths == [path]


def test_streamlits_own_page_scripts_are_all_served_as_on_disk() -> None:
    """Every script and style the installed Streamlit's page names is answered from memory, equal to
    the file on disk."""
    folder = Path(file_util.get_static_dir())
    index = (folder / "index.html").read_text()
    named = re.findall(r'(?:src|href)="\./(static/[^"]+)"', index)
    assert named, "Streamlit's index.html names no static file"
    downstream = Downstream()
    app = StaticCache(downstream, str(folder))
    for relative in named:
        status, headers, body = request(app, "/" + relative, headers={"Accept-Encoding": "gzip"})
        assert status == 200, relative
        assert gzip.decompress(body) == (folder / relative).read_bytes(), relative
    assert downstream.paths == []


def test_the_running_server_sends_streamlits_bundle_from_the_cache(tmp_path: Path) -> None:
    """`annotator serve`'s app: the page's main script arrives gzipped and equal to the file on disk;
    the page itself is still Streamlit's (not cached by the browser)."""
    url = fresh_db_url(tmp_path, "static", migrated=True, keep=True)
    with running_app(url, tmp_path / "server.log") as base_url:
        with urllib.request.urlopen(base_url + "/") as answer:
            page, page_cache = answer.read().decode(), answer.headers["Cache-Control"]
        script = re.search(r'src="\./(static/js/[^"]+\.js)"', page)
        assert script is not None
        ask = urllib.request.Request(f"{base_url}/{script.group(1)}", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(ask) as answer:
            encoding, body = answer.headers["Content-Encoding"], answer.read()
    assert page_cache == "no-cache"
    assert encoding == "gzip"
    assert gzip.decompress(body) == (Path(file_util.get_static_dir()) / script.group(1)).read_bytes()
