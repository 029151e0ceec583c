"""``nenjim serve``'s page and the JSON it reads besides the queries: ``/``, ``/static/*``,
``/journal/coordinates?contains=`` and ``/journal/{coordinate}/text/{version}``.

A real ``nenjim serve`` process over a SQLite store; what the page does with them in a
browser is tested in ``tests/browser``.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from benchmarks.served_log import served_log
from journal_texts import Chain, Rel, digest, write_chain
from nenjim.cli import main
from nenjim.serve.page import POLICY

WIDGET = "com.example.widget"
CORE = "com.example.core"


WIDGETS = Chain(WIDGET)
WIDGETS.add("20260101T000000Z", (Rel("1.0.0"),))
WIDGETS.add(
    "20260201T000000Z", (Rel("1.0.0"), Rel("1.1.0")), header=('POLICY deprecated "use gadgets"',)
)
CORES = Chain(CORE)
CORES.add("20250101T000000Z")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server over a store of a two-revision widget chain and a one-revision core chain,
    shared by the module's tests (none of them writes)."""
    base = tmp_path_factory.mktemp("page")
    store = f"sqlite:///{base / 'journal.db'}"
    key = base / "log.key"
    write_chain(base / "root", WIDGETS)
    write_chain(base / "root", CORES)
    assert main(["journal", "verify", str(base / "root"), "--store", store]) == 0
    assert main(["keys", "new", "example.com/log", "--out", str(key)]) == 0
    with served_log(store, key) as url:
        yield url


# The page's files


def test_the_page_is_served_at_the_root_with_a_same_origin_policy(served: str) -> None:
    answer = httpx.get(f"{served}/")

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.headers["content-security-policy"] == POLICY
    assert '<script src="/static/page.js" defer></script>' in answer.text
    assert '<link rel="stylesheet" href="/static/page.css">' in answer.text
    tag = answer.headers["etag"]
    assert httpx.get(f"{served}/", headers={"If-None-Match": tag}).status_code == 304


@pytest.mark.parametrize(
    ("name", "media_type", "says"),
    [
        ("page.js", "text/javascript; charset=utf-8", "async function rootFromInclusionProof"),
        ("page.css", "text/css; charset=utf-8", ":focus-visible"),
    ],
)
def test_the_script_and_style_sheet_are_served(
    served: str, name: str, media_type: str, says: str
) -> None:
    answer = httpx.get(f"{served}/static/{name}")

    assert answer.status_code == 200
    assert answer.headers["content-type"] == media_type
    assert says in answer.text


@pytest.mark.parametrize("name", ["index.html", "nothing.js", "page.js.map"])
def test_any_other_static_file_is_answered_404_naming_it(served: str, name: str) -> None:
    answer = httpx.get(f"{served}/static/{name}")

    assert answer.status_code == 404
    assert answer.json() == {"error": f"no such file /static/{name}"}


@pytest.mark.parametrize(
    "path", ["static/..%2Fapp.py", "static/../app.py", "static/%2E%2E/page.py"]
)
def test_no_path_reaches_a_file_beside_the_static_ones(served: str, path: str) -> None:
    answer = httpx.get(f"{served}/{path}")

    assert answer.status_code == 404
    assert "import" not in answer.text


# Searching the coordinates


@pytest.mark.parametrize(
    ("contains", "found"),
    [("WIDG", [WIDGET]), ("example.", [CORE, WIDGET]), ("core", [CORE]), ("gadget", [])],
)
def test_contains_lists_the_coordinates_that_hold_it_ignoring_case(
    served: str, contains: str, found: list[str]
) -> None:
    answer = httpx.get(f"{served}/journal/coordinates", params={"contains": contains})

    assert answer.status_code == 200
    assert answer.json() == {"coordinates": found, "next": None}


def test_contains_is_paged_like_the_whole_list(served: str) -> None:
    params = {"contains": "com.example", "limit": "1"}
    first = httpx.get(f"{served}/journal/coordinates", params=params).json()
    second = httpx.get(
        f"{served}/journal/coordinates", params={**params, "cursor": first["next"]}
    ).json()

    assert first["coordinates"] == [CORE]
    assert second == {"coordinates": [WIDGET], "next": None}


def test_a_contains_longer_than_any_coordinate_is_answered_400_briefly(served: str) -> None:
    answer = httpx.get(f"{served}/journal/coordinates", params={"contains": "a" * 201})

    assert answer.status_code == 400
    assert answer.json() == {"error": "contains must be at most 200 characters"}


# A revision's text and its differences


def test_the_text_of_a_genesis_has_no_predecessor_and_no_diff(served: str) -> None:
    answer = httpx.get(f"{served}/journal/{WIDGET}/text/20260101T000000Z")

    assert answer.status_code == 200
    assert answer.json() == {
        "coordinate": WIDGET,
        "journal_version": "20260101T000000Z",
        "digest": digest(WIDGETS.texts[0]),
        "text": WIDGETS.texts[0],
        "predecessor_version": None,
        "diff": [],
    }


def test_the_text_of_a_successor_is_exact_with_the_diff_from_its_predecessor(
    served: str,
) -> None:
    document = httpx.get(f"{served}/journal/{WIDGET}/text/20260201T000000Z").json()

    assert document["text"] == WIDGETS.texts[1]
    assert document["predecessor_version"] == "20260101T000000Z"
    diff = document["diff"]
    assert diff[:2] == ["--- 20260101T000000Z", "+++ 20260201T000000Z"]
    assert "-JOURNAL_VERSION 20260101T000000Z" in diff
    assert "+JOURNAL_VERSION 20260201T000000Z" in diff
    assert '+POLICY deprecated "use gadgets"' in diff
    assert "+RELEASE 1.1.0" in diff
    # Unchanged lines are context, never changes.
    assert f" ARTIFACT {WIDGET}" in diff


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"journal/{WIDGET}/text/20260115T000000Z", 404),
        ("journal/com.example.nothing/text/20260101T000000Z", 404),
        (f"journal/{WIDGET}/text/yesterday", 400),
    ],
)
def test_a_text_the_log_does_not_hold_is_an_error_naming_it(
    served: str, path: str, status: int
) -> None:
    answer = httpx.get(f"{served}/{path}")

    assert answer.status_code == status
    assert answer.json()["error"]


def test_openapi_declares_contains_and_the_text_query(served: str) -> None:
    paths = httpx.get(f"{served}/openapi.json").json()["paths"]

    text = paths["/journal/{coordinate}/text/{version}"]["get"]
    assert [p["name"] for p in text["parameters"]] == ["coordinate", "version"]
    coordinates = paths["/journal/coordinates"]["get"]["parameters"]
    contains = next(p for p in coordinates if p["name"] == "contains")
    assert contains["schema"] == {"type": "string", "maxLength": 200}
