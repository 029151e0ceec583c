"""A witness's cosignature, as Go's ``golang.org/x/mod/sumdb/note`` verifies it.

The witness (over HTTP, with its real state directory) cosigns a log's
checkpoint; ``go/open_cosigned.go`` opens the cosigned note with ``note.Open``
from Debian's ``golang-golang-x-mod-dev`` (GOPATH mode, no network). That
version of the note package verifies Ed25519 note signatures (type 0x01) only,
so the Go program writes the C2SP tlog-cosignature v1 ``note.Verifier`` (type
0x04) itself, from the specification, with ``crypto/ed25519``: Go's note
parsing, key ID matching and signature dispatch run on our bytes, and the
cosigned message is rebuilt independently of ours. The program is compiled
once per session; without ``go`` the tests fail under ``CI=true`` and skip
elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from nenjim.admin.witness import WitnessState
from nenjim.serve.witness import build_witness_app
from tests.transparency.witness_support import LOG, LOGS, WITNESS, add_checkpoint, signed

SOURCE = Path(__file__).parent / "go" / "open_cosigned.go"
DEBIAN_GOPATH = Path("/usr/share/gocode")


@pytest.fixture(scope="module")
def open_cosigned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    package = DEBIAN_GOPATH / "src" / "golang.org" / "x" / "mod" / "sumdb" / "note"
    if go is None or not package.is_dir():
        missing = (
            "go and golang-golang-x-mod-dev (apt-get install golang-go golang-golang-x-mod-dev)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Go cross-check needs {missing}")
        pytest.skip(f"needs {missing}")
    work = tmp_path_factory.mktemp("go")
    environment = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(DEBIAN_GOPATH),
        "GOFLAGS": "",
        "GOCACHE": str(work / "cache"),
        "GOPROXY": "off",
    }
    binary = work / "open_cosigned"
    subprocess.run(
        [go, "build", "-o", str(binary), str(SOURCE)], check=True, env=environment, cwd=work
    )
    return binary


def _go_open(binary: Path, note: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), LOG.verifier.encode(), WITNESS.verifier.encode()],
        input=note,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def cosigned(tmp_path: Path) -> str:
    """A checkpoint of size 4 with the cosignature the witness answered."""
    client = TestClient(build_witness_app(WITNESS, LOGS, WitnessState(tmp_path)))
    answer = client.post("/add-checkpoint", content=add_checkpoint(0, 4).encode())
    assert answer.status_code == 200
    return signed(4) + answer.text


def test_go_verifies_the_log_signature_and_the_cosignature(
    open_cosigned: Path, cosigned: str
) -> None:
    opened = _go_open(open_cosigned, cosigned)
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout == (
        f"{LOG.name} {LOG.key_id:08x}\n{WITNESS.name} {WITNESS.verifier.key_id:08x}\n"
    )


def test_go_refuses_a_cosignature_moved_to_another_checkpoint(
    open_cosigned: Path, cosigned: str
) -> None:
    cosignature = cosigned.splitlines(keepends=True)[-1]
    moved = signed(5) + cosignature
    opened = _go_open(open_cosigned, moved)
    assert opened.returncode == 1
    assert "invalid signature" in opened.stderr
