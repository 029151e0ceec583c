"""``nenjim journal verify-log`` tells an outage from an attack.

A log that cannot be read (no server, a timeout, HTTP 5xx, 408, 429, no
checkpoint) is exit 3, kind ``unavailable``; a log that was read and does
not verify (a forged signature, altered entries or tiles, a tile the signed
checkpoint covers but the server refuses, a rewritten history) is exit 1,
kind ``integrity``. The real server (``nenjim serve``) is read first; a
forging server then answers with its bytes, one of them changed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.served_log import served_log
from nenjim.cli import main
from nenjim.domain.transparency import (
    Checkpoint,
    SignerKey,
    entry_bundles_for_size,
    open_checkpoint,
    sign_checkpoint,
    tiles_for_size,
)


@dataclass
class Answer:
    """What the forging server answers for one path."""

    status: int
    body: bytes
    delay: float = 0.0


@dataclass
class Recorded:
    """A real log's answers, byte for byte, by path; its verifier key file."""

    answers: dict[str, Answer]
    verifier: Path
    checkpoint: Checkpoint
    tiles: list[str]
    bundles: list[str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Everything ``nenjim serve`` answers for a store of 300 revisions."""
    directory = tmp_path_factory.mktemp("log")
    root = directory / "root"
    for n in range(300):
        artifact = root / f"org.example.a{n}"
        artifact.mkdir(parents=True)
        (artifact / "20260101T000000Z.journal").write_text(
            f"NENJIM-JOURNAL 1\nARTIFACT org.example.a{n}\nJOURNAL_VERSION 20260101T000000Z\n"
        )
    store = f"sqlite:///{directory / 'journal.db'}"
    assert main(["journal", "verify", str(root), "--store", store]) == 0
    signer = SignerKey.generate("example.com/log")
    key = directory / "log.key"
    key.write_text(signer.encode() + "\n")
    key.chmod(0o600)
    verifier = directory / "log.vkey"
    verifier.write_text(signer.verifier.encode() + "\n")
    with served_log(store, key) as url:
        served = httpx.get(f"{url}/checkpoint")
        checkpoint = open_checkpoint(served.text, [signer.verifier])
        bundles = [b.path for b in entry_bundles_for_size(checkpoint.size)]
        tiles = [t.path for t in tiles_for_size(checkpoint.size)]
        answers = {"checkpoint": Answer(200, served.content)}
        for path in [*bundles, *tiles]:
            answers[path] = Answer(200, httpx.get(f"{url}/{path}").content)
    return Recorded(answers, verifier, checkpoint, tiles, bundles)


@contextmanager
def _forging(recorded: Recorded, changed: dict[str, Answer] | None = None) -> Iterator[str]:
    """A server answering the recorded log, except for the paths ``changed``; its URL."""
    answers = {**recorded.answers, **(changed or {})}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            answer = answers.get(self.path.lstrip("/"), Answer(404, b"not found\n"))
            time.sleep(answer.delay)
            # A client that timed out has left: answering it is moot, not an error.
            with suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(answer.status)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads the client's verdict, not the server's log."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _verify(
    url: str, recorded: Recorded, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    """verify-log with --json: the exit code and the JSON on stdout (success) or stderr."""
    code = main(["journal", "verify-log", url, "--key", str(recorded.verifier), "--json", *extra])
    captured = capsys.readouterr()
    document = json.loads(captured.out if code == 0 else captured.err)
    if code != 0:
        assert captured.out == ""
    return code, document


def test_the_real_server_verifies_and_once_stopped_is_unavailable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:///{tmp_path / 'journal.db'}"
    root = tmp_path / "root"
    (root / "org.example.a").mkdir(parents=True)
    (root / "org.example.a" / "20260101T000000Z.journal").write_text(
        "NENJIM-JOURNAL 1\nARTIFACT org.example.a\nJOURNAL_VERSION 20260101T000000Z\n"
    )
    assert main(["journal", "verify", str(root), "--store", store]) == 0
    key, verifier = tmp_path / "log.key", tmp_path / "log.vkey"
    assert main(["keys", "new", "example.com/log", "--out", str(key)]) == 0
    verifier.write_text(capsys.readouterr().out.splitlines()[-1] + "\n")
    with served_log(store, key) as url:
        assert main(["journal", "verify-log", url, "--key", str(verifier)]) == 0
        assert capsys.readouterr().out.startswith("log OK: example.com/log at tree size 1")
    code = main(["journal", "verify-log", url, "--key", str(verifier)])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.err.startswith(
        f"nenjim: error: verify-log could not read the log: cannot fetch {url}/checkpoint: "
    )
    assert captured.err.count("\n") == 1
    assert main(["journal", "verify-log", url, "--key", str(verifier), "--json"]) == 3
    reported = json.loads(capsys.readouterr().err)
    assert (reported["kind"], reported["exit_code"]) == ("unavailable", 3)


def test_the_recorded_log_verifies_as_served(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    with _forging(recorded) as url:
        code, document = _verify(url, recorded, capsys)
    assert code == 0
    assert document["tree_size"] == recorded.checkpoint.size == 300


def _flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def _forgeries(recorded: Recorded) -> dict[str, dict[str, Answer]]:
    forged = sign_checkpoint(recorded.checkpoint, SignerKey.generate("example.com/log"))
    bundle, tile = recorded.bundles[-1], recorded.tiles[0]
    return {
        "a checkpoint signed by another key": {"checkpoint": Answer(200, forged.encode())},
        "an entry bundle with one byte changed": {
            bundle: Answer(200, _flip_last_byte(recorded.answers[bundle].body))
        },
        "a tile with one byte changed": {
            tile: Answer(200, _flip_last_byte(recorded.answers[tile].body))
        },
        "a tile the checkpoint covers, refused": {tile: Answer(404, b"no such tile\n")},
        "an entry bundle the checkpoint covers, refused": {bundle: Answer(403, b"forbidden\n")},
        "a checkpoint that is not a signed note": {"checkpoint": Answer(200, b"<html>hi</html>")},
    }


FORGERIES = [
    "a checkpoint signed by another key",
    "an entry bundle with one byte changed",
    "a tile with one byte changed",
    "a tile the checkpoint covers, refused",
    "an entry bundle the checkpoint covers, refused",
    "a checkpoint that is not a signed note",
]


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_log_that_does_not_verify_is_exit_1_integrity(
    forgery: str, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = _forgeries(recorded)[forgery]
    with _forging(recorded, changed) as url:
        code, document = _verify(url, recorded, capsys)
    assert code == 1
    assert document["kind"] == "integrity"
    assert document["error"].startswith("verify-log failed: ")


def _outages(recorded: Recorded) -> dict[str, dict[str, Answer]]:
    bundle, tile = recorded.bundles[0], recorded.tiles[-1]
    return {
        "no checkpoint at all": {"checkpoint": Answer(404, b"not found\n")},
        "a server error for the checkpoint": {"checkpoint": Answer(500, b"oops\n")},
        "a server error for a tile": {tile: Answer(503, b"busy\n")},
        "too many requests for a bundle": {bundle: Answer(429, b"slow down\n")},
        "a timeout for a bundle": {bundle: Answer(200, recorded.answers[bundle].body, 3.0)},
    }


OUTAGES = [
    "no checkpoint at all",
    "a server error for the checkpoint",
    "a server error for a tile",
    "too many requests for a bundle",
    "a timeout for a bundle",
]


@pytest.mark.parametrize("outage", OUTAGES)
def test_a_log_that_cannot_be_read_is_exit_3_unavailable(
    outage: str, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = _outages(recorded)[outage]
    with _forging(recorded, changed) as url:
        code, document = _verify(url, recorded, capsys, "--timeout", "0.5")
    assert code == 3
    assert document["kind"] == "unavailable"
    assert document["error"].startswith("verify-log could not read the log: ")


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_that_is_no_duration_is_bad_usage(
    timeout: str, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["journal", "verify-log", "http://127.0.0.1:9/", "--key", str(recorded.verifier)]
    assert main([*argv, "--timeout", timeout]) == 2
    assert "argument --timeout:" in capsys.readouterr().err
