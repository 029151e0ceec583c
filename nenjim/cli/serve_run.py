"""Running ``nenjim serve``: the listening socket first, then uvicorn on it, logging one line each.

The socket is bound before anything says "serving": an address that cannot
be listened on (a port in use, a privileged port, an unknown host) is one
line and exit 3, never uvicorn's own report. Whatever uvicorn, asyncio or
the application log while serving (the access log: one INFO line per request,
``GET /checkpoint 200 1.2ms``) (a client's malformed request, an
exception in a request) is one line on stderr, ``nenjim serve: LEVEL:
MESSAGE`` (with ``--json`` one JSON object), with the exception's type and
message and never its traceback (:class:`nenjim.cli.logs.OneLineFormatter`).
While it serves, the cycle collector walks only what is new
(:mod:`nenjim.serve.collection`). Needs the ``serve`` extra.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import uvicorn

from nenjim.cli.exit import EXIT_STORE, CommandError
from nenjim.cli.logs import LOGGER, OneLineFormatter
from nenjim.serve.collection import YoungOnlyCollection


def logging_config(*, as_json: bool, level: int = logging.INFO) -> dict[str, Any]:
    """uvicorn's ``log_config``: every record one line on stderr (see :class:`OneLineFormatter`);
    nenjim's own records (the access log among them) from ``level`` up."""
    stderr = {
        "formatter": "one_line",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "one_line": {"()": OneLineFormatter, "prefix": "nenjim serve", "as_json": as_json}
        },
        "handlers": {"stderr": stderr},
        # The root logger too: without a handler of its own, a warning would reach
        # logging's last-resort handler, which prints tracebacks.
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
            "uvicorn.error": {"level": "WARNING"},
            "uvicorn.access": {"handlers": [], "propagate": False},
            LOGGER: {"handlers": ["stderr"], "level": level, "propagate": False},
        },
    }


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host``:``port`` (0: any free port); exit 3 if it cannot."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listener = socket.create_server((host, port), family=family)
        # Each answer is written in two parts (head, body): with Nagle's algorithm the body
        # waits for the client's delayed ACK, 40 ms a request. asyncio turns it off only on
        # sockets it made; an accepted one inherits the listener's setting.
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return listener
    except OSError as error:
        # create_server appends the address to the system's reason: the line names it already.
        code = error.errno
        reason = os.strerror(code) if code and code > 0 else (error.strerror or str(error))
        raise CommandError(
            f"cannot listen on {where}: {reason}", EXIT_STORE, "unavailable"
        ) from None


def url_of(listener: socket.socket) -> str:
    """The base URL of the log served on ``listener``."""
    host, port = listener.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def run_server(
    app: Any, listener: socket.socket, *, as_json: bool, level: int = logging.INFO
) -> None:
    """Serve ``app`` on ``listener`` until interrupted (uvicorn stops gracefully first);
    ``as_json``: log records as JSON objects; ``level``: nenjim's least severe records shown."""
    config = uvicorn.Config(
        app,
        log_config=logging_config(as_json=as_json, level=level),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    collection = YoungOnlyCollection()  # no full collection's pause every few seconds
    collection.start()
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        collection.stop()
