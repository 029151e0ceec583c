"""A database's answer to ``Records.select`` is the Python definition's, on random payloads
and random selections: the SQL drivers' JSON functions are held to ``FieldTest.holds``
and ``FieldOrder`` (numbers of every kind, strings past ASCII, nulls, booleans, nesting,
absent fields and names that need quoting)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nenjim.infrastructure.storage import (
    Backend,
    DurableRecord,
    FieldOrder,
    FieldTest,
    Resource,
    open_backend,
)
from nenjim.infrastructure.storage.canonical_json import MAX_SAFE_INTEGER
from nenjim.infrastructure.storage.selection import Selection, selectable_operand
from nenjim.testing.plugin import NewStore

ROWS = Resource(
    "selection.rows", "records", attributes={"group": "string"}, indexes={"group": ("group",)}
)
NAMES = ("a", "b", "a.b", "é", "[0]")
NUMBERS = st.one_of(
    st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
    st.sampled_from([0, 1, -1, 2, 0.5, 1.0, 2.0, -0.5, 1e16, 1e20, 1e30, 2**53 - 1, 0.1]),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != 0 or str(x) == "0.0"),
)
TEXTS = st.one_of(
    st.sampled_from(["", "a", "b", "B", "é", "\U0001f600", "a\u00e9", "1"]),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=4),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXTS)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)
    ),
    max_leaves=6,
)
PAYLOADS = st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=4)
PATHS = st.lists(st.sampled_from(NAMES), min_size=1, max_size=2).map(tuple)
OPERANDS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.floats(-(2.0**52), 2.0**52, allow_nan=False),
    st.sampled_from([-0.0, 0.0, 0.5, 1.0]),
    TEXTS,
)


def _leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each value in ``value`` reached through objects only, with its path."""
    if path:
        yield path, value
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _leaves(inner, (*path, name))


def _selection_strategy(payloads: list[dict[str, Any]]) -> st.SearchStrategy[Selection]:
    """Selections whose paths and operands are mostly the payloads' own, so that tests meet
    equal values, values of other types at the same path, and near misses."""
    found = [leaf for payload in payloads for leaf in _leaves(payload)]
    paths = st.one_of(PATHS, st.sampled_from([path for path, _ in found])) if found else PATHS
    pairs = st.tuples(paths, OPERANDS)
    scalars = [(path, value) for path, value in found if not isinstance(value, dict | list)]
    if scalars:
        # A scalar's own path and value: equal values, and the boundaries of ordered tests.
        leaves = st.sampled_from(scalars)
        pairs = st.one_of(pairs, leaves, leaves, leaves)

    @st.composite
    def field_tests(draw: st.DrawFn) -> FieldTest:
        operator = draw(st.sampled_from(["eq", "ne", "gt", "ge", "lt", "le", "present"]))
        path, operand = draw(pairs)
        if operator == "present":
            return FieldTest(path, operator)
        if not selectable_operand(operator, operand):
            operand = draw(OPERANDS.filter(lambda x: selectable_operand(operator, x)))
        return FieldTest(path, operator, operand)

    # Mostly one test and the whole answer: a mismatch of one test is not hidden by
    # another test or the page's cut.
    return st.builds(
        Selection,
        tests=st.one_of(st.tuples(field_tests()), st.lists(field_tests(), max_size=3).map(tuple)),
        order=st.one_of(st.none(), st.builds(FieldOrder, paths, st.booleans())),
        offset=st.sampled_from([0, 0, 0, 1, 3]),
        limit=st.one_of(st.none(), st.none(), st.integers(1, 5)),
    )


_groups = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, nenjim_new_store: NewStore) -> Iterator[Backend]:
    """A backend of ``selection.rows`` on a fresh store of a SQL kind."""
    opened = open_backend(nenjim_new_store(request.param), [ROWS])
    yield opened
    opened.close()


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_database_selects_what_the_definition_selects(
    backend: Backend, data: st.DataObject
) -> None:
    payloads = data.draw(st.lists(PAYLOADS, min_size=1, max_size=8), label="payloads")
    selections = data.draw(st.lists(_selection_strategy(payloads), min_size=1), label="selections")
    group = f"g{next(_groups)}"  # each example's rows apart from the others'
    records = backend.view.records(ROWS)
    for number, payload in enumerate(payloads):
        records.insert(
            key=f"{group}-{number}",
            revision=0,
            attributes={"group": group},
            record=DurableRecord("selection.row", "1.0", payload),
        )
    rows = records.scan(index="group", equals={"group": group})
    # Every operator against the payloads' own values (the boundaries of every test), and
    # an order by each of their paths (rows with a string there and rows without).
    scalars = [
        (path, value)
        for payload in payloads
        for path, value in _leaves(payload)
        if not isinstance(value, dict | list)
    ]
    boundaries = [
        Selection((FieldTest(path, operator, value),))
        for path, value in scalars[:6]
        for operator in ("eq", "ne", "gt", "ge", "lt", "le")
        if selectable_operand(operator, value)
    ]
    boundaries += [
        Selection(order=FieldOrder(path, descending))
        for path, _ in scalars[:3]
        for descending in (False, True)
    ]
    for selection in [*boundaries, *selections]:
        found = records.select(
            index="group",
            equals={"group": group},
            where=selection.tests,
            order=selection.order,
            offset=selection.offset,
            limit=selection.limit,
        )
        wanted = selection.apply(rows)
        assert [row.key for row in found] == [row.key for row in wanted], selection
