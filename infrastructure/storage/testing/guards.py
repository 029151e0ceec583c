"""Guards: every write of a guarded resource locks its anchor, and every condition kind
on every guard kind either works or is refused before any physical work.

The guard kinds: none; a root anchored to itself by key; records anchored to
another resource's row their key names; records anchored through an
immutable attribute; streams anchored through their name.

- Every write of a guarded row (insert, replace, delete, ``delete_matching``,
  append, stream delete) finds and locks the row's anchor first: a missing
  anchor is a ``NotFoundError`` naming it, and nothing is written.
  ``delete_matching`` locks the anchor of every row it deletes, in the order
  ``check()`` locks its guards (by resource id, then key bytes), before any row.
- ``RevisionIs`` needs the anchor of its record among the guards: the key's
  own on a resource guarded via its key; on one guarded through an attribute,
  the anchor the stored row names. A row that names an anchor the check does
  not lock fails the condition.
- ``StreamHeadIs`` needs the anchor its stream names.
- ``NoRows`` needs the anchor ``equals`` names through the guard attribute.
  On a resource guarded via its key (a root included) no guard keeps a scan
  empty, since each row is guarded by the anchor its own key names: such a
  ``NoRows`` is refused when it is built with the ``Resource`` object, or by
  ``check()`` given the id, with a ``ValueError`` saying why.

A refusal (``ValueError``) comes before any physical work, so it never fails
the enclosing transaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    ConditionFailedError,
    GuardRef,
    NoRows,
    NotFoundError,
    RevisionIs,
    StreamHeadIs,
    UnsupportedBackendError,
    View,
)
from nenjim.infrastructure.storage.testing.resources import (
    EXECUTIONS,
    GUARD_RESOURCES,
    INVENTORY_ITEMS,
    JOURNAL,
    OWNER,
    PLAIN_LOG,
    ROOTS,
    SETTINGS,
    TIERED_ROOTS,
    WORKFLOW_STATES,
    opaque_record,
)
from nenjim.infrastructure.storage.testing.support import (
    OWNER_ROOT_REVISION,
    BackendFactory,
    StorageContract,
    assert_names_missing,
)

OTHER = "owner-2"
"""A second ``agent.roots`` row every test has beside :data:`OWNER`."""

_REFUSALS = itertools.count()
"""Numbers the rows written after refusals, so each is new."""

GONE = "owner-gone"
"""An owner whose root row is deleted once its children are written."""


def _execution(view: View, key: str, owner: str, *, active: bool = False) -> None:
    view.records(EXECUTIONS).insert(
        key=key, revision=0, attributes={"owner": owner, "active": active}, record=opaque_record()
    )


def _setting(view: View, owner: str, theme: str = "dark") -> None:
    view.records(SETTINGS).insert(
        key=owner, revision=0, attributes={"theme": theme}, record=opaque_record()
    )


class StorageGuardsContract(StorageContract):
    """Every guard kind under every write and every condition kind."""

    @pytest.fixture
    def guarded(self, make_backend: BackendFactory) -> Backend:
        """A fresh backend over :data:`GUARD_RESOURCES` with two owners' roots."""
        backend = make_backend(GUARD_RESOURCES)
        for owner, revision in ((OWNER, OWNER_ROOT_REVISION), (OTHER, 0)):
            backend.view.records(ROOTS).insert(
                key=owner, revision=revision, attributes={}, record=opaque_record()
            )
        return backend

    def _orphans(self, backend: Backend) -> None:
        """Children of every guard kind under :data:`GONE`, whose root is then deleted."""
        view = backend.view
        view.records(ROOTS).insert(key=GONE, revision=0, attributes={}, record=opaque_record())
        _execution(view, "run-gone", GONE)
        _setting(view, GONE)
        view.streams(JOURNAL).append(
            stream=GONE, expected_head=0, entries=[AppendEntry("e", opaque_record())]
        )
        view.records(ROOTS).delete(key=GONE)

    # writes ---------------------------------------------------------------------------

    def test_every_write_under_a_missing_anchor_is_refused_naming_it(
        self, guarded: Backend
    ) -> None:
        self._orphans(guarded)
        view = guarded.view
        record = opaque_record()
        writes: dict[str, Callable[[], object]] = {
            "attribute guard: insert": lambda: _execution(view, "run-new", GONE),
            "attribute guard: replace": lambda: view.records(EXECUTIONS).replace(
                key="run-gone",
                expected_revision=0,
                next_revision=1,
                attributes={"owner": GONE, "active": True},
                record=record,
            ),
            "attribute guard: delete": lambda: view.records(EXECUTIONS).delete(key="run-gone"),
            "attribute guard: delete_matching": lambda: view.records(EXECUTIONS).delete_matching(
                index="owner", equals={"owner": GONE}
            ),
            "key guard: insert": lambda: _setting(view, "never-a-root"),
            "key guard: replace": lambda: view.records(SETTINGS).replace(
                key=GONE,
                expected_revision=0,
                next_revision=1,
                attributes={"theme": "light"},
                record=record,
            ),
            "key guard: delete": lambda: view.records(SETTINGS).delete(key=GONE),
            "key guard: delete_matching": lambda: view.records(SETTINGS).delete_matching(
                index="theme", equals={"theme": "dark"}
            ),
            "stream guard: append": lambda: view.streams(JOURNAL).append(
                stream=GONE, expected_head=1, entries=[AppendEntry("f", record)]
            ),
            "stream guard: delete": lambda: view.streams(JOURNAL).delete(stream=GONE),
        }
        for what, write in writes.items():
            with pytest.raises(NotFoundError) as missing:
                write()
            expected_key = "never-a-root" if what == "key guard: insert" else GONE
            assert (missing.value.resource, missing.value.key) == (ROOTS.id, expected_key), what
        # Nothing was written: every child is as it was.
        assert view.records(EXECUTIONS).fetch("run-gone").revision == 0
        assert view.records(SETTINGS).fetch(GONE).revision == 0
        assert view.streams(JOURNAL).head(stream=GONE) == 1

    def test_delete_matching_locks_the_anchor_of_every_row_it_deletes(
        self, guarded: Backend
    ) -> None:
        """A resource guarded via its key: each row's anchor is its own key's."""
        view = guarded.view
        for owner in (OWNER, OTHER):
            _setting(view, owner)
        self._orphans(guarded)
        settings = view.records(SETTINGS)
        with pytest.raises(NotFoundError) as missing:
            settings.delete_matching(index="theme", equals={"theme": "dark"})
        assert_names_missing(missing.value, ROOTS.id, GONE)
        with pytest.raises(NotFoundError):
            settings.delete(key=GONE)  # the same guard
        dark = settings.scan(index="theme", equals={"theme": "dark"})
        assert [row.key for row in dark] == sorted([OWNER, OTHER, GONE], key=str.encode)
        # With every anchor there, every matching row goes, and only those.
        view.records(ROOTS).insert(key=GONE, revision=0, attributes={}, record=opaque_record())
        settings.replace(
            key=OTHER,
            expected_revision=0,
            next_revision=1,
            attributes={"theme": "light"},
            record=opaque_record(),
        )
        settings.delete_matching(index="theme", equals={"theme": "dark"})
        assert settings.read(OWNER) is None
        assert settings.read(GONE) is None
        assert settings.fetch(OTHER).attributes["theme"] == "light"

    def test_delete_matching_on_a_root_deletes_the_matching_anchors(self, guarded: Backend) -> None:
        tiered = guarded.view.records(TIERED_ROOTS)
        for key, tier in (("a", "gold"), ("b", "free"), ("c", "gold")):
            tiered.insert(key=key, revision=0, attributes={"tier": tier}, record=opaque_record())
        tiered.delete_matching(index="tier", equals={"tier": "gold"})
        assert [row.key for row in tiered.scan(index="tier", equals={"tier": "free"})] == ["b"]
        assert tiered.read("a") is None
        assert tiered.read("c") is None

    def test_delete_matching_without_a_guard_locks_nothing_and_deletes(
        self, guarded: Backend
    ) -> None:
        items = guarded.view.records(INVENTORY_ITEMS)
        attributes = {
            "code": None,
            "label": "l",
            "quantity": 1,
            "reserved": None,
            "available": False,
            "flagged": None,
        }
        items.insert(key="i", revision=0, attributes=attributes, record=opaque_record())
        items.delete_matching(index="available", equals={"available": False})
        assert items.read("i") is None

    # conditions and guards --------------------------------------------------------------

    def _assert_refused(self, backend: Backend, check: Callable[[View], object]) -> None:
        """``check`` is a ValueError before any physical work: the scope goes on."""
        key = f"after-refusal-{next(_REFUSALS)}"
        with backend.transaction() as view:
            with pytest.raises(ValueError, match=r"."):
                check(view)
            view.records(WORKFLOW_STATES).insert(
                key=key, revision=0, attributes={}, record=opaque_record()
            )
        assert backend.view.records(WORKFLOW_STATES).read(key) is not None

    def test_revision_is_without_a_guard(self, guarded: Backend) -> None:
        states = guarded.view.records(WORKFLOW_STATES)
        states.insert(key="wf", revision=3, attributes={}, record=opaque_record())
        assert guarded.view.check(guards=[], conditions=[RevisionIs(WORKFLOW_STATES, "wf", 3)])
        for stale in (RevisionIs(WORKFLOW_STATES, "wf", 2), RevisionIs(WORKFLOW_STATES, "no", 0)):
            with pytest.raises(ConditionFailedError) as failed:
                guarded.view.check(guards=[], conditions=[stale])
            assert failed.value.condition is stale

    @pytest.mark.parametrize("resource", [ROOTS, SETTINGS], ids=["root", "key guard"])
    def test_revision_is_on_a_resource_guarded_via_its_key(
        self, guarded: Backend, resource: Any
    ) -> None:
        if resource is SETTINGS:
            _setting(guarded.view, OWNER)
        revision = OWNER_ROOT_REVISION if resource is ROOTS else 0
        guards = [GuardRef(ROOTS, OWNER)]
        assert guarded.view.check(guards=guards, conditions=[RevisionIs(resource, OWNER, revision)])
        stale = RevisionIs(resource.id, OWNER, revision + 1)
        with pytest.raises(ConditionFailedError) as failed:
            guarded.view.check(guards=guards, conditions=[stale])
        assert failed.value.condition is stale
        current = RevisionIs(resource, OWNER, revision)
        self._assert_refused(guarded, lambda view: view.check(guards=[], conditions=[current]))
        others = [GuardRef(ROOTS, OTHER)]
        self._assert_refused(guarded, lambda view: view.check(guards=others, conditions=[current]))

    def test_revision_is_on_a_resource_guarded_through_an_attribute(self, guarded: Backend) -> None:
        """The anchor the stored row names must be among the guards."""
        view = guarded.view
        _execution(view, "mine", OWNER)
        _execution(view, "theirs", OTHER)
        mine = [GuardRef(ROOTS, OWNER)]
        assert view.check(guards=mine, conditions=[RevisionIs(EXECUTIONS, "mine", 0)])
        both = [GuardRef(ROOTS, OTHER), GuardRef(ROOTS, OWNER)]
        assert view.check(
            guards=both,
            conditions=[RevisionIs(EXECUTIONS, "mine", 0), RevisionIs(EXECUTIONS.id, "theirs", 0)],
        )
        for failing in (
            RevisionIs(EXECUTIONS, "mine", 1),  # another revision
            RevisionIs(EXECUTIONS, "missing", 0),  # no row
            RevisionIs(EXECUTIONS, "theirs", 0),  # a row under an anchor not locked
        ):
            with pytest.raises(ConditionFailedError) as failed:
                view.check(guards=mine, conditions=[failing])
            assert failed.value.condition is failing
        # No guard on the anchor resource at all: no row could be covered.
        self._assert_refused(
            guarded,
            lambda scope: scope.check(guards=[], conditions=[RevisionIs(EXECUTIONS, "mine", 0)]),
        )

    def test_stream_head_is_with_and_without_a_guard(self, guarded: Backend) -> None:
        view = guarded.view
        view.streams(PLAIN_LOG).append(
            stream="s", expected_head=0, entries=[AppendEntry("e", opaque_record())]
        )
        assert view.check(guards=[], conditions=[StreamHeadIs(PLAIN_LOG, "s", 1)])
        head = StreamHeadIs(JOURNAL, OWNER, 0)
        assert view.check(guards=[GuardRef(ROOTS, OWNER)], conditions=[head])
        stale = StreamHeadIs(PLAIN_LOG, "s", 0)
        with pytest.raises(ConditionFailedError) as failed:
            view.check(guards=[], conditions=[stale])
        assert failed.value.condition is stale
        self._assert_refused(guarded, lambda scope: scope.check(guards=[], conditions=[head]))
        others = [GuardRef(ROOTS, OTHER)]
        self._assert_refused(guarded, lambda scope: scope.check(guards=others, conditions=[head]))

    def test_no_rows_without_a_guard_and_through_a_guard_attribute(self, guarded: Backend) -> None:
        view = guarded.view
        assert view.check(guards=[], conditions=[NoRows(INVENTORY_ITEMS, "code", {"code": "x"})])
        _execution(view, "busy", OWNER, active=True)
        idle = NoRows(EXECUTIONS, "owner_active", {"owner": OTHER, "active": True})
        assert view.check(guards=[GuardRef(ROOTS, OTHER)], conditions=[idle])
        busy = NoRows(EXECUTIONS.id, "owner_active", {"owner": OWNER, "active": True})
        with pytest.raises(ConditionFailedError) as failed:
            view.check(guards=[GuardRef(ROOTS, OWNER)], conditions=[busy])
        assert failed.value.condition is busy
        self._assert_refused(guarded, lambda scope: scope.check(guards=[], conditions=[idle]))
        with pytest.raises(ValueError, match=r"."):  # the guard attribute is not in equals
            NoRows(EXECUTIONS, "owner_active", {"active": True})

    @pytest.mark.parametrize("resource", [SETTINGS, TIERED_ROOTS], ids=["key guard", "root"])
    def test_no_rows_on_a_resource_guarded_via_its_key_is_refused(
        self, guarded: Backend, resource: Any
    ) -> None:
        index = "theme" if resource is SETTINGS else "tier"
        with pytest.raises(ValueError, match=r"."):
            NoRows(resource, index, {index: "x"})
        by_id = NoRows(resource.id, index, {index: "x"})  # the resource unknown until check()
        self._assert_refused(guarded, lambda view: view.check(guards=[], conditions=[by_id]))
        owners = [GuardRef(ROOTS, OWNER)]
        self._assert_refused(guarded, lambda view: view.check(guards=owners, conditions=[by_id]))

    def test_a_condition_on_the_wrong_kind_of_resource_is_unsupported(
        self, guarded: Backend
    ) -> None:
        for condition in (
            RevisionIs(JOURNAL, OWNER, 0),
            StreamHeadIs(ROOTS, OWNER, 0),
            NoRows(PLAIN_LOG, "i", {}),
        ):
            with pytest.raises(UnsupportedBackendError):
                guarded.view.check(guards=[], conditions=[condition])
