"""``nenjim serve`` as an operator and its clients see it: its port, its errors, its answers.

A port that cannot be used is one line and a documented code before anything
says "serving"; a client's malformed request never puts a traceback on the
server's stderr; malformed input is answered 400 (or 404 for a path that is
not a canonical tile), in a short answer however long the request.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from nenjim.cli import main

WIDGET = "com.example.widget"
HEAD = "20260201T000000Z"
LONG = "a" * 10_000
SERVE = [sys.executable, "-m", "nenjim", "serve"]


@dataclass
class Served:
    """A running ``nenjim serve`` process: its URL; ``stop()`` gives its exit code and stderr."""

    url: str
    process: subprocess.Popen[bytes]
    errors: Any

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=60)
        self.errors.seek(0)
        return code, self.errors.read().decode()


@pytest.fixture
def store(sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", url]) == 0
    capsys.readouterr()
    return url


@pytest.fixture
def key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "log.key"
    assert main(["keys", "new", "example.com/log", "--out", str(path)]) == 0
    capsys.readouterr()
    return path


@contextmanager
def _serving(store: str, key: Path) -> Iterator[Served]:
    """``nenjim serve --port 0 --json``: it prints the URL it listens on once it does."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [*SERVE, "--store", store, "--key", str(key), "--port", "0", "--json"],
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        try:
            assert process.stdout is not None
            announced = json.loads(process.stdout.readline())
            yield Served(announced["serving"].rstrip("/"), process, errors)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def served(store: str, key: Path) -> Iterator[Served]:
    with _serving(store, key) as running:
        yield running


@pytest.mark.parametrize("port", ["99999", "65536", "-1", "http", "8080x", ""])
def test_a_port_that_is_no_port_is_bad_usage(
    port: str, store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--store", store, "--key", str(key), "--port", port]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == (
        f"nenjim serve: error: argument --port: {port!r} is not a port (0 to 65535)"
    )
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_port_in_use_is_one_line_and_exit_3_before_serving(
    *, as_json: bool, store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        argv = ["serve", "--store", store, "--key", str(key), "--port", str(port)]
        assert main([*argv, *(["--json"] if as_json else [])]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    message = f"cannot listen on 127.0.0.1:{port}: Address already in use"
    if as_json:
        assert json.loads(captured.err) == {"error": message, "exit_code": 3, "kind": "unavailable"}
    else:
        assert captured.err == f"nenjim: error: {message}\n"


def test_an_unknown_host_is_one_line_and_exit_3(
    store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--store", store, "--key", str(key), "--host", "no-such-host.invalid"]
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert captured.err.startswith("nenjim: error: cannot listen on no-such-host.invalid:8080: ")
    assert captured.err.count("\n") == 1


def test_it_says_where_it_serves_once_it_listens(store: str, key: Path) -> None:
    with _serving(store, key) as running:
        assert running.url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{running.url}/checkpoint").status_code == 200
        code, errors = running.stop()
    assert code == 130
    assert json.loads(errors) == {"error": "interrupted", "exit_code": 130, "kind": "interrupted"}


def _raw(url: str, request: bytes) -> bytes:
    """Send ``request`` as it is over a new connection; what the server answers."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
        return answer


MALFORMED_REQUESTS = [
    b"POST /checkpoint HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"zz\r\nhi\r\n0\r\n\r\n",
    b"GET /checkpoint HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"-5\r\nhi\r\n0\r\n\r\n",
    b"GET /checkpoint HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET /checkpoint\x00 HTTP/1.1\r\n\r\n",
    b"GET /checkpoint HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
]


def test_malformed_requests_put_no_traceback_on_stderr(served: Served) -> None:
    for request in MALFORMED_REQUESTS:
        answer = _raw(served.url, request)
        assert answer.startswith(b"HTTP/1.1 4"), (request, answer)
    # The server goes on serving.
    assert httpx.get(f"{served.url}/checkpoint").status_code == 200
    code, errors = served.stop()
    assert code == 130
    assert "Traceback" not in errors
    # Under --json each line is one JSON object: what the server logged, then the verdict.
    reports = [json.loads(line) for line in errors.splitlines()]
    assert reports[-1]["kind"] == "interrupted"
    assert reports[:-1]  # the malformed requests were noticed
    for logged in reports[:-1]:
        assert logged["level"] in ("warning", "error"), logged
        assert "\n" not in logged["message"]


def test_without_json_a_log_record_is_one_line(store: str, key: Path) -> None:
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [*SERVE, "--store", store, "--key", str(key), "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        try:
            url = _announced_on_stderr(errors)
            _raw(url, MALFORMED_REQUESTS[0])
        finally:
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=60)
        errors.seek(0)
        lines = errors.read().decode().splitlines()
    assert code == 130
    assert lines[0] == f"serving the transparency log on {url}/"
    assert lines[-1] == "nenjim: error: interrupted"
    assert lines[1:-1]
    for line in lines[1:-1]:
        assert line.startswith(("nenjim serve: warning: ", "nenjim serve: error: ")), line


def _announced_on_stderr(errors: Any) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        errors.seek(0)
        first = errors.readline().decode()
        if first.endswith("\n"):
            return first.removeprefix("serving the transparency log on ").rstrip("/\n")
        time.sleep(0.05)
    raise AssertionError("nenjim serve never said where it serves")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"lookup/{LONG}/{HEAD}", 400),
        (f"lookup/{WIDGET}/{LONG}", 400),
        (f"lookup/{WIDGET}/not-a-version", 400),
        (f"lookup/Not A Coordinate/{HEAD}", 400),
        (f"lookup/{WIDGET}/20990101T000000Z", 404),
        (f"lookup/com.example.none/{HEAD}", 404),
        (f"journal/{LONG}/latest", 400),
        (f"journal/{WIDGET}/{LONG}", 404),
        (f"journal/{WIDGET}/exact/{LONG}", 400),
        (f"journal/{WIDGET}/as-of/{LONG}", 400),
        (f"journal/{WIDGET}/release/{LONG}", 400),
        (f"journal/{WIDGET}/release/1.0.0/{LONG}", 404),
        (f"tile/{LONG}", 404),
        (f"tile/entries/{LONG}", 404),
        (f"tile/0/{LONG}", 404),
        ("tile/0/%FF%FE", 404),
        (f"{LONG}", 404),
    ],
    ids=lambda value: value if isinstance(value, int) or len(value) < 40 else value[:40],
)
def test_malformed_input_is_answered_briefly(served: Served, path: str, status: int) -> None:
    response = httpx.get(f"{served.url}/{path}")
    assert response.status_code == status
    assert len(response.content) <= 300
    assert "a" * 170 not in response.text
    if response.headers["content-type"] == "application/json":
        assert response.json()["error"]


def test_openapi_documents_the_400_of_lookup(served: Served) -> None:
    lookup = httpx.get(f"{served.url}/openapi.json").json()["paths"][
        "/lookup/{coordinate}/{version}"
    ]
    assert set(lookup["get"]["responses"]) == {"200", "400", "404"}
