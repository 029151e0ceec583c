"""A signer key file is secret: written 0600, refused (as ssh refuses) when others can access it.

``--allow-unprotected-key`` uses such a file anyway, with a one-line warning.
A verifier key is public: its file's mode is never checked.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nenjim.cli import main

WIDGET = "com.example.widget"
HEAD = "20260201T000000Z"


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
    (tmp_path / "log.vkey").write_text(capsys.readouterr().out.splitlines()[-1] + "\n")
    return path


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("open_umask")
def test_keys_new_writes_0600_whatever_the_umask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fresh.key"
    assert main(["keys", "new", "example.com/log", "--out", str(path)]) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    capsys.readouterr()


def _signing_commands(store: str, key: Path) -> dict[str, list[str]]:
    return {
        "checkpoint": ["journal", "checkpoint", "--store", store, "--key", str(key)],
        "prove": ["journal", "prove", WIDGET, HEAD, "--store", store, "--key", str(key)],
        # Refused before it opens the store or listens: it would serve forever otherwise.
        "serve": ["serve", "--store", store, "--key", str(key), "--port", "0"],
    }


@pytest.mark.parametrize("command", ["checkpoint", "prove", "serve"])
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o610, 0o601])
def test_a_signer_key_others_can_access_is_refused(
    command: str, mode: int, store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key.chmod(mode)
    argv = _signing_commands(store, key)[command]
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"nenjim: error: signer key {key} is accessible by group or others "
        f"(mode {mode:04o}): chmod 600 {key}, or give --allow-unprotected-key\n"
    )
    assert main([*argv, "--json"]) == 3
    reported = json.loads(capsys.readouterr().err)
    assert (reported["kind"], reported["exit_code"]) == ("key", 3)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_signer_key_only_its_owner_can_access_is_used_without_a_word(
    mode: int, store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key.chmod(mode)
    assert main(["journal", "checkpoint", "--store", store, "--key", str(key)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("example.com/log\n")
    assert captured.err == ""


@pytest.mark.parametrize("command", ["checkpoint", "prove"])
def test_allow_unprotected_key_uses_it_with_one_warning(
    command: str, store: str, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key.chmod(0o644)
    argv = [*_signing_commands(store, key)[command], "--allow-unprotected-key"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out
    assert captured.err == (
        f"nenjim: warning: signer key {key} is accessible by group or others (mode 0644); "
        "used anyway (--allow-unprotected-key)\n"
    )
    assert main([*argv, "--json"]) == 0
    warning = json.loads(capsys.readouterr().err)
    assert warning == {
        "kind": "key",
        "warning": f"signer key {key} is accessible by group or others (mode 0644); "
        "used anyway (--allow-unprotected-key)",
    }


def test_a_verifier_key_is_public(
    store: str, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "prove", WIDGET, HEAD, "--store", store, "--key", str(key)]) == 0
    proof = tmp_path / "proof.json"
    proof.write_text(capsys.readouterr().out)
    verifier = tmp_path / "log.vkey"
    verifier.chmod(0o644)
    assert main(["journal", "check-proof", str(proof), "--key", str(verifier)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("proof OK")
    assert captured.err == ""
