"""Read models as pure folds of a log's events: of nenjim they know the domain only.

Reading a log for them, and persisting what they fold, is glue that sits
next to its user (``nenjim.journal.impl.ref.chain_log``,
``nenjim.infrastructure.persistence.agent_runs``) on the one projection store
(``nenjim.infrastructure.tracking.projections``).
"""
