"""Read models of a store as plain JSON data, to compare stores and to keep as golden files.

``read_models(store, log)`` answers, for every artifact and every record
key, stream and blob the recorded ``log`` ever wrote, what the engine
answers now:

- ``journal-chains``: each artifact's revisions in order, with their log
  position, digest, predecessor and the parsed revision (as ``nenjim journal
  show --json`` prints it);
- ``journal-chain-rows``: the rows the store keeps for the persisted chain
  projection (position, coordinate, Journal version, digest), in log order;
- ``storage``: each record (live row or ``null``) and its whole history,
  each stream's entries, each blob's size, SHA-256 and attributes, as the
  Storage SPI returns them;
- ``persistence``: what the domain repositories load (roots, executions,
  Handoff and Workflow states with their histories, Agent journals);
- ``agent-runs``: the timeline of every run of every Agent that the
  ``agent-runs`` projection keeps, caught up with the log.

Times a store records by itself (when the log stored a revision) are left
out: a replay records its own. Everything else must be equal.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from nenjim.admin.json_output import revision_json
from nenjim.domain.persistence.errors import NotFoundError
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.persistence.agent_runs import agent_run_rows
from nenjim.infrastructure.storage import RecordEntry
from nenjim.projections.journal_chains import JournalWorldview
from nenjim.testing.recorded import RecordedLog
from nenjim.testing.stores import StoreUnderTest

ReadModels = dict[str, Any]
"""Read-model section name to its plain JSON data."""


def read_models(store: StoreUnderTest, log: RecordedLog) -> ReadModels:
    """Every read model of ``store``, over the keys ``log`` wrote (see the module notes)."""
    models: ReadModels = {}
    if store.journal is not None:
        models["journal-chains"] = journal_chains(store.journal)
    if store.journal_rows is not None:
        models["journal-chain-rows"] = [list(row) for row in store.journal_rows]
    if store.persistence is not None:
        models["storage"] = storage_state(store.persistence, log)
        models["persistence"] = persistence_state(store.persistence, log)
        models["agent-runs"] = agent_run_rows(store.persistence.backend)
    return models


def journal_chains(view: JournalWorldview) -> dict[str, Any]:
    """Each artifact's revisions, oldest first."""
    return {
        str(coordinate): [
            {
                "position": stored.position,
                "journal_version": stored.version_key,
                "digest": stored.digest,
                "revision": revision_json(stored.revision),
            }
            for stored in view.chains[coordinate].stored
        ]
        for coordinate in sorted(view.chains, key=str)
    }


def journal_chain_rows(view: JournalWorldview) -> list[list[Any]]:
    """The rows a store keeps for ``view`` in the persisted chain projection, in log order."""
    revisions = sorted(
        (stored for chain in view.chains.values() for stored in chain.stored),
        key=lambda stored: stored.position,
    )
    return [[s.position, s.coordinate, s.version_key, s.digest] for s in revisions]


def storage_state(persistence: Persistence, log: RecordedLog) -> dict[str, Any]:
    """Records, histories, streams and blobs, through the Storage SPI."""
    view = persistence.backend.view
    state: dict[str, dict[str, dict[str, Any]]] = {
        "records": {},
        "histories": {},
        "streams": {},
        "blobs": {},
    }
    for kind, resource, key in log.storage_keys():
        if kind == "records":
            records = view.records(resource)
            live = records.read(key)
            state["records"].setdefault(resource, {})[key] = None if live is None else _row(live)
            history = [_row(entry) for entry in records.history(key)]
            state["histories"].setdefault(resource, {})[key] = history
        elif kind == "streams":
            entries = view.streams(resource).read(stream=key)
            state["streams"].setdefault(resource, {})[key] = [
                {"position": entry.position, "id": entry.id, **_envelope(entry.record)}
                for entry in entries
            ]
        else:
            blobs = view.blobs(resource)
            blob = blobs.fetch(key) if blobs.exists(key) else None
            state["blobs"].setdefault(resource, {})[key] = (
                None
                if blob is None
                else {
                    "size": len(blob.data),
                    "sha256": hashlib.sha256(blob.data).hexdigest(),
                    "attributes": plain(blob.attributes),
                }
            )
    return state


def persistence_state(persistence: Persistence, log: RecordedLog) -> dict[str, Any]:
    """What the domain repositories answer for every key the log wrote."""
    p = persistence
    readers: Mapping[str, tuple[Callable[[str], Any], Callable[[str], Any] | None]] = {
        "agent.roots": (p.agents.load, p.agents.history),
        "agent.executions": (p.executions.load, p.executions.history),
        "team.roots": (p.teams.load, p.teams.history),
        "team.executions": (p.team_executions.load, p.team_executions.history),
        "handoff.states": (p.handoff_states.load, None),
        "workflow.states": (p.workflow_states.load, p.workflow_states.history),
    }
    state: dict[str, dict[str, Any]] = {}
    for kind, resource, key in log.storage_keys():
        if kind == "records" and resource in readers:
            load, history = readers[resource]
            answer: dict[str, Any] = {"value": plain(_loaded(load, key))}
            if history is not None:
                answer["history"] = [
                    {"revision": item.revision, "value": plain(item.value)} for item in history(key)
                ]
            state.setdefault(resource, {})[key] = answer
        elif kind == "streams" and resource == "agent.journal":
            state.setdefault(resource, {})[key] = plain(p.journals.read(key))
    return state


def plain(value: Any) -> Any:
    """``value`` as plain JSON data: dataclasses and mappings as objects, sequences as
    arrays, datetimes as ISO-8601 text, bytes as ``{"base64": ...}``, enums as their value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): plain(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [plain(child) for child in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Enum):
        return plain(value.value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"no plain JSON form for {type(value).__name__}")


def _row(entry: RecordEntry) -> dict[str, Any]:
    return {
        "revision": entry.revision,
        "attributes": plain(entry.attributes),
        **_envelope(entry.record),
    }


def _envelope(record: Any) -> dict[str, Any]:
    return {
        "record_type": record.record_type,
        "format_version": record.format_version,
        "payload": plain(record.payload),
    }


def _loaded(load: Callable[[str], Any], key: str) -> Any:
    try:
        return load(key)
    except NotFoundError:
        return None
