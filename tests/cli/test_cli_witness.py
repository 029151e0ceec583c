"""``nenjim witness`` as a process, and ``nenjim keys new --witness``: a real witness over
HTTP cosigns a consistent checkpoint, refuses an inconsistent one, and keeps what it
cosigned across a restart."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from live_server import running

from nenjim.admin.witness import CosignerVerifier, check_cosignatures, open_note
from nenjim.cli import main
from tests.transparency.witness_support import FORK, LOG, ORIGIN, add_checkpoint, signed

WITNESS = [sys.executable, "-m", "nenjim", "witness"]


@pytest.fixture
def witness_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    path = tmp_path / "witness.key"
    assert (
        main(["keys", "new", "witness.example/w1", "--witness", "--out", str(path), "--json"]) == 0
    )
    return path, json.loads(capsys.readouterr().out)["verifier_key"]


@contextmanager
def _witnessing(key: Path, state: Path) -> Iterator[str]:
    """The add-checkpoint URL of a ``nenjim witness`` process, stopped afterwards."""
    log = f"{ORIGIN}={LOG.verifier.encode()}"
    command = [*WITNESS, "--key", str(key), "--log", log, "--state", str(state)]
    with running([*command, "--listen", "127.0.0.1:0", "--json"]) as started:
        yield started["witnessing"] + "add-checkpoint"


def test_the_witness_cosigns_refuses_a_fork_and_remembers(
    witness_key: tuple[Path, str], tmp_path: Path
) -> None:
    key, vkey = witness_key
    assert vkey.startswith("witness.example/w1+")
    state = tmp_path / "state"
    with _witnessing(key, state) as url:
        answer = httpx.post(url, content=add_checkpoint(0, 4).encode())
        assert answer.status_code == 200
        note = open_note(signed(4) + answer.text, [LOG.verifier])
        assert len(check_cosignatures(note, [CosignerVerifier.parse(vkey)])) == 1
        forked = httpx.post(url, content=add_checkpoint(4, 9, FORK).encode())
        assert forked.status_code == 422
    with _witnessing(key, state) as url:
        stale = httpx.post(url, content=add_checkpoint(0, 9).encode())
        assert (stale.status_code, stale.text) == (409, "4\n")
        assert httpx.post(url, content=add_checkpoint(4, 9).encode()).status_code == 200


def test_a_malformed_log_or_key_is_one_line_and_a_documented_code(
    witness_key: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, _ = witness_key
    state = str(tmp_path / "state")
    assert main(["witness", "--key", str(key), "--log", "no-key", "--state", state]) == 2
    assert "ORIGIN=VKEY" in capsys.readouterr().err
    note_key = tmp_path / "log.key"
    assert main(["keys", "new", ORIGIN, "--out", str(note_key)]) == 0
    capsys.readouterr()
    log = f"{ORIGIN}={LOG.verifier.encode()}"
    assert main(["witness", "--key", str(note_key), "--log", log, "--state", state]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert str(note_key) in error
    assert "0x01" in error
    key.chmod(0o644)
    assert main(["witness", "--key", str(key), "--log", log, "--state", state]) == 3
    assert "accessible by group or others" in capsys.readouterr().err


def test_a_state_that_cannot_be_used_is_exit_3_naming_it(
    witness_key: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, _ = witness_key
    log = f"{ORIGIN}={LOG.verifier.encode()}"
    occupied = tmp_path / "a-file"
    occupied.write_text("", encoding="utf-8")
    assert main(["witness", "--key", str(key), "--log", log, "--state", str(occupied)]) == 3
    assert f"cannot use the witness state directory {occupied}" in capsys.readouterr().err
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "witness-state.json").write_text("[1]", encoding="utf-8")
    assert main(["witness", "--key", str(key), "--log", log, "--state", str(damaged)]) == 3
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "witness-state.json is damaged" in error
