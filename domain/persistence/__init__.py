"""Durable state for agents, teams and workflows over the Storage SPI.

``Persistence(backend)`` validates the backend and exposes the eight
repositories; ``Persistence.in_memory()`` and ``Persistence.open(url)`` build
one. Errors live in ``domain.persistence.errors``; the resource catalog in
``domain.persistence.catalog``. The names below load on first use, so the
error contract (``domain.persistence.errors``) imports without the storage
drivers.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "CAPABILITIES": "domain.persistence.persistence",
    "Persistence": "domain.persistence.persistence",
    "CATALOG": "domain.persistence.catalog",
    "Repositories": "domain.persistence.repository_set",
}

__all__ = ["CAPABILITIES", "CATALOG", "Persistence", "Repositories"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
