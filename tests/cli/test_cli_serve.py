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
from openapi_spec_validator import OpenAPIV31SpecValidator
from prometheus_client.parser import text_string_to_metric_families

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


@pytest.mark.parametrize("chains", ["0", "-1", "many", ""])
def test_a_chain_cache_that_holds_no_chain_is_bad_usage(
    chains: str, store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--store", store, "--key", str(key), "--chain-cache", chains]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == (
        f"nenjim serve: error: argument --chain-cache: {chains!r} is not a number of chains "
        "(1 or more)"
    )


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


def test_answers_are_sent_without_waiting_for_the_clients_ack() -> None:
    """Nagle's algorithm is off on every accepted connection: an answer's body, written
    after its head, would otherwise wait for the client's delayed ACK (40 ms)."""
    from nenjim.cli.serve_run import listen  # noqa: PLC0415 (needs the serve extra)

    with listen("127.0.0.1", 0) as listener, socket.create_connection(listener.getsockname()):
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_it_says_where_it_serves_once_it_listens(store: str, key: Path) -> None:
    with _serving(store, key) as running:
        assert running.url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{running.url}/checkpoint").status_code == 200
        code, errors = running.stop()
    assert code == 130
    access, verdict = errors.splitlines()
    assert json.loads(access)["message"].startswith("GET /checkpoint 200 ")
    assert json.loads(verdict) == {"error": "interrupted", "exit_code": 130, "kind": "interrupted"}


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
        # The access log's lines are info; what was wrong is a warning or an error.
        assert logged["level"] in ("info", "warning", "error"), logged
        assert "\n" not in logged["message"]
    assert any(logged["level"] != "info" for logged in reports[:-1])


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
        assert line.startswith(
            ("nenjim serve: info: ", "nenjim serve: warning: ", "nenjim serve: error: ")
        ), line


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
    assert set(lookup["get"]["responses"]) == {"200", "304", "400", "404"}


def test_openapi_is_valid_and_declares_every_path_parameter(served: Served) -> None:
    document = httpx.get(f"{served.url}/openapi.json").json()

    assert list(OpenAPIV31SpecValidator(document).iter_errors()) == []
    assert "/metrics" in document["paths"]


def test_metrics_count_requests_by_route_and_status_and_give_the_log_size(
    served: Served,
) -> None:
    checkpoint = httpx.get(f"{served.url}/checkpoint").text
    size = int(checkpoint.splitlines()[1])
    httpx.get(f"{served.url}/lookup/{WIDGET}/not-a-version")
    httpx.get(f"{served.url}/lookup/{WIDGET}/not-a-version")
    httpx.get(f"{served.url}/no/such/path")

    metrics = httpx.get(f"{served.url}/metrics")

    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    samples = {
        (family.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics.text)
        for sample in family.samples
    }
    requests = "nenjim_http_requests"
    assert samples[requests, (("route", "/checkpoint"), ("status", "200"))] == 1
    assert samples[requests, (("route", "/lookup/{coordinate}/{version}"), ("status", "400"))] == 2
    assert samples[requests, (("route", "(unmatched)"), ("status", "404"))] == 1
    latency = "nenjim_http_request_duration_seconds"
    assert samples[latency, (("route", "/checkpoint"),)] > 0
    assert samples["nenjim_log_entries", ()] == size


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_the_access_log_is_one_line_per_request(store: str, key: Path, as_json: bool) -> None:
    lines = _served_lines(store, key, ["--json"] if as_json else [], ["checkpoint", "nope"])

    if as_json:
        logged = [json.loads(line) for line in lines if line.startswith("{")]
        messages = [(entry["level"], entry["message"]) for entry in logged if "level" in entry]
        access = [entry for entry in logged if entry.get("logger") == "nenjim.serve.access"]
        assert [(e["method"], e["path"], e["status"]) for e in access] == [
            ("GET", "/checkpoint", 200),
            ("GET", "/nope", 404),
        ]
        assert all(e["duration_ms"] >= 0 and e["time"].endswith("Z") for e in access)
    else:
        messages = [
            tuple(line.removeprefix("nenjim serve: ").split(": ", 1))
            for line in lines
            if line.startswith("nenjim serve: info: ")
        ]
    assert [(level, " ".join(text.split()[:3])) for level, text in messages] == [
        ("info", "GET /checkpoint 200"),
        ("info", "GET /nope 404"),
    ]


@pytest.mark.parametrize(
    "options",
    [["--no-access-log"], ["--log-level", "warning"], ["-q"]],
    ids=["off", "warning", "quiet"],
)
def test_the_access_log_can_be_turned_off(store: str, key: Path, options: list[str]) -> None:
    lines = _served_lines(store, key, options, ["checkpoint"])

    assert not any(" info: " in line for line in lines), lines


def test_the_log_level_wins_over_q(store: str, key: Path) -> None:
    lines = _served_lines(store, key, ["-q", "--log-level", "info"], ["checkpoint"])

    assert any(line.startswith("nenjim serve: info: GET /checkpoint 200") for line in lines)


def _served_lines(store: str, key: Path, options: list[str], paths: list[str]) -> list[str]:
    """What ``nenjim serve OPTIONS`` writes on stderr while answering ``paths``, then stopped."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [*SERVE, "--store", store, "--key", str(key), "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        try:
            if "--json" in options:
                assert process.stdout is not None
                url = json.loads(process.stdout.readline())["serving"].rstrip("/")
            else:
                url = _announced_on_stderr(errors)
            for path in paths:
                httpx.get(f"{url}/{path}")
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
        errors.seek(0)
        return errors.read().decode().splitlines()
