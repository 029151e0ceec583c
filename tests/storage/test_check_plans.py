"""``check()`` resolves a condition once per backend: what it keeps never outlives its catalog."""

from __future__ import annotations

import pytest

from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.storage import (
    DurableRecord,
    GuardRef,
    NoRows,
    Resource,
    RevisionIs,
    StreamHeadIs,
    UnsupportedBackendError,
)
from nenjim.infrastructure.storage.testing.resources import EXECUTIONS, JOURNAL, ROOTS, ROOTS_ID

RECORD = DurableRecord("test.root", "1.0", {})


ITEMS = Resource(
    "guarded.items",
    "records",
    attributes={"owner": "string", "kind": "string"},
    immutable_attributes=("owner",),
    indexes={"kind": ("kind",)},
    guard={"resource": ROOTS_ID, "via": "owner"},
)


TIERED = Resource(
    ROOTS_ID,
    "records",
    attributes={"tier": "string"},
    indexes={"tier": ("tier",)},
    guard={"resource": ROOTS_ID, "via": "key"},
)
"""Roots with an index: each row its own anchor."""


def _guarded() -> InMemoryBackend:
    backend = InMemoryBackend(resources=[ROOTS, EXECUTIONS, JOURNAL, ITEMS])
    backend.view.records(ROOTS).insert(key="owner", revision=0, attributes={}, record=RECORD)
    return backend


def test_a_condition_checked_on_two_backends_resolves_in_each() -> None:
    guarded = _guarded()
    unguarded = InMemoryBackend(resources=[Resource(ROOTS_ID, "records")])
    unguarded.view.records(ROOTS_ID).insert(key="owner", revision=0, attributes={}, record=RECORD)
    condition = RevisionIs(ROOTS_ID, "owner", 0)
    assert guarded.view.check(guards=[GuardRef(ROOTS_ID, "owner")], conditions=[condition])
    assert unguarded.view.check(guards=[], conditions=[condition])
    with pytest.raises(ValueError, match="needs GuardRef"):
        guarded.view.check(guards=[], conditions=[condition])
    other = InMemoryBackend(resources=[Resource("other", "records")])
    with pytest.raises(UnsupportedBackendError, match="unknown resource"):
        other.view.check(guards=[], conditions=[condition])


def test_a_condition_checked_again_is_held_to_each_call_s_guards() -> None:
    backend = _guarded()
    guard = GuardRef(ROOTS, "owner")
    conditions = [
        RevisionIs(ROOTS, "owner", 0),
        StreamHeadIs(JOURNAL, "owner", 0),
        NoRows(EXECUTIONS, "owner_active", {"owner": "owner", "active": True}),
    ]
    for _ in range(2):
        assert backend.view.check(guards=[guard], conditions=conditions)
        for condition in conditions:
            with pytest.raises(ValueError, match=r"needs GuardRef\('agent.roots', 'owner'\)"):
                backend.view.check(guards=[GuardRef(ROOTS, "other")], conditions=[condition])


def test_a_condition_that_cannot_be_resolved_fails_every_time() -> None:
    """Built with ids, the resources are known only to ``check()``: it refuses them each
    time, before any physical work."""
    backend = _guarded()
    wrong_index = NoRows(EXECUTIONS.id, "no_such_index", {"owner": "owner"})
    no_guard_attribute = NoRows(ITEMS.id, "kind", {"kind": "a"})
    unguardable = NoRows(ROOTS_ID, "tier", {"tier": "gold"})
    no_anchor = RevisionIs(EXECUTIONS.id, "owner/1", 0)
    guards = [GuardRef(ROOTS, "owner")]
    for _ in range(2):
        with pytest.raises(ValueError, match="no_such_index"):
            backend.view.check(guards=guards, conditions=[wrong_index])
        with pytest.raises(ValueError, match="must give the guard attribute 'owner'"):
            backend.view.check(guards=guards, conditions=[no_guard_attribute])
        with pytest.raises(ValueError, match=r"NoRows on agent\.roots cannot be guarded"):
            InMemoryBackend([TIERED]).view.check(guards=[], conditions=[unguardable])
        with pytest.raises(ValueError, match=r"needs a GuardRef to agent\.roots"):
            backend.view.check(guards=[], conditions=[no_anchor])


def test_a_condition_built_with_its_resource_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="no_such_index"):
        NoRows(EXECUTIONS, "no_such_index", {"owner": "owner"})
    with pytest.raises(ValueError, match="must give the guard attribute 'owner'"):
        NoRows(ITEMS, "kind", {"kind": "a"})
    with pytest.raises(ValueError, match=r"NoRows on agent\.roots cannot be guarded"):
        NoRows(TIERED, "tier", {"tier": "gold"})
