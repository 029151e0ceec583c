"""The Journal's queries as JSON, for ``nenjim serve``: a projection that follows the log.

The chain projection is caught up with the log before every answer (one
read when nothing was appended), so revisions another process ingests are
answered at the next request, as the tree's checkpoint is.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nenjim.admin.json_output import located_release_json, log_json, revision_json
from nenjim.admin.stores import JournalLog
from nenjim.admin.transparency import FollowedChains
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import JournalVersion, ReleaseVersion

FRESH = {"Cache-Control": "no-cache"}
ERROR_CHARS = 160
"""The most characters an error answer says: what it quotes of a request stays short."""


def error_answer(status: int, message: str) -> JSONResponse:
    """``{"error": MESSAGE}`` with ``status``, the message cut to :data:`ERROR_CHARS`."""
    return JSONResponse({"error": bounded(message)}, status_code=status)


def bounded(message: str) -> str:
    """``message``, cut to :data:`ERROR_CHARS` characters (the last one an ellipsis)."""
    return message if len(message) <= ERROR_CHARS else message[: ERROR_CHARS - 1] + "\u2026"


def query_routes(log: JournalLog) -> list[Route]:
    """``/journal/...``: coordinates, an artifact's revisions, latest, exact, as-of, release."""
    followed = FollowedChains(log)

    def answer(request: Request) -> Response:
        params = request.path_params
        try:
            chain = followed.chain(params["coordinate"])
            query = params["query"]
            document: dict[str, object]
            if query == "revisions":
                document = log_json(chain.revisions)
            elif query == "latest":
                document = revision_json(chain.latest)
            elif query in ("exact", "as-of") and "version" in params:
                version = JournalVersion(params["version"])
                found = chain.exact(version) if query == "exact" else chain.as_of(version)
                if found is None:
                    raise LookupError(f"no revision {params['coordinate']} {query} {version}")
                document = revision_json(found)
            elif query == "release" and "version" in params:
                document = _release(chain.latest, ReleaseVersion(params["version"]))
            else:
                return error_answer(404, f"unknown query {query!r}")
        except InvalidValueError as error:
            return error_answer(400, str(error))
        except LookupError as error:
            return error_answer(404, str(error))
        return JSONResponse(document, headers=FRESH)

    def coordinates(_: Request) -> Response:
        view = followed.caught_up()
        names = sorted(str(c) for c in view.chains)
        return JSONResponse({"coordinates": names}, headers=FRESH)

    return [
        Route("/journal/coordinates", coordinates),
        Route("/journal/{coordinate}/{query}", answer),
        Route("/journal/{coordinate}/{query}/{version}", answer),
    ]


def _release(revision: JournalRevision, version: ReleaseVersion) -> dict[str, object]:
    release = revision.release(version)
    if release is None:
        raise LookupError(f"no release {version} in {revision.coordinate} {revision.version}")
    return located_release_json(revision, release)
