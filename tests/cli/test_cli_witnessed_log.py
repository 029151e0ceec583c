"""Witnessed serving end to end: ``nenjim serve --witness`` gets a real ``nenjim witness``'s
cosignature as the log grows (and after a restart, from the size the witness holds), and
``verify-log``/``monitor --witness --witnesses-required`` accept it, or refuse a checkpoint
lacking the cosignatures their policy requires, with one line naming the URL and policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from live_server import NENJIM, running

from nenjim.cli import main

ORIGIN = "example.com/log"


def _key(path: Path, name: str, capsys: pytest.CaptureFixture[str], *kind: str) -> str:
    assert main(["keys", "new", name, "--out", str(path), *kind, "--json"]) == 0
    return str(json.loads(capsys.readouterr().out)["verifier_key"])


@pytest.fixture
def keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    log_vkey = _key(tmp_path / "log.key", ORIGIN, capsys)
    (tmp_path / "log.vkey").write_text(log_vkey + "\n", encoding="utf-8")
    return {
        "log": tmp_path / "log.key",
        "log_vkey": log_vkey,
        "log_vkey_file": str(tmp_path / "log.vkey"),
        "witness": tmp_path / "witness.key",
        "witness_vkey": _key(tmp_path / "witness.key", "w1.example", capsys, "--witness"),
        "other_vkey": _key(tmp_path / "other.key", "w2.example", capsys, "--witness"),
    }


def _ingest(sample: Any, store: str, write_revision: Any, capsys: Any, name: str) -> None:
    text = f"NENJIM-JOURNAL 1\nARTIFACT {name}\nJOURNAL_VERSION 20250101T000000Z\n"
    write_revision(sample.root, name, "20250101T000000Z", text)
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()


def test_a_witnessed_log_verifies_and_an_unwitnessed_policy_is_refused(
    sample: Any,
    write_revision: Any,
    keys: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = f"sqlite:///{tmp_path / 'journal.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()
    witness_args = ["--key", str(keys["witness"]), "--log", f"{ORIGIN}={keys['log_vkey']}"]
    witness_args += ["--state", str(tmp_path / "witness"), "--listen", "127.0.0.1:0"]
    serve_args = ["serve", "--store", store, "--key", str(keys["log"]), "--port", "0"]
    policy = ["--key", keys["log_vkey_file"], "--witness", keys["witness_vkey"]]
    with running([*NENJIM, "witness", *witness_args, "--json"]) as witness:
        endpoint = f"{keys['witness_vkey']}@{witness['witnessing']}"
        with running([*NENJIM, *serve_args, "--witness", endpoint, "--json"]) as served:
            url = served["serving"]
            assert main(["journal", "verify-log", url, *policy]) == 0
            assert "log OK" in capsys.readouterr().out
            monitor = ["journal", "monitor", url, *policy, "--state", str(tmp_path / "m")]
            assert main(monitor) == 0
            capsys.readouterr()
            _ingest(sample, store, write_revision, capsys, "com.example.grown")
            assert main(monitor) == 0  # the grown tree, cosigned from the size before
            assert "1 new entries" in capsys.readouterr().out

            stranger = ["--key", keys["log_vkey_file"], "--witness", keys["other_vkey"]]
            assert main(["journal", "verify-log", url, *stranger]) == 1
            error = capsys.readouterr().err
            assert error.count("\n") == 1
            assert f"{url}checkpoint has 0 valid cosignatures" in error
            assert "requires 1 of the witnesses w2.example+" in error
            both = [*policy, "--witness", keys["other_vkey"], "--witnesses-required", "2"]
            assert main(["journal", "monitor", url, *both, "--state", str(tmp_path / "m")]) == 1
            assert "requires 2 of the witnesses" in capsys.readouterr().err
            either = [*both[:-1], "1"]
            assert main(["journal", "verify-log", url, *either]) == 0
            capsys.readouterr()
        _ingest(sample, store, write_revision, capsys, "com.example.later")
        with running([*NENJIM, *serve_args, "--witness", endpoint, "--json"]) as served:
            # A new server asks from 0; the witness's 409 names the size it holds.
            assert main(["journal", "verify-log", served["serving"], *policy]) == 0


def test_a_policy_that_cannot_be_met_is_bad_usage(
    keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    url = "http://127.0.0.1:9/"
    one = ["--key", keys["log_vkey_file"], "--witness", keys["witness_vkey"]]
    assert main(["journal", "verify-log", url, *one, "--witnesses-required", "2"]) == 2
    assert "--witnesses-required 2" in capsys.readouterr().err
    bare = ["--key", keys["log_vkey_file"], "--witnesses-required", "1"]
    assert main(["journal", "verify-log", url, *bare]) == 2
    assert "needs at least one --witness" in capsys.readouterr().err
    assert (
        main(
            [
                "journal",
                "verify-log",
                url,
                "--key",
                keys["log_vkey_file"],
                "--witness",
                keys["log_vkey"],
            ]
        )
        == 2
    )
    assert "0x01" in capsys.readouterr().err
