"""``nenjim journal move-root``: its usage, and a store that must exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from nenjim.cli import main


def test_move_root_needs_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NENJIM_STORE_URL")
    arguments = ["--from", str(tmp_path / "old"), "--to", str(tmp_path)]
    assert main(["journal", "move-root", *arguments]) == 2
    assert capsys.readouterr().err.endswith(
        "nenjim journal move-root: error: needs a store: --store URL or $NENJIM_STORE_URL\n"
    )


def test_move_root_needs_both_paths(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "move-root", "--store", "memory:", "--to", "/tmp"]) == 2
    assert "the following arguments are required: --from\n" in capsys.readouterr().err


def test_move_root_on_a_store_that_does_not_exist_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    arguments = ["--from", str(tmp_path / "old"), "--to", str(tmp_path)]
    assert main(["journal", "move-root", "--store", f"sqlite://{missing}", *arguments]) == 3
    assert capsys.readouterr().err == f"nenjim: error: SQLite store {missing} does not exist\n"
    assert not missing.exists()
    assert main(["journal", "move-root", "--store", "ftp://x", *arguments]) == 2
    assert "argument --store: unsupported store URL 'ftp://x'" in capsys.readouterr().err


def test_the_help_names_move_root_and_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "--help"]) == 0
    text = capsys.readouterr().out
    assert "move-root" in text
    assert "journal move-root --from OLD --to NEW" in " ".join(text.split())
    assert main(["journal", "move-root", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--from OLD" in text
    assert "exit codes:" in text
