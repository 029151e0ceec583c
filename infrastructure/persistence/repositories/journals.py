"""Agent journals: one stream per Agent, sequence = stream position."""

from __future__ import annotations

from collections.abc import Sequence

from nenjim.domain.agents import AgentJournalRecord
from nenjim.domain.persistence import repositories as domain
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.boundary import at_boundary
from nenjim.infrastructure.persistence.codec_support import written_entries
from nenjim.infrastructure.persistence.codecs import decode_journal_record, encode_journal_record
from nenjim.infrastructure.persistence.errors import ConflictError, SerializationError


class JournalRepository(domain.AgentJournalRepository):
    """Append-only Agent journals with expected-position appends."""

    def __init__(self, view: storage.View, resource: storage.Resource) -> None:
        self._view = view
        self._streams = view.streams(resource)

    @at_boundary
    def append(
        self, agent_id: str, *, expected_position: int, records: Sequence[AgentJournalRecord]
    ) -> tuple[AgentJournalRecord, ...]:
        """Append at ``expected_position``; sequences become ``expected + 1 ...``.

        A record that already carries another sequence than the one it would
        get is a ``ConflictError``. The whole batch is encoded before anything
        is written.
        """
        arguments.key(agent_id, "agent_id")
        arguments.revision(expected_position, "expected_position")
        batch = arguments.batch(records, "records")
        arguments.revision(expected_position + len(batch), "the position after this append")
        entries = []
        for offset, record in enumerate(batch, start=1):
            if not isinstance(record, AgentJournalRecord):
                raise SerializationError(f"not an AgentJournalRecord: {type(record).__name__}")
            if record.agent_id != agent_id:
                raise SerializationError(
                    f"journal record {record.record_id} belongs to {record.agent_id}, "
                    f"not {agent_id}"
                )
            position = expected_position + offset
            if record.sequence not in (None, position):
                raise ConflictError(
                    f"journal record {record.record_id} carries sequence {record.sequence} "
                    f"but would be appended at {position}"
                )
            sequenced = record.with_sequence(position)
            entries.append(storage.AppendEntry(record.record_id, encode_journal_record(sequenced)))

        def write(_: storage.View) -> tuple[AgentJournalRecord, ...]:
            stored = self._streams.append(
                stream=agent_id, expected_head=expected_position, entries=entries
            )
            written_entries(
                stored,
                "journal of Agent",
                stream=agent_id,
                expected_head=expected_position,
                batch=entries,
            )
            return tuple(
                decode_journal_record(entry, agent_id=agent_id, sequence=expected_position + offset)
                for offset, entry in enumerate(stored, start=1)
            )

        return self._view.atomic(write)

    @at_boundary
    def read(
        self, agent_id: str, *, after: int | None = None, limit: int | None = None
    ) -> tuple[AgentJournalRecord, ...]:
        """Records after ``after`` (``None``: from the start), ascending by sequence."""
        arguments.key(agent_id, "agent_id")
        start = 0 if after is None else arguments.revision(after, "after")
        if arguments.optional_page_limit(limit) == 0:
            return ()  # the domain allows an empty page; storage refuses limit 0
        return self._view.atomic(
            lambda _: tuple(
                decode_journal_record(entry, agent_id=agent_id)
                for entry in self._streams.read(stream=agent_id, after=start, limit=limit)
            )
        )

    @at_boundary
    def head(self, agent_id: str) -> int:
        """The last sequence (0 when empty)."""
        arguments.key(agent_id, "agent_id")
        return self._streams.head(stream=agent_id)

    @at_boundary
    def delete(self, agent_id: str) -> None:
        """Empty the journal and purge every record it ever held; the Agent root must exist."""
        arguments.key(agent_id, "agent_id")
        self._streams.purge(stream=agent_id)
