"""``Persistence(backend)`` checks the whole backend object before it serves anything.

Whatever is wrong with the object — not a storage backend at all, missing or
ill-typed capabilities, a resource catalog that is not a mapping, lacks
resources or holds copies of them, a root view that is not a view — is an
``UnsupportedBackendError`` (both the domain's and the storage SPI's) that
names what is wrong; never a raw ``AttributeError``. A closed backend is a
``BackendClosedError``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from nenjim.domain.persistence import errors as perr
from nenjim.infrastructure import storage
from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.persistence import CATALOG, Persistence, Repositories
from nenjim.infrastructure.persistence.agent_runs import AgentRuns
from nenjim.infrastructure.storage import REQUIRED_CAPABILITIES, Resource

EXTRA = Resource("test.extra", "records")


def _refused(backend: Any, *names: str) -> perr.UnsupportedBackendError:
    """``Persistence(backend)`` is refused with a message naming each of ``names``."""
    with pytest.raises(perr.UnsupportedBackendError) as raised:
        Persistence(backend)
    assert isinstance(raised.value, storage.UnsupportedBackendError)
    for name in names:
        assert name in str(raised.value), (name, str(raised.value))
    return raised.value


@pytest.fixture
def working() -> Iterator[InMemoryBackend]:
    """A backend built from the catalog, whose parts the look-alikes borrow."""
    backend = InMemoryBackend(CATALOG)
    yield backend
    backend.close()


@pytest.mark.parametrize(
    "backend",
    [None, 7, "memory:", object(), InMemoryBackend],
    ids=["None", "int", "text", "object", "class"],
)
def test_an_object_that_is_no_backend_is_refused(backend: Any) -> None:
    _refused(backend, "nenjim.infrastructure.storage.Backend", type(backend).__name__)


def test_a_look_alike_without_resources_is_refused_naming_what_it_lacks(
    working: InMemoryBackend,
) -> None:
    look_alike = SimpleNamespace(
        capabilities=dict(REQUIRED_CAPABILITIES),
        view=working.view,
        transaction=working.transaction,
    )
    error = _refused(look_alike, "nenjim.infrastructure.storage.Backend", "resources", "close")
    assert "capabilities" not in str(error).split("lacks", 1)[-1]


def test_a_complete_look_alike_is_refused_too(working: InMemoryBackend) -> None:
    """The repositories run on the storage layer's own views: quacking is not enough."""
    look_alike = SimpleNamespace(
        capabilities=dict(REQUIRED_CAPABILITIES),
        resources=working.resources,
        view=working.view,
        transaction=working.transaction,
        close=working.close,
    )
    _refused(look_alike, "nenjim.infrastructure.storage.Backend", "SimpleNamespace")


class _Broken(InMemoryBackend):
    """An in-memory backend whose ``parts`` answer in place of its own attributes (an
    exception in ``parts`` is raised when the attribute is read)."""

    def __init__(self, parts: dict[str, Any]) -> None:
        super().__init__(CATALOG)
        self.parts = parts

    def __getattribute__(self, name: str) -> Any:
        parts = object.__getattribute__(self, "__dict__").get("parts", {})
        if name in parts:
            value = parts[name]
            if isinstance(value, BaseException):
                raise value
            return value
        return super().__getattribute__(name)


