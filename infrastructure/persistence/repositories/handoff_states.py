"""Handoff states: one per main Agent, revision starts at 1."""

from __future__ import annotations

from nenjim.domain.agents import HandoffState
from nenjim.domain.persistence import repositories as domain
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.boundary import at_boundary
from nenjim.infrastructure.persistence.codec_support import written_row
from nenjim.infrastructure.persistence.codecs import (
    decode_handoff_state,
    encode_handoff_state,
    handoff_state_attributes,
)
from nenjim.infrastructure.persistence.errors import ConflictError, SerializationError
from nenjim.infrastructure.persistence.repositories.roots import decoded_or_none


class HandoffStateRepository(domain.HandoffStateRepository):
    """``load``/``save``/``delete`` of the Handoff anchor of a main Agent."""

    def __init__(self, view: storage.View, resource: storage.Resource) -> None:
        self._view = view
        self._records = view.records(resource)

    @at_boundary
    def load(self, main_agent_id: str) -> HandoffState | None:
        """The state, or ``None`` when the anchor is absent."""
        arguments.key(main_agent_id, "main_agent_id")
        return self._view.atomic(
            lambda _: decoded_or_none(self._records.read(main_agent_id), decode_handoff_state)
        )

    @at_boundary
    def save(
        self, main_agent_id: str, *, expected_revision: int | None, state: HandoffState
    ) -> HandoffState:
        """Insert at 1 (``expected_revision`` None) or replace N with N + 1."""
        arguments.key(main_agent_id, "main_agent_id")
        expected = arguments.optional_revision(expected_revision, "expected_revision")
        revision = 1 if expected is None else expected + 1
        record = encode_handoff_state(state)  # refuses anything but a HandoffState
        if state.main_agent_id != main_agent_id:
            raise SerializationError(
                f"handoff state of {state.main_agent_id!r} saved under {main_agent_id!r}"
            )
        if state.handoff_revision != revision:
            raise SerializationError(
                f"handoff state revision {state.handoff_revision} must be {revision}"
            )
        attributes = arguments.attributes(self._records.resource, handoff_state_attributes(state))

        def write(_: storage.View) -> HandoffState:
            if expected is None:
                entry = self._records.insert(
                    key=main_agent_id, revision=revision, attributes=attributes, record=record
                )
            else:
                try:
                    entry = self._records.replace(
                        key=main_agent_id,
                        expected_revision=expected,
                        next_revision=revision,
                        attributes=attributes,
                        record=record,
                    )
                except storage.NotFoundError as error:
                    raise ConflictError(
                        f"handoff state of {main_agent_id} does not exist"
                    ) from error
            return decode_handoff_state(
                written_row(
                    entry,
                    "handoff state",
                    key=main_agent_id,
                    revision=revision,
                    attributes=attributes,
                    record=record,
                )
            )

        return self._view.atomic(write)

    @at_boundary
    def delete(self, main_agent_id: str, *, expected_revision: int) -> None:
        """Checked delete that purges every stored revision of the state from the log."""
        arguments.key(main_agent_id, "main_agent_id")
        arguments.revision(expected_revision, "expected_revision")

        def erase(_: storage.View) -> None:
            self._records.delete(key=main_agent_id, expected_revision=expected_revision)
            self._records.purge(key=main_agent_id)

        self._view.atomic(erase)
