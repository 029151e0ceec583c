"""The read-together contract: ``View.read_together`` answers each prepared read exactly as
its own call does, in order, inside and outside a transaction, and refuses what its own
call refuses when the read is prepared."""

from __future__ import annotations

from typing import Any

import pytest

from nenjim.infrastructure.storage import AppendEntry, Backend
from nenjim.infrastructure.storage.testing.resources import (
    INVENTORY_ITEMS,
    PLAIN_LOG,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import StorageContract


def _item(backend: Backend, key: str, available: bool) -> None:
    backend.view.records(INVENTORY_ITEMS).insert(
        key=key,
        revision=0,
        attributes={
            "code": None,
            "label": key,
            "quantity": 0,
            "reserved": None,
            "available": available,
            "flagged": None,
        },
        record=opaque_record({"k": key}),
    )


def filled(backend: Backend) -> None:
    """Items ``a``, ``b``, ``d`` (available) and ``c``, entries ``e0`` to ``e3`` of the plain
    log's stream ``s``, and the workflow state ``state``: what these reads read."""
    for key, available in (("b", True), ("a", True), ("c", False), ("d", True)):
        _item(backend, key, available)
    backend.view.streams(PLAIN_LOG).append(
        stream="s",
        expected_head=0,
        entries=[AppendEntry(f"e{n}", opaque_record({"n": n})) for n in range(4)],
    )
    backend.view.records(WORKFLOW_STATES).insert(
        key="state", revision=0, attributes={}, record=opaque_record({"step": 1})
    )


class StorageReadTogetherContract(StorageContract):
    """``View.read_together`` of prepared stream reads, record scans and record reads."""

    @pytest.fixture
    def reads_backend(self, make_backend: Any) -> Backend:
        """A fresh backend of the resources these tests read (the kit's ``backend`` lacks
        an unguarded stream resource)."""
        made: Backend = make_backend([INVENTORY_ITEMS, PLAIN_LOG, WORKFLOW_STATES])
        return made

    def test_each_read_answers_what_its_own_call_answers(self, reads_backend: Backend) -> None:
        filled(reads_backend)
        view = reads_backend.view
        items, log, states = (
            view.records(INVENTORY_ITEMS),
            view.streams(PLAIN_LOG),
            view.records(WORKFLOW_STATES),
        )
        answers = view.read_together(
            log.prepared_read(stream="s"),
            items.prepared_scan(index="available", equals={"available": True}),
            states.prepared_read("state"),
            log.prepared_read(stream="s", after=1, limit=2),
            items.prepared_scan(index="available", equals={"available": True}, after="a", limit=1),
            states.prepared_read("missing"),
            log.prepared_read(stream="missing"),
            items.prepared_scan(index="available", equals={"available": False}),
        )
        assert answers == (
            log.read(stream="s"),
            items.scan(index="available", equals={"available": True}),
            states.read("state"),
            log.read(stream="s", after=1, limit=2),
            items.scan(index="available", equals={"available": True}, after="a", limit=1),
            None,
            (),
            items.scan(index="available", equals={"available": False}),
        )
        assert [entry.id for entry in answers[0]] == ["e0", "e1", "e2", "e3"]
        assert [row.key for row in answers[1]] == ["a", "b", "d"]
        assert [entry.position for entry in answers[3]] == [2, 3]
        assert [row.key for row in answers[4]] == ["b"]
        assert answers[2] is not None
        assert answers[2].record.payload == {"step": 1}

    def test_one_read_and_none(self, reads_backend: Backend) -> None:
        filled(reads_backend)
        view = reads_backend.view
        (only,) = view.read_together(view.records(WORKFLOW_STATES).prepared_read("state"))
        assert only == view.records(WORKFLOW_STATES).read("state")
        assert view.read_together() == ()

    def test_answers_are_the_callers_own(self, reads_backend: Backend) -> None:
        filled(reads_backend)
        view = reads_backend.view
        states = view.records(WORKFLOW_STATES)
        (first,) = view.read_together(states.prepared_read("state"))
        assert first is not None
        first.record.payload["step"] = 99
        (second,) = view.read_together(states.prepared_read("state"))
        assert second is not None
        assert second.record.payload == {"step": 1}

    def test_in_a_transaction_the_reads_see_its_own_writes(self, reads_backend: Backend) -> None:
        filled(reads_backend)
        with reads_backend.transaction() as view:
            view.records(INVENTORY_ITEMS).delete(key="a")
            view.streams(PLAIN_LOG).append(
                stream="s", expected_head=4, entries=[AppendEntry("e4", opaque_record())]
            )
            scan, log = view.read_together(
                view.records(INVENTORY_ITEMS).prepared_scan(
                    index="available", equals={"available": True}
                ),
                view.streams(PLAIN_LOG).prepared_read(stream="s", after=3),
            )
            assert [row.key for row in scan] == ["b", "d"]
            assert [entry.id for entry in log] == ["e3", "e4"]
        # Committed: the root view reads the same.
        root = reads_backend.view
        (log,) = root.read_together(root.streams(PLAIN_LOG).prepared_read(stream="s"))
        assert len(log) == 5

    def test_a_read_in_a_read_only_scope(self, reads_backend: Backend) -> None:
        filled(reads_backend)
        with reads_backend.reading() as view:
            (scan,) = view.read_together(
                view.records(INVENTORY_ITEMS).prepared_scan(
                    index="available", equals={"available": False}
                )
            )
        assert [row.key for row in scan] == ["c"]

    @pytest.mark.parametrize(
        ("prepare", "error"),
        [
            (
                lambda v: v.records(INVENTORY_ITEMS).prepared_scan(index="nope", equals={}),
                ValueError,
            ),
            (
                lambda v: v.records(INVENTORY_ITEMS).prepared_scan(
                    index="available", equals={"available": "yes"}
                ),
                TypeError,
            ),
            (
                lambda v: v.records(INVENTORY_ITEMS).prepared_scan(
                    index="available", equals={"available": True}, limit=0
                ),
                ValueError,
            ),
            (lambda v: v.records(WORKFLOW_STATES).prepared_read(""), ValueError),
            (lambda v: v.streams(PLAIN_LOG).prepared_read(stream="s", after=-1), ValueError),
            (lambda v: v.streams(PLAIN_LOG).prepared_read(stream=7), TypeError),
        ],
    )
    def test_a_bad_read_is_refused_when_prepared(
        self, reads_backend: Backend, prepare: Any, error: type[Exception]
    ) -> None:
        with pytest.raises(error):
            prepare(reads_backend.view)

    def test_what_is_not_a_prepared_read_is_refused(self, reads_backend: Backend) -> None:
        with pytest.raises(TypeError, match="not a prepared read"):
            reads_backend.view.read_together(("plain.log", "s"))  # type: ignore[arg-type]

    def test_a_read_prepared_on_another_backend_is_refused(self, make_backend: Any) -> None:
        first = make_backend([INVENTORY_ITEMS])
        other_items = type(INVENTORY_ITEMS)(
            INVENTORY_ITEMS.id, "records", attributes={"label": "string"}
        )
        second = make_backend([other_items])
        prepared = first.view.records(INVENTORY_ITEMS).prepared_read("a")
        with pytest.raises(ValueError, match="not registered"):
            second.view.read_together(prepared)
