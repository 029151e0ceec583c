"""``nenjim journal show``: the latest or as-of revision, as text or stable JSON."""

from __future__ import annotations

import json

from nenjim.cli import main

CONTENT_100 = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
CONTENT_101 = "sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"


def _show_json(sample, capsys, *extra):
    assert main(["journal", "show", str(sample.root), "com.example.widget", "--json", *extra]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out, json.loads(out)


def test_show_prints_header_fields_and_a_releases_table(sample, capsys):
    assert main(["journal", "show", str(sample.root), "com.example.widget"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[:7] == [
        "artifact         com.example.widget",
        "journal version  20260201T000000Z",
        f"digest           {sample.digest(sample.widget_head)}",
        f"predecessor      {sample.digest(sample.widget_genesis)}",
        'description      Widgets for "everyone"',
        "information      https://widgets.example.com/docs",
        "policy           deprecated (use gadgets)",
    ]
    assert lines[7] == ""
    assert lines[8].split() == ["VERSION", "LICENSE", "POLICY", "CONTENT", "DEPENDENCIES"]
    assert lines[9].startswith("1.0.0    Apache-2.0         yanked (broken build, use 1.0.1)")
    assert lines[9].endswith(f"{CONTENT_100}  -")
    assert lines[10].startswith("1.0.1    Apache-2.0 OR MIT  deprecated (use gadgets)")
    assert lines[10].endswith(
        f"{CONTENT_101}  com.example.core [1.2.0,2.0.0), com.example.log 0.9.3"
    )
    assert lines[9].index("sha256:") == lines[10].index("sha256:") == lines[8].index("CONTENT")


def test_show_of_a_revision_without_releases_says_so(sample, capsys):
    assert main(["journal", "show", str(sample.root), "com.example.core"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[3:] == [
        "predecessor      -",
        "description      -",
        "information      -",
        "policy           active",
        "",
        "no releases",
    ]


def test_show_json_revision_fields(sample, capsys):
    _, revision = _show_json(sample, capsys)

    assert sorted(revision) == [
        "coordinate", "description", "digest", "information",
        "journal_version", "policy", "predecessor", "releases",
    ]  # fmt: skip
    assert revision["coordinate"] == "com.example.widget"
    assert revision["journal_version"] == "20260201T000000Z"
    assert revision["digest"] == sample.digest(sample.widget_head)
    assert revision["predecessor"] == sample.digest(sample.widget_genesis)
    assert revision["description"] == 'Widgets for "everyone"'
    assert revision["information"] == "https://widgets.example.com/docs"
    assert revision["policy"] == {"status": "deprecated", "reason": "use gadgets"}
    assert [r["version"] for r in revision["releases"]] == ["1.0.0", "1.0.1"]


def test_show_json_release_fields(sample, capsys):
    _, revision = _show_json(sample, capsys)
    yanked, fixed = revision["releases"]

    assert yanked == {
        "version": "1.0.0",
        "description": None,
        "license": "Apache-2.0",
        "content": CONTENT_100,
        "policy": {"status": "yanked", "reason": "broken build, use 1.0.1"},
        "dependencies": [],
        "exclusions": [],
        "preferences": [],
    }
    assert fixed == {
        "version": "1.0.1",
        "description": "Fixes the build",
        "license": "Apache-2.0 OR MIT",
        "content": CONTENT_101,
        "policy": {"status": "deprecated", "reason": "use gadgets"},
        "dependencies": [
            {"coordinate": "com.example.core", "requirement": "[1.2.0,2.0.0)"},
            {"coordinate": "com.example.log", "requirement": "0.9.3"},
        ],
        "exclusions": ["com.example.legacy", "com.example.zeta"],
        "preferences": [{"coordinate": "com.example.core", "version": "1.4.0"}],
    }


def test_show_json_is_stable_text(sample, capsys):
    out, revision = _show_json(sample, capsys)

    assert out == json.dumps(revision, sort_keys=True, indent=2) + "\n"
    assert out == _show_json(sample, capsys)[0]


def test_show_json_of_a_genesis_has_null_predecessor(sample, capsys):
    _, revision = _show_json(sample, capsys, "--as-of", "20260115T000000Z")

    assert revision["journal_version"] == "20260101T000000Z"
    assert revision["digest"] == sample.digest(sample.widget_genesis)
    assert revision["predecessor"] is None
    assert revision["policy"] == {"status": "active", "reason": None}
    assert [r["policy"]["status"] for r in revision["releases"]] == ["active"]


def test_show_as_of_an_exact_version_picks_that_revision(sample, capsys):
    _, revision = _show_json(sample, capsys, "--as-of", "20260201T000000Z")

    assert revision["journal_version"] == "20260201T000000Z"


def test_show_as_of_before_the_genesis_fails(sample, capsys):
    argv = [
        "journal",
        "show",
        str(sample.root),
        "com.example.widget",
        "--as-of",
        "20251231T235959Z",
    ]

    assert main(argv) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "nenjim: error: artifact com.example.widget has no revision as of 20251231T235959Z "
        "(its genesis is 20260101T000000Z)\n"
    )


def test_show_of_an_unknown_artifact_fails(sample, capsys):
    assert main(["journal", "show", str(sample.root), "com.example.nothing", "--json"]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    error = json.loads(err)
    assert err.count("\n") == 1
    assert error["error"].startswith("unknown artifact com.example.nothing")
    assert error["exit_code"] == 1


def test_show_rejects_an_invalid_as_of_as_usage(sample, capsys):
    argv = ["journal", "show", str(sample.root), "com.example.widget", "--as-of", "2026-01-01"]

    assert main(argv) == 2

    out, err = capsys.readouterr()
    assert out == ""
    assert "usage: nenjim journal show" in err
    assert "argument --as-of: invalid journal version '2026-01-01'" in err
    assert "Traceback" not in err


def test_show_rejects_an_impossible_date_as_usage(sample, capsys):
    argv = [
        "journal",
        "show",
        str(sample.root),
        "com.example.widget",
        "--as-of",
        "20260230T000000Z",
    ]

    assert main(argv) == 2
    assert "argument --as-of" in capsys.readouterr().err
