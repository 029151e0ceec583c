"""``LogReader``: the log's notifications in order, page after page, and their events."""

from __future__ import annotations

from eventsourcing.domain import Aggregate, event

from nenjim.infrastructure.log import LogApplication, LogReader
from nenjim.infrastructure.log.reader import PAGE


class Counter(Aggregate):
    """A tiny aggregate: each tick is one event."""

    @event("Started")
    def __init__(self, name: str) -> None:
        self.name = name
        self.ticks = 0

    @event("Ticked")
    def tick(self) -> None:
        self.ticks += 1


def test_an_empty_log_has_position_zero_and_no_notifications() -> None:
    log = LogApplication("memory:")
    reader = LogReader(log)
    assert reader.last_position() == 0
    assert list(reader.notifications(0)) == []


def test_notifications_come_in_order_across_pages_and_decode_to_their_events() -> None:
    log = LogApplication("memory:")
    counter = Counter("c")
    for _ in range(PAGE + 10):
        counter.tick()
    log.save(counter)
    reader = LogReader(log)
    total = PAGE + 11
    assert reader.last_position() == total
    ids = [n.id for n in reader.notifications(0)]
    assert ids == list(range(1, total + 1))
    assert [n.id for n in reader.notifications(PAGE - 3)] == list(range(PAGE - 2, total + 1))
    assert list(reader.notifications(total)) == []
    first, second = list(reader.notifications(0))[:2]
    assert isinstance(reader.event(first), Counter.Started)
    ticked = reader.event(second)
    assert isinstance(ticked, Counter.Ticked)
    assert ticked.originator_id == counter.id
