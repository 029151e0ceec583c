"""``nenjim serve``: the Journal over HTTP, read-only."""
