"""The SQL backends' schema: fixed tables, indexes generated from the catalog, version.

Every records resource gets, in ``storage_records``:

- a scan index per declared index: ``(<attribute expressions>, key)``, partial
  on ``resource = '<its id>'``, so a write of one resource's row never
  touches another resource's indexes (the table is shared by all of them);
  a sparse index (``Resource(sparse_indexes=...)``) is also partial on its
  first field not being null;
- a partial unique expression index per unique constraint, e.g. on
  PostgreSQL ``((attributes->>'owner')) WHERE resource = 'agent.executions'
  AND (attributes->>'active') = 'true'``, so the database itself refuses a
  second row even when two writers race past the driver's pre-check. A null
  field escapes the index (SQL nulls are distinct), as the SPI requires.

Index names carry a readable slug and a hash of the whole definition, so a
changed declaration gets a new index; ``storage_generated_indexes`` records
what was generated, and an index no longer in the catalog of its resource is
dropped at the next open. :meth:`Layout.constraint` maps an index name back
to the constraint it enforces.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nenjim.infrastructure.storage.follow import schema as follow_schema
from nenjim.infrastructure.storage.resource import Resource
from nenjim.infrastructure.storage.sql.dialect import Dialect, as_template, dumps
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.versions import (
    EVENTS_COMPONENT,
    EVENTS_VERSION,
    STORAGE_SCHEMA_VERSION,
    check_storage_version,
)

COMPONENT = "storage"
"""This schema's row in ``nenjim_schema``."""

SCAN = "s"
"""The kind letter in the name of a scan index."""

WHOLE_TABLE_SCAN = "i"
"""The kind letter of the scan indexes of earlier builds, which covered every resource's
rows; the first open by this build drops them and creates the partial ones."""

_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class GeneratedIndex:
    """One index made from the catalog; ``constraint`` is set for unique ones.

    ``replaces`` names the indexes that earlier builds generated in its place,
    any of which serves the same scans until an open by this build replaces it.
    A scan index names its ``fields``; a sparse one, the field whose null its
    rows leave out (``left_out``).
    """

    name: str
    resource: str
    constraint: str | None
    ddl: str
    replaces: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    left_out: str | None = None


class Layout:
    """The generated indexes of one catalog on one dialect."""

    def __init__(self, dialect: Dialect, resources: Sequence[Resource]) -> None:
        self.dialect = dialect
        self.resource_ids = frozenset(resource.id for resource in resources)
        self.indexes = tuple(
            index
            for resource in resources
            if resource.kind == "records"
            for index in _indexes(dialect, resource)
        )
        self._constraints = {index.name: index.constraint for index in self.indexes}
        # Per resource and set of attribute names: the scan index.
        self._scans = {
            (index.resource, frozenset(index.fields)): index
            for index in self.indexes
            if index.constraint is None
        }
        self._from: dict[tuple[str, frozenset[str], bool], str] = {}

    def scan_source(self, resource_id: str, equals: Mapping[str, object]) -> str:
        """``{records} WHERE resource = '<resource_id>'``, ready for more ``AND`` terms, told
        to read the scan index of the attribute names of ``equals`` if there is one (and,
        for a sparse index, if ``equals`` does not ask for the null it leaves out).

        The resource is a literal, not a parameter: the scan indexes are
        partial on it, and a planner can use a partial index only where the
        query's own text implies the index's predicate (PostgreSQL's generic
        plans, SQLite's ``INDEXED BY``). SQLite also plans an equality scan
        again at every execution once it has weighed a partial unique index
        against a bound value, which costs more than the scan; naming the
        index skips that.
        """
        names = frozenset(equals)
        scan = self._scans.get((resource_id, names))
        left_out = scan is not None and scan.left_out is not None and equals[scan.left_out] is None
        key = (resource_id, names, left_out)
        source = self._from.get(key)
        if source is None:
            hint = "" if scan is None or left_out else self.dialect.index_hint(scan.name)
            literal = self.dialect.template_literal(resource_id)
            source = self._from[key] = "{records}" + hint + " WHERE resource = " + literal
        return source

    def constraint(self, index_name: str | None) -> str | None:
        """The unique constraint an index enforces, or ``None``."""
        return None if index_name is None else self._constraints.get(index_name)


def apply(session: Session, layout: Layout, where: str) -> None:
    """Create what is missing, upgrade or refuse another schema version, sync generated indexes.

    Runs inside one transaction that the caller serialises against other
    openers (SQLite: the writer lock; PostgreSQL: an advisory lock).
    """
    dialect = layout.dialect
    for statement in dialect.prepare():
        session.execute_ddl(statement)
    session.execute(
        "CREATE TABLE IF NOT EXISTS {versions} "
        "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
    )
    row = session.one("SELECT version FROM {versions} WHERE component = ?", (COMPONENT,))
    found = None if row is None else int(row[0])
    check_storage_version(where, found)
    if found == STORAGE_SCHEMA_VERSION and _indexes_in_place(session, layout):
        # Nothing to create: no DDL, so an opener takes no table lock (CREATE INDEX IF NOT
        # EXISTS locks its table before it looks) that could deadlock with running writers.
        return
    if found is not None and found < STORAGE_SCHEMA_VERSION:
        for statement in dialect.upgrade_tables(found):
            session.execute(statement)
    for statement in dialect.create_tables():
        session.execute(statement)
    if found != STORAGE_SCHEMA_VERSION:
        follow_schema.upgrade(session)
    planned = {index.name for index in layout.indexes}
    for name, resource in session.all("SELECT index_name, resource FROM {generated}"):
        if resource in layout.resource_ids and name not in planned:
            session.execute_ddl(dialect.drop_index(name))
            session.execute("DELETE FROM {generated} WHERE index_name = ?", (name,))
    for index in layout.indexes:
        session.execute_ddl(index.ddl)
        session.execute(
            "INSERT INTO {generated} (index_name, resource) VALUES (?, ?) "
            "ON CONFLICT (index_name) DO NOTHING",
            (index.name, index.resource),
        )
    for component, version in (
        (COMPONENT, STORAGE_SCHEMA_VERSION),
        (EVENTS_COMPONENT, EVENTS_VERSION),
    ):
        session.execute(
            "INSERT INTO {versions} (component, version) VALUES (?, ?) "
            "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            (component, version),
        )


