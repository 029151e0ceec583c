"""PostgreSQL recorder: one round trip per append, gap-free ids in commit order.

The stock recorder holds ``LOCK TABLE ... EXCLUSIVE`` across two client
round trips (pipeline sync, then commit). Here a plpgsql function takes the
same lock, writes the claims, numbers the events ``max(notification_id) + 1
...`` and inserts them; the commit releases the lock. Readers tailing the log
therefore never see a later id commit before an earlier one, and a
rolled-back append consumes no id.

A log without tiles appends in one autocommit statement. A tiled log's
transactions are written in pipeline mode, ``BEGIN`` and ``COMMIT`` sent as
statements, so that nothing waits for an answer it does not need: when this
process committed the log's last append, the writer knows the ids its batch
will get and the entries and tiles they make, and sends the whole batch, its
tiles and the commit in one round trip, each append asking the function to
refuse it unless the log still ends where this process left it. If anything
in it is refused, the batch is rolled back and written again the long way
(each append in a savepoint, answered before the next, then the tiles).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore, PostgresFactory
from eventsourcing.utils import Environment, EnvType
from psycopg import Pipeline
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composed, Identifier, Literal

from nenjim.infrastructure.log.claims import Claim, ClaimConflictError, SqlClaims
from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.log.commits import (
    AppendRequest,
    StoredBatch,
    committed_appends,
    log_commits,
)
from nenjim.infrastructure.log.tiles import CommittedEdge, Tiling, new_entries
from nenjim.infrastructure.postgresql.arrays import arguments, array_argument, as_scalars
from nenjim.infrastructure.postgresql.tiles import PostgresTiles
from nenjim.infrastructure.store.urls import POSTGRES_CONNINFO
from nenjim.infrastructure.store.versions import (
    IDENTITY_TABLE,
    LOG_SCHEMA_VERSION,
    SCHEMA_TABLE,
    check_log_version,
    recorded_version,
    require_log_tables,
)

CLAIM_CONSTRAINT = "nenjim_unique_claim"
# Serialises schema creation across processes (CREATE ... IF NOT EXISTS races in the catalog).
_DDL_LOCK = 0x6E656E6A696D
# What the conninfo says; eventsourcing's own keyword arguments would override it.
_CONNINFO_KEYWORDS = frozenset({"dbname", "host", "port", "user", "password"})


class ClaimingPostgresFactory(PostgresFactory):
    """``eventsourcing``'s PostgreSQL factory, connecting with the store URL's full conninfo.

    Every libpq parameter of the URL reaches the connections. (The log
    application connects once directly before this factory is made, so that
    a failure names its cause.)
    """

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        pool = self.datastore.pool
        pool.conninfo = self.env.get(POSTGRES_CONNINFO) or ""
        keywords = pool.kwargs if isinstance(pool.kwargs, dict) else {}
        pool.kwargs = {k: v for k, v in keywords.items() if k not in _CONNINFO_KEYWORDS}

    def claiming_recorder(
        self, name: str, tiling: Tiling | None = None
    ) -> ClaimingPostgresApplicationRecorder:
        """The recorder of the log called ``name`` (tables ``<name>_events``, ...)."""
        return ClaimingPostgresApplicationRecorder(self.datastore, name=name, tiling=tiling)


class ClaimingPostgresApplicationRecorder(ClosableRecorder, SqlClaims, PostgresApplicationRecorder):
    """``PostgresApplicationRecorder`` with claims and a single-round-trip append."""

    def __init__(
        self, datastore: PostgresDatastore, *, name: str, tiling: Tiling | None = None
    ) -> None:
        super().__init__(datastore, events_table_name=f"{name}_events")
        self.claims_table_name = f"{name}_claims"
        self.append_function_name = f"{name}_append"
        self.where = f"PostgreSQL schema {self.datastore.schema!r}"
        # Appends of every log application of this process on the same schema share commits.
        self._commits = log_commits(
            (
                "postgresql",
                datastore.pool.conninfo,
                str(datastore.pool.kwargs),
                self.datastore.schema,
                self.events_table_name,
                tiling is not None,
            )
        )
        self.recent_commits = self._commits.recent
        schema = Identifier(self.datastore.schema)
        names = {
            "schema": schema,
            "events": Identifier(self.events_table_name),
            "claims": Identifier(self.claims_table_name),
            "append": Identifier(self.append_function_name),
            "version_table": Identifier(SCHEMA_TABLE),
            "identity_table": Identifier(IDENTITY_TABLE),
            "events_channel": Literal(self.channel_name),
        }
        # The schema of ?schema= comes first: it may not exist yet.
        create_schema = SQL("CREATE SCHEMA IF NOT EXISTS {schema}").format(**names)
        self.sql_create_statements.insert(0, create_schema)
        self.sql_create_statements.extend(SQL(statement).format(**names) for statement in _DDL)
        self.sql_create_statements.append(
            SQL(
                "INSERT INTO {schema}.{version_table} VALUES ({component}, {version}) "
                "ON CONFLICT (component) DO NOTHING"
            ).format(
                schema=schema,
                version_table=names["version_table"],
                component=self.events_table_name,
                version=LOG_SCHEMA_VERSION,
            )
        )
        self._append_function = SQL("{schema}.{append}").format(**names).as_string(None)
        self._append_statements: dict[tuple[int, int], bytes] = {}
        self._version_sql = SQL(
            "SELECT version FROM {schema}.{version_table} WHERE component = %s"
        ).format(**names)
        self._lock_sql = SQL("LOCK TABLE {schema}.{events} IN EXCLUSIVE MODE").format(**names)
        self.tiles = (
            None
            if tiling is None
            else PostgresTiles(
                datastore,
                name=name,
                events_table=self.events_table_name,
                tiling=tiling,
                lock=self._lock_log,
                committed_edge=self._commits.committed_edge,
            )
        )
        self._qualified = {
            table: SQL("{schema}.{table}")
            .format(schema=schema, table=Identifier(table))
            .as_string()
            for table in (
                self.events_table_name,
                self.claims_table_name,
                SCHEMA_TABLE,
                IDENTITY_TABLE,
            )
        }
        qualified = self._qualified
        self._claims_statements(
            "%s",
            qualified[self.events_table_name],
            qualified[self.claims_table_name],
            qualified[IDENTITY_TABLE],
        )

    def _lock_log(self, conn: psycopg.Connection[Any]) -> None:
        # The DDL lock first, as create_table takes it: the tile tables' creation
        # must not race another opener's in the catalog.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        conn.execute(self._lock_sql)

    def create_table(self) -> None:
        with self.datastore.get_connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            run_log_ddl(conn, self.sql_create_statements)
            row = conn.execute(self._version_sql, (self.events_table_name,)).fetchone()
        self.datastore.register_type_adapters()
        check_log_version(self.where, None if row is None else int(row["version"]))

    def require_table(self) -> None:
        """Check that the log exists and is ours, creating nothing."""
        require_log_tables(self.where, self.events_table_name, self._has_table)
        with self.datastore.get_connection() as conn:
            row = conn.execute(self._version_sql, (self.events_table_name,)).fetchone()
        self.datastore.register_type_adapters()
        found = None if row is None else row["version"]
        check_log_version(self.where, recorded_version(self.where, self.events_table_name, found))

    def _has_table(self, table: str) -> bool:
        with self._reading() as c:
            c.execute("SELECT to_regclass(%s)", (self._qualified[table],))
            row = c.fetchone()
        return row is not None and row[0] is not None

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Cursor[Any]]:
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as c:
            yield c

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Cursor[Any]]:
        with (
            self.datastore.get_connection() as conn,
            conn.transaction(),
            conn.cursor(row_factory=tuple_row) as c,
        ):
            yield c

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self.while_open():
            return self._commits.group.submit(
                AppendRequest(stored_events, kwargs), self._write_batch
            ).outcome()

    def _write_batch(self, batch: list[AppendRequest]) -> None:
        """Write the batch in one transaction (one commit, the log locked till then): in one
        round trip when this process knows where the log ends, else the long way."""
        edge = self._commits.committed_edge
        with self.datastore.get_connection() as conn:
            if self.tiles is None and len(batch) == 1:  # one autocommit statement
                only = batch[0]
                try:
                    rows = conn.execute(
                        *self._append_call(only.stored_events, only.kwargs), prepare=True
                    ).fetchall()
                except psycopg.IntegrityError as error:
                    raise _rejection(error) from error
                only.result = [row["notification_id"] for row in rows]
            elif not self._write_at_known_end(conn, batch, edge):
                self._write_each(conn, batch, edge)
        self._commits.recent.record(committed_appends(batch))

    def _write_at_known_end(
        self,
        conn: psycopg.Connection[Any],
        batch: list[AppendRequest],
        edge: CommittedEdge,
    ) -> bool:
        """Write the batch in one round trip if this process committed the log's last
        append; ``False`` (nothing written) when it did not, or when anything was refused.
        """
        end = edge.end
        if self.tiles is None or end is None:
            return False
        ids: list[list[int]] = []
        new: list[tuple[int, bytes]] = []
        last = end.last_id
        try:
            with _sent_transaction(conn, edge):
                for request in batch:
                    call = self._append_call(request.stored_events, request.kwargs, after=last)
                    conn.execute(*call, prepare=True)
                    appended = list(range(last + 1, last + 1 + len(request.stored_events)))
                    new.extend(new_entries(appended, request.kwargs))
                    ids.append(appended)
                    last += len(appended)
                self.tiles.extend_at(conn, end, new, last)
        except (psycopg.IntegrityError, psycopg.errors.SerializationFailure):
            return False  # a refused append, or the log moved: the long way decides
        for request, appended in zip(batch, ids, strict=True):
            request.result = appended
        return True

    def _write_each(
        self,
        conn: psycopg.Connection[Any],
        batch: list[AppendRequest],
        edge: CommittedEdge,
    ) -> None:
        """Each append in a savepoint, answered before the next (a refused one is rolled
        back alone and raises its own error); then the tiles of those accepted."""
        accepted: list[int] = []
        new: list[tuple[int, bytes]] = []
        lone = len(batch) == 1
        edge_rows: psycopg.Cursor[Any] | None = None
        try:
            with _sent_transaction(conn, edge) as pipeline:
                for request in batch:
                    if not lone:
                        conn.execute(b"SAVEPOINT append", prepare=False)
                    call = self._append_call(request.stored_events, request.kwargs)
                    appended = conn.execute(*call, prepare=True)
                    # A lone append's tiles need the edge, read under the function's lock.
                    edge_rows = self.tiles.edge(conn) if lone and self.tiles else None
                    try:
                        pipeline.sync()
                    except psycopg.IntegrityError as error:
                        if lone:
                            raise
                        request.error = _rejection(error)
                        conn.execute(b"ROLLBACK TO SAVEPOINT append", prepare=False)
                        continue
                    ids = [row["notification_id"] for row in appended.fetchall()]
                    request.result = ids
                    accepted.extend(ids)
                    new.extend(new_entries(ids, request.kwargs))
                    if not lone:
                        conn.execute(b"RELEASE SAVEPOINT append", prepare=False)
                if self.tiles is not None and accepted:
                    if edge_rows is None:
                        edge_rows = self.tiles.edge(conn)
                    self.tiles.extend(
                        conn, accepted, new, edge_rows.fetchall(), last_id=accepted[-1]
                    )
        except psycopg.IntegrityError as error:
            raise _rejection(error) from error

    def insert_batches(self, batches: Iterable[StoredBatch]) -> list[int]:
        """Insert each batch as it comes, all in one transaction; the notification ids.

        The first batch locks the log until the commit, so the ids stay gap-free
        and in commit order; the process's other appends wait until it ends.
        """
        ids: list[int] = []
        try:
            with (
                self.while_open(),
                self._commits.group.exclusive(),
                self._commits.committed_edge.transaction(),
                self.datastore.get_connection() as conn,
                conn.transaction(),
            ):
                for stored_events, kwargs in batches:
                    ids.extend(self._append_in_transaction(conn, stored_events, kwargs))
        except IntegrityError as error:
            raise _rejection(error) from error.__cause__
        return ids

    def _append_in_transaction(
        self, conn: psycopg.Connection[Any], stored_events: Sequence[StoredEvent], kwargs: Any
    ) -> list[int]:
        rows = conn.execute(*self._append_call(stored_events, kwargs), prepare=True).fetchall()
        ids = [row["notification_id"] for row in rows]
        if self.tiles is not None:
            edge = self.tiles.edge(conn).fetchall()
            self.tiles.extend(conn, ids, new_entries(ids, kwargs), edge, last_id=ids[-1])
        return ids

    def _append_call(
        self, stored_events: Sequence[StoredEvent], kwargs: Any, after: int | None = None
    ) -> tuple[bytes, list[Any]]:
        """The statement calling the append function, and its parameters.

        ``after``: refuse the append unless the log's last notification id is this.
        """
        claims: Sequence[Claim] = kwargs.get("claims", ())
        shape = (len(stored_events), len(claims))
        statement = self._append_statements.get(shape)
        if statement is None:
            statement = self._append_statements[shape] = self._append_statement(*shape)
        columns: list[list[Any]] = [
            [_uuid(e.originator_id) for e in stored_events],
            [e.originator_version for e in stored_events],
            [e.topic for e in stored_events],
            [e.state for e in stored_events],
            [c.namespace for c in claims],
            [c.key for c in claims],
            [c.owner for c in claims],
        ]
        return statement, [*arguments(columns, as_scalars(shape)), after]

    def _append_statement(self, events: int, claims: int) -> bytes:
        scalars = as_scalars((events, claims))
        placed = [array_argument(events, kind, scalars) for kind in _EVENT_COLUMNS]
        placed += [array_argument(claims, "text", scalars)] * 3
        call = ", ".join([*placed, "%s::bigint"])
        return f"SELECT notification_id FROM {self._append_function}({call})".encode()


def run_log_ddl(conn: psycopg.Connection[Any], statements: Sequence[Composed]) -> None:
    """Run a log's idempotent DDL in the connection's open transaction."""
    for statement in statements:
        if "CREATE TYPE" in statement.as_string():
            try:
                with conn.transaction():
                    conn.execute(statement, prepare=False)
            except psycopg.errors.DuplicateObject:
                pass  # the type exists: CREATE TYPE has no IF NOT EXISTS
        else:
            conn.execute(statement, prepare=False)


def log_table_statements(env: Mapping[str, str], name: str) -> list[Composed]:
    """The DDL of the log called ``name`` in the store ``env`` describes, for
    :func:`run_log_ddl` in a caller's own transaction.

    The statements are the recorder's own, so a log created this way is the
    log a ``LogApplication`` creates. (Building the recorder reads the
    database's catalog once, on a connection of its own.)
    """
    factory = ClaimingPostgresFactory(
        {**env, "POSTGRES_POOL_SIZE": "1", "POSTGRES_MAX_OVERFLOW": "0"}
    )
    try:
        return list(factory.claiming_recorder(name).sql_create_statements)
    finally:
        factory.close()


@contextmanager
def _sent_transaction(conn: psycopg.Connection[Any], edge: CommittedEdge) -> Iterator[Pipeline]:
    """A transaction in pipeline mode, ``BEGIN`` and ``COMMIT`` sent as statements (so
    nothing waits for their answers), inside the edge's ``transaction()``.

    On any error it is rolled back, so the pool takes the connection back idle; a
    broken connection is left to the pool, which discards it.

    Transaction control is never prepared, and the rollback is the driver's own,
    which also forgets every statement psycopg prepared on the connection. An
    error skips the rest of a pipeline, including a ``Parse`` psycopg sent when
    a statement's use count reached its threshold; psycopg records such a
    statement as prepared without looking at its answer, and would name it in
    every later use ("prepared statement ... does not exist").
    """
    try:
        with edge.transaction(), conn.pipeline() as pipeline:
            conn.execute(b"BEGIN", prepare=False)
            yield pipeline
            conn.execute(b"COMMIT", prepare=False)
    except BaseException:
        if not conn.broken:
            conn.rollback()
        raise


def _rejection(error: Exception) -> Exception:
    """A claim conflict as ``ClaimConflictError``; any other integrity error as eventsourcing's."""
    cause = error if isinstance(error, psycopg.Error) else error.__cause__
    if isinstance(cause, psycopg.Error) and cause.diag.constraint_name == CLAIM_CONSTRAINT:
        detail = json.loads(cause.diag.message_detail or "{}")
        conflict = ClaimConflictError(
            Claim(detail["namespace"], detail["key"], detail["owner"]), detail["holder"]
        )
        conflict.__cause__ = error
        return conflict
    if isinstance(error, IntegrityError):
        return error
    rejected = IntegrityError(str(error))
    rejected.__cause__ = error
    return rejected


def _uuid(originator_id: UUID | str) -> UUID:
    return originator_id if isinstance(originator_id, UUID) else UUID(originator_id)


# The SQL types of the append function's event arrays, in its order.
_EVENT_COLUMNS = ("uuid", "bigint", "text", "bytea")

_DDL: list[str] = [
    "CREATE TABLE IF NOT EXISTS {schema}.{claims} ("
    "namespace text NOT NULL, key text NOT NULL, owner text NOT NULL, "
    "PRIMARY KEY (namespace, key))",
    "CREATE TABLE IF NOT EXISTS {schema}.{version_table} ("
    "component text PRIMARY KEY, version integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {schema}.{identity_table} ("
    "component text PRIMARY KEY, identity text NOT NULL)",
    """
CREATE OR REPLACE FUNCTION {schema}.{append}(
    ids uuid[], versions bigint[], topics text[], states bytea[],
    claim_namespaces text[], claim_keys text[], claim_owners text[], after bigint)
RETURNS TABLE (notification_id bigint) LANGUAGE plpgsql AS $fn$
DECLARE
    last_id bigint;
    clash record;
BEGIN
    -- One writer at a time: ids are numbered and committed in the same order.
    LOCK TABLE {schema}.{events} IN EXCLUSIVE MODE;
    SELECT coalesce(max(e.notification_id), 0) INTO last_id FROM {schema}.{events} AS e;
    -- A writer that computed its tiles for ids after AFTER: refused if the log moved.
    IF after IS NOT NULL AND last_id <> after THEN
        RAISE EXCEPTION USING
            ERRCODE = 'serialization_failure',
            CONSTRAINT = 'nenjim_log_end',
            MESSAGE = format('the log ends at id %s, not at %s', last_id, after);
    END IF;
    INSERT INTO {schema}.{claims} AS t (namespace, key, owner)
        SELECT * FROM unnest(claim_namespaces, claim_keys, claim_owners)
        ON CONFLICT (namespace, key) DO NOTHING;
    SELECT c.namespace, c.key, c.owner, t.owner AS holder INTO clash
        FROM unnest(claim_namespaces, claim_keys, claim_owners) AS c(namespace, key, owner)
        JOIN {schema}.{claims} AS t USING (namespace, key)
        WHERE t.owner <> c.owner
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'unique_violation',
            CONSTRAINT = 'nenjim_unique_claim',
            MESSAGE = format('%s %L is owned by %L', clash.namespace, clash.key, clash.holder),
            DETAIL = json_build_object('namespace', clash.namespace, 'key', clash.key,
                                       'owner', clash.owner, 'holder', clash.holder)::text;
    END IF;
    RETURN QUERY
        INSERT INTO {schema}.{events} AS e
            (originator_id, originator_version, topic, state, notification_id)
        SELECT s.i, s.v, s.t, s.s, last_id + s.n
        FROM unnest(ids, versions, topics, states) WITH ORDINALITY AS s(i, v, t, s, n)
        ORDER BY s.n
        RETURNING e.notification_id;
    PERFORM pg_notify({events_channel}, '');
END
$fn$
""",
]
