"""The Workflow snapshot value domain: what a Workflow may persist, and in which form.

A snapshot is a mapping with exactly the keys ``fields`` (a mapping) and
``phase`` (text or ``None``). Inside ``fields``, recursively: mappings with
text keys, lists and tuples (stored as lists), text, integers, floats,
booleans and ``None``. Where Ruby accepts symbols, this domain accepts
"symbol-like" values: an ``Enum`` member whose value is a ``str`` stands
for that string (a ``StrEnum`` member too). Everything else is refused:
there is no lossy coercion and no generic object serialiser. The result
must also satisfy Canonical JSON v1 (safe integers, finite floats, no
-0.0, valid UTF-8 without NUL, ``fields`` nested at most 100 deep).

Normal form: plain ``dict``/``list`` containers, exact ``str`` keys and
text. Snapshots are handed out as deep copies, never shared, so they
compare equal to plain ``dict``/``list`` input and mutating one never
changes stored state.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nenjim.domain import durable_fields as f
from nenjim.immutable import immutable

SNAPSHOT_KEYS = frozenset({"fields", "phase"})


class WorkflowValueError(ValueError):
    """A snapshot outside the Workflow value domain ("unsupported Workflow durable value")."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"unsupported Workflow durable value: {detail}")


def normalize_snapshot(snapshot: object) -> dict[str, Any]:
    """The normal form of ``snapshot``: a new ``{"fields": dict, "phase": str | None}``.

    Symbol-like keys and values become text; tuples become lists. Raises
    :class:`WorkflowValueError` for anything outside the value domain,
    including two keys that become equal after conversion.
    """
    return _snapshot(snapshot, strict=False)


def freeze_snapshot(snapshot: object) -> dict[str, Any]:
    """A deep copy of a snapshot that is already in normal form (e.g. a loaded one).

    Unlike :func:`normalize_snapshot` nothing is converted: symbol-like
    values, tuples or non-``dict`` mappings raise :class:`WorkflowValueError`.
    The copy is the caller's own; mutating it changes nothing else.
    """
    return _snapshot(snapshot, strict=True)


@immutable
@dataclass(frozen=True, slots=True)
class WorkflowState(f.Checked):
    """A Workflow instance's stored state (record type ``phronomy.workflow_state``).

    ``workflow_revision`` starts at 1. ``snapshot`` is held in normal form;
    it is a plain ``dict`` (see the module notes), so treat it as read-only
    or copy it with :func:`freeze_snapshot` before changing it.
    """

    workflow_instance_id: str = field(metadata=f.checked(f.identifier))
    workflow_revision: int = field(metadata=f.checked(f.positive))
    snapshot: dict[str, Any] = field(
        hash=False, metadata=f.checked(lambda value, _: normalize_snapshot(value))
    )


def _snapshot(snapshot: object, *, strict: bool) -> dict[str, Any]:
    if not isinstance(snapshot, dict if strict else Mapping):
        raise WorkflowValueError(f"a snapshot must be a mapping, got {type(snapshot).__name__}")
    top = _members(snapshot, "snapshot", strict=strict, convert=lambda value, _: value)
    if set(top) != SNAPSHOT_KEYS:
        raise WorkflowValueError(
            f"a snapshot has exactly the keys fields and phase, got {sorted(top)}"
        )
    fields = top["fields"]
    if not isinstance(fields, dict if strict else Mapping):
        raise WorkflowValueError(f"snapshot fields must be a mapping, got {type(fields).__name__}")
    phase = top["phase"]
    return {
        "fields": _value(fields, "fields", strict=strict, depth=0),
        "phase": None if phase is None else _text(phase, "phase", strict=strict),
    }


def _value(value: object, path: str, *, strict: bool, depth: int) -> Any:
    mapping = isinstance(value, dict if strict else Mapping)
    sequence = isinstance(value, list) or (not strict and isinstance(value, tuple))
    if mapping or sequence:
        try:
            depth = f.json_depth(depth + 1, path)
        except ValueError as error:
            raise WorkflowValueError(str(error)) from None
    if mapping:
        assert isinstance(value, Mapping)
        return _members(
            value,
            path,
            strict=strict,
            convert=lambda child, at: _value(child, at, strict=strict, depth=depth),
        )
    if sequence:
        assert isinstance(value, list | tuple)
        return [
            _value(child, f"{path}[{index}]", strict=strict, depth=depth)
            for index, child in enumerate(value)
        ]
    if isinstance(value, str | enum.Enum):
        return _text(value, path, strict=strict)
    if value is None or isinstance(value, bool | int | float):
        try:
            return f.json_scalar(value, path)
        except ValueError as error:
            raise WorkflowValueError(str(error)) from None
    raise WorkflowValueError(f"{path}: {type(value).__name__}")


def _members(
    mapping: Mapping[Any, Any], path: str, *, strict: bool, convert: Callable[[Any, str], Any]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, child in mapping.items():
        name = _text(key, f"{path} key", strict=strict)
        if name in result:
            raise WorkflowValueError(f"{path}: two keys become {name!r}")
        result[name] = convert(child, f"{path}.{name}")
    return result


def _text(value: object, path: str, *, strict: bool) -> str:
    if strict and type(value) is not str:
        raise WorkflowValueError(f"{path}: expected str, got {type(value).__name__}")
    # Enum first: a StrEnum member is a str too, but stands for its value.
    if isinstance(value, enum.Enum):
        value = value.value
    if not isinstance(value, str):
        raise WorkflowValueError(f"{path}: {type(value).__name__}")
    try:
        return f.utf8_text(value, path)
    except ValueError as error:
        raise WorkflowValueError(str(error)) from None
