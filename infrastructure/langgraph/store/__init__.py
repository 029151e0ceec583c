"""LangGraph's long-term memory Store (``BaseStore``) on the Storage SPI.

The public entry point is ``nenjim.langgraph`` (``NenjimStore``,
``AsyncNenjimStore``). The parts: the resource ``catalog`` (importable
without LangGraph), the ``codec`` (storage keys, index attributes, the
stored payload), ``matching`` (filters, namespace conditions and order),
the ``operations`` on a backend, the ``sweeper`` thread of TTL purges, and
the ``store`` classes. See "The long-term memory Store" in
``docs/langgraph.md``.
"""
