"""Durable state for agents, teams and workflows over the Storage SPI.

``Persistence(backend)`` validates the backend and exposes the eight
repositories; ``Persistence.in_memory()`` and ``Persistence.open(url)`` build
one. Errors live in ``domain.persistence.errors``; the resource catalog in
``domain.persistence.catalog``.
"""

from domain.persistence.catalog import CATALOG
from domain.persistence.persistence import CAPABILITIES, Persistence
from domain.persistence.repository_set import Repositories

__all__ = ["CAPABILITIES", "CATALOG", "Persistence", "Repositories"]
