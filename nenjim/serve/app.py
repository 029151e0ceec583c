"""``nenjim serve``: the Journal's transparency log over HTTP, read-only (Starlette on uvicorn).

The C2SP ``tlog-tiles`` endpoints, byte-exact: ``GET /checkpoint`` (the signed
checkpoint of the tree as stored now), ``GET /tile/<L>/<N>[.p/<W>]`` and
``GET /tile/entries/<N>[.p/<W>]``; plus ``GET /lookup/<COORD>/<VERSION>``
(a revision's leaf with its inclusion proof and checkpoint, as ``nenjim
journal prove`` prints it), the Journal's queries as JSON under
``/journal/`` (see :mod:`nenjim.serve.queries`), ``GET /openapi.json`` and
``GET /metrics`` (Prometheus; see :mod:`nenjim.serve.observe`).
Every request reads the store as it is: revisions another process appends
show up at the next request. Full tiles and bundles never change and are
served as immutable. A malformed coordinate or version is answered 400,
what the log does not hold 404, as is a path that is not a canonical tile;
an error answer says at most 160 characters, however long the request.
Needs the ``serve`` extra (``pip install 'nenjim[serve]'``); it is run by
:mod:`nenjim.cli.serve_run`.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from nenjim.admin.errors import InvalidTilePathError, ProofRequestError
from nenjim.admin.stores import JournalLog
from nenjim.admin.transparency import (
    JournalTree,
    SignerKey,
    parse_entry_bundle_path,
    parse_tile_path,
    served_bundle,
)
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion
from nenjim.serve.observe import Observed, ServedMetrics
from nenjim.serve.queries import bounded, error_answer, query_routes

TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"
IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
FRESH = {"Cache-Control": "no-cache"}


def build_app(
    log: JournalLog, signer: SignerKey, origin: str | None = None, *, access_log: bool = True
) -> Observed:
    """The read-only application over the open Journal log ``log``, counted, timed and (with
    ``access_log``) logged request by request (:mod:`nenjim.serve.observe`)."""
    tree = JournalTree(log, signer, origin)
    metrics = ServedMetrics(log.tiled_log.entry_count)

    def checkpoint(_: Request) -> Response:
        return PlainTextResponse(tree.sign().note, media_type=TEXT, headers=FRESH)

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
            return JSONResponse(tree.prove_inclusion(coordinate, version), headers=FRESH)
        except ProofRequestError as error:
            return error_answer(404, str(error))

    def openapi(_: Request) -> Response:
        return JSONResponse(OPENAPI)

    routes = Starlette(
        routes=[
            Route("/checkpoint", checkpoint),
            Route("/tile/{path:path}", tile),
            Route("/lookup/{coordinate}/{version}", lookup),
            Route("/openapi.json", openapi),
            Route("/metrics", metrics.endpoint),
            *query_routes(log),
        ]
    )
    return Observed(routes, metrics, access_log=access_log)


_PARAMETERS = {
    "L": "the tile's level (0 is the leaves' hashes)",
    "N": "the tile's index, in the C2SP tlog-tiles path form (x001/x234/067)",
    "coordinate": "an artifact coordinate (group:artifact)",
    "version": "a Journal version (YYYYMMDDTHHMMSSZ)",
}


def _get(path: str, summary: str, responses: dict[str, Any]) -> dict[str, Any]:
    """The ``get`` operation of ``path``, declaring each of its path parameters."""
    names = re.findall(r"{(\w+)}", path)
    return {
        "get": {
            "summary": summary,
            "parameters": [
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "description": _PARAMETERS[name],
                    "schema": {"type": "string"},
                }
                for name in names
            ],
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


def _json(path: str, summary: str, missing: str) -> dict[str, Any]:
    return _get(
        path,
        summary,
        {
            "200": _answer("the answer", "application/json", {"type": "object"}),
            "400": {"description": "a malformed coordinate or version"},
            "404": {"description": missing},
        },
    )


def _paths() -> dict[str, Any]:
    paths = {
        "/checkpoint": _get(
            "/checkpoint",
            "The signed checkpoint (C2SP tlog-checkpoint, signed note)",
            {"200": _answer("the signed note", TEXT, {"type": "string"})},
        ),
        "/tile/{L}/{N}": _binary(
            "/tile/{L}/{N}", "A hash tile: full, or partial with a .p/W suffix"
        ),
        "/tile/entries/{N}": _binary(
            "/tile/entries/{N}", "An entry bundle: full, or partial (.p/W)"
        ),
        "/metrics": _get(
            "/metrics",
            "Requests, latencies and the log's size in Prometheus' text format",
            {"200": _answer("the metrics", "text/plain", {"type": "string"})},
        ),
    }
    journal = "no such artifact, revision or release"
    for path, summary, missing in (
        ("/journal/coordinates", "Every artifact coordinate, sorted", journal),
        ("/journal/{coordinate}/revisions", "An artifact's revisions, oldest first", journal),
        ("/journal/{coordinate}/latest", "An artifact's latest revision", journal),
        ("/journal/{coordinate}/exact/{version}", "The revision at a Journal version", journal),
        ("/journal/{coordinate}/as-of/{version}", "The newest revision at or before", journal),
        ("/journal/{coordinate}/release/{version}", "A release of the latest revision", journal),
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
