"""``nenjim serve``: the Journal's transparency log over HTTP, read-only (Starlette on uvicorn).

The C2SP ``tlog-tiles`` endpoints, byte-exact: ``GET /checkpoint`` (the signed
checkpoint of the tree as stored now), ``GET /tile/<L>/<N>[.p/<W>]`` and
``GET /tile/entries/<N>[.p/<W>]``; plus ``GET /lookup/<COORD>/<VERSION>``
(a revision's leaf with its inclusion proof and checkpoint, as ``nenjim
journal prove`` prints it), the Journal's queries as JSON under
``/journal/`` (see :mod:`nenjim.serve.queries`), ``GET /openapi.json`` and
``GET /metrics`` (Prometheus; see :mod:`nenjim.serve.observe`), and at ``GET /`` a
page to browse it all (:mod:`nenjim.serve.page`; not in the OpenAPI document).
Every request reads the store as it is: revisions another process appends
show up at the next request. Full tiles and bundles never change and are
served as immutable. A malformed coordinate or version is answered 400,
what the log does not hold 404, as is a path that is not a canonical tile;
an error answer says at most 160 characters, however long the request.

The JSON answers and the checkpoint carry a strong ``ETag`` (a digest of the
body) and answer ``If-None-Match`` with 304. Answers of at least
:data:`GZIP_MINIMUM` bytes are gzip-encoded for clients that accept it, but
hash tiles (SHA-256 hashes do not compress): a client that sends no
``Accept-Encoding`` gets the tlog-tiles bytes as they are, and one that does
decodes them back to the same bytes. A gzip-encoded answer's ``ETag`` is
weak (``W/"..."``), as it names another representation. CORS is off unless
``cors_origins`` names origins: then those may ``GET``.
With ``witnesses``, the checkpoint carries their cosignatures
(:mod:`nenjim.serve.cosigning`).
Needs the ``serve`` extra (``pip install 'nenjim[serve]'``); it is run by
:mod:`nenjim.cli.serve_run`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nenjim.admin.errors import InvalidTilePathError, ProofRequestError
from nenjim.admin.stores import JournalLog
from nenjim.admin.transparency import (
    DEFAULT_CHAIN_CACHE,
    FollowedChains,
    JournalTree,
    SignerKey,
    last_logged_at,
    parse_entry_bundle_path,
    parse_tile_path,
    served_bundle,
)
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion
from nenjim.serve.cosigning import Cosigning, Witness
from nenjim.serve.observe import Observed, ServedMetrics
from nenjim.serve.page import page_routes
from nenjim.serve.queries import (
    DEFAULT_LIMIT,
    MAX_CONTAINS,
    MAX_LIMIT,
    bounded,
    error_answer,
    in_a_thread,
    on_the_loop,
    query_routes,
    validated,
)

TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"
IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
FRESH = {"Cache-Control": "no-cache"}
GZIP_MINIMUM = 1024
"""The fewest bytes of an answer gzip-encoded: below, the headers cost more than it saves."""


class Compressed:
    """gzip (:class:`GZipMiddleware`) for every answer but hash tiles, whose hashes do not
    compress; the ``ETag`` of a gzip-encoded answer made weak."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=GZIP_MINIMUM)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or (
            path.startswith("/tile/") and not path.startswith("/tile/entries/")
        ):
            await self.app(scope, receive, send)
            return

        async def weakened(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                tag = headers.get("etag")
                if tag and headers.get("content-encoding") == "gzip" and tag.startswith('"'):
                    headers["ETag"] = "W/" + tag
            await send(message)

        await self.gzip(scope, receive, weakened)


def build_app(
    log: JournalLog,
    signer: SignerKey,
    origin: str | None = None,
    *,
    access_log: bool = True,
    cors_origins: list[str] | None = None,
    witnesses: Sequence[Witness] = (),
    chain_cache: int = DEFAULT_CHAIN_CACHE,
) -> Observed:
    """The read-only application over the open Journal log ``log``, counted, timed and (with
    ``access_log``) logged request by request (:mod:`nenjim.serve.observe`): around every
    request, so that a 304, a gzip-encoded answer or a CORS preflight is counted too.
    ``cors_origins``: the origins allowed to ``GET`` from a browser (none: no CORS).
    ``witnesses``: those whose cosignatures the checkpoint is served with
    (:mod:`nenjim.serve.cosigning`). ``chain_cache``: the artifacts' chains the Journal's
    queries hold in memory at most."""
    tree = JournalTree(log, signer, origin)
    cosigning = Cosigning(tree, signer.verifier, witnesses)
    followed = FollowedChains(log, chain_cache)
    followed.catch_up()  # a chain table that cannot be served stops the start, not a request
    metrics = ServedMetrics(
        log.tiled_log.entry_count,
        lambda: last_logged_at(log),
        followed.lag,
        followed.cache_lookups,
    )

    def checkpoint(request: Request) -> Response:
        note = PlainTextResponse(cosigning.note(), media_type=TEXT, headers=FRESH)
        return validated(request, note)

    def tile(request: Request) -> Response:
        path = "tile/" + request.path_params["path"]
        try:
            if path.startswith("tile/entries/"):
                bundle = parse_entry_bundle_path(path)
                data = served_bundle(log.tiled_log, bundle)
                full = bundle.is_full
            else:
                wanted = parse_tile_path(path)
                data = tree.served_tile(wanted)
                full = wanted.is_full
        except InvalidTilePathError as error:
            return PlainTextResponse(f"{bounded(str(error))}\n", status_code=404, media_type=TEXT)
        if data is None:
            return PlainTextResponse(
                f"{path} is not in the tree yet\n", status_code=404, media_type=TEXT
            )
        return Response(data, media_type=BINARY, headers=IMMUTABLE if full else FRESH)

    def lookup(request: Request) -> Response:
        coordinate = request.path_params["coordinate"]
        version = request.path_params["version"]
        try:
            ArtifactCoordinate(coordinate)
            JournalVersion(version)
        except InvalidValueError as error:
            return error_answer(400, str(error))
        try:
            proved = JSONResponse(tree.prove_inclusion(coordinate, version), headers=FRESH)
            return validated(request, proved)
        except ProofRequestError as error:
            return error_answer(404, str(error))

    def openapi(request: Request) -> Response:
        return validated(request, JSONResponse(OPENAPI))

    # The checkpoint stays in a thread whatever the store: it may ask witnesses over HTTP.
    answered = in_a_thread if log.location.store_kind.served_by_server else on_the_loop
    routes = Starlette(
        routes=[
            Route("/checkpoint", checkpoint),
            Route("/tile/{path:path}", answered(tile)),
            Route("/lookup/{coordinate}/{version}", answered(lookup)),
            Route("/openapi.json", openapi),
            Route("/metrics", metrics.endpoint),
            *query_routes(followed, answered),
            *page_routes(),
        ],
        middleware=[
            *_cors(cors_origins or []),
            Middleware(Compressed),
        ],
    )
    return Observed(routes, metrics, access_log=access_log)


def _cors(origins: list[str]) -> list[Middleware]:
    """CORS for ``origins``, ``GET`` only (ETag readable by their scripts); none: no CORS."""
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET"],
            allow_headers=["If-None-Match"],
            expose_headers=["ETag"],
        )
    ]


