"""``LogApplication``: an ``eventsourcing`` Application on a store chosen by URL."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.domain import (
    BaseAggregate,
    DomainEvent,
    DomainEventProtocol,
    MutableOrImmutableAggregate,
)
from eventsourcing.persistence import ApplicationRecorder, PersistenceError, Recording
from eventsourcing.utils import Environment, EnvType, get_topic

from nenjim.infrastructure.log.claims import Claim
from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.log.commits import APPENDED, StoredBatch
from nenjim.infrastructure.log.compact_json import CompactJSONTranscoder
from nenjim.infrastructure.log.tiles import EntryTiler, TiledLog, Tiling
from nenjim.infrastructure.store.errors import (
    StoreIdentityError,
    StoreReadOnlyError,
    StoreUnavailableError,
    is_read_only_error,
)
from nenjim.infrastructure.store.urls import (
    StoreLocation,
    check_schema,
    resolve_store_url,
)

_LOGGER = logging.getLogger(__name__)


class _ClaimingRecorder(Protocol):
    def create_table(self) -> None: ...

    def require_table(self) -> None: ...

    def claim_identity(self, identity: str) -> str: ...

    def recorded_identity(self) -> str | None: ...

    def release_identity(self, identity: str) -> None: ...

    def replace_identity(self, old: str, new: str) -> str | None: ...

    def claim_owner(self, namespace: str, key: str) -> str | None: ...

    def claims(self, namespace: str) -> list[Claim]: ...

    def claim_owners(self, namespace: str) -> dict[str, str]: ...

    def claim_page(self, namespace: str, after: str, limit: int) -> list[tuple[str, str]]: ...

    def insert_batches(self, batches: Iterable[StoredBatch]) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class LogBatch:
    """Events to append together, the claims that go with them and, on a tiled log,
    one entry per event (its bytes, or ``None``)."""

    events: Sequence[DomainEventProtocol[UUID]]
    claims: Sequence[Claim] = ()
    entries: Sequence[bytes | None] = ()


class _AggregateEvents(ProcessingEvent[UUID]):
    """Collects events, and aggregates' pending events, by class, not by protocol.

    ``eventsourcing``'s own collection checks every object against two
    runtime-checkable protocols, which inspects the protocols' members on
    each call: tens of microseconds per save, a tenth of a Journal ingest's
    Python. A log saves the library's events and aggregates; anything else
    takes the library's path.
    """

    def collect_events(
        self,
        *objs: MutableOrImmutableAggregate[UUID] | DomainEventProtocol[UUID] | None,
        **kwargs: Any,
    ) -> None:
        for obj in objs:
            if isinstance(obj, DomainEvent):
                self.events.append(obj)
            elif isinstance(obj, BaseAggregate):
                self.events.extend(obj.collect_events())
                self.aggregates[obj.id] = obj
            else:
                super().collect_events(obj)
        self.saved_kwargs.update(kwargs)


class _ClaimingFactory(Protocol):
    def claiming_recorder(self, name: str, tiling: Tiling | None = None) -> ApplicationRecorder: ...


class LogApplication(Application[UUID]):
    """An Application whose recorder keeps the unique-claims table beside the events.

    ``store`` is a store URL (see :func:`resolve_store_url`). With ``create``
    (the default) the store, its PostgreSQL schema and its tables are made
    on first open; without it a store that holds no such log is refused with
    ``StoreUnavailableError`` and nothing is created. The schema version is
    checked on every open.

    ``identity`` names the log's owner: the first owner to open a log records
    its identity (atomically: of two racing openers exactly one wins), and an
    opener with another identity is refused with ``StoreIdentityError``. A
    log written before identities existed takes the identity of its next
    opener. With ``claim=False`` the identity is only checked on open (a log
    that records none is accepted, as without ``create``):
    :meth:`claim_identity` records it later. ``schema`` is the PostgreSQL
    schema used when the URL names none (a name the URL's ``?schema=`` could
    hold, else ``UnsupportedStoreError``). ``tiler`` makes the log tiled (see
    ``nenjim.infrastructure.log.tiles``): its entries and tiles are brought up to
    date with the events on open.

    ``read_only`` (implies ``create=False``) opens the log exactly as it is,
    for audits and other reads: nothing is claimed, created or caught up, so
    a tiled log's missing entries stay missing for the audit to report. An
    SQLite store on read-only media (a read-only file, directory or file
    system) is opened that way whatever was asked (:attr:`read_only` is then
    true): whatever must write it raises ``StoreReadOnlyError`` or the
    driver's read-only error.
    """

    def __init__(
        self,
        store: str | None = None,
        *,
        create: bool = True,
        identity: str | None = None,
        claim: bool = True,
        schema: str | None = None,
        tiler: EntryTiler | None = None,
        read_only: bool = False,
    ) -> None:
        self._tiler = tiler
        self.location: StoreLocation = resolve_store_url(store)
        # Named once: a close at the interpreter's exit (an unreferenced log's __del__) must
        # not format it again, as that may import what is no longer importable then.
        self._where = self.location.where
        self._create = create and not read_only
        self._claim_on_open = self._create and claim
        self.read_only = read_only
        """True when the store is opened to read only (asked, or read-only media)."""
        env = dict(self.location.env)
        # The library's transcoder, encoding through one C encoder (see compact_json).
        env["TRANSCODER_TOPIC"] = get_topic(CompactJSONTranscoder)
        setting = self.location.store_kind.schema_setting
        if schema is not None and setting is not None:
            env.setdefault(setting, check_schema(schema))
        self._prepare(env)
        try:
            super().__init__(env=env)
        except PersistenceError as error:
            self._close_factory()
            raise self._open_error(error, "its tables") from error
        except BaseException:
            self._close_factory()
            raise
        if identity is not None:
            self._check_identity(identity)
        if tiler is not None and not self.read_only:
            self._catch_up_tiles()
        _LOGGER.info(
            "opened the %s log in %s%s",
            self.name,
            self.where,
            " to read only" if self.read_only else "",
        )

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """The library's settings: the store URL's, and nothing of the process environment.

        ``eventsourcing`` also reads its settings (``COMPRESSOR_TOPIC``,
        ``CIPHER_KEY``, ``PERSISTENCE_MODULE``, ``SQLITE_DBNAME``, ..., and each
        prefixed with the application's name, which wins) from ``os.environ``: a
        store written under one set of them could not be read without it.
        """
        return Environment(name, env)

    @property
    def where(self) -> str:
        """The store as messages name it (a PostgreSQL password is never shown)."""
        return self._where

    def _prepare(self, env: dict[str, str]) -> None:
        kind = self.location.store_kind
        if kind.load(kind.prepare_log)(self.location, env, self._create):
            self.read_only = True

    def _open_error(self, error: PersistenceError, writing: str) -> StoreUnavailableError:
        """Why the store could not be opened; on a read-only store, what needed ``writing``."""
        if is_read_only_error(error):
            return StoreReadOnlyError(f"{self.where} is read-only: cannot write {writing}")
        return StoreUnavailableError(f"cannot open {self.where}: {error}")

    def _close_factory(self) -> None:
        factory = getattr(self, "factory", None)
        if factory is not None:
            factory.close()

    def _check_identity(self, identity: str) -> None:
        ledger = cast(_ClaimingRecorder, self.recorder)
        try:
            recorded = (
                ledger.claim_identity(identity)
                if self._claim_on_open and not self.read_only
                else ledger.recorded_identity()
            )
        except PersistenceError as error:
            self.close()
            raise self._open_error(error, "its owner's identity") from error
        if recorded is not None and recorded != identity:
            self.close()
            raise StoreIdentityError(self.where, recorded, identity)

    def _catch_up_tiles(self) -> None:
        try:
            self.tiled_log.catch_up_entries()
        except PersistenceError as error:
            self.close()
            raise self._open_error(error, "its transparency tiles") from error
        except BaseException:
            self.close()
            raise

    @property
    def tiled_log(self) -> TiledLog:
        """The entries and tiles of a log opened with a ``tiler``."""
        tiles: TiledLog | None = getattr(self.recorder, "tiles", None)
        if tiles is None:
            raise TypeError(f"the log in {self.where} was opened without a tiler")
        cast(ClosableRecorder, self.recorder).require_open()
        return tiles

    def construct_recorder(self) -> ApplicationRecorder:
        factory = cast(_ClaimingFactory, self.factory)
        tiling = None if self._tiler is None else Tiling(self._tiler, self.mapper.to_domain_event)
        recorder = factory.claiming_recorder(self.name.lower(), tiling)
        ledger = cast(_ClaimingRecorder, recorder)
        if self.location.is_durable:
            if self._create and not self.read_only:
                ledger.create_table()
            else:
                ledger.require_table()
        return recorder

    def save(
        self,
        *objs: MutableOrImmutableAggregate[UUID] | DomainEventProtocol[UUID] | None,
        **kwargs: Any,
    ) -> list[Recording[UUID]]:
        """``Application.save``, collecting the aggregates' events by class."""
        processing_event = _AggregateEvents()
        processing_event.collect_events(*objs, **kwargs)
        # The objects themselves too: this process's readers take them, not decode them.
        processing_event.saved_kwargs[APPENDED] = processing_event.events
        recordings = self._record(processing_event)
        self._take_snapshots(processing_event)
        self._notify(recordings)
        self.notify(processing_event.events)  # the library's deprecated hook, kept
        return recordings

    def append(
        self,
        aggregates: Sequence[MutableOrImmutableAggregate[UUID] | DomainEventProtocol[UUID]],
        claims: Sequence[Claim] = (),
        entries: Sequence[bytes | None] = (),
    ) -> list[Recording[UUID]]:
        """Save the aggregates' pending events (or the events given) and the claims in one
        transaction.

        A tiled log also takes ``entries``: one per pending event, in order
        (its entry's bytes, or ``None``).
        """
        return self.save(*aggregates, claims=list(claims), entries=list(entries))

    def append_batches(self, batches: Iterable[LogBatch]) -> list[int]:
        """Append every batch's events, claims and entries, in order, in one transaction;
        the events' notification ids, in order.

        ``batches`` is read one batch at a time, and a batch is encoded only when
        its turn comes, so a large append holds the stored form of one batch at a
        time (an in-memory log keeps them all: it is the store). All or nothing: a
        rejected claim or stream version, or an error raised by ``batches`` itself,
        leaves the log as it was.

        A single batch is appended as :meth:`append` does, sharing a commit with
        the process's concurrent appends.
        """
        remaining = iter(batches)
        first = next(remaining, None)
        second = None if first is None else next(remaining, None)
        if first is None:
            return []
        if second is None:
            recordings = self.append(first.events, first.claims, first.entries)
            return [recording.notification.id for recording in recordings]

        def stored() -> Iterator[StoredBatch]:
            for batch in itertools.chain((first, second), remaining):
                encoded = [self.mapper.to_stored_event(event) for event in batch.events]
                yield encoded, {"claims": list(batch.claims), "entries": list(batch.entries)}

        return cast(_ClaimingRecorder, self.recorder).insert_batches(stored())

    def claim_owner(self, namespace: str, key: str) -> str | None:
        """Who holds ``key`` in ``namespace``, or ``None``."""
        with cast(ClosableRecorder, self.recorder).while_open():
            return cast(_ClaimingRecorder, self.recorder).claim_owner(namespace, key)

    def claims(self, namespace: str) -> list[Claim]:
        """Every claim in ``namespace``, ordered by key (for audits)."""
        with cast(ClosableRecorder, self.recorder).while_open():
            return cast(_ClaimingRecorder, self.recorder).claims(namespace)

    def claim_owners(self, namespace: str) -> dict[str, str]:
        """Every claim in ``namespace``, as key to owner (no object per claim: a start
        checks 10,000s of them)."""
        with cast(ClosableRecorder, self.recorder).while_open():
            return cast(_ClaimingRecorder, self.recorder).claim_owners(namespace)

    def claim_pages(self, namespace: str, page: int = 5_000) -> Iterator[list[tuple[str, str]]]:
        """Every claim in ``namespace`` as ``(key, owner)``, ordered by key, ``page`` at a
        time (each page its own read: an audit reads them all without holding them)."""
        after = ""
        while True:
            with cast(ClosableRecorder, self.recorder).while_open():
                found = cast(_ClaimingRecorder, self.recorder).claim_page(namespace, after, page)
            if found:
                yield found
            if len(found) < page:
                return
            after = found[-1][0]

    def recorded_identity(self) -> str | None:
        """The owner recorded for this log, or ``None`` (none yet, or an older store)."""
        with cast(ClosableRecorder, self.recorder).while_open():
            return cast(_ClaimingRecorder, self.recorder).recorded_identity()

    def claim_identity(self, identity: str) -> None:
        """Record ``identity`` as the log's owner unless one is recorded (atomically: of two
        racing claimers exactly one wins); ``StoreIdentityError`` if another one is."""
        with cast(ClosableRecorder, self.recorder).while_open():
            recorded = cast(_ClaimingRecorder, self.recorder).claim_identity(identity)
        if recorded != identity:
            raise StoreIdentityError(self.where, recorded, identity)

    def release_identity(self, identity: str) -> None:
        """Forget ``identity`` as the log's owner if it is the one recorded and the log
        still holds no event (a first append that failed leaves the store unowned)."""
        with cast(ClosableRecorder, self.recorder).while_open():
            cast(_ClaimingRecorder, self.recorder).release_identity(identity)

    def replace_identity(self, old: str, new: str) -> None:
        """Record ``new`` as the log's owner in place of ``old``, atomically;
        ``StoreIdentityError`` (nothing changed) unless ``old`` is the one recorded."""
        with cast(ClosableRecorder, self.recorder).while_open():
            recorded = cast(_ClaimingRecorder, self.recorder).replace_identity(old, new)
        if recorded != new:
            raise StoreIdentityError(self.where, recorded or "no owner", old)

    def close(self) -> None:
        """Release the store; idempotent, and safe while other threads use the log.

        Every read or write that starts afterwards raises ``LogClosedError``
        (a ``StoreUnavailableError``) naming the store; one already running
        finishes first, on the connection it holds.
        """
        recorder = getattr(self, "recorder", None)
        if isinstance(recorder, ClosableRecorder):
            recorder.close_log(self.where)
        super().close()
