"""The conformance kit holds a backend to the interfaces, not to the project's words.

A third-party backend brings a driver of its own, whose errors are worded as
its author likes: the driver interface specifies each error's class and its
attributes (``NotFoundError.resource``/``.key``,
``UniqueConstraintError.resource``/``.constraint``), never its message. Here
every storage error the in-memory driver raises is raised again with other
words and the same class and attributes, and the whole kit passes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nenjim.infrastructure.memory.storage import InMemoryDriver
from nenjim.infrastructure.storage import (
    Backend,
    NotFoundError,
    Resource,
    StorageError,
    UniqueConstraintError,
)
from nenjim.infrastructure.storage.driver import StorageDriver
from nenjim.infrastructure.storage.testing import BackendFactory, StorageConformanceContract
from nenjim.infrastructure.storage.testing.resources import (
    FIXTURE_RESOURCES,
    INVENTORY_ITEMS,
    OWNER,
    ROOTS,
    opaque_record,
)

OWN_WORDS = "the store declined"


def _reworded(error: StorageError) -> StorageError:
    """``error``'s class and attributes, with this driver's own words."""
    cls = type(error)
    again = cls.__new__(cls)
    again.args = (f"{OWN_WORDS} ({cls.__name__})",)
    again.__dict__.update(vars(error))
    return again


def _in_own_words(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: object, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except StorageError as error:
            raise _reworded(error) from None

    return call


class OwnWordsDriver(InMemoryDriver):
    """The in-memory driver, every operation's storage error in other words."""


# Every operation of the driver interface; a transaction's body is the caller's code.
for _name, _member in vars(StorageDriver).items():
    if callable(_member) and not _name.startswith("_") and _name not in ("transaction", "close"):
        setattr(OwnWordsDriver, _name, _in_own_words(getattr(InMemoryDriver, _name)))


class OwnWordsBackend(Backend):
    """A backend built as a third party would: the SPI's core over its own driver."""

    def __init__(self, resources: Sequence[Resource]) -> None:
        super().__init__(resources, OwnWordsDriver())


@pytest.fixture
def make_backend() -> BackendFactory:
    """A fresh backend over the driver of other words per call."""

    def make(resources: Sequence[Resource]) -> Backend:
        return OwnWordsBackend(resources)

    return make


class TestTheKitOnADriverOfOtherWords(StorageConformanceContract):
    """Every contract of the kit, on a driver that words its errors its own way."""


def test_the_driver_really_words_its_errors_its_own_way() -> None:
    backend = OwnWordsBackend(FIXTURE_RESOURCES)
    with pytest.raises(NotFoundError) as missing:
        backend.view.records(ROOTS).replace(
            key=OWNER, expected_revision=0, next_revision=1, attributes={}, record=opaque_record()
        )
    assert str(missing.value) == f"{OWN_WORDS} (NotFoundError)"
    assert (missing.value.resource, missing.value.key) == (ROOTS.id, OWNER)
    item = {
        "code": "c",
        "label": "l",
        "quantity": 1,
        "reserved": None,
        "available": True,
        "flagged": None,
    }
    items = backend.view.records(INVENTORY_ITEMS)
    items.insert(key="a", revision=0, attributes=item, record=opaque_record())
    with pytest.raises(UniqueConstraintError) as unique:
        items.insert(key="b", revision=0, attributes=item, record=opaque_record())
    assert str(unique.value) == f"{OWN_WORDS} (UniqueConstraintError)"
    assert (unique.value.resource, unique.value.constraint) == (INVENTORY_ITEMS.id, "unique_code")