# The syntax of each value, as the Journal's value types check it, so that a client (and a
# generator of requests) knows which values are well formed: a path parameter that does not
# match is answered 400, or 404 for a tile path. A Journal version names a real date: the
# months' lengths and February 29th of leap years are spelled out.
_SEGMENT = "[a-z][a-z0-9_]*"
_YEAR = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    "((0[13578]|1[02])(0[1-9]|[12][0-9]|3[01])|(0[469]|11)(0[1-9]|[12][0-9]|30)"
    "|02(0[1-9]|1[0-9]|2[0-8]))"
)
_TIME = "T([01][0-9]|2[0-3])[0-5][0-9][0-5][0-9]Z"
_NUMBER = "(0|[1-9][0-9]*)"
_PRERELEASE = "(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
JOURNAL_VERSION_PATTERN = f"^({_YEAR}{_MONTH_DAY}|{_LEAP_YEAR}0229){_TIME}$"
"""The pattern of a Journal version (YYYYMMDDTHHMMSSZ, a real UTC date-time)."""
_PARAMETERS: dict[str, tuple[str, dict[str, Any]]] = {
    "L": ("the tile's level (0 is the leaves' hashes)", {"type": "string"}),
    "N": (
        "the tile's index, in the C2SP tlog-tiles path form (x001/x234/067)",
        {"type": "string"},
    ),
    "coordinate": (
        "an artifact coordinate (com.example.widget)",
        {"type": "string", "pattern": f"^{_SEGMENT}(\\.{_SEGMENT})+$", "maxLength": 255},
    ),
    "version": (
        "a Journal version (YYYYMMDDTHHMMSSZ)",
        {"type": "string", "pattern": JOURNAL_VERSION_PATTERN},
    ),
    "release": (
        "a release version (SemVer MAJOR.MINOR.PATCH[-PRERELEASE], no +build)",
        {
            "type": "string",
            "pattern": f"^{_NUMBER}\\.{_NUMBER}\\.{_NUMBER}(-{_PRERELEASE}(\\.{_PRERELEASE})*)?$",
        },
    ),
}
_PAGING = [
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": f"the most items of the page ({DEFAULT_LIMIT} if absent)",
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    },
    {
        "name": "cursor",
        "in": "query",
        "required": False,
        "description": "the next of the page before, as it was answered (opaque)",
        "schema": {"type": "string"},
    },
]

