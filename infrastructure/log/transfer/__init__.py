"""Moving logs between stores: the export format and raw access to each database's log tables.

An export is the stored rows of a store's logs (bytes, ids, stream
positions) in a line-oriented format (:mod:`.format`); a store's logs are
read from one snapshot and written in one transaction (:mod:`.stores`),
never through an application, so nothing is re-encoded. What is derived
from the events (claims, inline tables, projections) is the owner's to
rebuild; this package knows no owner.
"""

from nenjim.infrastructure.log.transfer.format import (
    FORMAT,
    FORMAT_VERSION,
    ExportFormatError,
    ExportReader,
    ExportSummary,
    ExportWriter,
    LoggedEvent,
    LogSection,
)
from nenjim.infrastructure.log.transfer.stores import (
    LogFilling,
    LogSnapshot,
    LogStore,
    StoreNotEmptyError,
    UnreadableEventError,
    open_log_store,
)
from nenjim.infrastructure.log.transfer.tables import EventTable, application_log

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "EventTable",
    "ExportFormatError",
    "ExportReader",
    "ExportSummary",
    "ExportWriter",
    "LogFilling",
    "LogSection",
    "LogSnapshot",
    "LogStore",
    "LoggedEvent",
    "StoreNotEmptyError",
    "UnreadableEventError",
    "application_log",
    "open_log_store",
]