def _indexes_in_place(session: Session, layout: Layout) -> bool:
    """Whether the generated indexes of ``layout``'s resources are exactly those it plans."""
    recorded = {
        name
        for name, resource in session.all("SELECT index_name, resource FROM {generated}")
        if resource in layout.resource_ids
    }
    return recorded == {index.name for index in layout.indexes}


def _indexes(dialect: Dialect, resource: Resource) -> list[GeneratedIndex]:
    table = dialect.tables["records"]
    made = []
    for name, fields in resource.indexes.items():
        expressions = _expressions(dialect, resource, fields)
        columns = ", ".join([*expressions, "key"])
        sparse = name in resource.sparse_indexes
        index = _name(SCAN, resource.id, name, fields, {}, sparse=sparse)
        # What earlier builds made in its place, each holding every row this one would: the
        # whole-table index, and for a sparse one the full index too.
        replaces = [_name(WHOLE_TABLE_SCAN, resource.id, name, fields, {})]
        predicate = _resource_is(dialect, resource.id)
        if sparse:
            replaces.append(_name(SCAN, resource.id, name, fields, {}))
            # Implied by an equality with a value (a planner proves it from ``= ?``), not by
            # ``IS NULL``: a scan for the null reads the resource's rows instead.
            predicate += f" AND {expressions[0]} IS NOT NULL"
        made.append(
            GeneratedIndex(
                index,
                resource.id,
                None,
                f"CREATE INDEX IF NOT EXISTS {dialect.identifier(index)} ON {table} ({columns}) "
                f"WHERE {predicate}",
                replaces=tuple(replaces),
                fields=tuple(fields),
                left_out=fields[0] if sparse else None,
            )
        )
    for constraint in resource.unique:
        fields, where = constraint["fields"], constraint["where"]
        columns = ", ".join(_expressions(dialect, resource, fields))
        predicate = _unique_predicate(dialect, resource, where)
        index = _name("u", resource.id, constraint["name"], fields, where)
        made.append(
            GeneratedIndex(
                index,
                resource.id,
                constraint["name"],
                f"CREATE UNIQUE INDEX IF NOT EXISTS {dialect.identifier(index)} "
                f"ON {table} ({columns}) WHERE {predicate}",
            )
        )
    return made


def _unique_predicate(
    dialect: Dialect, resource: Resource, where: Mapping[str, str | int | bool | None]
) -> str:
    """The ``WHERE`` of a unique constraint's partial index, as literal SQL."""
    return " AND ".join([_resource_is(dialect, resource.id), *_where(dialect, resource, where)])


def _resource_is(dialect: Dialect, resource_id: str) -> str:
    """The literal SQL term selecting ``resource_id``'s rows (every generated index's
    predicate starts with it)."""
    return f"resource = {dialect.quote(resource_id)}"


def unique_source(dialect: Dialect, resource: Resource, constraint: Mapping[str, Any]) -> str:
    """``{records} WHERE``, ready for the terms of a pre-check of unique ``constraint``.

    Where the dialect can name an index, the text reads the constraint's own
    partial index and restates its predicate as literals, which proves the
    index applies: SQLite then finds the clashing row in that small index,
    planned once, instead of re-planning at every execution against the
    bound values. Elsewhere it is the plain table.
    """
    fields, where = constraint["fields"], constraint["where"]
    hint = dialect.index_hint(_name("u", resource.id, constraint["name"], fields, where))
    if not hint:
        return "{records} WHERE "
    predicate = as_template(_unique_predicate(dialect, resource, where))
    return "{records}" + hint + " WHERE " + predicate + " AND "


def _expressions(dialect: Dialect, resource: Resource, fields: Sequence[str]) -> list[str]:
    return [dialect.attribute(field) for field in fields]


def _where(
    dialect: Dialect, resource: Resource, where: Mapping[str, str | int | bool | None]
) -> list[str]:
    terms = []
    for field, value in where.items():
        expression = dialect.attribute(field)
        terms.append(
            f"{expression} IS NULL" if value is None else f"{expression} = {dialect.literal(value)}"
        )
    return terms


def _name(
    kind: str,
    resource_id: str,
    name: str,
    fields: Sequence[str],
    where: Mapping[str, object],
    *,
    sparse: bool = False,
) -> str:
    described: list[object] = [kind, resource_id, name, list(fields), sorted(where.items())]
    if sparse:  # a name of its own, so an open replaces the full index (and back)
        described.append("sparse")
    spec = dumps(described)
    digest = hashlib.sha256(spec.encode("utf-8")).hexdigest()[:12]
    slug = _SLUG.sub("_", f"{resource_id}_{name}".lower()).strip("_")[:36]
    return f"storage_{kind}_{slug}_{digest}"
