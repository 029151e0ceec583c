"""``nenjim journal verify``: a loaded root is reported, any Journal error is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nenjim.cli import main


def test_verify_reports_artifacts_revisions_and_heads(sample, capsys):
    assert main(["journal", "verify", str(sample.root)]) == 0

    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"journal OK: {sample.root}"
    assert lines[1] == "artifacts: 2, revisions: 3"
    assert lines[3].split() == ["ARTIFACT", "REVISIONS", "HEAD", "HEAD", "DIGEST"]
    assert lines[4].split() == [
        "com.example.core",
        "1",
        "20250101T000000Z",
        sample.digest(sample.core_genesis),
    ]
    assert lines[5].split() == [
        "com.example.widget",
        "2",
        "20260201T000000Z",
        sample.digest(sample.widget_head),
    ]


def test_verify_accepts_the_memory_store_url(sample, capsys):
    assert main(["journal", "verify", str(sample.root), "--store", "memory:"]) == 0
    assert "artifacts: 2" in capsys.readouterr().out


def test_verify_of_an_empty_root_reports_nothing_loaded(tmp_path, capsys):
    assert main(["journal", "verify", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"journal OK: {tmp_path}",
        "artifacts: 0, revisions: 0",
    ]


def test_verify_names_file_and_line_of_a_bad_revision(sample, write_revision, capsys):
    bad = write_revision(
        sample.root,
        "com.example.broken",
        "20260101T000000Z",
        "NENJIM-JOURNAL 1\n"
        "ARTIFACT com.example.broken\n"
        "JOURNAL_VERSION 20260101T000000Z\n"
        "COLOUR blue\n",
    )

    assert main(["journal", "verify", str(sample.root)]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n")
    assert len(err.splitlines()) == 1
    assert err.startswith("nenjim: error: ")
    assert str(bad) in err
    assert "line 4" in err
    assert "Traceback" not in err


def test_verify_reports_a_broken_chain(sample, write_revision, capsys):
    write_revision(
        sample.root,
        "com.example.core",
        "20250201T000000Z",
        "NENJIM-JOURNAL 1\n"
        "ARTIFACT com.example.core\n"
        "JOURNAL_VERSION 20250201T000000Z\n"
        f"PREDECESSOR sha256:{'0' * 64}\n",
    )

    assert main(["journal", "verify", str(sample.root)]) == 1

    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "unknown predecessor" in err
    assert "20250201T000000Z.journal" in err


def test_verify_of_a_missing_root_fails(tmp_path, capsys):
    missing = tmp_path / "nowhere"

    assert main(["journal", "verify", str(missing)]) == 1

    assert capsys.readouterr().err == (
        f"nenjim: error: journal root does not exist (path {missing})\n"
    )


def test_verify_of_a_stray_file_in_the_root_fails(sample, capsys):
    stray = sample.root / "README.txt"
    stray.write_text("hello\n")

    assert main(["journal", "verify", str(sample.root)]) == 1

    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: unexpected file in the journal root")
    assert str(stray) in err


def test_an_unsupported_store_url_is_a_usage_error(sample, capsys):
    assert main(["journal", "verify", str(sample.root), "--store", "nosuch://x"]) == 2

    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: argument --store: ")
    assert "nosuch://x" in err


@pytest.mark.parametrize("argv", [[], ["journal"], ["journal", "verify"], ["journal", "bogus"]])
def test_missing_or_unknown_arguments_are_usage_errors(argv, capsys):
    assert main(argv) == 2
    assert "usage: nenjim" in capsys.readouterr().err


def test_help_exits_zero(capsys):
    assert main(["journal", "--help"]) == 0
    out = capsys.readouterr().out
    for command in ("verify", "digest", "log", "show", "release", "new"):
        assert command in out


def test_root_is_reported_absolute(sample, capsys, monkeypatch):
    monkeypatch.chdir(sample.root.parent)

    assert main(["journal", "verify", Path(sample.root).name]) == 0

    assert capsys.readouterr().out.splitlines()[0] == f"journal OK: {sample.root}"
