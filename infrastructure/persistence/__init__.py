"""Persistence: the domain repositories over the Storage SPI (``nenjim.domain.persistence``).

The entry point is :class:`Persistence`::

    from nenjim.infrastructure.persistence import Persistence

    p = Persistence.open("sqlite:state.db")  # or "memory:", "postgresql://..."

``Persistence`` implements the interfaces of
:mod:`nenjim.domain.persistence.repositories` and raises the errors of
:mod:`nenjim.domain.persistence.errors`, as the classes of ``errors`` here, which
are the Storage SPI's errors of the same names too. The modules here are its
parts: the resource ``catalog``, the record ``codecs`` (with
``codec_support``), the ``repositories``, the ``content_store``, the
``arguments`` checks, the ``errors`` and the error ``boundary``. Opening a
store imports only its own driver.
"""

from nenjim.infrastructure.persistence.catalog import CATALOG
from nenjim.infrastructure.persistence.persistence import CAPABILITIES, Persistence
from nenjim.infrastructure.persistence.repository_set import Repositories

__all__ = ["CAPABILITIES", "CATALOG", "Persistence", "Repositories"]
