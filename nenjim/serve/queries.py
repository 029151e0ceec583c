"""The Journal's queries as JSON, for ``nenjim serve``: served from the store, following the log.

Answers are read from the chain table the store keeps, through its index,
with a bounded cache of chains: the server's memory does not grow with the
log. The chains are caught up with the log before every answer (one read
when nothing was appended), so revisions another process ingests are
answered at the next request, as the tree's checkpoint is.

``/journal/coordinates?contains=TEXT`` lists only the coordinates that hold
``TEXT`` (ignoring case), paged the same way. ``/journal/{coordinate}/text/{version}``
answers a revision's exact text and its differences from its predecessor's (a
unified diff, line by line), for the page of :mod:`nenjim.serve.page`.

The lists are paged: ``/journal/coordinates`` and ``/journal/{coordinate}/revisions``
take ``limit`` (:data:`DEFAULT_LIMIT` if absent, at most :data:`MAX_LIMIT`) and
``cursor``, the opaque ``next`` of the page before (``null`` on the last page). A
cursor names the last item answered (a coordinate, a Journal version), never an
offset, so what is appended between two pages neither repeats nor skips an item.
Every answer of 200 carries a strong ``ETag``, a digest of its body
(:func:`validated`); an ``If-None-Match`` that names it is answered 304.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nenjim.admin.json_output import located_release_json, revision_json
from nenjim.admin.transparency import FollowedChains
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion, ReleaseVersion

FRESH = {"Cache-Control": "no-cache"}
ERROR_CHARS = 160
"""The most characters an error answer says: what it quotes of a request stays short."""
DEFAULT_LIMIT = 100
"""The items of a page when the request names no ``limit``."""
MAX_LIMIT = 1000
"""The most items a page holds: a larger ``limit`` is answered 400."""
MAX_CONTAINS = 200
"""The most characters of a ``contains`` filter: a coordinate is never longer."""

T = TypeVar("T")


Endpoint = Callable[[Request], Response]
"""An endpoint Starlette runs in a worker thread."""
Answered = Callable[[Endpoint], Endpoint | Callable[[Request], Awaitable[Response]]]
"""How the endpoints that read the store are run (:func:`on_the_loop`, or as they are)."""


class PageRequestError(ValueError):
    """A malformed ``limit`` or ``cursor``: answered 400."""


def on_the_loop(endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    """``endpoint`` run on the event loop rather than in a worker thread: for a store read in
    this process (a file's pages, memory), handing each request to a thread and back costs
    more than the read, and the threads then take turns at the interpreter lock."""

    async def answered(request: Request) -> Response:
        return endpoint(request)

    return answered


def in_a_thread(endpoint: Endpoint) -> Endpoint:
    """``endpoint`` as it is, which Starlette runs in a worker thread: a server's store
    (PostgreSQL) waits on round trips, which the threads of several requests overlap."""
    return endpoint


def error_answer(status: int, message: str) -> JSONResponse:
    """``{"error": MESSAGE}`` with ``status``, the message cut to :data:`ERROR_CHARS`."""
    return JSONResponse({"error": bounded(message)}, status_code=status)


def bounded(message: str) -> str:
    """``message``, cut to :data:`ERROR_CHARS` characters (the last one an ellipsis)."""
    return message if len(message) <= ERROR_CHARS else message[: ERROR_CHARS - 1] + "\u2026"


def validated(request: Request, response: Response) -> Response:
    """``response`` with a strong ``ETag`` (a digest of its body) if it answers 200; or
    304 Not Modified, without a body, if the request's ``If-None-Match`` names that tag."""
    if response.status_code != 200:
        return response
    tag = '"' + hashlib.sha256(response.body).hexdigest()[:32] + '"'
    response.headers["ETag"] = tag
    if not _matches(request.headers.get("if-none-match"), tag):
        return response
    kept = {"ETag": tag}
    if "cache-control" in response.headers:
        kept["Cache-Control"] = response.headers["cache-control"]
    return Response(status_code=304, headers=kept)


def _matches(if_none_match: str | None, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` or ``*`` (weak comparison, as RFC 9110 says:
    a client may send back the weak tag of a gzip-encoded answer)."""
    if if_none_match is None:
        return False
    named = {part.strip().removeprefix("W/") for part in if_none_match.split(",")}
    return "*" in named or tag in named


def encode_cursor(kind: str, last: str) -> str:
    """An opaque cursor naming ``last``, the last item of a page of a list of ``kind``."""
    return base64.urlsafe_b64encode(f"{kind}:{last}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str) -> str:
    """The last item a cursor of :func:`encode_cursor` names; ``PageRequestError`` if it is
    malformed or of another list."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError):
        raise PageRequestError("malformed cursor") from None
    found, _, last = text.partition(":")
    if found != kind or not last:
        raise PageRequestError("malformed cursor (not one of this list)")
    return last


def page_limit(request: Request) -> int:
    """The request's ``limit``: 1 to :data:`MAX_LIMIT`, :data:`DEFAULT_LIMIT` if absent."""
    text = request.query_params.get("limit")
    if text is None:
        return DEFAULT_LIMIT
    if not (text.isascii() and text.isdigit() and len(text) <= 4 and 1 <= int(text) <= MAX_LIMIT):
        raise PageRequestError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def _cursor(request: Request, kind: str, check: Callable[[str], object]) -> str | None:
    """The last item named by the request's ``cursor`` (``None``: the first page), checked
    by ``check`` (``InvalidValueError`` makes it a malformed cursor)."""
    cursor = request.query_params.get("cursor")
    if cursor is None:
        return None
    last = decode_cursor(kind, cursor)
    try:
        check(last)
    except InvalidValueError:
        raise PageRequestError("malformed cursor") from None
    return last


def _page(
    items: Sequence[T], key: Callable[[T], str], after: str | None, limit: int
) -> tuple[list[T], bool]:
    """The first ``limit`` of ``items`` (sorted by ``key``) after ``after``; whether more follow."""
    start = (
        0
        if after is None
        else next((i for i, item in enumerate(items) if key(item) > after), len(items))
    )
    return list(items[start : start + limit]), start + limit < len(items)


def query_routes(followed: FollowedChains, answered: Answered = in_a_thread) -> list[Route]:
    """``/journal/...``: coordinates, an artifact's revisions, latest, exact, as-of, release,
    answered from the chains ``followed``, each run as ``answered`` says."""

    def answer(request: Request) -> Response:
        params = request.path_params
        try:
            chain = followed.chain(params["coordinate"])
            query = params["query"]
            document: dict[str, object]
            if query == "revisions":
                document = _revisions(request, chain.revisions)
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
            elif query == "text" and "version" in params:
                document = _text(chain.revisions, JournalVersion(params["version"]))
            else:
                return error_answer(404, f"unknown query {query!r}")
        except (InvalidValueError, PageRequestError) as error:
            return error_answer(400, str(error))
        except LookupError as error:
            return error_answer(404, str(error))
        return validated(request, JSONResponse(document, headers=FRESH))

    def coordinates(request: Request) -> Response:
        try:
            limit = page_limit(request)
            after = _cursor(request, "coordinate", ArtifactCoordinate)
            contains = _contains(request)
        except PageRequestError as error:
            return error_answer(400, str(error))
        page, more = followed.coordinates(after, limit, contains)
        following = encode_cursor("coordinate", page[-1]) if more else None
        document = {"coordinates": page, "next": following}
        return validated(request, JSONResponse(document, headers=FRESH))

    return [
        Route("/journal/coordinates", answered(coordinates)),
        Route("/journal/{coordinate}/{query}", answered(answer)),
        Route("/journal/{coordinate}/{query}/{version}", answered(answer)),
    ]


def _contains(request: Request) -> str | None:
    """The request's ``contains`` filter, case-folded (``None``: every coordinate)."""
    text = request.query_params.get("contains")
    if text is None:
        return None
    if len(text) > MAX_CONTAINS:
        raise PageRequestError(f"contains must be at most {MAX_CONTAINS} characters")
    return text.casefold()


def _revisions(request: Request, revisions: Sequence[JournalRevision]) -> dict[str, object]:
    """A page of an artifact's revisions, oldest first (the JSON of ``nenjim journal log``),
    and the cursor of the next page."""
    limit = page_limit(request)
    after = _cursor(request, "version", JournalVersion)

    def version(revision: JournalRevision) -> str:
        return str(revision.version)

    page, more = _page(revisions, version, after, limit)
    return {
        "coordinate": str(revisions[0].coordinate),
        "revisions": [revision_json(revision) for revision in page],
        "next": encode_cursor("version", version(page[-1])) if more else None,
    }


def _release(revision: JournalRevision, version: ReleaseVersion) -> dict[str, object]:
    release = revision.release(version)
    if release is None:
        raise LookupError(f"no release {version} in {revision.coordinate} {revision.version}")
    return located_release_json(revision, release)


def _text(revisions: Sequence[JournalRevision], version: JournalVersion) -> dict[str, object]:
    """The revision at ``version``: its exact text, and the unified diff of its predecessor's
    text to it (empty for the genesis)."""
    at = next((i for i, r in enumerate(revisions) if r.version == version), None)
    if at is None:
        raise LookupError(f"no revision {revisions[0].coordinate} exact {version}")
    revision = revisions[at]
    before = revisions[at - 1] if at > 0 else None
    diff = (
        []
        if before is None
        else list(
            difflib.unified_diff(
                before.text.splitlines(),
                revision.text.splitlines(),
                fromfile=str(before.version),
                tofile=str(revision.version),
                lineterm="",
            )
        )
    )
    return {
        "coordinate": str(revision.coordinate),
        "journal_version": str(revision.version),
        "digest": str(revision.digest),
        "text": revision.text,
        "predecessor_version": None if before is None else str(before.version),
        "diff": diff,
    }
