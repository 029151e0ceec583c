"""Following the storage log: safe positions, tracked projections, wake-ups.

A projection over ``storage_events`` keeps its rows and its position in the
same store, written in one transaction (:mod:`.tracking`); a follower reads
the events after that position in log order (:mod:`.log`), applies them and
commits, and waits for more (:mod:`.follower`). On PostgreSQL the order is
``(transaction_id, notification_id)`` and only events of transactions that
no running transaction can still precede are read, so a follower never
passes an event that commits later.
"""
