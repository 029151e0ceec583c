"""LangGraph checkpointers on nenjim's append-only log (``pip install 'nenjim[langgraph]'``).

::

    from nenjim.langgraph import NenjimSaver

    with NenjimSaver.from_conn_string("sqlite:state.db") as saver:
        graph = builder.compile(checkpointer=saver)

``AsyncNenjimSaver`` is the same checkpointer for ``async with``. Store URLs:
``memory:``, ``sqlite:path.db`` and ``postgresql://...?schema=...``. See
``docs/langgraph.md``.
"""

from __future__ import annotations

try:
    from nenjim.infrastructure.langgraph.saver import AsyncNenjimSaver, NenjimSaver
    from nenjim.infrastructure.langgraph.store.store import AsyncNenjimStore, NenjimStore
except ModuleNotFoundError as missing:  # pragma: no cover - exercised in a fresh interpreter
    if missing.name is None or not missing.name.startswith(("langgraph", "langchain_core")):
        raise
    raise ModuleNotFoundError(
        f"nenjim.langgraph needs LangGraph's checkpoint package ({missing.name} is missing): "
        "pip install 'nenjim[langgraph]'",
        name=missing.name,
    ) from missing

from nenjim.infrastructure.langgraph.catalog import CATALOG
from nenjim.infrastructure.langgraph.errors import CheckpointConflictError, CheckpointPurgedError

__all__ = [
    "CATALOG",
    "AsyncNenjimSaver",
    "AsyncNenjimStore",
    "CheckpointConflictError",
    "CheckpointPurgedError",
    "NenjimSaver",
    "NenjimStore",
]
