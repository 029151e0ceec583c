"""Store administration: what the command line, the server and the log client use.

``nenjim.cli``, ``nenjim.serve`` and ``nenjim.client`` import this package,
the public Journal API (``nenjim.journal`` and its ``model``, ``valuetypes``
and ``exception``), and nothing else of nenjim (an import contract in
``pyproject.toml`` keeps it so). By topic:

- :mod:`nenjim.admin.stores`: which store a command uses (``--store``,
  ``$NENJIM_STORE_URL``, ``--journal``), loading a Journal root in memory or
  on a store, reading a store's Journal log, giving a store to a moved root;
- :mod:`nenjim.admin.draft`: a successor draft of an artifact's head;
- :mod:`nenjim.admin.audits`: audits and repairs of the Journal log and of
  durable state;
- :mod:`nenjim.admin.transfer`: export and import of a store's logs;
- :mod:`nenjim.admin.projections`: the status and rebuild of projections;
- :mod:`nenjim.admin.transparency`: keys, checkpoints, proofs, and what a
  server of the transparency log answers;
- :mod:`nenjim.admin.json_output`: the JSON documents of ``--json`` and the
  server;
- :mod:`nenjim.admin.errors`: every error they tell apart, in one list.

Every long task takes a :data:`Progress` observer (:func:`silent` shows nothing).
"""

from nenjim.infrastructure.store.progress import Progress, silent

__all__ = ["Progress", "silent"]
