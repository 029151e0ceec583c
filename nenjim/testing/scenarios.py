"""Given / when / then for domain services: past events, one command, the new events or an error.

- :class:`JournalScenario`: the Journal chain. Given revision texts already
  accepted (or a recorded log), when one revision text is ingested, then
  exactly these chain events were appended, or this error was raised (and
  nothing was appended).
- :class:`PersistenceScenario`: the agent/team/workflow repositories. Given
  storage events (or a recorded log), when a command runs against
  ``Persistence``, then exactly these storage events were appended, or
  this error was raised (and nothing was appended). It needs a store with
  a storage log: SQLite or PostgreSQL (the in-memory backend keeps none).

An expected :class:`Event` names a topic and the members of the state to
compare; members it does not name (times, ids) are not compared.
"""

from __future__ import annotations

import io
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from nenjim.admin.transfer import JOURNAL, import_store, store_tables
from nenjim.domain.journal.chain import JournalChain
from nenjim.domain.journal.errors import JournalError
from nenjim.infrastructure.log import LogReader
from nenjim.infrastructure.log.transfer import open_log_store
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.storage.sql import events as storage_events
from nenjim.infrastructure.store.kinds import durable_store_hint
from nenjim.infrastructure.store.urls import MEMORY_URL, resolve_store_url
from nenjim.journal.impl.ref.chain_log import read_after
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.log import JournalLog
from nenjim.journal.impl.ref.transfer import replay_journal_events
from nenjim.projections.journal_chains import JournalChainsProjection, JournalWorldview
from nenjim.testing.recorded import RecordedLog

GENESIS_ACCEPTED = JournalChain.GenesisAccepted.TOPIC
SUCCESSOR_ACCEPTED = JournalChain.SuccessorAccepted.TOPIC

Observed = tuple[str, Mapping[str, Any]]
"""An appended event: its topic and its state."""


@dataclass(frozen=True, slots=True)
class Event:
    """An event expected (or given): its topic and the members of its state that matter."""

    topic: str
    state: Mapping[str, Any] = field(default_factory=dict)

    def mismatch(self, observed: Observed) -> str | None:
        """Why ``observed`` is not this event, or ``None``."""
        topic, state = observed
        if topic != self.topic:
            return f"topic {topic!r}, expected {self.topic!r}"
        for name, value in self.state.items():
            if name not in state:
                return f"{topic} has no {name!r}"
            if state[name] != value:
                return f"{topic} {name} is {state[name]!r}, expected {value!r}"
        return None


