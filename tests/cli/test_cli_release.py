"""``nenjim journal release``: one release of the latest or as-of revision."""

from __future__ import annotations

import json

from nenjim.cli import main

CONTENT_100 = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
CONTENT_101 = "sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"


def test_release_prints_every_field(sample, capsys):
    assert main(["journal", "release", str(sample.root), "com.example.widget", "1.0.1"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "artifact         com.example.widget",
        "journal version  20260201T000000Z",
        "version          1.0.1",
        "description      Fixes the build",
        "license          Apache-2.0 OR MIT",
        f"content          {CONTENT_101}",
        "policy           deprecated (use gadgets)",
        "dependencies     com.example.core [1.2.0,2.0.0)",
        "                 com.example.log 0.9.3",
        "exclusions       com.example.legacy",
        "                 com.example.zeta",
        "preferences      com.example.core 1.4.0",
    ]


def test_release_without_lists_shows_dashes(sample, capsys):
    assert main(["journal", "release", str(sample.root), "com.example.widget", "1.0.0"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "description      -"
    assert lines[6] == "policy           yanked (broken build, use 1.0.1)"
    assert lines[7:] == ["dependencies     -", "exclusions       -", "preferences      -"]


def test_release_json_fields(sample, capsys):
    argv = ["journal", "release", str(sample.root), "com.example.widget", "1.0.1", "--json"]

    assert main(argv) == 0

    out = capsys.readouterr().out
    release = json.loads(out)
    assert out == json.dumps(release, sort_keys=True, indent=2) + "\n"
    assert sorted(release) == [
        "content", "coordinate", "dependencies", "description", "exclusions",
        "journal_version", "license", "policy", "preferences", "version",
    ]  # fmt: skip
    assert release["coordinate"] == "com.example.widget"
    assert release["journal_version"] == "20260201T000000Z"
    assert release["version"] == "1.0.1"
    assert release["description"] == "Fixes the build"
    assert release["license"] == "Apache-2.0 OR MIT"
    assert release["content"] == CONTENT_101
    assert release["policy"] == {"status": "deprecated", "reason": "use gadgets"}
    assert release["dependencies"] == [
        {"coordinate": "com.example.core", "requirement": "[1.2.0,2.0.0)"},
        {"coordinate": "com.example.log", "requirement": "0.9.3"},
    ]
    assert release["exclusions"] == ["com.example.legacy", "com.example.zeta"]
    assert release["preferences"] == [{"coordinate": "com.example.core", "version": "1.4.0"}]


def test_release_as_of_uses_the_older_revision(sample, capsys):
    argv = [
        "journal", "release", str(sample.root), "com.example.widget", "1.0.0",
        "--as-of", "20260101T120000Z", "--json",
    ]  # fmt: skip

    assert main(argv) == 0

    release = json.loads(capsys.readouterr().out)
    assert release["content"] == CONTENT_100
    assert release["policy"] == {"status": "active", "reason": None}


def test_release_unknown_in_the_as_of_revision_fails(sample, capsys):
    argv = [
        "journal", "release", str(sample.root), "com.example.widget", "1.0.1",
        "--as-of", "20260101T120000Z",
    ]  # fmt: skip

    assert main(argv) == 1

    assert capsys.readouterr().err == (
        "nenjim: error: artifact com.example.widget has no release 1.0.1 "
        "in revision 20260101T000000Z\n"
    )


def test_release_unknown_fails(sample, capsys):
    assert main(["journal", "release", str(sample.root), "com.example.widget", "2.0.0"]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "nenjim: error: artifact com.example.widget has no release 2.0.0 "
        "in revision 20260201T000000Z\n"
    )


def test_release_of_an_unknown_artifact_fails(sample, capsys):
    assert main(["journal", "release", str(sample.root), "com.example.nothing", "1.0.0"]) == 1

    assert capsys.readouterr().err.startswith("nenjim: error: unknown artifact com.example.nothing")


def test_release_rejects_an_invalid_version_as_usage(sample, capsys):
    argv = ["journal", "release", str(sample.root), "com.example.widget", "1.0.0+build"]

    assert main(argv) == 2

    err = capsys.readouterr().err
    assert "argument VERSION: invalid release version '1.0.0+build'" in err
    assert "Traceback" not in err
