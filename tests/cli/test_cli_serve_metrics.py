"""``GET /metrics`` of a real ``nenjim serve``: the log's size, checkpoint age and follow lag, and
the Grafana dashboard of ``docs/`` asks only for metrics the server exports."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Samples, metric_samples, serving

from nenjim.cli import main

PROJECT = Path(__file__).resolve().parents[2]
DASHBOARD = PROJECT / "docs" / "grafana-dashboard.json"
NEW = "com.example.new"


@pytest.fixture
def key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "log.key"
    assert main(["keys", "new", "example.com/log", "--out", str(path)]) == 0
    capsys.readouterr()
    return str(path)


def _store(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    assert main(["journal", "verify", str(root), "--store", url]) == 0
    capsys.readouterr()
    return url


@pytest.fixture
def store(sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """An SQLite store holding the sample Journal (three revisions)."""
    return _store(sample.root, tmp_path, capsys)


@pytest.fixture
def served(store: str, key: str) -> Iterator[str]:
    with serving(store, key) as url:
        yield url


def _scrape(url: str) -> Samples:
    answer = httpx.get(f"{url}/metrics")
    assert answer.status_code == 200
    return metric_samples(answer.text)


def test_the_log_size_age_and_lag_follow_what_is_appended(
    sample: Any,
    store: str,
    served: str,
    write_revision: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = _scrape(served)
    assert first["nenjim_log_entries", ()] == 3
    # The served queries caught up before the server listened.
    assert first["nenjim_follow_lag_events", ()] == 0
    assert 0 <= first["nenjim_checkpoint_age_seconds", ()] < math.inf
    assert first["nenjim_chain_cache_lookups", (("result", "miss"),)] == 0

    assert httpx.get(f"{served}/journal/coordinates").status_code == 200
    assert _scrape(served)["nenjim_follow_lag_events", ()] == 0

    appended = time.time()
    text = f"NENJIM-JOURNAL 1\nARTIFACT {NEW}\nJOURNAL_VERSION 20250101T000000Z\n"
    write_revision(sample.root, NEW, "20250101T000000Z", text)
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()
    grown = _scrape(served)
    scraped = time.time()

    assert grown["nenjim_log_entries", ()] == 4
    assert grown["nenjim_follow_lag_events", ()] == 1
    # The age is that of the revision just appended, not of the first.
    assert 0 <= grown["nenjim_checkpoint_age_seconds", ()] <= scraped - appended

    assert httpx.get(f"{served}/journal/{NEW}/latest").status_code == 200
    assert httpx.get(f"{served}/journal/{NEW}/revisions").status_code == 200
    last = _scrape(served)
    assert last["nenjim_follow_lag_events", ()] == 0
    # The first answer read the chain from the store, the second found it cached.
    assert last["nenjim_chain_cache_lookups", (("result", "miss"),)] == 1
    assert last["nenjim_chain_cache_lookups", (("result", "hit"),)] == 1


def test_an_empty_log_has_no_checkpoint_age(
    tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    with serving(_store(root, tmp_path, capsys), key) as url:
        samples = _scrape(url)

    assert samples["nenjim_log_entries", ()] == 0
    assert samples["nenjim_follow_lag_events", ()] == 0
    assert math.isnan(samples["nenjim_checkpoint_age_seconds", ()])


def test_the_server_reports_its_own_cpu_time_and_memory(served: str) -> None:
    before = _scrape(served)
    for _ in range(20):
        assert httpx.get(f"{served}/journal/coordinates").status_code == 200
    after = _scrape(served)

    assert after["process_resident_memory_bytes", ()] > 10 * 2**20
    assert after["process_open_fds", ()] >= 3
    assert after["process_cpu_seconds_total", ()] >= before["process_cpu_seconds_total", ()] > 0


def test_the_latency_histogram_tells_apart_answers_under_a_millisecond(served: str) -> None:
    for _ in range(5):
        assert httpx.get(f"{served}/journal/coordinates").status_code == 200
    samples = _scrape(served)

    route = ("route", "/journal/coordinates")
    bounds = sorted(
        float(dict(labels)["le"])
        for name, labels in samples
        if name == "nenjim_http_request_duration_seconds_bucket" and route in labels
    )
    assert bounds[:3] == [0.0005, 0.001, 0.0025]
    answered = samples["nenjim_http_request_duration_seconds_count", (route,)]
    assert answered == 5


def _expressions(dashboard: dict[str, Any]) -> list[str]:
    return [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "expr" in target
    ]


def test_the_dashboard_asks_only_for_metrics_the_server_exports(served: str) -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    httpx.get(f"{served}/checkpoint")  # so that the request metrics have samples
    exported = {name for name, _ in _scrape(served)}

    expressions = _expressions(dashboard)
    assert expressions
    asked = set()
    for expression in expressions:
        names = set(re.findall(r"\bnenjim_\w+", expression))
        assert names, expression
        assert names <= exported, (expression, names - exported)
        asked |= names
    assert {
        "nenjim_http_requests_total",
        "nenjim_http_request_duration_seconds_bucket",
        "nenjim_log_entries",
        "nenjim_checkpoint_age_seconds",
        "nenjim_follow_lag_events",
    } <= asked
    joined = "\n".join(expressions)
    assert "histogram_quantile(0.5," in joined
    assert "histogram_quantile(0.99," in joined
    # The alert rules of docs/serving.md too.
    serving_doc = (PROJECT / "docs" / "serving.md").read_text(encoding="utf-8")
    alerts = serving_doc[serving_doc.index("Example alert rules") :]
    assert set(re.findall(r"\bnenjim_\w+", alerts)) <= exported


def test_the_dashboard_is_documented_where_monitoring_is() -> None:
    serving_doc = (PROJECT / "docs" / "serving.md").read_text(encoding="utf-8")
    monitoring = serving_doc[serving_doc.index("## What to monitor") :]
    assert "grafana-dashboard.json" in monitoring
    for metric in ("nenjim_checkpoint_age_seconds", "nenjim_follow_lag_events"):
        assert metric in monitoring, metric
