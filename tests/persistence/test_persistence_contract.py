"""The contract of a Persistence backend and of its content store.

Every test runs on the in-memory, SQLite and PostgreSQL backends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot
from nenjim.domain.persistence import errors as perr
from nenjim.infrastructure.memory.storage import InMemoryBackend
from nenjim.infrastructure.persistence import CATALOG, Persistence, Repositories
from nenjim.infrastructure.storage import REQUIRED_CAPABILITIES, Resource, UnsupportedBackendError

AGENT = "agent-1"
REPOSITORIES = (
    "contents",
    "agents",
    "journals",
    "executions",
    "workflow_states",
    "handoff_states",
    "teams",
    "team_executions",
)


def _root(agent_id: str = AGENT) -> AgentRoot:
    return AgentRoot.create(agent_id, definition_id="assistant")


def _execution(root: AgentRoot, execution_id: str = "exec-1") -> AgentExecution:
    """The contract's fixture: an execution started from an ``input_received`` record."""
    received = AgentJournalRecord.create(
        "input-1", agent_id=root.agent_id, kind="input_received", execution_id=execution_id
    )
    return AgentExecution.start(
        execution_id, agent_id=root.agent_id, base=root, working_records=[received]
    )


def _text_id(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _write_everything(tx: Repositories) -> dict[str, object]:
    """One execution's writes: content, Agent, journal, admission, Workflow, Agent save."""
    content = tx.contents.put_text("hello")
    root = tx.agents.create(_root())
    record = AgentJournalRecord.create("rec-1", agent_id=AGENT, kind="message", content_ref=content)
    appended = tx.journals.append(AGENT, expected_position=0, records=[record])
    execution = tx.executions.create_active(_execution(root))
    workflow_revision = tx.workflow_states.save(
        "wf-1", expected_revision=None, snapshot={"fields": {"step": 1}, "phase": "run"}
    )
    saved = tx.agents.save(
        AGENT,
        expected_revision=0,
        root=root.evolve(journal_position=1, lifecycle_status="active"),
    )
    return {
        "content": content,
        "appended": appended,
        "execution": execution,
        "workflow_revision": workflow_revision,
        "saved": saved,
    }


# capabilities --------------------------------------------------------------


def test_backend_capabilities_are_exactly_the_required_ones(persistence: Persistence) -> None:
    capabilities = persistence.backend.capabilities
    for key, value in REQUIRED_CAPABILITIES.items():
        assert key in capabilities
        assert capabilities[key] == value
        assert type(capabilities[key]) is type(value)
    assert dict(persistence.capabilities) == {
        "atomic_all": True,
        "atomic_admission": True,
        "optimistic_revision": True,
    }


def test_persistence_refuses_a_backend_without_the_catalog() -> None:
    copies = [Resource(r.id, r.kind) for r in CATALOG[:1]]
    with pytest.raises(perr.UnsupportedBackendError) as raised:
        Persistence(InMemoryBackend(copies))
    assert isinstance(raised.value, UnsupportedBackendError)
    assert "'agent.roots'" in str(raised.value)
    assert "'workflow.states'" in str(raised.value)


def test_persistence_refuses_a_backend_with_wrong_capabilities() -> None:
    class Legacy(InMemoryBackend):
        @property
        def capabilities(self) -> Mapping[str, Any]:
            return {**REQUIRED_CAPABILITIES, "nested_savepoints": False}

    with pytest.raises(perr.UnsupportedBackendError, match="nested_savepoints"):
        Persistence(Legacy(CATALOG))


def test_open_refuses_an_unknown_url_scheme() -> None:
    with pytest.raises(perr.UnsupportedBackendError):
        Persistence.open("mongodb://localhost/nothing")


# the transaction view ------------------------------------------------------


def test_transaction_view_answers_every_repository_and_the_watermark(
    persistence: Persistence,
) -> None:
    with persistence.transaction() as tx:
        for name in REPOSITORIES:
            assert getattr(tx, name) is not None, name
            assert type(getattr(tx, name)) is type(getattr(persistence, name)), name
        assert callable(tx.assert_agent_watermark)


def test_transaction_returns_the_block_value(persistence: Persistence) -> None:
    marker = object()
    assert persistence.run_in_transaction(lambda tx: marker) is marker
    nested = persistence.run_in_transaction(
        lambda tx: ("outer", persistence.run_in_transaction(lambda inner: "inner"))
    )
    assert nested == ("outer", "inner")


# one transaction across repositories ---------------------------------------


def test_one_transaction_across_repositories_commits(persistence: Persistence) -> None:
    with persistence.transaction() as tx:
        written = _write_everything(tx)

    assert persistence.contents.fetch_text(written["content"]) == "hello"  # type: ignore[arg-type]
    loaded = persistence.agents.load(AGENT)
    assert loaded == written["saved"]
    assert (loaded.agent_revision, loaded.journal_position, loaded.lifecycle_status) == (
        1,
        1,
        "active",
    )
    journal = persistence.journals.read(AGENT)
    assert [r.record_id for r in journal] == ["rec-1"]
    assert journal[0].content_ref == written["content"]
    assert persistence.journals.head(AGENT) == 1
    assert persistence.executions.load("exec-1") == written["execution"]
    assert persistence.executions.load("exec-1").working_records[0].kind == "input_received"
    workflow = persistence.workflow_states.load("wf-1")
    assert written["workflow_revision"] == 1
    assert workflow is not None
    assert workflow["revision"] == 1


class RolledBackError(Exception):
    """Raised by a test to make its transaction roll back."""


def test_a_raise_rolls_back_the_whole_transaction(persistence: Persistence) -> None:
    content = hashlib.sha256(b"hello").hexdigest()

    def write_then_raise(tx: Repositories) -> None:
        written = _write_everything(tx)
        assert written["content"] == f"sha256:{content}"
        raise RolledBackError

    with pytest.raises(RolledBackError):
        persistence.run_in_transaction(write_then_raise)

    assert not persistence.contents.exists(f"sha256:{content}")
    with pytest.raises(perr.NotFoundError):
        persistence.agents.load(AGENT)
    assert persistence.journals.head(AGENT) == 0
    with pytest.raises(perr.NotFoundError):
        persistence.executions.load("exec-1")
    assert persistence.workflow_states.load("wf-1") is None


# an execution's life -------------------------------------------------------


@pytest.fixture
def agent(persistence: Persistence) -> AgentRoot:
    return persistence.agents.create(_root())


def test_watermark_at_current_revision_and_position_is_true(
    persistence: Persistence, agent: AgentRoot
) -> None:
    assert (
        persistence.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=0)
        is True
    )
    with persistence.transaction() as tx:
        assert tx.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=0)


