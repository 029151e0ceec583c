"""The selection contract: ``Records.select`` tests, orders and pages payloads alike on
every backend, as :meth:`FieldTest.holds` and :class:`FieldOrder` define."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nenjim.infrastructure.storage import Backend, FieldOrder, FieldTest
from nenjim.infrastructure.storage.testing.resources import INVENTORY_ITEMS, opaque_record
from nenjim.infrastructure.storage.testing.support import StorageContract

VALUES: dict[str, Any] = {
    "absent": None,  # the row has no field at all (its payload leaves it out)
    "null": None,
    "true": True,
    "false": False,
    "zero": 0,
    "one": 1,
    "one_float": 1.0,
    "half": 0.5,
    "big": 2**53 - 1,
    "huge": 1e30,
    "negative": -7,
    "text": "b",
    "text_one": "1",
    "text_true": "true",
    "accented": "é",
    "emoji": "\U0001f600",
    "upper": "B",
    "empty": "",
    "list": [1],
    "object": {"n": 1},
}
"""One row per key, each holding a value of another JSON type or order at ``f``."""

_STRINGS = ("text", "text_one", "text_true", "accented", "emoji", "upper", "empty")


def put_rows(backend: Backend, values: dict[str, Any], *, available: bool = True) -> None:
    """One ``inventory.items`` row per key of ``values``, the value at ``f`` (left out for
    the key ``absent``) beside a nested ``n.f``, in the index ``available``."""
    records = backend.view.records(INVENTORY_ITEMS)
    for key, value in values.items():
        payload: dict[str, Any] = {"n": {"f": value}, "kind": key}
        if key != "absent":
            payload["f"] = value
        records.insert(
            key=key,
            revision=0,
            attributes={
                "code": None,
                "label": key,
                "quantity": 0,
                "reserved": None,
                "available": available,
                "flagged": None,
            },
            record=opaque_record(payload),
        )


def selected(
    backend: Backend,
    where: Sequence[FieldTest] = (),
    order: FieldOrder | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[str]:
    """The keys ``select`` returns of the available rows, in its order."""
    rows = backend.view.records(INVENTORY_ITEMS).select(
        index="available",
        equals={"available": True},
        where=where,
        order=order,
        offset=offset,
        limit=limit,
    )
    return [row.key for row in rows]


def keys_where(test: FieldTest) -> set[str]:
    """The keys of :data:`VALUES` whose rows pass ``test`` by its definition."""
    return {key for key, value in VALUES.items() if test.holds(_payload(key, value))}


def _payload(key: str, value: Any) -> dict[str, Any]:
    return {"kind": key} if key == "absent" else {"f": value, "kind": key}


class StorageSelectionContract(StorageContract):
    """``Records.select``: field tests, orders and pages."""

    @pytest.mark.parametrize(
        ("operator", "operand", "expected"),
        [
            ("eq", 1, {"one", "one_float"}),
            ("eq", 1.0, {"one", "one_float"}),
            ("eq", True, {"true"}),
            ("eq", False, {"false"}),
            ("eq", None, {"null"}),
            ("eq", "1", {"text_one"}),
            ("eq", "b", {"text"}),
            ("eq", "", {"empty"}),
            ("eq", 0, {"zero"}),
            ("eq", -0.0, {"zero"}),
            ("le", -0.0, {"zero", "negative"}),
            ("ne", 1, set(VALUES) - {"one", "one_float", "absent"}),
            ("ne", None, set(VALUES) - {"null", "absent"}),
            ("ne", True, set(VALUES) - {"true", "absent"}),
            ("gt", 0.5, {"one", "one_float", "big", "huge"}),
            ("ge", 1, {"one", "one_float", "big", "huge"}),
            ("lt", 0, {"negative"}),
            ("le", 0.5, {"zero", "half", "negative"}),
            ("gt", 2**52, {"big", "huge"}),
            ("lt", -(2**52), set()),
            ("gt", "b", {"text_true", "accented", "emoji"}),
            ("ge", "b", {"text", "text_true", "accented", "emoji"}),
            ("lt", "b", {"text_one", "upper", "empty"}),
            ("le", "\U0001f600", set(_STRINGS)),
            ("present", None, set(VALUES) - {"absent"}),
        ],
    )
    def test_a_field_test_selects_the_rows_it_holds_for(
        self, make_backend: Any, operator: str, operand: Any, expected: set[str]
    ) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        put_rows(backend, VALUES)
        test = FieldTest(("f",), operator, operand)
        assert keys_where(test) == expected  # the definition, spelled out
        assert set(selected(backend, [test])) == expected
        nested = FieldTest(("n", "f"), operator, operand)
        # A nested field: every row holds ``n.f`` (the absent one a null there).
        assert set(selected(backend, [nested])) == {
            key
            for key, value in VALUES.items()
            if nested.holds({"n": {"f": None if key == "absent" else value}})
        }

    def test_a_path_through_something_not_an_object_finds_nothing(self, make_backend: Any) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        put_rows(backend, VALUES)
        assert selected(backend, [FieldTest(("f", "n"), "present")]) == ["object"]
        assert selected(backend, [FieldTest(("f", "0"), "present")]) == []
        assert selected(backend, [FieldTest(("f", "n"), "ne", 2)]) == ["object"]
        assert selected(backend, [FieldTest(("kind", "x"), "ne", "x")]) == []

    def test_every_test_must_hold_and_the_index_still_narrows(self, make_backend: Any) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        put_rows(backend, VALUES)
        put_rows(backend, {"other": 1}, available=False)
        both = [FieldTest(("f",), "ge", 0), FieldTest(("f",), "lt", 1)]
        assert selected(backend, both) == ["half", "zero"]
        assert selected(backend, [FieldTest(("f",), "eq", 1)]) == ["one", "one_float"]

    def test_names_that_need_quoting_select_as_any_other(self, make_backend: Any) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        names = ["a.b", "[0]", "$", "a b", "it's", "*", "é", "{x}", "?", "%s", "-1"]
        records = backend.view.records(INVENTORY_ITEMS)
        for number, name in enumerate(names):
            records.insert(
                key=f"k{number}",
                revision=0,
                attributes={
                    "code": None,
                    "label": name,
                    "quantity": 0,
                    "reserved": None,
                    "available": True,
                    "flagged": None,
                },
                record=opaque_record({name: {name: number}}),
            )
        for number, name in enumerate(names):
            assert selected(backend, [FieldTest((name, name), "eq", number)]) == [f"k{number}"]

    def test_an_order_by_a_string_field_puts_the_rest_last_by_key(self, make_backend: Any) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        put_rows(backend, {"a": "x", "b": "y", "c": 3, "d": "x", "e": None, "f": "é", "g": "Z"})
        ascending = selected(backend, order=FieldOrder(("f",)))
        assert ascending == ["g", "a", "d", "b", "f", "c", "e"]
        descending = selected(backend, order=FieldOrder(("f",), descending=True))
        assert descending == ["f", "b", "a", "d", "g", "c", "e"]
        assert selected(backend, order=FieldOrder(("missing",), descending=True)) == list("abcdefg")

    def test_a_page_is_cut_after_the_tests_and_the_order(self, make_backend: Any) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        put_rows(backend, {f"k{number}": f"v{9 - number}" for number in range(10)})
        order = FieldOrder(("f",))
        assert selected(backend, order=order, limit=3) == ["k9", "k8", "k7"]
        assert selected(backend, order=order, offset=8) == ["k1", "k0"]
        assert selected(backend, order=order, offset=2, limit=2) == ["k7", "k6"]
        assert selected(backend, offset=9) == ["k9"]
        assert selected(backend, offset=10, limit=5) == []
        wanted = [FieldTest(("f",), "ge", "v5")]
        assert selected(backend, wanted, order, offset=1, limit=2) == ["k3", "k2"]

    def test_a_selection_in_a_transaction_sees_its_own_writes(self, make_backend: Any) -> None:
        backend = make_backend([INVENTORY_ITEMS])
        put_rows(backend, {"a": 1})
        with backend.transaction() as view:
            records = view.records(INVENTORY_ITEMS)
            records.delete(key="a")
            rows = records.select(
                index="available", equals={"available": True}, where=[FieldTest(("f",), "eq", 1)]
            )
            assert rows == ()
        assert selected(backend, [FieldTest(("f",), "eq", 1)]) == []

    @pytest.mark.parametrize(
        ("arguments", "error"),
        [
            ({"offset": -1}, ValueError),
            ({"offset": True}, TypeError),
            ({"limit": 0}, ValueError),
            ({"where": ["f"]}, TypeError),
            ({"order": ("f",)}, TypeError),
        ],
    )
    def test_a_bad_page_or_order_is_refused_before_any_read(
        self, backend: Backend, arguments: dict[str, Any], error: type[Exception]
    ) -> None:
        with pytest.raises(error):
            backend.view.records(INVENTORY_ITEMS).select(
                index="available", equals={"available": True}, **arguments
            )
