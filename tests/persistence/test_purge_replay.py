"""A store after purges moves and replays: its export carries the stubs and the markers, never
the purged payloads; an import of it audits clean and answers what the source answers; the replay
kit rebuilds it in every store kind (``memory:`` through the Storage SPI)."""

from __future__ import annotations

import base64
import io
import uuid
from typing import Any

from busy_state import live_a_busy_life

from nenjim.admin.transfer import import_store
from nenjim.domain.agents import AgentExecution, AgentJournalRecord
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.catalog import CATALOG, CONTENTS, EXECUTIONS, JOURNAL
from nenjim.infrastructure.storage import purge
from nenjim.infrastructure.storage.audit import audit_store
from nenjim.testing import RecordedLog, assert_store_replays, open_store, read_models
from nenjim.testing.plugin import STORE_KINDS, NewStore

from .test_agent_runs import run_agent


def _secret_life(p: Persistence, secret: str) -> str:
    """An execution, a journal and a blob holding ``secret``; the blob's key."""
    run_agent(p, "a1", 2)
    root = p.agents.load("a1")
    started = p.executions.create_active(
        AgentExecution.start("a1-secret", agent_id="a1", base=root)
    )
    p.executions.save(
        "a1-secret",
        expected_revision=0,
        execution=started.evolve(status="failed", terminal_reason=secret),
    )
    p.journals.append(
        "a1",
        expected_position=0,
        records=[
            AgentJournalRecord.create(name, agent_id="a1", kind="message")
            for name in (f"j0-{secret}", f"j1-{secret}", "j2")
        ],
    )
    return p.contents.put_text(secret)


def _purge(p: Persistence, blob: str) -> None:
    view = p.backend.view
    assert view.records(EXECUTIONS).purge(key="a1-secret") is not None
    assert view.streams(JOURNAL).purge(stream="a1", before=3) is not None
    assert view.blobs(CONTENTS).purge(key=blob) is not None


def _states(log: RecordedLog) -> bytes:
    return b"\n".join(event.state for event in log.events)


def test_an_export_after_purges_holds_no_purged_payload_and_imports_clean(
    durable_store: Any, nenjim_new_store: NewStore
) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    p = durable_store.persistence
    blob = _secret_life(p, secret)
    in_base64 = base64.b64encode(secret.encode()).decode()
    before = RecordedLog.record(durable_store.url)
    assert secret.encode() in _states(before)  # a blob put's state holds its bytes

    _purge(p, blob)
    after = RecordedLog.record(durable_store.url)

    for found in (after.data, _states(after)):
        assert secret.encode() not in found
        assert in_base64.encode() not in found
    topics = [event.topic for event in after.events]
    assert topics.count(purge.PURGE) == 3
    assert topics.count(purge.PURGED) == 2 + 2 + 1  # two revisions, two entries, one blob
    for kind in STORE_KINDS:
        if kind == "memory":
            continue
        target = nenjim_new_store(kind)
        import_store(target, io.BytesIO(after.data), name="purged.log")
        report = audit_store(target, CATALOG)
        assert report.ok, report.lines()
        with open_store(durable_store.url, after) as source, open_store(target, after) as moved:
            assert read_models(moved, after) == read_models(source, after)
        assert RecordedLog.record(target).events_of("storage") == after.events_of("storage")


def test_a_log_with_purges_replays_into_every_store_kind(
    durable_store: Any, nenjim_new_store: NewStore
) -> None:
    p = durable_store.persistence
    live_a_busy_life(p)
    blob = _secret_life(p, "secret")
    _purge(p, blob)
    p.backend.view.records(EXECUTIONS).purge(key="a1-run0")
    p.journals.append(
        "a1",
        expected_position=3,
        records=[AgentJournalRecord.create("j0-secret", agent_id="a1", kind="message")],
    )
    p.contents.put_text("secret")
    gone = p.contents.put_text("gone")
    p.backend.view.blobs(CONTENTS).purge(key=gone)
    p.journals.delete("agent-1")
    p.backend.view.streams(JOURNAL).purge(stream="agent-1")
    p.close()

    log = assert_store_replays(durable_store.url, [nenjim_new_store(k) for k in STORE_KINDS])

    keys = set(log.storage_keys())
    assert ("records", EXECUTIONS.id, "a1-secret") in keys
    assert ("blobs", CONTENTS.id, blob) in keys
    assert ("blobs", CONTENTS.id, gone) in keys  # named by its purge's marker alone
    with open_store(durable_store.url, log) as original:
        models = read_models(original, log)
    assert models["storage"]["records"][EXECUTIONS.id]["a1-secret"] is None
    assert models["storage"]["histories"][EXECUTIONS.id]["a1-secret"] == []
    assert [entry["id"] for entry in models["storage"]["streams"][JOURNAL.id]["a1"]] == [
        "j2",
        "j0-secret",
    ]
    assert models["storage"]["streams"][JOURNAL.id]["agent-1"] == []
    assert models["storage"]["blobs"][CONTENTS.id][gone] is None
    assert models["storage"]["blobs"][CONTENTS.id][blob] is not None
    assert "a1-run0" not in {run["execution_id"] for run in models["agent-runs"]}
