"""Every store failure raised under ``nenjim.infrastructure`` derives from ``StoreError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import nenjim.infrastructure
from nenjim.infrastructure.log.transfer.format import ExportFormatError
from nenjim.infrastructure.store.errors import StoreError
from nenjim.infrastructure.store.urls import UnsupportedStoreError

NOT_STORE_FAILURES = {
    # Arguments refused before any store is touched (``ValueError``): a URL naming no
    # store, a file that is not a log export.
    UnsupportedStoreError,
    ExportFormatError,
}


def _exception_classes() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    package = nenjim.infrastructure
    for module_info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not value.__name__.startswith("_")  # a driver's own control flow
            ):
                found.add(value)
    return found


def test_every_store_failure_derives_from_store_error() -> None:
    classes = _exception_classes()
    assert classes >= NOT_STORE_FAILURES
    outside = {
        f"{error.__module__}.{error.__qualname__}"
        for error in classes - NOT_STORE_FAILURES
        if not issubclass(error, StoreError)
    }
    assert outside == set()
    assert not any(issubclass(error, StoreError) for error in NOT_STORE_FAILURES)
