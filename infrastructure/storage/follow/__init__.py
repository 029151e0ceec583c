"""Following the storage log: safe positions, schema support, inspection.

A projection over ``storage_events`` keeps its rows and its position in the
same store, written in one transaction
(:mod:`nenjim.infrastructure.tracking.projections`); it reads the events after
its position in log order (:mod:`.log`), folds them, writes, and waits for
more (:mod:`nenjim.infrastructure.tracking.follow`). On PostgreSQL the order is
``(transaction_id, notification_id)`` and only events of transactions that
no running transaction can still precede are read, so a follower never
passes an event that commits later.
"""