class _Outcome(ABC):
    """What ``when`` observed; ``then`` and ``then_error`` judge it."""

    def __init__(self) -> None:
        self._ran = False
        self._error: Exception | None = None
        self._events: list[Observed] = []
        self.result: Any = None
        """What the command returned (``None`` if it raised)."""

    def _record(self, events: list[Observed], error: Exception | None, result: Any) -> None:
        self._ran, self._events, self._error, self.result = True, events, error, result

    @property
    def new_events(self) -> list[Observed]:
        """The events the command appended: ``(topic, state)`` pairs."""
        self._require_run()
        return list(self._events)

    def then(self, *expected: Event) -> Self:
        """Exactly these events were appended, in order."""
        self._require_run()
        if self._error is not None:
            raise AssertionError(
                f"expected {len(expected)} new event(s), the command raised "
                f"{type(self._error).__name__}: {self._error}"
            ) from self._error
        if len(self._events) != len(expected):
            raise AssertionError(
                f"expected {len(expected)} new event(s), got {len(self._events)}: "
                f"{[topic for topic, _ in self._events]}"
            )
        for number, (wanted, observed) in enumerate(zip(expected, self._events, strict=True), 1):
            problem = wanted.mismatch(observed)
            if problem is not None:
                raise AssertionError(f"new event {number}: {problem}")
        return self

    def then_error(self, error_type: type[Exception], **attributes: Any) -> Self:
        """The command raised ``error_type`` (with these attribute values) and appended nothing."""
        self._require_run()
        if not isinstance(self._error, error_type):
            got = (
                "no error"
                if self._error is None
                else f"{type(self._error).__name__}: {self._error}"
            )
            raise AssertionError(f"expected {error_type.__name__}, got {got}")
        for name, value in attributes.items():
            actual = getattr(self._error, name, None)
            if actual != value:
                raise AssertionError(
                    f"{error_type.__name__}.{name} is {actual!r}, expected {value!r}"
                )
        if self._events:
            raise AssertionError(
                f"the command raised {error_type.__name__} but appended {len(self._events)} "
                "event(s)"
            )
        return self

    def _require_run(self) -> None:
        if not self._ran:
            raise AssertionError("then() before when(): nothing ran yet")

    @abstractmethod
    def close(self) -> None:
        """Release the store."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JournalScenario(_Outcome):
    """Given revisions, when one more is ingested, then these chain events or this error.

    ``store`` is an empty store (default ``memory:``); close the scenario
    (or use it as a context manager) to release it.
    """

    def __init__(self, store: str = MEMORY_URL) -> None:
        super().__init__()
        self.store = store
        self._log = JournalLog(store)
        self._ingestion = JournalIngestion(self._log, JournalChainsProjection())

    def given(self, *texts: str) -> JournalScenario:
        """These revision texts were accepted, in order (each must be)."""
        for text in texts:
            self._ingestion.ingest_text(text)
        return self

    def given_log(self, log: RecordedLog) -> JournalScenario:
        """The Journal log of a recorded log happened (first, before any other given)."""
        if JOURNAL not in log.logs:
            raise ValueError(f"{log.name} holds no Journal log")
        if not resolve_store_url(self.store).is_durable:
            replay_journal_events(self._log, log.events_of(JOURNAL))
        else:
            import_store(self.store, io.BytesIO(log.data), name=log.name)
        self._ingestion.catch_up()
        return self

    def when(self, text: str) -> JournalScenario:
        """Ingest one revision text (the command); its outcome is judged by ``then``."""
        reader = LogReader(self._log)
        position = reader.last_position()
        error: Exception | None = None
        try:
            self._ingestion.ingest_text(text)
        except JournalError as raised:
            error = raised
        appended: list[Observed] = [
            (type(event).TOPIC, dict(vars(event)))  # type: ignore[attr-defined]
            for _, event in read_after(reader, position)
        ]
        self._record(appended, error, None)
        return self

    @property
    def view(self) -> JournalWorldview:
        """The chains as the Journal sees them now."""
        return self._ingestion.view

    def close(self) -> None:
        """Release the store."""
        self._ingestion.close()


class PersistenceScenario(_Outcome):
    """Given storage events, when a command runs on ``Persistence``: these events or this error.

    ``store`` is an empty SQLite or PostgreSQL store (the in-memory backend
    keeps no log to observe). Close the scenario (or use it as a context
    manager) to release it.
    """

    def __init__(self, store: str) -> None:
        super().__init__()
        location = resolve_store_url(store)
        if not location.is_durable:
            raise ValueError(
                f"{location.display} keeps no storage log to observe events in; give "
                f"{durable_store_hint()}"
            )
        self.store = store
        self._table = store_tables(open_log_store(store), None)[1]
        self._persistence: Persistence | None = None

    def given(self, *events: Event) -> PersistenceScenario:
        """These storage events happened (complete states; first, before any other given)."""
        log = RecordedLog.of_storage_events([(event.topic, event.state) for event in events])
        return self.given_log(log)

    def given_log(self, log: RecordedLog) -> PersistenceScenario:
        """The logs of a recorded log happened (first, before any other given)."""
        if self._persistence is not None:
            raise ValueError("given events must come before the store is used")
        import_store(self.store, io.BytesIO(log.data), name=log.name)
        return self

    @property
    def persistence(self) -> Persistence:
        """The domain Persistence on the store (opened on first use)."""
        if self._persistence is None:
            self._persistence = Persistence.open(self.store)
        return self._persistence

    def when(self, command: Callable[[Persistence], Any]) -> PersistenceScenario:
        """Run ``command(persistence)``; its outcome is judged by ``then``."""
        persistence = self.persistence
        position = self._last_position()
        error: Exception | None = None
        result = None
        try:
            result = command(persistence)
        except Exception as raised:  # judged by then_error; then() reports it
            error = raised
        self._record(self._events_after(position), error, result)
        return self

    def close(self) -> None:
        """Release the store."""
        if self._persistence is not None:
            self._persistence.close()

    def _last_position(self) -> int:
        with open_log_store(self.store).snapshot() as snapshot:
            last = 0
            for event in snapshot.events(self._table):
                last = event.id
            return last

    def _events_after(self, position: int) -> list[Observed]:
        with open_log_store(self.store).snapshot() as snapshot:
            return [
                (event.topic, storage_events.decode_event(event.topic, event.state))
                for event in snapshot.events(self._table, after=position)
            ]
