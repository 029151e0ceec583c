"""What an operator sees of ``nenjim serve``: an access log line per request, and metrics.

:class:`Observed` wraps the application. For every HTTP request it counts
the answer by route and status (``nenjim_http_requests_total``), times it
(``nenjim_http_request_duration_seconds``, by route) and, unless told not
to, logs one line through :mod:`logging` (logger ``nenjim.serve.access``,
level INFO): ``GET /checkpoint 200 1.2ms``, with the fields ``method``, ``path``,
``status`` and ``duration_ms`` for a JSON log line. A route is its template
(``/tile/{path:path}``), never the path asked, so the metrics' labels stay
few whatever clients ask. ``GET /metrics`` answers the registry in
Prometheus' text format, with what is read from the store at each scrape:
the log's size (``nenjim_log_entries``), the seconds since the tree last
grew (``nenjim_checkpoint_age_seconds``: the age of the newest entry a
checkpoint signs) and the events the served Journal queries have not
caught up with yet (``nenjim_follow_lag_events``); and the server process's own
CPU time, memory and open files (``process_...``, Prometheus' standard names).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response

ACCESS = logging.getLogger("nenjim.serve.access")
"""The access log: one INFO record per request."""

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""The request latency histogram's bounds, in seconds: from half a millisecond, as an answer
from the cache takes less than one (Prometheus' default starts at 5 ms)."""

UNMATCHED = "(unmatched)"
"""The route label of a request no route took (answered 404)."""

Asgi = Callable[..., Any]


class ServedMetrics:
    """The metrics of one served application, in a registry of their own."""

    def __init__(
        self,
        log_size: Callable[[], int],
        logged_at: Callable[[], datetime | None],
        follow_lag: Callable[[], int],
        cache_lookups: Callable[[], tuple[int, int]] = lambda: (0, 0),
    ) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total and its siblings
        self.requests = Counter(
            "nenjim_http_requests",
            "HTTP requests answered, by route template and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "nenjim_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template",
            ["route"],
            registry=self.registry,
            buckets=LATENCY_BUCKETS,
        )
        entries = Gauge(
            "nenjim_log_entries",
            "Entries in the Journal's transparency log (revisions logged)",
            registry=self.registry,
        )
        entries.set_function(lambda: float(log_size()))
        age = Gauge(
            "nenjim_checkpoint_age_seconds",
            "Seconds since the tree a checkpoint signs last grew (its newest entry was "
            "logged); NaN for an empty log",
            registry=self.registry,
        )
        age.set_function(lambda: _age(logged_at()))
        lag = Gauge(
            "nenjim_follow_lag_events",
            "Events of the log the served Journal queries have not caught up with yet "
            "(they do at their next request)",
            registry=self.registry,
        )
        lag.set_function(lambda: float(follow_lag()))
        lookups = Gauge(
            "nenjim_chain_cache_lookups",
            "Lookups of an artifact's chain by the served Journal queries since the start, "
            "by result: hit (held in the cache) or miss (read from the store)",
            ["result"],
            registry=self.registry,
        )
        lookups.labels("hit").set_function(lambda: float(cache_lookups()[0]))
        lookups.labels("miss").set_function(lambda: float(cache_lookups()[1]))

    def endpoint(self, _: Request) -> Response:
        """``GET /metrics``: the registry in Prometheus' text format."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


def _age(logged_at: datetime | None) -> float:
    if logged_at is None:
        return math.nan
    return max(0.0, (datetime.now(UTC) - logged_at).total_seconds())


class Observed:
    """An ASGI application that counts, times and (if ``access_log``) logs every request."""

    def __init__(self, app: Asgi, metrics: ServedMetrics, *, access_log: bool) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log

    async def __call__(self, scope: dict[str, Any], receive: Asgi, send: Asgi) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an application error that sent nothing is answered 500

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", UNMATCHED)
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(elapsed)
            if self.access_log:
                milliseconds = round(elapsed * 1000, 1)
                ACCESS.info(
                    "%s %s %d %.1fms",
                    scope["method"],
                    scope["path"],
                    status,
                    milliseconds,
                    extra={
                        "method": scope["method"],
                        "path": scope["path"],
                        "status": status,
                        "duration_ms": milliseconds,
                    },
                )
