"""Whether Persistence can serve over a backend object: checked whole, before any use.

The repositories run on the Storage SPI's own views, so the object must be an
``nenjim.infrastructure.storage.Backend`` (an object that only has the same
attributes is refused), open, with exactly the required capabilities, a
resource mapping that registers every resource of the catalog as the very
object the catalog holds (more resources are fine: stores may be shared),
and a root view. Each failure is an ``UnsupportedBackendError`` naming what
is wrong; a closed backend is the storage layer's ``BackendClosedError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.persistence.errors import UnsupportedBackendError

# What a backend offers Persistence, in the order a reader would look for it.
_PARTS = ("capabilities", "resources", "view", "transaction", "close")


def checked_backend(backend: object) -> storage.Backend:
    """``backend``, if Persistence can serve over it."""
    if not isinstance(backend, storage.Backend):
        raise UnsupportedBackendError(
            f"Persistence needs an nenjim.infrastructure.storage.Backend, got "
            f"{type(backend).__name__}{_hint(backend)}"
        )
    backend.ensure_open()
    storage.validate_capabilities(backend)
    resources = _part(backend, "resources")
    if not isinstance(resources, Mapping):
        raise UnsupportedBackendError(
            "backend.resources must be a mapping of resource ids to Resources, "
            f"got {type(resources).__name__}"
        )
    missing = [r.id for r in CATALOG if r.id not in resources]
    copies = [r.id for r in CATALOG if r.id in resources and resources[r.id] is not r]
    problems = []
    if missing:
        problems.append(f"does not register the catalog resources {_names(missing)}")
    if copies:
        problems.append(f"registers a copy of {_names(copies)}, not the catalog's own object")
    if problems:
        raise UnsupportedBackendError(
            f"backend {'; '.join(problems)}: "
            "build it from nenjim.infrastructure.persistence.CATALOG"
        )
    view = _part(backend, "view")
    if not isinstance(view, storage.View):
        raise UnsupportedBackendError(
            f"backend.view must be an nenjim.infrastructure.storage.View, got {type(view).__name__}"
        )
    return backend


def _part(backend: storage.Backend, name: str) -> Any:
    try:
        return getattr(backend, name)
    except AttributeError as error:
        raise UnsupportedBackendError(f"backend has no {name}: {error}") from error


def _hint(backend: object) -> str:
    if isinstance(backend, str):
        return " (a store URL is opened with Persistence.open(url))"
    missing = [name for name in _PARTS if not hasattr(backend, name)]
    return f" (it lacks {', '.join(missing)})" if missing else ""


def _names(ids: Iterable[str]) -> str:
    return ", ".join(repr(i) for i in ids)
