"""Who owns a store: the first start that succeeds, and a root that moved takes it back.

Every test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, journal_text, write_chain, write_revision
from nenjim.cli import main
from nenjim.journal.exception import (
    JournalConflictError,
    JournalLayoutError,
    JournalRootError,
    JournalStoreError,
)
from nenjim.journal.impl.ref import build_journal, move_root
from nenjim.journal.impl.ref.log import JournalLog


def _root(path: Path, artifact: str) -> Path:
    chain = Chain(artifact)
    chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),))
    write_chain(path, chain)
    return path


def _coordinates(root: Path, store: str, journal: str | None = None) -> set[str]:
    assembly = build_journal(root, store=store, journal=journal)
    assembly.process.start()
    try:
        return {str(c) for c in assembly.service.coordinates()}
    finally:
        assembly.process.stop()


def _owner(store: str) -> str | None:
    log = JournalLog(store, create=False)
    try:
        return log.recorded_identity()
    finally:
        log.close()


def _events(store: str) -> int:
    log = JournalLog(store, create=False)
    try:
        return log.recorder.max_notification_id() or 0
    finally:
        log.close()


# --- owned from the first start that succeeds -------------------------------------------


def test_a_failed_start_of_a_wrong_directory_leaves_a_fresh_store_to_the_right_root(
    tmp_path: Path, durable_store_url: str
) -> None:
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "notes.txt").write_text("not a Journal root\n")
    right = _root(tmp_path / "right", "com.example.right")
    with pytest.raises(JournalLayoutError):
        build_journal(wrong, store=durable_store_url).process.start()
    assert _owner(durable_store_url) is None
    assert _coordinates(right, durable_store_url) == {"com.example.right"}
    assert _owner(durable_store_url) == f"root:{right.resolve()}"


def test_a_wrong_root_refused_on_a_chain_rule_claims_nothing(
    tmp_path: Path, durable_store_url: str
) -> None:
    wrong = tmp_path / "wrong"
    orphan = journal_text(
        "com.example.orphan", "20260101T000000Z", predecessor="sha256:" + "0" * 64
    )
    write_revision(wrong, "com.example.orphan", "20260101T000000Z", orphan)
    right = _root(tmp_path / "right", "com.example.right")
    with pytest.raises(Exception, match="unknown predecessor"):
        build_journal(wrong, store=durable_store_url).process.start()
    assert _owner(durable_store_url) is None
    assert _events(durable_store_url) == 0
    assert _coordinates(right, durable_store_url) == {"com.example.right"}


def test_the_command_line_verify_of_a_wrong_directory_claims_nothing(
    tmp_path: Path, durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "README.md").write_text("hello\n")
    right = _root(tmp_path / "right", "com.example.right")
    assert main(["journal", "verify", str(wrong), "--store", durable_store_url]) == 1
    assert "unexpected file in the journal root" in capsys.readouterr().err
    assert main(["journal", "verify", str(right), "--store", durable_store_url]) == 0
    assert "com.example.right" in capsys.readouterr().out
    assert main(["journal", "verify", str(wrong), "--store", durable_store_url]) == 3
    assert f"holds the Journal of root {right.resolve()}" in capsys.readouterr().err


def test_a_start_that_appends_nothing_still_claims_the_store(
    tmp_path: Path, durable_store_url: str
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _coordinates(empty, durable_store_url) == set()
    assert _owner(durable_store_url) == f"root:{empty.resolve()}"
    with pytest.raises(JournalStoreError, match="holds the Journal of root"):
        build_journal(_root(tmp_path / "other", "com.example.other"), store=durable_store_url)


def test_of_two_roots_opened_on_a_fresh_store_the_second_start_writes_nothing(
    tmp_path: Path, durable_store_url: str
) -> None:
    first = build_journal(_root(tmp_path / "first", "com.example.first"), store=durable_store_url)
    second = build_journal(
        _root(tmp_path / "second", "com.example.second"), store=durable_store_url
    )
    first.process.start()
    events = _events(durable_store_url)
    with pytest.raises(JournalStoreError) as refused:
        second.process.start()
    first.process.stop()
    second.process.stop()
    message = str(refused.value)
    assert f"holds the Journal of root {(tmp_path / 'first').resolve()}, not " in message
    assert "nenjim journal move-root" in message
    assert _events(durable_store_url) == events
    assert _coordinates(tmp_path / "first", durable_store_url) == {"com.example.first"}


def test_a_named_journal_is_claimed_by_its_first_successful_start_too(
    tmp_path: Path, durable_store_url: str
) -> None:
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "stray").write_text("x")
    with pytest.raises(JournalLayoutError):
        build_journal(wrong, store=durable_store_url, journal="widgets").process.start()
    assert _owner(durable_store_url) is None
    root = _root(tmp_path / "root", "com.example.named")
    assert _coordinates(root, durable_store_url, "gadgets") == {"com.example.named"}
    assert _owner(durable_store_url) == "name:gadgets"


# --- a root that moved ----------------------------------------------------------------


def _moved(tmp_path: Path, store: str) -> tuple[Path, Path]:
    """A root that loaded into ``store``, then moved to another path."""
    old = _root(tmp_path / "old", "com.example.moved")
    assert _coordinates(old, store) == {"com.example.moved"}
    new = tmp_path / "new"
    old.rename(new)
    return old, new


def test_a_root_that_moved_gets_its_store_back(tmp_path: Path, durable_store_url: str) -> None:
    old, new = _moved(tmp_path, durable_store_url)
    with pytest.raises(JournalStoreError, match="nenjim journal move-root"):
        build_journal(new, store=durable_store_url)
    assert move_root(durable_store_url, old, new) is True
    assert _owner(durable_store_url) == f"root:{new.resolve()}"
    assert _coordinates(new, durable_store_url) == {"com.example.moved"}
    assert move_root(durable_store_url, old, new) is False  # already there: nothing to do


def test_a_move_is_refused_while_the_old_root_still_holds_journal_files(
    tmp_path: Path, durable_store_url: str
) -> None:
    old = _root(tmp_path / "old", "com.example.kept")
    assert _coordinates(old, durable_store_url) == {"com.example.kept"}
    copy = tmp_path / "copy"
    shutil.copytree(old, copy)
    with pytest.raises(JournalStoreError) as refused:
        move_root(durable_store_url, old, copy)
    assert f"still belongs to root {old.resolve()}: that directory exists and holds " in str(
        refused.value
    )
    assert "\n" not in str(refused.value)
    assert _owner(durable_store_url) == f"root:{old.resolve()}"
    assert _coordinates(old, durable_store_url) == {"com.example.kept"}


def test_an_old_root_left_without_journal_files_gives_its_store_up(
    tmp_path: Path, durable_store_url: str
) -> None:
    old = _root(tmp_path / "old", "com.example.left")
    assert _coordinates(old, durable_store_url) == {"com.example.left"}
    new = tmp_path / "new"
    shutil.copytree(old, new)
    for file in old.glob("*/*.journal"):
        file.unlink()
    (old / "com.example.left" / "20260101T000000Z.journal.example").write_text("example\n")
    assert move_root(durable_store_url, old, new) is True
    assert _coordinates(new, durable_store_url) == {"com.example.left"}


def test_a_move_from_a_root_the_store_does_not_record_is_refused(
    tmp_path: Path, durable_store_url: str
) -> None:
    old, new = _moved(tmp_path, durable_store_url)
    other = tmp_path / "other"
    with pytest.raises(JournalStoreError) as refused:
        move_root(durable_store_url, other, new)
    assert f"holds the Journal of root {old.resolve()}, not the Journal of root {other}" in (
        str(refused.value)
    )
    assert _owner(durable_store_url) == f"root:{old.resolve()}"


def test_a_store_without_an_owner_or_with_a_named_journal_has_no_root_to_move(
    tmp_path: Path, durable_store_url: str
) -> None:
    new = tmp_path / "new"
    new.mkdir()
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "stray").write_text("x")
    with pytest.raises(JournalLayoutError):
        build_journal(wrong, store=durable_store_url).process.start()  # opens, claims nothing
    with pytest.raises(JournalStoreError, match="holds no Journal yet"):
        move_root(durable_store_url, tmp_path / "old", new)
    assert _coordinates(_root(tmp_path / "named", "com.example.n"), durable_store_url, "team")
    with pytest.raises(JournalStoreError, match="the Journal named 'team', which belongs to no"):
        move_root(durable_store_url, tmp_path / "named", new)
    assert _owner(durable_store_url) == "name:team"


def test_a_move_to_a_path_that_is_no_directory_is_a_root_error(
    tmp_path: Path, durable_store_url: str
) -> None:
    old, _ = _moved(tmp_path, durable_store_url)
    with pytest.raises(JournalRootError, match="journal root does not exist"):
        move_root(durable_store_url, old, tmp_path / "elsewhere")
    assert _owner(durable_store_url) == f"root:{old.resolve()}"


def test_a_move_reached_through_a_symbolic_link_records_the_resolved_path(
    tmp_path: Path, durable_store_url: str
) -> None:
    old, new = _moved(tmp_path, durable_store_url)
    link = tmp_path / "link"
    link.symlink_to(new)
    assert move_root(durable_store_url, old, link) is True
    assert _owner(durable_store_url) == f"root:{new.resolve()}"
    assert _coordinates(link, durable_store_url) == {"com.example.moved"}


# --- nenjim journal move-root ---------------------------------------------------------


def test_move_root_on_the_command_line(
    tmp_path: Path, durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = _moved(tmp_path, durable_store_url)
    command = ["journal", "move-root", "--store", durable_store_url]
    assert main([*command, "--from", str(old), "--to", str(new)]) == 0
    assert capsys.readouterr().out == f"the store now belongs to root {new.resolve()}\n"
    assert main([*command, "--from", str(old), "--to", str(new), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["moved"] is False
    assert document["to"] == str(new.resolve())
    assert document["from"] == str(old)
    assert main(["journal", "verify", str(new), "--store", durable_store_url]) == 0


def test_move_root_refusals_on_the_command_line_are_one_line_with_their_exit_code(
    tmp_path: Path, durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _root(tmp_path / "old", "com.example.stays")
    assert _coordinates(old, durable_store_url) == {"com.example.stays"}
    new = tmp_path / "new"
    new.mkdir()
    command = ["journal", "move-root", "--store", durable_store_url, "--from", str(old)]
    assert main([*command, "--to", str(new)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: ")
    assert err.count("\n") == 1
    assert f"still belongs to root {old.resolve()}" in err
    assert main([*command, "--to", str(tmp_path / "absent"), "--json"]) == 1
    document = json.loads(capsys.readouterr().err)
    assert document["kind"] == "journal"
    assert "journal root does not exist" in document["error"]
    assert _owner(durable_store_url) == f"root:{old.resolve()}"


def _refuse_appends(store: str, *, refuse: bool) -> None:
    """Make the store's Journal events table refuse every insert (a failing disk), or not."""
    log = JournalLog(store)
    table = log.recorder.events_table_name  # type: ignore[attr-defined]
    log.close()
    if store.startswith("sqlite:"):
        import sqlite3  # noqa: PLC0415

        connection = sqlite3.connect(store.removeprefix("sqlite://"))
        with connection:
            connection.execute(
                f"CREATE TRIGGER refuse BEFORE INSERT ON {table} "
                "BEGIN SELECT RAISE(ABORT, 'the disk is full'); END"
                if refuse
                else "DROP TRIGGER refuse"
            )
        connection.close()
        return
    from urllib.parse import parse_qs, urlsplit  # noqa: PLC0415

    import psycopg  # noqa: PLC0415

    parts = urlsplit(store)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as connection:
        connection.execute(f'SET search_path TO "{schema}"')
        if refuse:
            connection.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'the disk is full'; END $$"
            )
            connection.execute(
                f"CREATE TRIGGER refuse BEFORE INSERT ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        else:
            connection.execute(f"DROP TRIGGER refuse ON {table}")
            connection.execute("DROP FUNCTION refuse()")


def test_a_start_whose_first_append_fails_leaves_the_store_unowned(
    tmp_path: Path, durable_store_url: str
) -> None:
    first = _root(tmp_path / "first", "com.example.first")
    second = _root(tmp_path / "second", "com.example.second")
    _refuse_appends(durable_store_url, refuse=True)
    failed = build_journal(first, store=durable_store_url)
    # SQLite reports the trigger as a constraint, which reads as a lost race.
    with pytest.raises((JournalStoreError, JournalConflictError)):
        failed.process.start()
    assert _owner(durable_store_url) is None
    _refuse_appends(durable_store_url, refuse=False)
    assert _coordinates(second, durable_store_url) == {"com.example.second"}
    assert _owner(durable_store_url) is not None
    assert _events(durable_store_url) == 1
