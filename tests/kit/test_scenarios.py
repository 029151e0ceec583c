"""The replay kit's given / when / then, on every store kind it supports.

Each scenario is also run the way it must fail, so the kit's assertions are
shown to catch a wrong expectation, not only to accept a right one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, digest
from nenjim.domain.agents import AgentExecution, AgentRoot
from nenjim.domain.persistence.errors import AgentBusyError, ConflictError
from nenjim.journal.exception import ChainViolation, JournalChainError
from nenjim.testing import (
    BLOB_PUT,
    GENESIS_ACCEPTED,
    RECORD_INSERTED,
    RECORD_REPLACED,
    SUCCESSOR_ACCEPTED,
    Event,
    JournalScenario,
    PersistenceScenario,
    RecordedLog,
    decode_state,
)
from nenjim.testing.plugin import DURABLE_KINDS, NewStore

WIDGET = "com.example.widget"
CORE = "com.example.core"


@pytest.fixture
def widget() -> Chain:
    chain = Chain(WIDGET)
    chain.add("20260101T000000Z", (Rel("1.0.0", content(1)),))
    chain.add("20260201T000000Z", (Rel("1.0.0", content(1)), Rel("1.1.0", content(2))))
    return chain


def test_given_a_genesis_when_a_successor_then_one_successor_event(
    nenjim_store_url: str, widget: Chain
) -> None:
    genesis, successor = widget.texts
    with JournalScenario(nenjim_store_url) as scenario:
        scenario.given(genesis).when(successor).then(
            Event(
                SUCCESSOR_ACCEPTED,
                {
                    "coordinate": WIDGET,
                    "journal_version": "20260201T000000Z",
                    "digest": digest(successor),
                    "predecessor": digest(genesis),
                    "originator_version": 2,
                },
            )
        )
        chain = next(iter(scenario.view.chains.values()))
        assert [stored.version_key for stored in chain.stored] == widget.versions
        with pytest.raises(AssertionError, match=r"new event 1: .*expected 'sha256:0"):
            scenario.then(Event(SUCCESSOR_ACCEPTED, {"predecessor": "sha256:" + "0" * 64}))
        with pytest.raises(AssertionError, match="expected 2 new event"):
            scenario.then(Event(SUCCESSOR_ACCEPTED), Event(SUCCESSOR_ACCEPTED))
        with pytest.raises(AssertionError, match="expected JournalChainError, got no error"):
            scenario.then_error(JournalChainError)


def test_given_a_head_when_a_fork_then_the_error_and_no_event(
    nenjim_store_url: str, widget: Chain
) -> None:
    genesis, successor = widget.texts
    fork = Chain(WIDGET)
    fork.texts.append(genesis)  # a second successor of the genesis
    fork_text = fork.add("20260301T000000Z", (Rel("1.0.0", content(1)),))
    with JournalScenario(nenjim_store_url) as scenario:
        scenario.given(genesis, successor).when(fork_text)
        scenario.then_error(JournalChainError, reason=ChainViolation.FORK)
        with pytest.raises(AssertionError, match=r"reason is <ChainViolation\.FORK"):
            scenario.then_error(JournalChainError, reason=ChainViolation.DUPLICATE_GENESIS)
        with pytest.raises(AssertionError, match="the command raised JournalChainError"):
            scenario.then()


def test_given_a_recorded_log_when_a_new_artifact_then_a_genesis(
    nenjim_store_url: str, widget: Chain, tmp_path: Path
) -> None:
    source = f"sqlite://{tmp_path / 'recorded.db'}"
    with JournalScenario(source) as recording:
        recording.given(*widget.texts)
    recorded = RecordedLog.record(source)
    core = Chain(CORE).add("20260101T000000Z")
    with JournalScenario(nenjim_store_url) as scenario:
        scenario.given_log(recorded).when(core).then(
            Event(GENESIS_ACCEPTED, {"coordinate": CORE, "originator_version": 1})
        )
        assert sorted(str(c) for c in scenario.view.chains) == [CORE, WIDGET]
        assert scenario.new_events[0][1]["text"] == core


def test_the_kit_refuses_then_before_when() -> None:
    with (
        JournalScenario() as scenario,
        pytest.raises(AssertionError, match=r"then\(\) before when\(\)"),
    ):
        scenario.then()


# -- the agent/team/workflow repositories ----------------------------------------------


def _root(agent_id: str = "a1") -> AgentRoot:
    return AgentRoot.create(agent_id, definition_id="demo", definition_version="1")


def test_given_an_agent_when_it_runs_then_its_execution_is_inserted(
    nenjim_durable_store_url: str,
) -> None:
    with PersistenceScenario(nenjim_durable_store_url) as scenario:
        scenario.persistence.agents.create(_root())
        root = scenario.persistence.agents.load("a1")
        scenario.when(
            lambda p: p.executions.create_active(
                AgentExecution.start("run-1", agent_id="a1", base=root)
            )
        ).then(
            Event(
                RECORD_INSERTED,
                {
                    "resource": "agent.executions",
                    "key": "run-1",
                    "revision": 0,
                    "attributes": {"owner": "a1", "active": True},
                },
            )
        )
        assert scenario.result.execution_id == "run-1"
        wrong = r"attributes is .*'active': True}, expected .*'active': False}"
        with pytest.raises(AssertionError, match=wrong):
            scenario.then(Event(RECORD_INSERTED, {"attributes": {"owner": "a1", "active": False}}))
        # A second run while the first is active: refused, and nothing appended.
        scenario.when(
            lambda p: p.executions.create_active(
                AgentExecution.start("run-2", agent_id="a1", base=root)
            )
        ).then_error(AgentBusyError)
        assert scenario.new_events == []


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_given_storage_events_when_a_stale_save_then_a_conflict(
    kind: str, nenjim_new_store: NewStore
) -> None:
    source = nenjim_new_store(kind)
    with PersistenceScenario(source) as seed:
        seed.persistence.agents.create(_root())
        seed.persistence.contents.put_text("hello")
    recorded = RecordedLog.record(source)
    given = [Event(topic, state) for topic, state in _decoded(recorded)]
    assert [event.topic for event in given] == [RECORD_INSERTED, BLOB_PUT]
    # The same events, given to another fresh store (as a user would write them out).
    with PersistenceScenario(nenjim_new_store(kind)) as scenario:
        scenario.given(*given)
        root = scenario.persistence.agents.load("a1")
        assert scenario.persistence.contents.fetch_text(_content_id(recorded)) == "hello"
        scenario.when(lambda p: p.agents.save("a1", expected_revision=0, root=root.evolve())).then(
            Event(RECORD_REPLACED, {"resource": "agent.roots", "key": "a1", "revision": 1})
        )
        scenario.when(lambda p: p.agents.save("a1", expected_revision=0, root=root.evolve()))
        scenario.then_error(ConflictError)


def test_a_persistence_scenario_needs_a_log() -> None:
    with pytest.raises(ValueError, match="memory: keeps no storage log"):
        PersistenceScenario("memory:")


def _decoded(recorded: RecordedLog) -> list[tuple[str, dict[str, object]]]:
    return [(event.topic, decode_state(event.topic, event.state)) for event in recorded.events]


def _content_id(recorded: RecordedLog) -> str:
    return next(str(state["key"]) for topic, state in _decoded(recorded) if topic == BLOB_PUT)
