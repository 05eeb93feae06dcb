"""Starting the Streamlit app on a given database, with its security settings passed on the command line.

The settings do not depend on `.streamlit/config.toml` (an installed wheel has none, and Streamlit's own
default shows full tracebacks in the browser): :data:`FLAGS` holds every one that matters, the theme
included. `annotator
serve` *becomes* the Streamlit server (exec): SIGTERM reaches the server itself, and no idle parent
process keeps its memory.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from annotator.store.db import ENV_VAR
from annotator.textguard import MAX_BYTES_DEFAULT

#: The ASGI app: Streamlit's app for app/main.py plus the route that sets the session cookie.
ENTRY = Path(__file__).parent / "app" / "serve.py"
ROOT = Path(__file__).resolve().parents[1]
#: The colours: light or dark follows the browser (no `base`); each primary colour keeps 4.5:1 for
#: its words on a chosen option's tint, also under the pointer.
THEME = (
    "--theme.font=sans serif",
    "--theme.primaryColor=#3049c0",
    "--theme.light.primaryColor=#3049c0",
    "--theme.light.backgroundColor=#ffffff",
    "--theme.light.secondaryBackgroundColor=#f3f5f9",
    "--theme.light.textColor=#1f2430",
    "--theme.dark.primaryColor=#8ea2f5",
    "--theme.dark.backgroundColor=#14171f",
    "--theme.dark.secondaryBackgroundColor=#222734",
    "--theme.dark.textColor=#e8eaf0",
)
FLAGS = (
    "--server.headless=true",
    "--server.enableXsrfProtection=true",
    "--server.enableCORS=true",
    "--server.runOnSave=false",
    "--server.fileWatcherType=none",
    f"--server.maxUploadSize={MAX_BYTES_DEFAULT // 2**20}",  # MB: the importer's --max-bytes default
    "--client.showErrorDetails=none",  # never a traceback (with SQL) in the browser
    "--client.toolbarMode=minimal",
    "--browser.gatherUsageStats=false",
    "--runner.postScriptGC=false",  # a full gc.collect() after every run held each rerun ~90 ms
    "--global.developmentMode=false",
    *THEME,
)
#: Flags for a scripted headless Chromium (browser tests, benchmarks): no sandbox as root, and no
#: background connections to other hosts.
BROWSER_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
#: The page is idle (Streamlit has finished the run the last action started) when this matches.
IDLE_SELECTOR = "[data-test-script-state='notRunning']"


def address(host: str, port: int) -> str:
    """The address the server binds, as a URL (an IPv6 host in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def command(*, host: str, port: int) -> list[str]:
    """The command line that runs the app."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ENTRY),
        f"--server.address={host}",
        f"--server.port={port}",
        *FLAGS,
    ]


def environment(url: str) -> dict[str, str]:
    """The server's environment: the database URL, and no Streamlit setting that could weaken FLAGS."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAMLIT_")}
    return env | {ENV_VAR: url}


def run(url: str, *, host: str, port: int) -> int:
    """Replace this process by the Streamlit server (returns only if it cannot start)."""
    argv = command(host=host, port=port)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, environment(url))
    return 1  # pragma: no cover - execve does not return


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(base_url: str, process: subprocess.Popen[bytes], log: Path, *, timeout: float = 60) -> None:
    """Poll /_stcore/health until the server answers; fail with its output if it dies or hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the app exited with {process.returncode}:\n{log.read_text(errors='replace')}"
            )
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the app did not become healthy in {timeout} s:\n{log.read_text(errors='replace')}")


@contextmanager
def background(url: str, log: Path) -> Iterator[str]:
    """Run the app in a child process on database `url` and a free local port, its output to `log`;
    yields its base URL and stops it afterwards (for browser tests and benchmarks)."""
    port = free_port()
    env = os.environ | {ENV_VAR: url, "PYTHONUNBUFFERED": "1"}
    handle: IO[bytes]
    with log.open("wb") as handle:
        process = subprocess.Popen(
            command(host="127.0.0.1", port=port),
            cwd=ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base_url, process, log)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
