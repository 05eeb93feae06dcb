"""A stand-in for the Hugging Face Hub's HTTP API on 127.0.0.1: the network boundary of the push tests
(huggingface_hub itself runs unchanged, pointed here by HF_ENDPOINT). It answers what `create_repo`
and `upload_folder` ask (create a repository, check the card's YAML, preupload, commit), keeps the
files committed, and refuses every token but the one it was given (401, as the Hub does)."""

import base64
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_REPO = r"/api/(?P<kind>datasets|models|spaces)/(?P<repo>[^/]+/[^/]+)"


@dataclass
class FakeHub:
    """What the fake Hub saw: the repositories created, the files of each repo's last commit, and the
    paths of every request."""

    token: str
    endpoint: str = ""
    repos: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    stop: Callable[[], None] = lambda: None  # take the Hub off the network (nothing listens any more)


def _committed(body: bytes) -> dict[str, bytes]:
    """The files of a commit's NDJSON body (path -> bytes; regular uploads carry them base64-coded)."""
    files: dict[str, bytes] = {}
    for line in body.decode().splitlines():
        entry = json.loads(line)
        if entry.get("key") == "file":
            files[entry["value"]["path"]] = base64.b64decode(entry["value"]["content"])
    return files


def _answer(hub: FakeHub, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer of an authorized POST to `path`."""
    if path == "/api/repos/create":
        request = json.loads(body)
        hub.repos.append(request)
        name = f"{request.get('organization') or 'me'}/{request['name']}"
        return 200, {"url": f"{hub.endpoint}/datasets/{name}", "name": name}
    if path == "/api/validate-yaml":  # the card's metadata: accepted
        return 200, {"errors": [], "warnings": []}
    if re.fullmatch(_REPO + r"/preupload/[^/]+", path):
        listed = json.loads(body)["files"]
        return 200, {
            "files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in listed]
        }
    if match := re.fullmatch(_REPO + r"/commit/[^/]+", path):
        hub.files[match["repo"]] = _committed(body)
        oid = "0" * 40
        return 200, {"commitUrl": f"{hub.endpoint}/datasets/{match['repo']}/commit/{oid}", "commitOid": oid}
    return 404, {"error": f"Not found: {path}"}


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            hub.requests.append(f"GET {self.path}")
            self._reply(404, {"error": "Not found"})

        def do_POST(self) -> None:
            hub.requests.append(f"POST {self.path}")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") != f"Bearer {hub.token}":
                self._reply(401, {"error": "Invalid credentials in Authorization header"})
                return
            self._reply(*_answer(hub, self.path.split("?")[0], body))

    return Handler


@contextmanager
def fake_hub(token: str) -> Iterator[FakeHub]:
    """Run a fake Hub accepting `token` on a free local port; yields it (its `endpoint` set)."""
    hub = FakeHub(token=token)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        if thread.is_alive():
            server.shutdown()
            server.server_close()
            thread.join()

    hub.stop = stop
    try:
        yield hub
    finally:
        stop()