def test_watermark_after_the_agent_revision_advanced_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    persistence.agents.save(AGENT, expected_revision=0, root=agent.evolve())
    with pytest.raises(perr.ConflictError, match="agent revision") as raised:
        persistence.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=0)
    assert not isinstance(raised.value, perr.StateConflictError)
    assert persistence.assert_agent_watermark(agent_id=AGENT, agent_revision=1, journal_position=0)


def test_watermark_after_the_journal_position_advanced_conflicts(
    persistence: Persistence, agent: AgentRoot
) -> None:
    record = AgentJournalRecord.create("r1", agent_id=AGENT, kind="message")
    persistence.journals.append(AGENT, expected_position=0, records=[record])
    with pytest.raises(perr.ConflictError, match="journal position"):
        persistence.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=0)
    assert persistence.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=1)


def test_watermark_of_a_missing_agent_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.assert_agent_watermark(agent_id="ghost", agent_revision=0, journal_position=0)


def test_failed_watermark_in_a_transaction_rolls_back_earlier_writes(
    persistence: Persistence, agent: AgentRoot
) -> None:
    def put_then_check(tx: Repositories) -> None:
        tx.contents.put_text("written before the check")
        tx.assert_agent_watermark(agent_id=AGENT, agent_revision=5, journal_position=0)

    with pytest.raises(perr.ConflictError):
        persistence.run_in_transaction(put_then_check)
    assert not persistence.contents.exists(_text_id("written before the check"))


def test_failed_watermark_caught_in_the_block_still_rolls_back(
    persistence: Persistence, agent: AgentRoot
) -> None:
    def put_then_swallow_a_failed_check(tx: Repositories) -> None:
        tx.contents.put_text("written before the check")
        with pytest.raises(perr.ConflictError):
            tx.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=3)

    with pytest.raises(perr.TransactionError):
        persistence.run_in_transaction(put_then_swallow_a_failed_check)
    assert not persistence.contents.exists(_text_id("written before the check"))


