"""The ``postgresql://`` store kind: everything a PostgreSQL store needs (imports psycopg)."""

from nenjim.infrastructure.store.kinds import StoreKind

KIND = StoreKind(
    name="postgresql",
    scheme="postgresql://",
    url_pattern="postgres(ql)?://",
    examples=("postgresql://user@host:port/dbname",),
    parse_url="nenjim.infrastructure.postgresql.urls:postgres_env",
    log_factory="nenjim.infrastructure.postgresql.log:ClaimingPostgresFactory",
    prepare_log="nenjim.infrastructure.postgresql.connect:prepare_log",
    backend="nenjim.infrastructure.postgresql.storage:PostgresBackend",
    new_test_store="nenjim.infrastructure.postgresql.connect:new_test_store",
    projections="nenjim.infrastructure.postgresql.projections:recorder_for",
    wakeup="nenjim.infrastructure.postgresql.wakeup:listening_for",
    storage_session="nenjim.infrastructure.postgresql.inspection:storage_session",
    reader="nenjim.infrastructure.postgresql.connect:reading",
    log_store="nenjim.infrastructure.postgresql.transfer:PostgresLogStore",
    maintenance="nenjim.infrastructure.postgresql.maintenance:PostgresStore",
    schema_setting="POSTGRES_SCHEMA",
    drivers=("psycopg", "psycopg_pool"),
    install="PostgreSQL stores need psycopg: pip install 'nenjim[postgres]'",
    served_by_server=True,
)
