"""An HTTP load on loopback: client threads, each with one keep-alive connection.

Each of ``clients`` threads sends ``GET`` requests for ``seconds`` (at least
one each, however loaded the machine), spreading them over the servers
``urls`` round-robin. Back to back (a closed loop: each request as soon as
the answer before it came), a request is timed from its first byte sent to
the answer's last byte read: the load is as much as the machine answers, and
the latency mostly the queue that makes. At a given ``rate`` (requests per
second, over all clients; an open loop), each client sends at random
(Poisson) instants, and a request is timed from the instant it was due: a
request that waited for the one before it counts that wait, as its user
would (no coordinated omission). The clients use the standard
library's ``http.client``, whose own work is a fraction of a server's: on a
machine the clients share with the server, a heavier client would take the
CPU the numbers are meant to show. Every answer must be 200.
"""

from __future__ import annotations

import http.client
import random
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What a load measured: requests per second and the latency's p50 and p99 (ms)."""

    rate: float
    p50_ms: float
    p99_ms: float


def http_load(
    urls: Sequence[str],
    path: Callable[[random.Random], str],
    *,
    clients: int,
    seconds: float,
    headers: dict[str, str] | None = None,
    rate: float | None = None,
) -> LoadResult:
    """``clients`` threads asking ``path(rng)`` (a path with its leading ``/``) of the servers
    ``urls`` for ``seconds``, back to back or at ``rate`` requests a second in all;
    ``RuntimeError`` naming a request answered other than 200."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    stop = time.perf_counter() + seconds
    servers = [urlsplit(url) for url in urls]

    def client(index: int) -> None:
        rng = random.Random(index)
        connections = [
            http.client.HTTPConnection(server.hostname or "", server.port, timeout=30)
            for server in servers
        ]
        n = index
        due = time.perf_counter()
        try:
            while True:
                connection = connections[n % len(connections)]
                n += 1
                asked = path(rng)
                if rate is None:
                    started = time.perf_counter()
                else:
                    due += rng.expovariate(rate / clients)
                    time.sleep(max(0.0, due - time.perf_counter()))
                    started = due
                connection.request("GET", asked, headers=headers or {})
                answer = connection.getresponse()
                answer.read()
                latencies[index].append(time.perf_counter() - started)
                if answer.status != 200:
                    errors.append(f"{asked}: {answer.status}")
                if time.perf_counter() >= stop:
                    break
        finally:
            for connection in connections:
                connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. {errors[0]}")
    every = sorted(value for values in latencies for value in values)
    p99 = every[min(len(every) - 1, int(len(every) * 0.99))]
    return LoadResult(len(every) / elapsed, statistics.median(every) * 1e3, p99 * 1e3)