def test_watermark_and_following_write_share_one_transaction(
    persistence: Persistence, agent: AgentRoot
) -> None:
    with persistence.transaction() as tx:
        assert tx.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=0)
        tx.agents.save(AGENT, expected_revision=0, root=agent.evolve(lifecycle_status="active"))
    assert persistence.agents.load(AGENT).lifecycle_status == "active"


# content store -----------------------------------------------------------


def test_same_bytes_give_the_same_id(persistence: Persistence) -> None:
    first = persistence.contents.put(b"same", canonicalization_version=1)
    second = persistence.contents.put(b"same", canonicalization_version=1)
    assert first == second == "sha256:" + hashlib.sha256(b"same").hexdigest()
    assert persistence.contents.put(b"other", canonicalization_version=1) != first


def test_first_canonicalization_version_is_kept(persistence: Persistence) -> None:
    identity = persistence.contents.put(b"versioned", canonicalization_version=1)
    assert persistence.contents.put(b"versioned", canonicalization_version=2) == identity
    blob = persistence.backend.view.blobs("content.blobs").fetch(identity)
    assert blob.attributes["canonicalization_version"] == 1


def test_binary_bytes_round_trip_and_exist(persistence: Persistence) -> None:
    data = bytes(range(256)) + b"\x00\xff\x00"
    identity = persistence.contents.put(data, canonicalization_version=0)
    assert persistence.contents.exists(identity)
    assert persistence.contents.fetch(identity) == data
    assert not persistence.contents.exists("sha256:" + "1" * 64)


def test_fetching_an_unknown_id_is_not_found(persistence: Persistence) -> None:
    with pytest.raises(perr.NotFoundError):
        persistence.contents.fetch("sha256:" + "0" * 64)


def test_mutating_fetched_bytes_does_not_change_the_store(persistence: Persistence) -> None:
    identity = persistence.contents.put(b"immutable", canonicalization_version=1)
    fetched = persistence.contents.fetch(identity)
    assert type(fetched) is bytes
    copy = bytearray(fetched)
    copy[:] = b"XXXXXXXXX"
    assert persistence.contents.fetch(identity) == b"immutable"
    many = persistence.contents.fetch_many([identity, identity])
    assert dict(many) == {identity: b"immutable"}
    with pytest.raises(TypeError):
        many[identity] = b"changed"  # type: ignore[index]
    assert persistence.contents.fetch(identity) == b"immutable"


def test_utf8_text_round_trip(persistence: Persistence) -> None:
    identity = persistence.contents.put_text("Grüße")
    assert persistence.contents.fetch_text(identity) == "Grüße"
    assert persistence.contents.fetch(identity) == "Grüße".encode()


def test_canonical_json_round_trip(persistence: Persistence) -> None:
    value = {"z": 1, "a": [True, None, {"nested": "ü"}], "m": 1.5}
    identity = persistence.contents.put_json(value)
    assert persistence.contents.fetch_json(identity) == value
    assert persistence.contents.fetch(identity) == (
        '{"a":[true,null,{"nested":"ü"}],"m":1.5,"z":1}'.encode()
    )
    assert persistence.contents.put_json(
        {"a": [True, None, {"nested": "ü"}], "m": 1.5, "z": 1}
    ) == (identity)


def test_non_canonical_json_content_is_a_serialization_error(persistence: Persistence) -> None:
    with pytest.raises(perr.SerializationError):
        persistence.contents.put_json({"too big": 2**53})


def test_non_utf8_content_fetched_as_text_is_an_integrity_error(
    persistence: Persistence,
) -> None:
    identity = persistence.contents.put(b"\xff\xfe", canonicalization_version=0)
    with pytest.raises(perr.IntegrityError):
        persistence.contents.fetch_text(identity)


def test_content_stored_under_a_wrong_digest_is_an_integrity_error(
    persistence: Persistence,
) -> None:
    forged = "sha256:" + hashlib.sha256(b"original").hexdigest()
    persistence.backend.view.blobs("content.blobs").put_if_absent(
        key=forged, data=b"forged", attributes={"canonicalization_version": 1}
    )
    with pytest.raises(perr.IntegrityError):
        persistence.contents.fetch(forged)
    with pytest.raises(perr.IntegrityError):
        persistence.contents.put(b"original", canonicalization_version=1)
