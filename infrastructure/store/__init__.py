"""The store spine: what both logs share whatever the store kind."""
