"""Streamlit's own page files (its scripts, styles and fonts under /static/) answered from memory.

A first visit loads about 85 of these files. Streamlit serves each one through its whole middleware
stack and reads it from disk in chunks on worker threads: when a crowd arrives at once, that was
about two fifths of the server's CPU per arriving worker. This ASGI middleware answers a GET or HEAD
for a file of Streamlit's static folder with the bytes read once per process, gzip-compressed once
when the browser accepts gzip, and the headers Streamlit sends for it (type, ETag, Last-Modified,
Cache-Control: the hashed bundles are immutable). The file is found by an exact lookup in the list of
files the folder held at start, so no request path ever reaches the file system. Every other request
(the page itself, the websocket, the app's routes, a range request) goes on to Streamlit unchanged.
"""

import gzip
import hashlib
import mimetypes
import os
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any

from streamlit import file_util

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PREFIX = "/static/"
#: The Cache-Control Streamlit gives its hashed bundles (a new release has new file names).
IMMUTABLE = b"public, immutable, max-age=31536000"


@dataclass(frozen=True)
class Cached:
    """One file as sent: its body plain and gzip-compressed, and its validators."""

    plain: bytes
    packed: bytes
    content_type: bytes
    etag: bytes
    last_modified: bytes


def _files(folder: Path) -> dict[str, Path]:
    """URL path (/static/...) -> file, for every file under the static folder's static/ at start."""
    root = folder / "static"
    found: dict[str, Path] = {}
    for base, _dirs, names in os.walk(root):
        for name in names:
            path = Path(base) / name
            found[PREFIX + path.relative_to(root).as_posix()] = path
    return found


def _load(path: Path) -> Cached:
    body = path.read_bytes()
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if content_type.startswith("text/"):
        content_type += "; charset=utf-8"
    stamp = path.stat().st_mtime
    return Cached(
        plain=body,
        packed=gzip.compress(body, compresslevel=6, mtime=0),
        content_type=content_type.encode(),
        etag=f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"'.encode(),
        last_modified=formatdate(stamp, usegmt=True).encode(),
    )


def _header(scope: Scope, name: bytes) -> bytes:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return b""


class StaticCache:
    """ASGI middleware: Streamlit's static files from memory (see the module's docstring)."""

    def __init__(self, app: ASGIApp, folder: str | None = None) -> None:
        self.app = app
        self.files = _files(Path(folder or file_util.get_static_dir()))
        self.cache: dict[str, Cached] = {}  # filled on the event loop's thread only

    def lookup(self, path: str) -> Cached | None:
        """The cached file at URL `path`, read on its first request; None for any other path."""
        found = self.cache.get(path)
        if found is None and path in self.files:
            found = self.cache[path] = _load(self.files[path])
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") not in ("GET", "HEAD")
            or not str(scope.get("path", "")).startswith(PREFIX)
            or _header(scope, b"range")
        ):
            await self.app(scope, receive, send)
            return
        found = self.lookup(scope["path"])
        if found is None:
            await self.app(scope, receive, send)
            return
        headers = [
            (b"content-type", found.content_type),
            (b"etag", found.etag),
            (b"last-modified", found.last_modified),
            (b"cache-control", IMMUTABLE),
            (b"vary", b"Accept-Encoding"),
        ]
        if found.etag in _header(scope, b"if-none-match"):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        body = found.plain
        if b"gzip" in _header(scope, b"accept-encoding"):
            body = found.packed
            headers.append((b"content-encoding", b"gzip"))
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
