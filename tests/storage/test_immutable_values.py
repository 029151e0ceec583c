"""Values the storage layer returns beside the SPI's (audit reports, log positions and
events) refuse assignment and deletion as the SPI's own do: with
an ``AttributeError`` naming the class, whatever the attribute."""

from __future__ import annotations

import pytest

from nenjim.infrastructure.storage.audit.repair import RepairReport
from nenjim.infrastructure.storage.follow.log import LogPosition, StoredEvent
from nenjim.infrastructure.storage.testing.support import assign, remove
from nenjim.infrastructure.store.audit_report import AuditReport, Finding

VALUE_CLASSES = (AuditReport, Finding, RepairReport, LogPosition, StoredEvent)


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda cls: cls.__name__)
def test_a_value_refuses_assignment_and_deletion_of_any_attribute(cls: type) -> None:
    value = object.__new__(cls)  # the refusal is the class's, whatever the fields hold
    for name in (*cls.__dataclass_fields__, "added"):  # type: ignore[attr-defined]
        with pytest.raises(AttributeError, match=cls.__name__):
            assign(value, name, None)
        with pytest.raises(AttributeError, match=cls.__name__):
            remove(value, name)
