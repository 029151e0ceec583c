"""Workflow snapshots: inserted at revision 1, then compare-and-swap."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from nenjim.domain.persistence import repositories as domain
from nenjim.domain.persistence.repositories import Revision
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import arguments
from nenjim.infrastructure.persistence.boundary import at_boundary
from nenjim.infrastructure.persistence.codec_support import written_row
from nenjim.infrastructure.persistence.codecs import decode_workflow_state, encode_workflow_state
from nenjim.infrastructure.persistence.errors import ConflictError
from nenjim.infrastructure.persistence.repositories.roots import decoded_or_none


class WorkflowStateRepository(domain.WorkflowStateRepository):
    """``load``/``save``/``delete`` of Workflow snapshots by instance id."""

    def __init__(self, view: storage.View, resource: storage.Resource) -> None:
        self._view = view
        self._records = view.records(resource)

    @at_boundary
    def load(self, workflow_instance_id: str) -> Mapping[str, Any] | None:
        """``None``, or a read-only ``{"snapshot": {...}, "revision": N}`` (a fresh copy)."""
        arguments.key(workflow_instance_id, "workflow_instance_id")
        state = self._view.atomic(
            lambda _: decoded_or_none(
                self._records.read(workflow_instance_id),
                lambda entry: decode_workflow_state(
                    entry, workflow_instance_id=workflow_instance_id
                ),
            )
        )
        if state is None:
            return None
        return MappingProxyType({"snapshot": state.snapshot, "revision": state.workflow_revision})

    @at_boundary
    def save(
        self,
        workflow_instance_id: str,
        *,
        expected_revision: int | None,
        snapshot: Mapping[str, Any],
    ) -> int:
        """Insert at 1 (``expected_revision`` None) or replace N with N + 1; returns it."""
        arguments.key(workflow_instance_id, "workflow_instance_id")
        expected = arguments.optional_revision(expected_revision, "expected_revision")
        revision = 1 if expected is None else expected + 1
        record = encode_workflow_state(
            workflow_instance_id, workflow_revision=revision, snapshot=snapshot
        )

        def write(_: storage.View) -> int:
            if expected is None:
                entry = self._records.insert(
                    key=workflow_instance_id, revision=revision, attributes={}, record=record
                )
            else:
                try:
                    entry = self._records.replace(
                        key=workflow_instance_id,
                        expected_revision=expected,
                        next_revision=revision,
                        attributes={},
                        record=record,
                    )
                except storage.NotFoundError as error:
                    raise ConflictError(
                        f"workflow state {workflow_instance_id} is not at revision {expected}: "
                        "it does not exist"
                    ) from error
            written_row(
                entry,
                "workflow state",
                key=workflow_instance_id,
                revision=revision,
                attributes={},
                record=record,
            )
            return revision

        return self._view.atomic(write)

    @at_boundary
    def delete(self, workflow_instance_id: str, *, expected_revision: int) -> None:
        """Checked delete that purges: a wrong revision or a missing row is a ``ConflictError``.

        Every snapshot ever stored under the id is erased from the log with the
        row (``history`` is empty afterwards), in the caller's transaction.
        """
        arguments.key(workflow_instance_id, "workflow_instance_id")
        arguments.revision(expected_revision, "expected_revision")

        def erase(_: storage.View) -> None:
            self._records.delete(key=workflow_instance_id, expected_revision=expected_revision)
            self._records.purge(key=workflow_instance_id)

        self._view.atomic(erase)

    @at_boundary
    def history(self, workflow_instance_id: str) -> tuple[Revision[Mapping[str, Any]], ...]:
        """Every stored snapshot, oldest first, with the time the log recorded it."""
        arguments.key(workflow_instance_id, "workflow_instance_id")
        return self._view.atomic(
            lambda _: tuple(
                Revision(
                    entry.revision,
                    MappingProxyType(dict(decode_workflow_state(entry).snapshot)),
                    entry.recorded_at,
                )
                for entry in self._records.history(workflow_instance_id)
            )
        )
