"""``--json`` on every command, and errors as one JSON object on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nenjim.cli import main

WIDGET = "com.example.widget"


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    out, err = capsys.readouterr()
    assert err == ""
    document = json.loads(out)
    assert out == json.dumps(document, sort_keys=True, indent=2) + "\n"
    return document


def test_verify_json(sample: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "verify", str(sample.root), "--json"]) == 0
    assert _json(capsys) == {
        "root": str(sample.root),
        "artifacts": 2,
        "revisions": 3,
        "heads": [
            {
                "coordinate": "com.example.core",
                "journal_version": "20250101T000000Z",
                "digest": sample.digest(sample.core_genesis),
                "revisions": 1,
            },
            {
                "coordinate": WIDGET,
                "journal_version": "20260201T000000Z",
                "digest": sample.digest(sample.widget_head),
                "revisions": 2,
            },
        ],
    }


def test_log_json(sample: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "log", str(sample.root), WIDGET, "--json"]) == 0
    document = _json(capsys)
    assert document["coordinate"] == WIDGET
    revisions = document["revisions"]
    assert [r["journal_version"] for r in revisions] == ["20260101T000000Z", "20260201T000000Z"]
    assert revisions[1]["predecessor"] == revisions[0]["digest"]
    assert revisions[0]["digest"] == sample.digest(sample.widget_genesis)


def test_digest_json(sample: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "digest", str(sample.widget_head), "--json"]) == 0
    assert _json(capsys) == {
        "file": str(sample.widget_head),
        "digest": sample.digest(sample.widget_head),
    }


def test_new_json(sample: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "new", str(sample.root), WIDGET, "--stdout", "--json"]) == 0
    printed = _json(capsys)
    assert printed["path"] is None
    assert printed["predecessor"] == sample.digest(sample.widget_head)
    assert f"PREDECESSOR {printed['predecessor']}\n" in printed["text"]
    assert main(["journal", "new", str(sample.root), WIDGET, "--json"]) == 0
    written = _json(capsys)
    path = Path(written["path"])
    assert path == sample.root / WIDGET / f"{written['journal_version']}.journal"
    assert path.read_bytes() == written["text"].encode()


def test_audit_and_rebuild_json(sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    store = f"sqlite://{tmp_path / 'log.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()
    assert main(["journal", "audit", "--store", store, "--json"]) == 0
    assert _json(capsys) == {
        "ok": True,
        "problem": None,
        "events": 3,
        "artifacts": 2,
        "revisions": 3,
        "derived": False,
    }
    assert main(["projections", "rebuild", "journal-chains", "--store", store, "--json"]) == 0
    rebuilt = _json(capsys)
    assert rebuilt["projection"] == "journal-chains"
    assert rebuilt["summary"].startswith("journal-chains: 3 revisions of 2 artifacts")
    assert main(["projections", "status", "--store", store, "--json"]) == 0
    assert _json(capsys) == {
        "projections": [
            {"name": "journal-chains", "log": "journal", "position": 3, "head": 3, "lag": 0}
        ]
    }


@pytest.mark.parametrize(
    "case",
    [
        (["journal", "verify", "{tmp}/missing"], "journal", 1, "journal root does not exist"),
        (["journal", "show", "{root}", "com.example.nothing"], "failure", 1, "unknown artifact"),
        (["journal", "show", "{root}", WIDGET, "--as-of", "x"], "usage", 2, "nenjim journal show:"),
        (["journal", "verify", "{root}", "--store", "mysql://x/y"], "usage", 2, "argument --store"),
        (["journal", "audit", "--store", "sqlite://{tmp}/none.db"], "store", 3, "SQLite store"),
        (["journal", "verify", "{root}", "--bogus"], "usage", 2, "nenjim: unrecognized"),
    ],
)
def test_errors_are_one_json_object_on_stderr(
    sample: Any,
    tmp_path: Path,
    case: tuple[list[str], str, int, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    template, kind, code, start = case
    argv = [a.format(tmp=tmp_path, root=sample.root) for a in [*template, "--json"]]
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    error = json.loads(err)
    assert error["kind"] == kind
    assert error["exit_code"] == code
    assert error["error"].startswith(start)
