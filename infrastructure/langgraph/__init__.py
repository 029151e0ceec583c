"""A LangGraph checkpointer on the Storage SPI: LangGraph threads as streams of the log.

The public entry point is ``nenjim.langgraph`` (``NenjimSaver``,
``AsyncNenjimSaver``). The parts: the resource ``catalog`` (importable
without LangGraph), the ``stored`` shapes, the ``values`` (content-addressed
blobs), the ``checkpoint_log`` (the operations on a backend), ``history``
(a thread as of a time), ``delta`` (what a ``DeltaChannel`` is rebuilt
from), ``presence`` (whether a store holds a thread log) and the ``saver``
classes, the only module that imports LangGraph.
"""
