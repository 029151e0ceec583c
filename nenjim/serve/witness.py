"""``nenjim witness``: a C2SP tlog-witness over HTTP (Starlette on uvicorn).

``POST /add-checkpoint`` takes ``old <size>``, a consistency proof, an
empty line and a signed checkpoint; it answers 200 with the witness's
cosignature line (C2SP tlog-cosignature v1) once the new tree head is
recorded, or refuses: 400 a malformed request (or an old size above the
checkpoint's), 403 no valid signature by the log's key, 404 an unknown
origin, 409 an old size that is not the one last cosigned (the body says
that size, ``text/x.tlog.size``), or the same size with another root, 422 a
consistency proof that does not verify, 413 a body above
:data:`MAX_BODY` bytes. A refusal's body is one line. 409s and 422s are
logged as warnings (logger ``nenjim.witness``): they may be the evidence of a
log that forked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from nenjim.admin.transparency import VerifierKey
from nenjim.admin.witness import (
    REFUSAL_STATUS,
    SIZE_MEDIA_TYPE,
    AddCheckpoint,
    Cosigner,
    OldSizeMismatchError,
    WitnessRefusalError,
    WitnessState,
    size_answer,
)
from nenjim.serve.queries import bounded

TEXT = "text/plain; charset=utf-8"
MAX_BODY = 64 * 1024
"""The largest request body read: 63 proof lines and a checkpoint with many signatures fit."""
WARNINGS = logging.getLogger("nenjim.witness")


def build_witness_app(
    cosigner: Cosigner, logs: Mapping[str, Sequence[VerifierKey]], state: WitnessState
) -> Starlette:
    """The witness of the logs ``logs`` (their verifier keys by origin), cosigning with
    ``cosigner`` and recording what it cosigned in ``state``."""

    async def add_checkpoint(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return _refusal(413, f"add-checkpoint body above {MAX_BODY} bytes")
        try:
            parsed = AddCheckpoint.parse(body)
            # The state's lock and fsync block: off the event loop.
            signature = await run_in_threadpool(state.cosign, parsed, logs, cosigner)
        except OldSizeMismatchError as error:
            WARNINGS.warning("409 %s", error)
            # Exactly this media type: Starlette would add a charset to a text/ media_type.
            return Response(size_answer(error.size), 409, headers={"Content-Type": SIZE_MEDIA_TYPE})
        except WitnessRefusalError as error:
            status = REFUSAL_STATUS[type(error)]
            if status == 422:
                WARNINGS.warning("422 %s", error)
            return _refusal(status, str(error))
        return PlainTextResponse(signature.line(), media_type=TEXT)

    return Starlette(routes=[Route("/add-checkpoint", add_checkpoint, methods=["POST"])])


def _refusal(status: int, message: str) -> Response:
    return PlainTextResponse(f"{bounded(message)}\n", status_code=status, media_type=TEXT)
