"""Comparing the inline tables with what the log implies, row by row and field by field.

Each table is read in key order, in pages. A row of a key whose log stream
is damaged is skipped (the log finding says enough). A row that claims a
log version beyond the end of its log stream (``storage_records.log_version``,
``base + head`` of ``storage_stream_heads``, a blob with no ``BlobPut``) is
evidence that events were removed from the log: it is a ``log`` finding,
never a table one, so a repair will not silently drop an acknowledged write.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from nenjim.infrastructure.storage.audit import replay
from nenjim.infrastructure.storage.audit.replay import Identity, ReplayedLog
from nenjim.infrastructure.storage.audit.tables import (
    BLOBS_TABLE,
    EVENTS_TABLE,
    HEADS_TABLE,
    IDS_TABLE,
    RECORDS_TABLE,
)
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql.schema import Layout
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.audit_report import Finding

BLOB_PAGE = 100  # blob rows carry their bytes: fewer per page
_LISTED = 5  # ids named in a line before "and N more"


def compare_tables(
    session: Session, resources: Mapping[str, Resource], replayed: ReplayedLog
) -> list[Finding]:
    """Every disagreement between the inline tables (and generated indexes) and the log."""
    comparison = _Comparison(session, resources, replayed)
    comparison.records()
    comparison.heads()
    comparison.ids()
    comparison.blobs()
    comparison.indexes()
    return comparison.findings


class _Comparison:
    def __init__(
        self, session: Session, resources: Mapping[str, Resource], replayed: ReplayedLog
    ) -> None:
        self.session = session
        self.resources = resources
        self.log = replayed
        self.findings: list[Finding] = []
        self.foreign = {
            finding.resource
            for finding in replayed.findings
            if finding.field == "events" and finding.resource is not None
        }

    def records(self) -> None:
        seen = set()
        columns = "resource, key, revision, attributes, record_type, format_version, payload"
        for row in _pages(
            self.session, RECORDS_TABLE, columns + ", log_version", ("resource", "key")
        ):
            resource_id, key, revision, attributes, record_type, format_version, payload = row[:7]
            seen.add((resource_id, key))
            identity = ("records", resource_id, key)
            if type(log_version := row[7]) is not int:
                self._mistyped(RECORDS_TABLE, identity, "log_version", log_version)
                continue
            if self._skipped(identity, RECORDS_TABLE, f"revision {revision}"):
                continue
            claim = f"holds the row as of log version {log_version}"
            if self._beyond_log(identity, RECORDS_TABLE, log_version, claim):
                continue
            live = self.log.records.get((resource_id, key))
            if live is None:
                self._table(
                    RECORDS_TABLE,
                    identity,
                    "row",
                    self._absence(identity),
                    f"revision {revision} at log version {log_version}",
                )
                continue
            entry = live.entry
            record = entry.record
            stored = {
                "revision": str(revision),
                "attributes": self._stored_json(attributes),
                "record_type": str(record_type),
                "format_version": str(format_version),
                "payload": str(payload),
                "log_version": str(log_version),
            }
            expected = {
                "revision": str(entry.revision),
                "attributes": _json(dict(entry.attributes)),
                "record_type": record.record_type,
                "format_version": record.format_version,
                "payload": record.payload_json,
                "log_version": str(live.log_version),
            }
            for name, value in expected.items():
                if stored[name] != value:
                    self._table(RECORDS_TABLE, identity, name, value, stored[name])
        for (resource_id, key), live in sorted(self.log.records.items()):
            if (resource_id, key) not in seen:
                described = f"revision {live.entry.revision} at log version {live.log_version}"
                self._table(
                    RECORDS_TABLE, ("records", resource_id, key), "row", described, "no row"
                )

    def heads(self) -> None:
        seen = set()
        for resource_id, stream, stored_head, stored_base in _pages(
            self.session, HEADS_TABLE, "resource, stream, head, base", ("resource", "stream")
        ):
            seen.add((resource_id, stream))
            identity = ("streams", resource_id, stream)
            if type(stored_head) is not int or type(stored_base) is not int:
                self._mistyped(HEADS_TABLE, identity, "head, base", (stored_head, stored_base))
                continue
            head, base = stored_head, stored_base
            described = f"head {head}, base {base}"
            if self._skipped(identity, HEADS_TABLE, described):
                continue
            claim = f"says the stream reached log version {base + head} ({described})"
            if self._beyond_log(identity, HEADS_TABLE, base + head, claim):
                continue
            live = self.log.streams.get((resource_id, stream))
            if live is None:
                self._table(HEADS_TABLE, identity, "row", self._absence(identity), described)
                continue
            if live.head != head:
                self._table(HEADS_TABLE, identity, "head", str(live.head), str(head))
            if live.base != base:
                self._table(HEADS_TABLE, identity, "base", str(live.base), str(base))
        for (resource_id, stream), live in sorted(self.log.streams.items()):
            if (resource_id, stream) not in seen:
                described = f"head {live.head}, base {live.base}"
                self._table(
                    HEADS_TABLE, ("streams", resource_id, stream), "row", described, "no row"
                )

    def ids(self) -> None:
        stored: dict[tuple[str, str], set[str]] = {}
        for resource_id, stream, entry_id in _pages(
            self.session,
            IDS_TABLE,
            "resource, stream, entry_id",
            ("resource", "stream", "entry_id"),
        ):
            stored.setdefault((resource_id, stream), set()).add(entry_id)
        expected = {slot: set(live.ids) for slot, live in self.log.streams.items() if live.ids}
        for resource_id, stream in sorted(set(stored) | set(expected)):
            identity = ("streams", resource_id, stream)
            found = stored.get((resource_id, stream), set())
            wanted = expected.get((resource_id, stream), set())
            if found == wanted or identity in self.log.damaged or resource_id in self.foreign:
                continue
            details = [f"{len(found)} ids"]
            if wanted - found:
                details.append(f"missing {_listed(wanted - found)}")
            if found - wanted:
                details.append(f"extra {_listed(found - wanted)}")
            self._table(
                IDS_TABLE, identity, "entry ids", f"{len(wanted)} live ids", "; ".join(details)
            )

    def blobs(self) -> None:
        seen = set()
        for resource_id, key, stored_data, attributes in _pages(
            self.session,
            BLOBS_TABLE,
            "resource, key, data, attributes",
            ("resource", "key"),
            BLOB_PAGE,
        ):
            seen.add((resource_id, key))
            identity = ("blobs", resource_id, key)
            if not isinstance(stored_data, bytes | memoryview):
                self._mistyped(BLOBS_TABLE, identity, "data", stored_data)
                continue
            data = bytes(stored_data)
            described = _bytes(data)
            if self._skipped(identity, BLOBS_TABLE, described):
                continue
            if self._beyond_log(identity, BLOBS_TABLE, 1, "holds the blob"):
                continue
            blob = self.log.blobs.get((resource_id, key))
            if blob is None:
                self._table(BLOBS_TABLE, identity, "row", self._absence(identity), described)
                continue
            # A row holds no bytes (they are its put event's) or, written before a blob's
            # bytes were kept once, a copy of them.
            if data and blob.data != data:
                self._table(BLOBS_TABLE, identity, "data", _bytes(blob.data), described)
            wanted = _json(dict(blob.attributes))
            found = self._stored_json(attributes)
            if wanted != found:
                self._table(BLOBS_TABLE, identity, "attributes", wanted, found)
        for (resource_id, key), blob in sorted(self.log.blobs.items()):
            if (resource_id, key) not in seen:
                identity = ("blobs", resource_id, key)
                self._table(BLOBS_TABLE, identity, "row", _bytes(blob.data), "no row")

    def indexes(self) -> None:
        """Every index generated from the catalog exists (a dropped unique index admits races),
        or, in a store no open by this build has touched yet, one it replaces."""
        dialect = self.session.dialect
        present = {str(row[0]) for row in self.session.all(dialect.index_names)}
        for index in Layout(dialect, tuple(self.resources.values())).indexes:
            if index.name not in present and present.isdisjoint(index.replaces):
                what = "index" if index.constraint is None else f"unique {index.constraint}"
                self.findings.append(
                    Finding(
                        "schema",
                        RECORDS_TABLE,
                        index.resource,
                        None,
                        what,
                        f"generated index {index.name} is missing",
                    )
                )

    # helpers
    def _skipped(self, identity: Identity, table: str, described: str) -> bool:
        """True if the row is not compared: damaged log stream, or a resource of another kind."""
        if identity in self.log.damaged:
            return True
        kind, resource_id, _ = identity
        resource = self.resources.get(resource_id)
        if resource is not None and resource.kind == kind:
            return False
        if resource_id in self.foreign:
            return True  # the log finding about the foreign resource covers it
        why = "not in the catalog" if resource is None else f"a {resource.kind} resource"
        self._table(table, identity, "row", f"no row ({resource_id} is {why})", described)
        return True

    def _beyond_log(self, identity: Identity, table: str, version: int, claim: str) -> bool:
        """A table claiming a log version the log lacks: events were removed (a log finding)."""
        last = self.log.last_versions.get(identity, 0)
        if version <= last:
            return False
        _, resource_id, key = identity
        missing = f"version {version}" if version == last + 1 else f"versions {last + 1}..{version}"
        self.findings.append(
            Finding(
                "log",
                EVENTS_TABLE,
                resource_id,
                key,
                missing,
                f"missing: {table} {claim}; " + _log_end(last),
            )
        )
        return True

    def _stored_json(self, raw: Any) -> str:
        try:
            return _json(self.session.dialect.load_json(raw))
        except ValueError:
            return f"not JSON: {raw!r}"

    def _absence(self, identity: Identity) -> str:
        last = self.log.last_versions.get(identity)
        if last is None:
            return "no row (never written)"
        return f"no row (deleted at log version {last})"

    def _mistyped(self, table: str, identity: Identity, name: str, stored: object) -> None:
        """A column holding a value of another type (SQLite lets any column hold any)."""
        shown = f"{type(stored).__name__} {stored!r}"[:_SHOWN]
        self._table(table, identity, name, "a value of the column's type", shown)

    def _table(self, table: str, identity: Identity, name: str, log: str, stored: str) -> None:
        _, resource_id, key = identity
        self.findings.append(Finding("table", table, resource_id, key, name, log, stored))


_SHOWN = 160


def _pages(
    session: Session, table: str, columns: str, order: tuple[str, ...], page: int | None = None
) -> Iterator[tuple[Any, ...]]:
    """Every row of ``table`` in ``order``, fetched ``page`` rows at a time (keyset paging)."""
    page = page or replay.PAGE
    template = "{" + _TEMPLATE_NAMES[table] + "}"
    ordering = ", ".join(order)
    head = f"SELECT {columns} FROM {template}"
    tail = f" ORDER BY {ordering} LIMIT ?"
    rows = session.all(head + tail, (page,))
    positions = [columns.replace(" ", "").split(",").index(name) for name in order]
    while rows:
        yield from rows
        if len(rows) < page:
            return
        last = rows[-1]
        after = tuple(last[position] for position in positions)
        marks = ", ".join("?" for _ in order)
        rows = session.all(head + f" WHERE ({ordering}) > ({marks})" + tail, (*after, page))


_TEMPLATE_NAMES = {
    RECORDS_TABLE: "records",
    HEADS_TABLE: "heads",
    IDS_TABLE: "ids",
    BLOBS_TABLE: "blobs",
}


def _log_end(last: int) -> str:
    return "the log stream has no events" if last == 0 else f"the log stream ends at version {last}"


def _json(value: Any) -> str:
    """A stored JSON value as sorted compact text (so ``true`` never equals ``1``)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _bytes(data: bytes) -> str:
    return f"{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:16]}"


def _listed(ids: set[str]) -> str:
    ordered = sorted(ids, key=lambda value: value.encode())
    shown = ", ".join(json.dumps(value, ensure_ascii=False) for value in ordered[:_LISTED])
    more = len(ordered) - _LISTED
    return f"{shown} and {more} more" if more > 0 else shown
