"""Shared plumbing of the conformance kit: the fixture contract and small helpers."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pytest

from nenjim.infrastructure.storage import Backend, NotFoundError, Resource
from nenjim.infrastructure.storage.testing.resources import (
    CONTENT_BLOBS,
    FIXTURE_RESOURCES,
    OWNER,
    ROOTS,
    opaque_record,
)

_T = TypeVar("_T")

BackendFactory = Callable[[Sequence[Resource]], Backend]
"""What the ``make_backend`` fixture returns: resources in, a fresh empty backend out."""

INVALID_ARGUMENT = (ValueError, TypeError)
"""For the few argument errors where the API leaves ValueError vs TypeError open."""

OWNER_ROOT_REVISION = 7
"""The revision of the ``agent.roots`` row :data:`OWNER` every test starts with."""

THREAD_TIMEOUT = 10.0
"""Seconds a helper thread may take; a hang fails the test instead of freezing the run."""


class StorageContract:
    """Base of every contract class: turns the ``make_backend`` fixture into ``backend``.

    A subclass in the backend's own test module provides ``make_backend``, a
    callable ``(resources) -> Backend`` returning a fresh, empty backend over
    exactly those (identical) Resource objects. Every test then starts with
    one row: the ``agent.roots`` anchor :data:`OWNER` at revision 7, which
    guarded executions and journal streams need.
    """

    @pytest.fixture
    def backend(self, make_backend: BackendFactory) -> Backend:
        """A fresh backend over :data:`FIXTURE_RESOURCES`."""
        return make_backend(FIXTURE_RESOURCES)

    @pytest.fixture(autouse=True)
    def _owner_root(self, backend: Backend) -> None:
        """Insert the owner's anchor row (one fixture for every contract, so they combine)."""
        backend.view.records(ROOTS).insert(
            key=OWNER, revision=OWNER_ROOT_REVISION, attributes={}, record=opaque_record()
        )


@dataclass(frozen=True)
class ThreadOutcome(Generic[_T]):
    """What a helper thread returned or raised."""

    value: _T | None
    error: BaseException | None


def start_thread(function: Callable[[], _T]) -> Callable[[], ThreadOutcome[_T]]:
    """Run ``function`` on a new thread now; the returned callable joins it."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as error:  # handed back to the test thread
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def join() -> ThreadOutcome[_T]:
        thread.join(THREAD_TIMEOUT)
        if thread.is_alive():
            raise AssertionError(f"helper thread did not finish within {THREAD_TIMEOUT}s")
        return ThreadOutcome(box.get("value"), box.get("error"))

    return join


def in_thread(function: Callable[[], _T]) -> ThreadOutcome[_T]:
    """Run ``function`` on another thread and wait for it."""
    return start_thread(function)()


def assign(target: object, name: str, value: object) -> None:
    """Attribute assignment the type checker lets through, to prove immutability."""
    setattr(target, name, value)


def set_item(target: Any, key: object, value: object) -> None:
    """Item assignment on a value typed read-only, to prove it is read-only."""
    target[key] = value


def content_key(text: str) -> str:
    """A content-addressed blob key for ``text`` (the storage layer does not check it)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def put_content(view: Any, text: str) -> str:
    """Store ``text`` in ``content.blobs`` through ``view``; returns its key."""
    key = content_key(text)
    view.blobs(CONTENT_BLOBS).put_if_absent(
        key=key, data=text.encode("utf-8"), attributes={"canonicalization_version": 1}
    )
    return key


def content_exists(view: Any, key: str) -> bool:
    """Whether ``content.blobs`` holds ``key`` as seen through ``view``."""
    return bool(view.blobs(CONTENT_BLOBS).exists(key))


def remove(target: object, name: str) -> None:
    """Attribute deletion the type checker lets through, to prove immutability."""
    delattr(target, name)


def assert_names_missing(error: object, resource: str, key: str) -> None:
    """``error`` is a ``NotFoundError`` naming the missing row ``resource``/``key`` by its
    attributes (what the driver interface specifies; its message is the driver's own)."""
    assert isinstance(error, NotFoundError), error
    assert (error.resource, error.key) == (resource, key), (error.resource, error.key)
