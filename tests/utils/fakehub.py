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

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_GET(self) -> None:
            hub.requests.append(f"GET {self.path}")
            self._reply(404, {"error": "Not found"})

        def do_POST(self) -> None:
            hub.requests.append(f"POST {self.path}")
            body = self._body()
            if self.headers.get("Authorization") != f"Bearer {hub.token}":
                self._reply(401, {"error": "Invalid credentials in Authorization header"})
                return
            path = self.path.split("?")[0]
            if path == "/api/repos/create":
                request = json.loads(body)
                hub.repos.append(request)
                name = f"{request.get('organization') or 'me'}/{request['name']}"
                self._reply(200, {"url": f"{hub.endpoint}/datasets/{name}", "name": name})
            elif path == "/api/validate-yaml":  # the card's metadata: accepted
                self._reply(200, {"errors": [], "warnings": []})
            elif match := re.fullmatch(_REPO + r"/preupload/[^/]+", path):
                listed = json.loads(body)["files"]
                self._reply(
                    200,
                    {
                        "files": [
                            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                            for f in listed
                        ]
                    },
                )
            elif match := re.fullmatch(_REPO + r"/commit/[^/]+", path):
                committed: dict[str, bytes] = {}
                for line in body.decode().splitlines():
                    entry = json.loads(line)
                    if entry.get("key") == "file":
                        value = entry["value"]
                        committed[value["path"]] = base64.b64decode(value["content"])
                hub.files[match["repo"]] = committed
                self._reply(
                    200,
                    {
                        "commitUrl": f"{hub.endpoint}/datasets/{match['repo']}/commit/{'0' * 40}",
                        "commitOid": "0" * 40,
                        "pullRequestUrl": None,
                    },
                )
            else:
                self._reply(404, {"error": f"Not found: {path}"})

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
