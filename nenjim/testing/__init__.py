"""The replay kit: test domain services and read models against recorded logs, with pytest.

Importable by any test suite; ``pytest_plugins = ["nenjim.testing.plugin"]``
adds its fixtures and options (see ``docs/testing.md``). Nothing here imports
a database driver until a store of its kind is used.

- Given / when / then: :class:`JournalScenario` (the Journal chain) and
  :class:`PersistenceScenario` (the agent/team/workflow repositories), with
  expected events as :class:`Event` objects.
- Recorded logs: :class:`RecordedLog` (an export: from a store, a file or
  events), :func:`replay` into a fresh store of any kind, :func:`open_store`
  on the store it came from, :func:`read_models` of either.
- Replay equivalence: :func:`assert_replay_equivalent`,
  :func:`assert_store_replays`.
- Golden logs: :class:`GoldenLog`.
- A recorded storage event's state as a dict: :func:`decode_state` (``topic``,
  ``state``); a blob put's bytes are under ``data``.
"""

from nenjim.infrastructure.storage.sql.events import (
    BLOB_PUT,
    RECORD_DELETED,
    RECORD_INSERTED,
    RECORD_REPLACED,
    STREAM_DELETED,
    STREAM_ENTRY_APPENDED,
)
from nenjim.infrastructure.storage.sql.events import decode_event as decode_state
from nenjim.testing.checks import (
    GoldenLog,
    assert_replay_equivalent,
    assert_same_read_models,
    assert_store_replays,
    differences,
)
from nenjim.testing.read_models import ReadModels, read_models
from nenjim.testing.recorded import RecordedLog
from nenjim.testing.scenarios import (
    GENESIS_ACCEPTED,
    SUCCESSOR_ACCEPTED,
    Event,
    JournalScenario,
    PersistenceScenario,
)
from nenjim.testing.stores import StoreUnderTest, open_store, replay

__all__ = [
    "BLOB_PUT",
    "GENESIS_ACCEPTED",
    "RECORD_DELETED",
    "RECORD_INSERTED",
    "RECORD_REPLACED",
    "STREAM_DELETED",
    "STREAM_ENTRY_APPENDED",
    "SUCCESSOR_ACCEPTED",
    "Event",
    "GoldenLog",
    "JournalScenario",
    "PersistenceScenario",
    "ReadModels",
    "RecordedLog",
    "StoreUnderTest",
    "assert_replay_equivalent",
    "assert_same_read_models",
    "assert_store_replays",
    "decode_state",
    "differences",
    "open_store",
    "read_models",
    "replay",
]
