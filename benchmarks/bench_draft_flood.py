"""The draft route under a flood of oversized bodies: server memory while N clients each POST a huge body.

Each client opens a raw socket to a real `annotator serve` on loopback and sends a POST to the draft
route with the draft header and a body of --mb megabytes, half of them declaring the length in
Content-Length and half sending it chunked, 1 MB at a time, until the server answers or closes the
connection. The server's resident memory (VmRSS of its process) is sampled every 50 ms; the figure is
the peak during the flood against the idle value before it (goal: within 50 MB).

    python benchmarks/bench_draft_flood.py [--clients 20] [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotator.app.draft_route import DRAFT_HEADER, ROUTE  # noqa: E402
from annotator.store import db  # noqa: E402
from benchmarks.bench_capacity import pair_studio_server  # noqa: E402

CHUNK = b"x" * (1 << 20)


def rss_mb(pid: int) -> float:
    """The process's resident memory in MB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def flood(port: int, mb: int, chunked: bool, outcome: list[str]) -> None:
    """One client: a POST of `mb` MB to the draft route; records the status line or how it ended."""
    head = [
        f"POST {ROUTE} HTTP/1.1",
        "Host: 127.0.0.1",
        f"{DRAFT_HEADER}: 1",
        "Content-Type: application/json",
    ]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {mb << 20}")
    sent = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            deadline = time.monotonic() + 60
            while sent < mb and time.monotonic() < deadline:
                body = b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK) if chunked else CHUNK
                sock.sendall(body)
                sent += 1
            if chunked and sent >= mb:
                sock.sendall(b"0\r\n\r\n")
            outcome.append(sock.recv(64).split(b"\r\n")[0].decode() + f" after {sent} MB sent")
    except OSError as exc:  # the server closed the connection while the client was still sending
        outcome.append(f"{type(exc).__name__} after {sent} MB sent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="draft-flood-"))
    url = f"sqlite:///{folder / 'flood.db'}"
    db.upgrade(url)
    with pair_studio_server(url, folder / "server.log") as (base_url, pid):
        port = int(base_url.rsplit(":", 1)[1])
        time.sleep(2)  # let the server settle after its first page: the idle figure is taken then
        idle = rss_mb(pid)
        peak = idle
        outcomes: list[str] = []
        clients = [
            threading.Thread(target=flood, args=(port, args.mb, k % 2 == 1, outcomes))
            for k in range(args.clients)
        ]
        load = os.getloadavg()[0]
        started = time.monotonic()
        for client in clients:
            client.start()
        while any(c.is_alive() for c in clients):
            peak = max(peak, rss_mb(pid))
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        after = rss_mb(pid)
    print(f"{args.clients} clients x {args.mb} MB (half Content-Length, half chunked), load {load:.1f}")
    print(
        f"server RSS: idle {idle:.0f} MB, peak during the flood {peak:.0f} MB (+{peak - idle:.0f} MB)", end=""
    )
    print(f", after {after:.0f} MB; the flood took {elapsed:.1f} s")
    print(f"answers: {sorted({o.split(' after')[0] for o in outcomes})}")


if __name__ == "__main__":
    main()
