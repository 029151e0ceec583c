"""``nenjim journal append``: revision files appended to a durable Journal, without a root."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, digest, journal_text
from nenjim.cli import main

WIDGET = "com.example.widget"
V1, V2, V3 = "20260101T000000Z", "20260102T000000Z", "20260103T000000Z"


@pytest.fixture
def chain() -> Chain:
    """The widget's three revisions."""
    widget = Chain(WIDGET)
    for version in (V1, V2, V3):
        widget.add(version, (Rel("1.0.0", content(1)),))
    return widget


def _files(directory: Path, chain: Chain) -> list[str]:
    directory.mkdir(exist_ok=True)
    paths = []
    for version, text in zip(chain.versions, chain.texts, strict=True):
        path = directory / f"{version}.journal"
        path.write_bytes(text.encode())
        paths.append(str(path))
    return paths


def _store(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'journal.db'}"


def test_append_then_show_from_the_store(
    tmp_path: Path, chain: Chain, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path)
    files = _files(tmp_path / "incoming", chain)
    assert main(["journal", "append", "--store", store, "--journal", "reg", *files]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"appended 3 of 3 revisions to {store}"
    assert out[0] == f"{WIDGET} {V1} {digest(chain.texts[0])}"
    empty = tmp_path / "empty"
    empty.mkdir()
    arguments = ["show", str(empty), WIDGET, "--store", store, "--journal", "reg", "--json"]
    assert main(["journal", *arguments]) == 0
    assert json.loads(capsys.readouterr().out)["journal_version"] == V3


def test_append_again_reports_json_and_appends_nothing(
    tmp_path: Path, chain: Chain, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path)
    files = _files(tmp_path / "incoming", chain)
    assert main(["journal", "append", "--store", store, "--journal", "reg", *files[:2]]) == 0
    capsys.readouterr()
    assert main(["journal", "append", "--store", store, "--json", *files]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "store": store,
        "appended": [
            {"coordinate": WIDGET, "journal_version": V3, "digest": digest(chain.texts[2])}
        ],
        "already_accepted": 2,
    }


def test_append_reads_one_text_from_standard_input(
    tmp_path: Path,
    chain: Chain,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _store(tmp_path)
    files = _files(tmp_path / "incoming", chain)
    assert main(["journal", "append", "--store", store, "--journal", "reg", files[0]]) == 0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(chain.texts[1].encode())))
    assert main(["journal", "append", "--store", store, "--stdin", files[2]]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"appended 2 of 2 revisions to {store}"


def test_a_rejected_file_is_one_line_exit_1_and_appends_nothing(
    tmp_path: Path, chain: Chain, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path)
    files = _files(tmp_path / "incoming", chain)
    assert main(["journal", "append", "--store", store, "--journal", "reg", files[0]]) == 0
    capsys.readouterr()
    stale = tmp_path / "stale.journal.txt"
    stale.write_text(journal_text(WIDGET, "20251231T000000Z", predecessor=digest(chain.texts[1])))
    assert main(["journal", "append", "--store", store, files[1], str(stale)]) == 1
    assert capsys.readouterr().err == (
        "nenjim: error: journal version not later than the predecessor's: JOURNAL_VERSION "
        f"20251231T000000Z is not later than the predecessor's {V2} "
        f"(artifact {WIDGET}, path {stale})\n"
    )
    assert main(["journal", "append", "--store", store, "--json", files[1]]) == 0
    assert len(json.loads(capsys.readouterr().out)["appended"]) == 1  # files[1] was not kept


def test_an_unreadable_text_names_its_file_and_line(
    tmp_path: Path, chain: Chain, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_text(f"NENJIM-JOURNAL 1\nARTIFACT {WIDGET}\nJOURNAL_VERSION yesterday\n")
    assert (
        main(["journal", "append", "--store", store, "--journal", "reg", "--json", str(bad)]) == 1
    )
    error = json.loads(capsys.readouterr().err)
    assert error["kind"] == "journal"
    assert error["exit_code"] == 1
    assert error["error"].endswith(f"(artifact {WIDGET}, path {bad}, line 3)")


def test_append_needs_files_and_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "append", "--store", _store(tmp_path)]) == 2
    assert capsys.readouterr().err == "nenjim journal append: error: needs FILE... or --stdin\n"
    monkeypatch.delenv("NENJIM_STORE_URL")
    assert main(["journal", "append", "x.journal"]) == 2
    assert capsys.readouterr().err.endswith(
        "nenjim journal append: error: needs a store: --store URL or $NENJIM_STORE_URL\n"
    )


def test_append_refuses_stores_that_cannot_hold_it(
    tmp_path: Path, chain: Chain, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _files(tmp_path / "incoming", chain)
    missing = tmp_path / "missing.db"
    assert main(["journal", "append", "--store", f"sqlite://{missing}", files[0]]) == 3
    assert capsys.readouterr().err == f"nenjim: error: SQLite store {missing} does not exist\n"
    assert not missing.exists()
    assert main(["journal", "append", "--store", "memory:", files[0]]) == 3
    assert capsys.readouterr().err == (
        "nenjim: error: store memory: keeps nothing: revisions are appended to a durable store\n"
    )
    store = _store(tmp_path)
    assert main(["journal", "append", "--store", store, "--journal", "one", files[0]]) == 0
    capsys.readouterr()
    assert main(["journal", "append", "--store", store, "--journal", "two", files[1]]) == 3
    assert "holds the Journal named 'one', not the Journal named 'two'" in (capsys.readouterr().err)


def test_the_help_names_append(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "append", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--stdin" in text
    assert "exit codes:" in text
