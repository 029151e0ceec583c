"""The SQL drivers parse and check a stored attributes text once, whatever the number of rows
that hold it: on PostgreSQL the ``jsonb`` column is read as its text, not as a dict parsed
anew for every row."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nenjim.infrastructure.storage import Backend, DurableRecord, open_backend
from nenjim.infrastructure.storage.sql import codec, records
from nenjim.infrastructure.storage.testing.resources import INVENTORY_ITEMS


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(
    request: pytest.FixtureRequest, nenjim_new_store: Callable[[str], str]
) -> Iterator[Backend]:
    opened = open_backend(nenjim_new_store(request.param), [INVENTORY_ITEMS])
    yield opened
    opened.close()


def test_rows_sharing_their_attributes_are_checked_once(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = backend.view.records(INVENTORY_ITEMS)
    label = "shared-label-of-this-test"  # a text no other test's rows hold
    attributes = {
        "code": None,
        "label": label,
        "quantity": 3,
        "reserved": None,
        "available": True,
        "flagged": None,
    }
    for n in range(10):
        items.insert(
            key=f"k{n}",
            revision=0,
            attributes=attributes,
            record=DurableRecord("test.item", "0.1", {"n": n}),
        )
    checked: list[Any] = []
    check = codec.attributes

    def counted(resource: Any, value: Any) -> Any:
        checked.append(value)
        return check(resource, value)

    monkeypatch.setattr(codec, "attributes", counted)
    records._attributes_of_text.cache_clear()
    for _ in range(3):
        rows = items.scan(index="available", equals={"available": True})
        assert [row.key for row in rows] == [f"k{n}" for n in range(10)]
        assert all(row.attributes["label"] == label for row in rows)
    assert len(checked) == 1
