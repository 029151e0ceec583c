"""The log's transcoder writes what ``eventsourcing``'s own JSON transcoder writes."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    TranscodingNotRegisteredError,
    UUIDAsHex,
)
from hypothesis import given
from hypothesis import strategies as st

from nenjim.infrastructure.log import LogApplication
from nenjim.infrastructure.log.compact_json import CompactJSONTranscoder, compact_encoder


def _transcoders() -> tuple[JSONTranscoder, CompactJSONTranscoder]:
    pair = (JSONTranscoder(), CompactJSONTranscoder())
    for transcoder in pair:
        for transcoding in (UUIDAsHex(), DatetimeAsISO(), DecimalAsStr()):
            transcoder.register(transcoding)
    return pair


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too: the library writes them
    | st.text()
    | st.uuids()
    | st.datetimes(timezones=st.just(UTC))
    | st.decimals(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@given(json_values)
def test_the_same_bytes_as_the_library_and_back(value: Any) -> None:
    library, ours = _transcoders()
    state = {"originator_topic": "x", "value": value}
    assert ours.encode(state) == library.encode(state)
    assert ours.decode(ours.encode(state)) == library.decode(library.encode(state))


def test_an_event_state_with_a_text_and_a_timestamp() -> None:
    library, ours = _transcoders()
    state = {
        "timestamp": datetime(2026, 12, 2, 9, 8, 48, tzinfo=UTC),
        "id": uuid.UUID(int=7),
        "text": 'NENJIM-JOURNAL 1\nDESCRIPTION "é \\" \u2028"\n',
    }
    assert ours.encode(state) == library.encode(state)


def test_an_object_it_has_no_transcoding_for_is_refused_as_the_library_refuses_it() -> None:
    library, ours = _transcoders()
    for transcoder in (library, ours):
        with pytest.raises(TranscodingNotRegisteredError):
            transcoder.encode({"x": object()})


def test_one_encoder_serves_threads_at_once() -> None:
    encode = compact_encoder()
    values = [{"n": n, "text": "x" * n, "list": list(range(n % 7))} for n in range(200)]
    expected = [encode(value) for value in values]
    results: list[list[str]] = []

    def work() -> None:
        results.append([encode(value) for value in values])

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 8


def test_refusing_nan_when_asked() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        compact_encoder(allow_nan=False)(float("nan"))
    assert compact_encoder()(float("nan")) == "NaN"


def test_a_log_application_encodes_with_it() -> None:
    app = LogApplication("memory:")
    try:
        assert isinstance(app.mapper.transcoder, CompactJSONTranscoder)
    finally:
        app.close()
