"""A scratch PostgreSQL schema for a reference implementation under test, dropped afterwards."""

from __future__ import annotations

import uuid
from contextlib import ExitStack

import psycopg


def scratch_schema(stack: ExitStack, url: str) -> str:
    """Create a fresh schema on the server at ``url``; ``stack`` drops it with all it holds."""
    schema = f"ref_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')

    stack.callback(drop)
    return schema
