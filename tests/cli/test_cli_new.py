"""``nenjim journal new``: a successor draft of the head that the Journal accepts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nenjim.admin.draft import DraftError, next_version
from nenjim.cli import main
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.valuetypes import JournalVersion, Sha256Digest

WIDGET = "com.example.widget"


def _now() -> JournalVersion:
    return JournalVersion.from_datetime(datetime.now(UTC))


def _started(root):
    assembly = build_journal(root)
    assembly.process.start()
    return assembly


def test_new_writes_a_successor_that_loads_on_the_next_start(sample, capsys):
    before = _now()
    assert main(["journal", "new", str(sample.root), WIDGET]) == 0
    after = _now()

    out, err = capsys.readouterr()
    assert err == ""
    path = sample.root / WIDGET / out.strip()
    written = JournalVersion(path.name.removesuffix(".journal"))
    assert out == f"{sample.root / WIDGET / path.name}\n"
    assert before <= written <= after

    service = _started(sample.root).service
    old_head, head = service.revisions(WIDGET)[-2:]
    assert head.version == written
    assert head.predecessor == Sha256Digest(sample.digest(sample.widget_head))
    assert head.digest == Sha256Digest.of_bytes(path.read_bytes())
    assert head.description == old_head.description
    assert head.information == old_head.information
    assert head.policy == old_head.policy
    assert head.releases == old_head.releases


def test_new_draft_is_accepted_by_refresh(sample, capsys):
    assembly = _started(sample.root)

    assert main(["journal", "new", str(sample.root), WIDGET]) == 0

    written = capsys.readouterr().out.strip()
    report = assembly.manager.refresh()
    assert [str(r.version) + ".journal" for r in report.accepted] == [written.rsplit("/", 1)[1]]
    assert assembly.service.latest(WIDGET).predecessor == Sha256Digest(
        sample.digest(sample.widget_head)
    )


def test_new_after_a_head_in_the_future_is_one_second_later(tmp_path, write_revision, capsys):
    write_revision(
        tmp_path,
        "com.example.future",
        "20991231T235959Z",
        "NENJIM-JOURNAL 1\nARTIFACT com.example.future\nJOURNAL_VERSION 20991231T235959Z\n",
    )

    assert main(["journal", "new", str(tmp_path), "com.example.future"]) == 0

    expected = tmp_path / "com.example.future" / "21000101T000000Z.journal"
    assert capsys.readouterr().out == f"{expected}\n"
    assert _started(tmp_path).service.latest("com.example.future").version == JournalVersion(
        "21000101T000000Z"
    )


def test_new_stdout_prints_the_draft_and_writes_nothing(sample, capsys):
    files_before = sorted(sample.root.rglob("*"))

    assert main(["journal", "new", str(sample.root), "com.example.core", "--stdout"]) == 0

    text = capsys.readouterr().out
    assert sorted(sample.root.rglob("*")) == files_before
    lines = text.splitlines()
    assert lines[:2] == ["NENJIM-JOURNAL 1", "ARTIFACT com.example.core"]
    assert lines[3] == f"PREDECESSOR {sample.digest(sample.core_genesis)}"
    version = lines[2].removeprefix("JOURNAL_VERSION ")
    assert JournalVersion(version) > JournalVersion("20250101T000000Z")

    # The printed text, saved where it belongs, is a valid successor byte for byte.
    (sample.root / "com.example.core" / f"{version}.journal").write_text(text, newline="")
    head = _started(sample.root).service.latest("com.example.core")
    assert head.version == JournalVersion(version)
    assert head.text == text


def test_new_refuses_to_overwrite_an_existing_file(sample, capsys, monkeypatch):
    moment = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
    target = sample.root / WIDGET / "20260601T120000Z.journal"

    def racing_clock() -> datetime:
        # Another writer creates the same file after the root was loaded.
        target.write_text("someone else's draft\n")
        return moment

    monkeypatch.setattr("nenjim.cli.journal_commands.utc_now", racing_clock)

    assert main(["journal", "new", str(sample.root), WIDGET]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"nenjim: error: refusing to overwrite existing file {target}\n"
    assert target.read_text() == "someone else's draft\n"


def test_new_of_an_unknown_artifact_fails_and_writes_nothing(sample, capsys):
    assert main(["journal", "new", str(sample.root), "com.example.nothing"]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("nenjim: error: unknown artifact com.example.nothing")
    assert not (sample.root / "com.example.nothing").exists()


def test_new_on_a_broken_root_fails_and_writes_nothing(sample, capsys):
    (sample.root / "stray.txt").write_text("x")
    files_before = sorted(sample.root.rglob("*"))

    assert main(["journal", "new", str(sample.root), WIDGET]) == 1

    assert capsys.readouterr().err.startswith("nenjim: error: unexpected file in the journal root")
    assert sorted(sample.root.rglob("*")) == files_before


def test_new_rejects_an_invalid_coordinate_as_usage(sample, capsys):
    assert main(["journal", "new", str(sample.root), "widget"]) == 2
    assert "argument COORD: invalid artifact coordinate 'widget'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("head", "now", "expected"),
    [
        ("20260101T000000Z", datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC), "20260101T000001Z"),
        ("20260101T000000Z", datetime(2026, 1, 1, 0, 0, 0, 999999, tzinfo=UTC), "20260101T000001Z"),
        ("20260101T000000Z", datetime(2025, 1, 1, tzinfo=UTC), "20260101T000001Z"),
        ("20261231T235959Z", datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC), "20270101T000000Z"),
    ],
)
def test_next_version_is_now_or_one_second_after_the_head(head, now, expected):
    assert next_version(JournalVersion(head), now) == JournalVersion(expected)


def test_new_on_a_head_at_the_last_version_is_one_line_and_writes_nothing(
    tmp_path, write_revision, capsys
):
    last = "99991231T235959Z"
    write_revision(
        tmp_path,
        "com.example.last",
        last,
        f"NENJIM-JOURNAL 1\nARTIFACT com.example.last\nJOURNAL_VERSION {last}\n",
    )

    assert main(["journal", "new", str(tmp_path), "com.example.last"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "nenjim: error: no Journal version is later than 99991231T235959Z, the last one "
        "(9999-12-31 23:59:59 UTC): a successor of this head cannot be drafted\n"
    )
    assert main(["journal", "new", str(tmp_path), "com.example.last", "--stdout", "--json"]) == 1
    assert '"exit_code": 1, "kind": "failure"' in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "com.example.last").iterdir()] == [f"{last}.journal"]


def test_next_version_after_the_last_version_is_a_draft_error():
    with pytest.raises(DraftError, match="no Journal version is later than 99991231T235959Z"):
        next_version(JournalVersion("99991231T235959Z"), datetime(2026, 1, 1, tzinfo=UTC))
    # The second before the last still has a successor.
    assert next_version(
        JournalVersion("99991231T235958Z"), datetime(2026, 1, 1, tzinfo=UTC)
    ) == JournalVersion("99991231T235959Z")
