"""Persistence: the domain repositories over the Storage SPI, adapter of ``domain.persistence``.

The entry point is :class:`Persistence`::

    from infrastructure.persistence import Persistence

    p = Persistence.open("sqlite:state.db")  # or "memory:", "postgresql://..."

``Persistence`` implements the interfaces of
:mod:`domain.persistence.repositories` and raises the errors of
:mod:`domain.persistence.errors`, as the classes of ``errors`` here, which
are the Storage SPI's errors of the same names too. The modules here are its
parts: the resource ``catalog``, the record ``codecs`` (with
``codec_support``), the ``repositories``, the ``content_store``, the
``arguments`` checks, the ``errors`` and the error ``boundary``. Opening a
store imports only its own driver.
"""

from infrastructure.persistence.catalog import CATALOG
from infrastructure.persistence.persistence import CAPABILITIES, Persistence
from infrastructure.persistence.repository_set import Repositories

__all__ = ["CAPABILITIES", "CATALOG", "Persistence", "Repositories"]
