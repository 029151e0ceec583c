"""The fixture's fallback: a private cluster made with initdb/pg_ctl when no server answers."""

from __future__ import annotations

from pathlib import Path

import psycopg
from postgres_server import throwaway_cluster

from nenjim.infrastructure.log import Claim, LogApplication


def test_a_throwaway_cluster_serves_a_log_and_is_removed_afterwards() -> None:
    with throwaway_cluster() as url:
        with psycopg.connect(url) as conn:
            directory = Path(str(conn.execute("SHOW data_directory").fetchone()[0])).parent
        app = LogApplication(f"{url}?pool_size=1")
        try:
            app.append([], [Claim("ns", "k", "owner")])
            assert app.claim_owner("ns", "k") == "owner"
        finally:
            app.close()
    assert not directory.exists()
