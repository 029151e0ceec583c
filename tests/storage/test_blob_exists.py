"""``Blobs.exists`` asks the driver's ``blob_exists``, whose default answers from a fetch:
a driver written before the operation existed answers as the built-in drivers do, which
read no bytes."""

from __future__ import annotations

from typing import Any

import pytest

from nenjim.infrastructure.memory.storage import InMemoryDriver
from nenjim.infrastructure.storage import Backend, Resource
from nenjim.infrastructure.storage.driver import StorageDriver
from nenjim.infrastructure.storage.testing.resources import CONTENT_BLOBS, FIXTURE_RESOURCES


class CountingDriver(InMemoryDriver):
    """The in-memory driver, counting the blobs it fetches."""

    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[str] = []

    def fetch_blob(self, ctx: Any, resource: Resource, key: str) -> Any:
        self.fetched.append(key)
        return super().fetch_blob(ctx, resource, key)


class DefaultExistsDriver(CountingDriver):
    """A driver that leaves ``blob_exists`` to the interface's default."""

    blob_exists = StorageDriver.blob_exists


@pytest.mark.parametrize(
    ("driver_class", "fetches"),
    [(DefaultExistsDriver, ["blob", "other"]), (CountingDriver, [])],
    ids=["interface default", "memory driver"],
)
def test_whether_a_blob_exists(driver_class: type[CountingDriver], fetches: list[str]) -> None:
    driver = driver_class()
    blobs = Backend(FIXTURE_RESOURCES, driver).view.blobs(CONTENT_BLOBS)
    blobs.put_if_absent(key="blob", data=b"bytes", attributes={"canonicalization_version": 1})
    assert (blobs.exists("blob"), blobs.exists("other")) == (True, False)
    assert driver.fetched == fetches