_CONTAINS = {
    "name": "contains",
    "in": "query",
    "required": False,
    "description": "only the coordinates that hold this text, ignoring case",
    "schema": {"type": "string", "maxLength": MAX_CONTAINS},
}


def _get(
    path: str, summary: str, responses: dict[str, Any], query: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The ``get`` operation of ``path``, declaring each of its path parameters and ``query``."""
    names = re.findall(r"{(\w+)}", path)
    return {
        "get": {
            "summary": summary,
            "parameters": [
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "description": _PARAMETERS[name][0],
                    "schema": _PARAMETERS[name][1],
                }
                for name in names
            ]
            + (query or []),
            "responses": responses,
        }
    }


def _answer(description: str, media_type: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {media_type: {"schema": schema}}}


def _binary(path: str, summary: str) -> dict[str, Any]:
    return _get(
        path,
        summary,
        {
            "200": _answer("the bytes", BINARY, {"type": "string", "format": "binary"}),
            "404": {"description": "not a canonical path, or not in the tree yet"},
        },
    )


NOT_MODIFIED = {"description": "not modified: If-None-Match names the answer's ETag"}


def _json(path: str, summary: str, missing: str) -> dict[str, Any]:
    return _get(
        path,
        summary,
        {
            "200": _answer("the answer", "application/json", {"type": "object"}),
            "304": NOT_MODIFIED,
            "400": {"description": "a malformed coordinate or version"},
            "404": {"description": missing},
        },
    )


def _list(
    path: str, summary: str, items: str, query: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A paged list: ``items`` (the page) and ``next`` (the cursor of the next, or null);
    ``query``: its parameters besides the paging ones."""
    page = {
        "type": "object",
        "required": [items, "next"],
        "properties": {
            items: {"type": "array"},
            "next": {
                "type": ["string", "null"],
                "description": "the cursor of the next page; null on the last",
            },
        },
    }
    return _get(
        path,
        summary,
        {
            "200": _answer("a page of the list", "application/json", page),
            "304": NOT_MODIFIED,
            "400": {"description": "a malformed coordinate, limit or cursor"},
            "404": {"description": "no such artifact"},
        },
        _PAGING + (query or []),
    )


def _paths() -> dict[str, Any]:
    paths = {
        "/checkpoint": _get(
            "/checkpoint",
            "The signed checkpoint (C2SP tlog-checkpoint, signed note)",
            {"200": _answer("the signed note", TEXT, {"type": "string"}), "304": NOT_MODIFIED},
        ),
        "/tile/{L}/{N}": _binary(
            "/tile/{L}/{N}", "A hash tile: full, or partial with a .p/W suffix"
        ),
        "/tile/entries/{N}": _binary(
            "/tile/entries/{N}", "An entry bundle: full, or partial (.p/W)"
        ),
        "/metrics": _get(
            "/metrics",
            "Requests, latencies, the log's size, checkpoint age and follow lag in "
            "Prometheus' text format",
            {"200": _answer("the metrics", "text/plain", {"type": "string"})},
        ),
    }
    paths["/journal/coordinates"] = _list(
        "/journal/coordinates",
        "Every artifact coordinate, sorted, a page at a time",
        "coordinates",
        [_CONTAINS],
    )
    paths["/journal/{coordinate}/revisions"] = _list(
        "/journal/{coordinate}/revisions",
        "An artifact's revisions, oldest first, a page at a time",
        "revisions",
    )
    journal = "no such artifact, revision or release"
    for path, summary, missing in (
        ("/journal/{coordinate}/latest", "An artifact's latest revision", journal),
        ("/journal/{coordinate}/exact/{version}", "The revision at a Journal version", journal),
        ("/journal/{coordinate}/as-of/{version}", "The newest revision at or before", journal),
        ("/journal/{coordinate}/release/{release}", "A release of the latest revision", journal),
        (
            "/journal/{coordinate}/text/{version}",
            "A revision's exact text and the unified diff from its predecessor's",
            journal,
        ),
        (
            "/lookup/{coordinate}/{version}",
            "A revision's leaf, index, inclusion proof and signed checkpoint",
            "no such revision",
        ),
    ):
        paths[path] = _json(path, summary, missing)
    return paths


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "nenjim transparency log (C2SP tlog-tiles)", "version": "1"},
    "paths": _paths(),
}
