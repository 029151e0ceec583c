"""A ``nenjim serve`` process over a store, for the tests and the load benchmark.

``served_log(store, key)`` starts the server on a free loopback port, waits
until it answers ``GET /checkpoint`` and yields its URL; it stops the server
when the block ends. A server that exits or does not answer within a minute
is a ``RuntimeError`` carrying what it wrote to stderr (kept in a file: a
pipe nobody reads could fill under load and stall the server).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

START_SECONDS = 60.0


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def served_log(
    store: str, key: Path, port: int | None = None, *, journal: str | None = None
) -> Iterator[str]:
    """The URL of a ``nenjim serve --store STORE --key KEY`` process, running for the block
    (on ``port`` when given, else on a free one; serving the Journal named ``journal`` when
    given)."""
    port = free_port() if port is None else port
    command = ["serve", "--store", store, "--key", str(key), "--port", str(port)]
    if journal is not None:
        command += ["--journal", journal]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "nenjim", *command], stdout=subprocess.DEVNULL, stderr=errors
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_it_answers(url, process, errors)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait_until_it_answers(url: str, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            httpx.get(f"{url}/checkpoint", timeout=5)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                errors.seek(0)
                said = errors.read().decode(errors="replace").strip()
                raise RuntimeError(f"nenjim serve did not start: {said}") from None
            time.sleep(0.1)
