"""The Storage SPI 2 conformance kit: pytest contracts any backend can reuse.

The kit is shipped with the package (it is not collected by itself) and is
what the project's own drivers run. A backend proves conformance by
subclassing the contract classes in its own test module and providing one
fixture, ``make_backend``: a callable that takes a sequence of
:class:`~nenjim.infrastructure.storage.Resource` objects and returns a fresh, empty
backend registered over exactly those (identical) objects. Tearing the
backend down (closing pools, deleting files or schemas) is that fixture's
business; it may be called more than once per test.

.. code-block:: python

    # tests/test_my_backend_conformance.py
    from collections.abc import Callable, Iterator, Sequence

    import pytest

    from nenjim.infrastructure.storage import Backend, Resource
    from nenjim.infrastructure.storage.testing import StorageConformanceContract
    from my_package import MyBackend


    @pytest.fixture
    def make_backend(tmp_path) -> Iterator[Callable[[Sequence[Resource]], Backend]]:
        opened: list[MyBackend] = []

        def make(resources: Sequence[Resource]) -> Backend:
            backend = MyBackend(resources=resources, path=tmp_path / f"{len(opened)}.db")
            opened.append(backend)
            return backend

        yield make
        for backend in opened:
            backend.close()


    class TestMyBackend(StorageConformanceContract):
        pass

``StorageConformanceContract`` bundles every contract. They can also be
subclassed one by one (each needs the same ``make_backend`` fixture):

* :class:`StoragePrimitivesContract` — records, streams, blobs, guards,
  ``check()``, view expiry, thread binding, root-handle routing, the
  failed-scope rule.
* :class:`StorageTransactionContract` — nested savepoints through
  ``with backend.transaction()`` and ``run_in_transaction``, validation before
  physical work, base exceptions and generators, concurrent writers.
* :class:`StorageDeclarationContract` — Resource declarations and how a
  backend resolves them.
* :class:`StorageGuardsContract` — every guard kind under every write and
  every condition kind: anchors locked (``delete_matching`` included), and
  conditions a guard cannot cover refused before any physical work.
* :class:`StorageNamesContract` — one naming rule for every backend: names
  that are not SQL identifiers work wherever a name goes, and the names the
  rule refuses are refused by ``Resource(...)`` itself.
* :class:`StorageValidationContract` — scalar, attribute and record
  validation of every handle.
* :class:`StorageValuesContract` — capabilities, the error taxonomy,
  ``DurableRecord`` and entry values.
* :class:`StorageLifecycleContract` — ``close()`` (every later operation is a
  ``BackendClosedError``) and scopes closed out of order (``TransactionError``,
  everything they and their nested scopes wrote rolled back).
* :class:`StorageLimitsContract` — signed 64-bit integers, no NUL or lone
  surrogate in any text, 512-byte keys and indexed values, 1536-byte index
  width, payloads nested at most 100 deep, ``check()`` arguments as lists.
* :class:`StoragePurgeContract` — purges of records, streams (whole or
  before a position) and blobs: nothing purged reads back, everything else
  does, a failed scope purges nothing, a purged key is written again.
* :class:`StorageSelectionContract` — ``Records.select``: tests of payload
  fields, an order by a string field and a page, giving the same rows in the
  same order on every backend.
* :class:`StorageReadTogetherContract` — ``View.read_together``: each
  prepared read answers what its own call does, in order, inside and outside
  a transaction; a bad read is refused when prepared.

The kit registers its own fixture resources (``agent.roots``,
``agent.executions``, ``agent.journal``, ``content.blobs``,
``workflow.states`` and ``inventory.items``; see
:mod:`nenjim.infrastructure.storage.testing.resources`), so a backend that needs a
physical mapping per resource must be able to map those. The concurrency
tests use real threads; a backend must therefore accept root-view calls from
any thread. The whole kit is meant to stay fast (seconds on an in-memory
backend); a hanging helper thread fails its test after ten seconds.
"""

from __future__ import annotations

from nenjim.infrastructure.storage.testing.declarations import StorageDeclarationContract
from nenjim.infrastructure.storage.testing.guards import StorageGuardsContract
from nenjim.infrastructure.storage.testing.lifecycle import StorageLifecycleContract
from nenjim.infrastructure.storage.testing.limits import StorageLimitsContract
from nenjim.infrastructure.storage.testing.names import StorageNamesContract
from nenjim.infrastructure.storage.testing.primitives import StoragePrimitivesContract
from nenjim.infrastructure.storage.testing.purges import StoragePurgeContract
from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES
from nenjim.infrastructure.storage.testing.selections import StorageSelectionContract
from nenjim.infrastructure.storage.testing.support import BackendFactory, StorageContract
from nenjim.infrastructure.storage.testing.together import StorageReadTogetherContract
from nenjim.infrastructure.storage.testing.transactions import StorageTransactionContract
from nenjim.infrastructure.storage.testing.validation import StorageValidationContract
from nenjim.infrastructure.storage.testing.values import StorageValuesContract


class StorageConformanceContract(
    StoragePrimitivesContract,
    StorageTransactionContract,
    StorageDeclarationContract,
    StorageNamesContract,
    StorageGuardsContract,
    StorageValidationContract,
    StorageValuesContract,
    StorageLifecycleContract,
    StorageLimitsContract,
    StoragePurgeContract,
    StorageSelectionContract,
    StorageReadTogetherContract,
):
    """Every storage contract of the kit in one class; subclass it and add ``make_backend``."""


__all__ = [
    "FIXTURE_RESOURCES",
    "BackendFactory",
    "StorageConformanceContract",
    "StorageContract",
    "StorageDeclarationContract",
    "StorageGuardsContract",
    "StorageLifecycleContract",
    "StorageLimitsContract",
    "StorageNamesContract",
    "StoragePrimitivesContract",
    "StoragePurgeContract",
    "StorageReadTogetherContract",
    "StorageSelectionContract",
    "StorageTransactionContract",
    "StorageValidationContract",
    "StorageValuesContract",
]
