"""The ``memory:`` store kind: everything a store held in this process needs."""
