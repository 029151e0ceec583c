"""Compact JSON text with ``json``'s C encoder made once, and the log's transcoder on it."""

from __future__ import annotations

import json
import json.encoder as json_encoder
from collections.abc import Callable
from typing import Any

from eventsourcing.persistence import JSONTranscoder


def compact_encoder(
    *, default: Callable[[Any], Any] | None = None, allow_nan: bool = True
) -> Callable[[Any], str]:
    """A function giving the compact JSON text of a value (non-ASCII kept as is).

    ``json.dumps`` with options builds a new ``JSONEncoder`` per call, and
    ``JSONEncoder.encode`` a new C encoder per call: a third of encoding an
    event's state. Without the circular-reference check the C encoder keeps
    no state between calls, so one serves every call and thread; what is
    encoded with it is data the caller built, never cyclic. ``default`` turns
    an object JSON has no form for into one it has, as in ``json.dumps``;
    ``allow_nan=False`` refuses NaN and the infinities.
    """
    python = json.JSONEncoder(
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=allow_nan,
        check_circular=False,
        default=default,
    )
    # Undeclared in the type stubs; None where the C accelerator is missing.
    make: Callable[..., Callable[[Any, int], Any]] | None = getattr(
        json_encoder, "c_make_encoder", None
    )
    if make is None:
        return python.encode
    chunks = make(
        None,  # no markers: no circular-reference check
        python.default,
        json_encoder.encode_basestring,
        None,  # no indent
        ":",
        ",",
        False,  # sort_keys
        False,  # skipkeys
        allow_nan,
    )
    return lambda value: "".join(chunks(value, 0))


class CompactJSONTranscoder(JSONTranscoder):
    """``eventsourcing``'s JSON transcoder, writing the same text through one C encoder.

    The log's events are the library's event objects, whose state is never
    cyclic. Decoding is the library's own.
    """

    def __init__(self) -> None:
        super().__init__()
        self._text = compact_encoder(default=self._encode_obj)

    def encode(self, obj: Any) -> bytes:
        """The compact JSON of ``obj``, as UTF-8 bytes."""
        return self._text(obj).encode("utf8")
