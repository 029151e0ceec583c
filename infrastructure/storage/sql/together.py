"""Several queries answered by one statement: ``View.read_together`` on the SQL stores.

Each query keeps its own text, parameters, filter, order and limit, as a subquery; the
statement is their ``UNION ALL``, each row tagged with its query's place and its columns
given a range of their own (the others ``NULL``, typed as the database types them), so
that no column mixes the types of two queries. One statement is one round trip on
PostgreSQL without its pipeline mode, whose every step hands the interpreter lock to
another thread, and one snapshot of the database for all the queries. ``UNION ALL``
keeps every row, but SQL promises no order across it: each query's rows come back in
the order :class:`Query` names, sorted again by their first column if the database gave
them otherwise (a key's code points order it as its UTF-8 bytes do)."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import NamedTuple

from nenjim.infrastructure.storage.sql.dialect import Dialect
from nenjim.infrastructure.storage.sql.session import Row


class Query(NamedTuple):
    """One query of a statement: its template, parameters, and a NULL of each of its
    columns as the database types it (:attr:`Dialect.record_nulls`). Its rows are in
    ascending order of their first column (a key, a position)."""

    template: str
    params: Sequence[object]
    nulls: tuple[str, ...]


def statement(dialect: Dialect, queries: Sequence[Query]) -> tuple[str, list[object]]:
    """The template and parameters of the one statement answering ``queries`` (built once
    per sequence of templates)."""
    shape = ("together", *((query.template, query.nulls) for query in queries))
    template = dialect.statements.get(shape)
    if template is None:
        parts = []
        for place, query in enumerate(queries):
            before = [null for other in queries[:place] for null in other.nulls]
            after = [null for other in queries[place + 1 :] for null in other.nulls]
            columns = ", ".join([str(place), *before, f"q{place}.*", *after])
            parts.append(f"SELECT {columns} FROM ({query.template}) AS q{place}")
        template = dialect.statements[shape] = " UNION ALL ".join(parts)
    return template, [param for query in queries for param in query.params]


def answers(queries: Sequence[Query], rows: Sequence[Row]) -> list[list[Row]]:
    """Each query's rows, in its order, out of the statement's tagged ``rows``."""
    found: list[list[Row]] = [[] for _ in queries]
    starts, start = [], 1
    for query in queries:
        starts.append(start)
        start += len(query.nulls)
    for row in rows:
        place = row[0]
        begin = starts[place]
        found[place].append(row[begin : begin + len(queries[place].nulls)])
    for part in found:
        firsts = [row[0] for row in part]
        if firsts != sorted(firsts):
            part.sort(key=itemgetter(0))
    return found
