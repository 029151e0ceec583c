"""The tables of the Storage log that an audit reads and names in its findings."""

EVENTS_TABLE = "storage_events"
RECORDS_TABLE = "storage_records"
HEADS_TABLE = "storage_stream_heads"
IDS_TABLE = "storage_stream_ids"
BLOBS_TABLE = "storage_blobs"
