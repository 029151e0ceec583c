"""``audit`` finds a row edited behind the log's back; rebuild equals the live projection."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from journal_texts import Chain, Rel, content, write_chain
from nenjim.cli import main
from nenjim.domain.journal.values import Sha256Digest
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref.audit import audit_journal_log, journal_problem
from nenjim.journal.impl.ref.log import DIGEST_NAMESPACE
from nenjim.journal.impl.ref.rebuild import rebuild_chain_projection

A = "com.example.alpha"


def _load(root: Path, store: str, artifacts: int = 3) -> None:
    for index in range(artifacts):
        chain = Chain(f"com.example.a{index}")
        chain.add("20260101T000000Z", (Rel("1.0.0", content(index)),))
        chain.add("20260201T000000Z", (Rel("1.0.0", content(index)), Rel("1.1.0", content(99))))
        write_chain(root, chain)
    assembly = build_journal(root, store=store)
    assembly.process.start()
    assembly.process.stop()


def _execute(store: str, sql: str, params: tuple[object, ...] = ()) -> None:
    """Plain SQL against the store, as an operator editing a row would."""
    if store.startswith("sqlite:"):
        with sqlite3.connect(store.removeprefix("sqlite://")) as conn:
            conn.execute(sql.replace("%s", "?"), params)
        return
    parts = urlsplit(store)
    schema = parse_qs(parts.query)["schema"][0]
    server = parts._replace(query="").geturl()
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(sql, params)  # type: ignore[arg-type]


def _state(store: str, notification: int) -> dict[str, object]:
    if store.startswith("sqlite:"):
        with sqlite3.connect(store.removeprefix("sqlite://")) as conn:
            row = conn.execute(
                "SELECT state FROM journal_events WHERE rowid = ?", (notification,)
            ).fetchone()
        return dict(json.loads(row[0]))
    parts = urlsplit(store)
    schema = parse_qs(parts.query)["schema"][0]
    with psycopg.connect(parts._replace(query="").geturl()) as conn:
        row = conn.execute(
            f'SELECT state FROM "{schema}".journal_events WHERE notification_id = %s',
            (notification,),
        ).fetchone()
    assert row is not None
    return dict(json.loads(bytes(row[0])))


def _set_state(store: str, notification: int, state: dict[str, object]) -> None:
    data = json.dumps(state).encode()
    if store.startswith("sqlite:"):
        _execute(
            store, "UPDATE journal_events SET state = %s WHERE rowid = %s", (data, notification)
        )
    else:
        _execute(
            store,
            "UPDATE journal_events SET state = %s WHERE notification_id = %s",
            (data, notification),
        )


def test_a_clean_log_audits_ok(tmp_path: Path, durable_store_url: str) -> None:
    _load(tmp_path, durable_store_url)
    report = audit_journal_log(durable_store_url)
    assert report.ok, journal_problem(report)
    assert (report.events, report.live) == (6, {"artifacts": 3, "revisions": 6})


def test_audit_finds_an_edited_text(tmp_path: Path, durable_store_url: str) -> None:
    _load(tmp_path, durable_store_url)
    state = _state(durable_store_url, 2)
    state["text"] = str(state["text"]).replace("MIT", "Apache-2.0")
    _set_state(durable_store_url, 2, state)
    report = audit_journal_log(durable_store_url)
    assert not report.ok
    assert journal_problem(report) is not None
    assert journal_problem(report).startswith("notification 2 ")
    assert "does not digest" in journal_problem(report)


def test_audit_finds_a_forged_digest_and_text_pair(tmp_path: Path, durable_store_url: str) -> None:
    """A consistent edit of text and digest still breaks the next revision's link."""
    _load(tmp_path, durable_store_url, artifacts=1)
    state = _state(durable_store_url, 1)
    text = str(state["text"]) + "# forged\n"
    state["text"], state["digest"] = text, str(Sha256Digest.of_text(text))
    _set_state(durable_store_url, 1, state)
    report = audit_journal_log(durable_store_url)
    assert journal_problem(report) is not None
    assert "notification 2" in journal_problem(report) or "digest index" in journal_problem(report)


def test_audit_finds_a_tampered_digest_claim(tmp_path: Path, durable_store_url: str) -> None:
    _load(tmp_path, durable_store_url, artifacts=2)
    _execute(
        durable_store_url,
        "UPDATE journal_claims SET owner = %s WHERE namespace = %s AND owner = %s",
        ("com.example.a1", DIGEST_NAMESPACE, "com.example.a0"),
    )
    report = audit_journal_log(durable_store_url)
    assert journal_problem(report) is not None
    assert journal_problem(report).startswith("digest index:")


def test_audit_finds_a_deleted_event(tmp_path: Path, durable_store_url: str) -> None:
    _load(tmp_path, durable_store_url, artifacts=1)
    column = "rowid" if durable_store_url.startswith("sqlite:") else "notification_id"
    _execute(durable_store_url, f"DELETE FROM journal_events WHERE {column} = 1")
    report = audit_journal_log(durable_store_url)
    assert journal_problem(report) is not None
    assert "have no gaps" in journal_problem(report)


def test_rebuild_equals_the_live_projection(tmp_path: Path, durable_store_url: str) -> None:
    _load(tmp_path, durable_store_url)
    assembly = build_journal(tmp_path, store=durable_store_url)
    assembly.process.start()
    live = {c: assembly.service.revisions(c) for c in assembly.service.coordinates()}
    assembly.process.stop()
    report = rebuild_chain_projection(durable_store_url)
    assert (report.revisions, report.artifacts) == (6, 3)
    rebuilt = build_journal(tmp_path, store=durable_store_url)
    rebuilt.process.start()
    try:
        assert {c: rebuilt.service.revisions(c) for c in rebuilt.service.coordinates()} == live
    finally:
        rebuilt.process.stop()


def test_cli_audit_and_rebuild(
    tmp_path: Path, durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _load(tmp_path, durable_store_url)
    assert main(["journal", "audit", "--store", durable_store_url]) == 0
    assert "audit OK: 6 events, 6 revisions of 3 artifacts" in capsys.readouterr().out
    assert main(["projections", "rebuild", "journal-chains", "--store", durable_store_url]) == 0
    assert "rebuilt journal-chains: 6 revisions of 3 artifacts in " in (capsys.readouterr().out)
    state = _state(durable_store_url, 3)
    state["text"] = str(state["text"]) + "\n"
    _set_state(durable_store_url, 3, state)
    assert main(["journal", "audit", "--store", durable_store_url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nenjim: error: audit failed after")
    assert "notification 3" in err