@pytest.mark.parametrize(
    ("parts", "names"),
    [
        ({"resources": AttributeError("resources")}, ["resources"]),
        ({"resources": list(CATALOG)}, ["resources", "mapping", "list"]),
        ({"resources": None}, ["resources", "mapping", "NoneType"]),
        ({"resources": {}}, ["agent.roots", "workflow.states", "CATALOG"]),
        ({"view": None}, ["view", "NoneType"]),
        ({"view": AttributeError("view")}, ["view"]),
        ({"capabilities": AttributeError("capabilities")}, ["capabilities"]),
        ({"capabilities": [("spi_version", 2)]}, ["capabilities"]),
        ({"capabilities": {**REQUIRED_CAPABILITIES, "spi_version": 2.0}}, ["spi_version"]),
        ({"capabilities": {**REQUIRED_CAPABILITIES, "record_cas": 1}}, ["record_cas"]),
        ({"capabilities": {}}, ["spi_version", "nested_savepoints"]),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_a_backend_with_a_broken_part_is_refused_naming_it(
    parts: dict[str, Any], names: list[str]
) -> None:
    backend = _Broken(parts)
    try:
        _refused(backend, *names)
    finally:
        backend.parts = {}
        backend.close()


def test_every_missing_catalog_resource_is_named() -> None:
    backend = InMemoryBackend(
        [r for r in CATALOG if r.id not in ("agent.journal", "content.blobs")]
    )
    try:
        error = _refused(backend, "agent.journal", "content.blobs")
        assert "agent.roots" not in str(error)
    finally:
        backend.close()


def test_every_copied_catalog_resource_is_named() -> None:
    copies = [
        Resource(r.id, r.kind, attributes=dict(r.attributes)) if r.id == "workflow.states" else r
        for r in CATALOG
    ]
    backend = InMemoryBackend(copies)
    try:
        _refused(backend, "workflow.states", "copy")
    finally:
        backend.close()


def test_a_backend_with_more_resources_than_the_catalog_is_served() -> None:
    backend = InMemoryBackend([*CATALOG, EXTRA])
    persistence = Persistence(backend)
    try:
        assert persistence.agents is not None
        assert persistence.backend is backend
    finally:
        persistence.close()


def test_a_closed_backend_is_refused_as_closed() -> None:
    backend = InMemoryBackend(CATALOG)
    backend.close()
    with pytest.raises(perr.BackendClosedError) as raised:
        Persistence(backend)
    assert isinstance(raised.value, storage.BackendClosedError)


class _Capabilities(InMemoryBackend):
    def __init__(self, capabilities: Mapping[str, Any]) -> None:
        super().__init__(CATALOG)
        self._capabilities = capabilities

    @property
    def capabilities(self) -> Mapping[str, Any]:
        return self._capabilities


def test_required_capabilities_beside_extra_ones_are_served() -> None:
    backend = _Capabilities({**REQUIRED_CAPABILITIES, "vendor_feature": True})
    persistence = Persistence(backend)
    persistence.close()


@pytest.mark.parametrize("url", [None, 3, b"memory:", ["memory:"]], ids=repr)
def test_open_refuses_a_url_that_is_not_text(url: Any) -> None:
    with pytest.raises(TypeError, match="str"):
        Persistence.open(url)


@pytest.mark.parametrize("function", [None, "tx", 3], ids=repr)
def test_run_in_transaction_refuses_what_it_cannot_call(function: Any) -> None:
    persistence = Persistence.in_memory()
    try:
        with pytest.raises(TypeError, match="function must be callable"):
            persistence.run_in_transaction(function)
        assert persistence.backend.current_scope() is None
    finally:
        persistence.close()


@pytest.mark.parametrize("view", [None, "view", object()], ids=["None", "text", "object"])
def test_repositories_over_what_is_no_view_are_refused(view: Any) -> None:
    with pytest.raises(TypeError, match=r"infrastructure\.storage\.View"):
        Repositories(view)


@pytest.mark.parametrize(
    ("interval", "error"), [("1", TypeError), (True, TypeError), (-1, ValueError)], ids=repr
)
def test_follow_refuses_a_poll_interval_that_is_no_number_of_seconds(
    interval: Any, error: type[Exception]
) -> None:
    persistence = Persistence.in_memory()
    stopped = threading.Event()
    stopped.set()  # a follow that took the interval returns at once instead of running on
    try:
        runs = AgentRuns(persistence.backend)
        with pytest.raises(error, match="poll_interval"):
            runs.follow(stopped, poll_interval=interval)
    finally:
        persistence.close()


def test_follow_refuses_an_on_applied_it_cannot_call() -> None:
    persistence = Persistence.in_memory()
    stopped = threading.Event()
    stopped.set()
    try:
        with pytest.raises(TypeError, match="on_applied must be callable"):
            AgentRuns(persistence.backend).follow(stopped, on_applied=5)  # type: ignore[arg-type]
    finally:
        persistence.close()


@pytest.mark.parametrize("stop", [None, True, "stop"], ids=repr)
def test_follow_refuses_a_stop_that_is_no_event(stop: Any) -> None:
    persistence = Persistence.in_memory()
    try:
        with pytest.raises(TypeError, match=r"stop must be a threading\.Event"):
            AgentRuns(persistence.backend).follow(stop)
    finally:
        persistence.close()
