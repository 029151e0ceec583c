"""The page that browses the served Journal: ``GET /`` and its script and style sheet.

Three files ship in the package (``nenjim/serve/static``): no build step, no
framework. The page reads only the server's JSON and tlog routes, from the
same origin, and checks each inclusion proof in the browser: it recomputes the
tree's root from the revision's leaf and proof with the browser's SHA-256 and
compares it with the root of the checkpoint the server signs. The files are
read once, when the application is built; each answer carries a strong
``ETag`` and a content security policy that lets the page load nothing but
itself.
"""

from __future__ import annotations

from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nenjim.serve.queries import error_answer, validated

ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "page.js": "text/javascript; charset=utf-8",
    "page.css": "text/css; charset=utf-8",
}
"""The page's files, by name, with their media types."""

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page's content security policy: it loads and connects to its own origin only."""


def page_routes() -> list[Route]:
    """``GET /`` (the page) and ``GET /static/{name}`` (its script and style sheet)."""
    folder = files("nenjim.serve") / "static"
    read = {name: (folder / name).read_bytes() for name in ASSETS}

    def answer(request: Request, name: str) -> Response:
        headers = {"Cache-Control": "no-cache", "Content-Security-Policy": POLICY}
        return validated(request, Response(read[name], media_type=ASSETS[name], headers=headers))

    def index(request: Request) -> Response:
        return answer(request, "index.html")

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS or name == "index.html":
            return error_answer(404, f"no such file /static/{name}")
        return answer(request, name)

    return [Route("/", index), Route("/static/{name}", asset)]
