"""``nenjim serve``: the Journal's transparency log over HTTP, read-only (Starlette on uvicorn).

The C2SP ``tlog-tiles`` endpoints, byte-exact: ``GET /checkpoint`` (the signed
checkpoint of the tree as stored now), ``GET /tile/<L>/<N>[.p/<W>]`` and
``GET /tile/entries/<N>[.p/<W>]``; plus ``GET /lookup/<COORD>/<VERSION>``
(a revision's leaf with its inclusion proof and checkpoint, as ``nenjim
journal prove`` prints it), the Journal's queries as JSON under
``/journal/`` (see :mod:`nenjim.serve.queries`) and ``GET /openapi.json``.
Every request reads the store as it is: revisions another process appends
show up at the next request. Full tiles and bundles never change and are
served as immutable. A malformed coordinate or version is answered 400,
what the log does not hold 404, as is a path that is not a canonical tile;
an error answer says at most 160 characters, however long the request.
Needs the ``serve`` extra (``pip install 'nenjim[serve]'``); it is run by
:mod:`nenjim.cli.serve_run`.
"""

from __future__ import annotations

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
from nenjim.serve.queries import bounded, error_answer, query_routes

TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"
IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
FRESH = {"Cache-Control": "no-cache"}


def build_app(log: JournalLog, signer: SignerKey, origin: str | None = None) -> Starlette:
    """The read-only application over the open Journal log ``log``."""
    tree = JournalTree(log, signer, origin)

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

    return Starlette(
        routes=[
            Route("/checkpoint", checkpoint),
            Route("/tile/{path:path}", tile),
            Route("/lookup/{coordinate}/{version}", lookup),
            Route("/openapi.json", openapi),
            *query_routes(log),
        ]
    )


def _binary(summary: str) -> dict[str, Any]:
    return {
        "summary": summary,
        "responses": {
            "200": {"content": {BINARY: {"schema": {"type": "string", "format": "binary"}}}},
            "404": {"description": "not a canonical path, or not in the tree yet"},
        },
    }


def _json(summary: str) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "responses": {
                "200": {"content": {"application/json": {"schema": {"type": "object"}}}},
                "400": {"description": "a malformed coordinate or version"},
                "404": {"description": "no such artifact, revision or release"},
            },
        }
    }


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "nenjim transparency log (C2SP tlog-tiles)", "version": "1"},
    "paths": {
        "/checkpoint": {
            "get": {
                "summary": "The signed checkpoint (C2SP tlog-checkpoint, signed note)",
                "responses": {"200": {"content": {TEXT: {"schema": {"type": "string"}}}}},
            }
        },
        "/tile/{L}/{N}": {"get": _binary("A hash tile: full, or partial with a .p/W suffix")},
        "/tile/entries/{N}": {"get": _binary("An entry bundle: full, or partial (.p/W)")},
        "/journal/coordinates": _json("Every artifact coordinate, sorted"),
        "/journal/{coordinate}/revisions": _json("An artifact's revisions, oldest first"),
        "/journal/{coordinate}/latest": _json("An artifact's latest revision"),
        "/journal/{coordinate}/exact/{version}": _json("The revision at a Journal version"),
        "/journal/{coordinate}/as-of/{version}": _json("The newest revision at or before"),
        "/journal/{coordinate}/release/{version}": _json("A release of the latest revision"),
        "/lookup/{coordinate}/{version}": {
            "get": {
                "summary": "A revision's leaf, index, inclusion proof and signed checkpoint",
                "responses": {
                    "200": {"content": {"application/json": {"schema": {"type": "object"}}}},
                    "400": {"description": "a malformed coordinate or version"},
                    "404": {"description": "no such revision"},
                },
            }
        },
    },
}
