"""Replaying the storage log rebuilds every record, history, stream and blob, on every store kind.

A history of domain writes (creates, CAS saves, deletes, re-inserts after
deletes, journal deletes and restarts, blobs, a rolled-back transaction and
refused writes) is written to SQLite or PostgreSQL, recorded from the log
alone (``nenjim log export``) and replayed with the replay kit into a fresh
store of each kind: into ``memory:`` through the Storage SPI, event by
event, and into SQLite and PostgreSQL through ``nenjim log import``, whose
inline tables are rebuilt from the log. Every store must answer what the
original answers (every live row, history, stream and blob, and what the
repositories load) and audit clean.
"""

from __future__ import annotations

import json
from typing import Any

from busy_state import live_a_busy_life

from nenjim.testing import (
    RECORD_DELETED,
    STREAM_DELETED,
    RecordedLog,
    assert_store_replays,
    decode_state,
    open_store,
    read_models,
)
from nenjim.testing.plugin import STORE_KINDS, NewStore


def test_replaying_the_log_rebuilds_every_record_on_every_store_kind(
    durable_store: Any, nenjim_new_store: NewStore
) -> None:
    live_a_busy_life(durable_store.persistence)
    durable_store.persistence.close()
    log = assert_store_replays(durable_store.url, [nenjim_new_store(kind) for kind in STORE_KINDS])

    # The log is what the busy life wrote: tombstones, a restarted journal, no rolled-back write.
    topics = {event.topic for event in log.events}
    assert {RECORD_DELETED, STREAM_DELETED} <= topics
    keys = set(log.storage_keys())
    assert ("records", "agent.roots", "agent-1") in keys
    assert ("records", "agent.roots", "agent-rolled-back") not in keys
    with open_store(durable_store.url, log) as original:
        models = read_models(original, log)
    records, persistence = models["storage"]["records"], models["persistence"]
    assert records["team.roots"]["team-gone"] is None
    assert records["workflow.states"]["wf-gone"] is None
    assert records["workflow.states"]["wf-again"]["revision"] == 1
    assert [r["kind"] for r in persistence["agent.journal"]["agent-1"]] == ["restart"]
    assert len(models["storage"]["blobs"]["content.blobs"]) == 3
    attributes = {
        json.dumps(blob["attributes"], sort_keys=True)
        for blob in models["storage"]["blobs"]["content.blobs"].values()
    }
    assert len(attributes) == 2  # the first put's attributes won over the second's


def test_replay_of_a_key_follows_its_history(durable_store: Any) -> None:
    """The log stream of one key holds every revision, so the log and ``history`` agree."""
    p = durable_store.persistence
    live_a_busy_life(p)
    log = RecordedLog.record(durable_store.url)
    states = [decode_state(event.topic, event.state) for event in log.events]
    agent_events = [
        state
        for state in states
        if state.get("key") == "agent-1" and state["resource"] == "agent.roots"
    ]
    history = p.agents.history("agent-1")
    assert [h.revision for h in history] == [e["revision"] for e in agent_events] == [0, 1]
    # Deleted, then saved again: the delete purged the first life's snapshot.
    assert [h.revision for h in p.workflow_states.history("wf-again")] == [1]
