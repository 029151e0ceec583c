"""The replay kit observes and replays payload numbers as the store reads them back: a whole
float past 2^53, written in plain digits, is that float in an observed event's state and in
a store the recorded log is replayed into."""

from __future__ import annotations

import pytest

from nenjim.testing import RECORD_INSERTED, Event, PersistenceScenario, RecordedLog
from nenjim.testing.plugin import DURABLE_KINDS, NewStore
from nenjim.testing.stores import replay

LARGEST_PLAIN = 9.999999999999999e20
"""The largest float written in plain digits (999999999999999900000), and not equal to the
integer those digits spell."""

SNAPSHOT = {"fields": {"big": LARGEST_PLAIN, "sixteen": 1e16}, "phase": None}


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_an_observed_payload_holds_the_floats_written(
    kind: str, nenjim_new_store: NewStore
) -> None:
    source = nenjim_new_store(kind)
    with PersistenceScenario(source) as scenario:
        scenario.when(
            lambda p: p.workflow_states.save("wf", expected_revision=None, snapshot=SNAPSHOT)
        ).then(
            Event(
                RECORD_INSERTED,
                {
                    "key": "wf",
                    "payload": {
                        "snapshot": SNAPSHOT,
                        "workflow_instance_id": "wf",
                        "workflow_revision": 1,
                    },
                },
            )
        )
    with replay(RecordedLog.record(source), nenjim_new_store("memory")) as replayed:
        assert replayed.persistence is not None
        loaded = replayed.persistence.workflow_states.load("wf")
        assert loaded is not None
        assert loaded["snapshot"] == SNAPSHOT
        assert type(loaded["snapshot"]["fields"]["sixteen"]) is float
