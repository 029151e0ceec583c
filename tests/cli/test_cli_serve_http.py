"""``nenjim serve`` as HTTP clients see it: paged lists, ETags and 304s, gzip, opt-in CORS.

Every test runs a real ``nenjim serve`` process over a SQLite store, and appends to
that store from this process while it serves when it needs the log to grow.
"""

from __future__ import annotations

import base64
import gzip
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import metric_samples, serving

from nenjim.cli import main
from nenjim.serve.app import GZIP_MINIMUM

WIDGET = "com.example.widget"
CORE = "com.example.core"


@pytest.fixture
def store(sample: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    assert main(["journal", "verify", str(sample.root), "--store", url]) == 0
    capsys.readouterr()
    return url


@pytest.fixture
def key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "log.key"
    assert main(["keys", "new", "example.com/log", "--out", str(path)]) == 0
    capsys.readouterr()
    return path


@pytest.fixture
def served(store: str, key: Path) -> Iterator[str]:
    with serving(store, str(key)) as url:
        yield url


def _append(
    sample: Any, store: str, write_revision: Any, capsys: pytest.CaptureFixture[str], *names: str
) -> None:
    """Ingest a genesis revision of each artifact ``names`` into ``store`` (as another
    process would while the server serves)."""
    for name in names:
        text = f"NENJIM-JOURNAL 1\nARTIFACT {name}\nJOURNAL_VERSION 20250101T000000Z\n"
        write_revision(sample.root, name, "20250101T000000Z", text)
    assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
    capsys.readouterr()


def _raw_get(url: str, path: str, headers: str = "") -> tuple[bytes, bytes]:
    """``GET path`` over a socket, with no ``Accept-Encoding``: the head and the body."""
    host, port = url.removeprefix("http://").split(":")
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request.encode())
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


# Paging


def test_coordinates_answer_one_page_with_next_null_at_the_end(served: str) -> None:
    answer = httpx.get(f"{served}/journal/coordinates")

    assert answer.status_code == 200
    assert answer.json() == {"coordinates": [CORE, WIDGET], "next": None}


def test_coordinates_are_paged_by_a_cursor_that_appends_do_not_shift(
    sample: Any, store: str, key: Path, write_revision: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store, str(key)) as url:
        first = httpx.get(f"{url}/journal/coordinates", params={"limit": 1}).json()
        assert first["coordinates"] == [CORE]
        assert isinstance(first["next"], str)
        # One artifact sorts before the cursor, one after: the next page holds only the latter.
        _append(sample, store, write_revision, capsys, "com.example.aaa", "com.example.zzz")
        rest = httpx.get(
            f"{url}/journal/coordinates", params={"limit": 1000, "cursor": first["next"]}
        ).json()

    assert rest == {"coordinates": [WIDGET, "com.example.zzz"], "next": None}


def test_revisions_are_paged_oldest_first_by_a_version_cursor(
    sample: Any, store: str, key: Path, write_revision: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store, str(key)) as url:
        revisions = f"{url}/journal/{WIDGET}/revisions"
        whole = httpx.get(revisions).json()
        first = httpx.get(revisions, params={"limit": 1}).json()
        # A third revision appended between two pages: the pages go on after the cursor.
        text = sample.widget_head.read_text()
        text = text.replace("JOURNAL_VERSION 20260201T000000Z", "JOURNAL_VERSION 20260301T000000Z")
        text = text.replace(sample.digest(sample.widget_genesis), sample.digest(sample.widget_head))
        write_revision(sample.root, WIDGET, "20260301T000000Z", text)
        assert main(["journal", "verify", str(sample.root), "--store", store]) == 0
        capsys.readouterr()
        second = httpx.get(revisions, params={"limit": 1, "cursor": first["next"]}).json()
        third = httpx.get(revisions, params={"limit": 1, "cursor": second["next"]}).json()

    assert whole["coordinate"] == WIDGET
    assert [r["journal_version"] for r in whole["revisions"]] == [
        "20260101T000000Z",
        "20260201T000000Z",
    ]
    assert whole["next"] is None
    assert first["coordinate"] == WIDGET
    assert first["revisions"] == whole["revisions"][:1]
    assert second["revisions"] == whole["revisions"][1:]
    assert isinstance(second["next"], str)
    assert [r["journal_version"] for r in third["revisions"]] == ["20260301T000000Z"]
    assert third["next"] is None


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("journal/coordinates", {"limit": "0"}),
        ("journal/coordinates", {"limit": "1001"}),
        ("journal/coordinates", {"limit": "-1"}),
        ("journal/coordinates", {"limit": "ten"}),
        ("journal/coordinates", {"limit": "1.5"}),
        ("journal/coordinates", {"limit": "\u0662"}),
        ("journal/coordinates", {"limit": "9" * 5000}),
        ("journal/coordinates", {"cursor": "!!not base64!!"}),
        ("journal/coordinates", {"cursor": "\xff"}),
        ("journal/coordinates", {"cursor": _cursor("version:20260101T000000Z")}),
        ("journal/coordinates", {"cursor": _cursor("coordinate:Not A Coordinate")}),
        ("journal/coordinates", {"cursor": "a" * 10_000}),
        (f"journal/{WIDGET}/revisions", {"limit": "0"}),
        (f"journal/{WIDGET}/revisions", {"cursor": _cursor(f"coordinate:{WIDGET}")}),
        (f"journal/{WIDGET}/revisions", {"cursor": _cursor("version:yesterday")}),
    ],
    ids=lambda value: value if isinstance(value, str) else repr(value)[:40],
)
def test_a_bad_limit_or_cursor_is_answered_400_briefly(
    served: str, path: str, params: dict[str, str]
) -> None:
    answer = httpx.get(f"{served}/{path}", params=params)

    assert answer.status_code == 400
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]
    assert len(answer.content) <= 300


def test_openapi_declares_the_paging_parameters_and_304(served: str) -> None:
    paths = httpx.get(f"{served}/openapi.json").json()["paths"]

    for path, filters in (
        ("/journal/coordinates", {"contains"}),
        ("/journal/{coordinate}/revisions", set()),
    ):
        operation = paths[path]["get"]
        query = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
        assert set(query) == {"limit", "cursor"} | filters
        assert query["limit"]["schema"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000,
            "default": 100,
        }
        assert set(operation["responses"]) == {"200", "304", "400", "404"}
    assert "304" in paths["/checkpoint"]["get"]["responses"]


# ETag and If-None-Match


@pytest.mark.parametrize(
    "path",
    [
        "checkpoint",
        "journal/coordinates",
        f"journal/{WIDGET}/revisions",
        f"journal/{WIDGET}/latest",
        f"lookup/{WIDGET}/20260201T000000Z",
        "openapi.json",
    ],
)
def test_answers_carry_a_strong_etag_and_if_none_match_is_answered_304(
    served: str, path: str
) -> None:
    # Without Accept-Encoding: the identity answer, whose ETag is strong.
    head, body = _raw_get(served, f"/{path}")
    headers = dict(
        line.split(": ", 1) for line in head.decode().lower().splitlines()[1:] if ": " in line
    )
    tag = headers["etag"]
    assert tag.startswith('"')
    assert tag.endswith('"')
    assert body

    again = httpx.get(f"{served}/{path}", headers={"If-None-Match": tag})
    other = httpx.get(f"{served}/{path}", headers={"If-None-Match": '"other", ' + tag})
    stale = httpx.get(f"{served}/{path}", headers={"If-None-Match": '"stale"'})

    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == tag
    assert other.status_code == 304
    assert stale.status_code == 200
    assert stale.headers["etag"] in (tag, f"W/{tag}")


def test_the_checkpoint_etag_changes_when_the_log_grows(
    sample: Any, store: str, key: Path, write_revision: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store, str(key)) as url:
        before = httpx.get(f"{url}/checkpoint")
        _append(sample, store, write_revision, capsys, "com.example.new")
        after = httpx.get(f"{url}/checkpoint", headers={"If-None-Match": before.headers["etag"]})

    assert after.status_code == 200
    assert after.headers["etag"] != before.headers["etag"]


def test_errors_carry_no_etag(served: str) -> None:
    answer = httpx.get(f"{served}/journal/com.example.none/latest")

    assert answer.status_code == 404
    assert "etag" not in answer.headers


# gzip


def test_large_json_answers_are_gzipped_for_clients_that_accept_it(served: str) -> None:
    raw_head, raw_body = _raw_get(served, "/openapi.json")
    zipped_head, zipped_body = _raw_get(served, "/openapi.json", "Accept-Encoding: gzip\r\n")

    assert b"content-encoding" not in raw_head.lower()
    assert b"content-encoding: gzip" in zipped_head.lower()
    assert gzip.decompress(zipped_body) == raw_body
    assert len(zipped_body) < len(raw_body)
    # The gzip-encoded representation's tag is weak; it still validates.
    tag = next(
        line.split(b": ", 1)[1]
        for line in zipped_head.splitlines()
        if line.lower().startswith(b"etag")
    ).decode()
    assert tag.startswith('W/"')
    revalidated = httpx.get(f"{served}/openapi.json", headers={"If-None-Match": tag})
    assert revalidated.status_code == 304


def test_small_answers_are_not_gzipped(served: str) -> None:
    answer = httpx.get(f"{served}/checkpoint", headers={"Accept-Encoding": "gzip"})

    assert "content-encoding" not in answer.headers


def test_tiles_and_entry_bundles_are_byte_exact_with_or_without_gzip(served: str) -> None:
    size = int(httpx.get(f"{served}/checkpoint").text.splitlines()[1])
    tile = f"/tile/0/000.p/{size}"
    bundle = f"/tile/entries/000.p/{size}"

    exact = {}
    for path in (tile, bundle):
        head, exact[path] = _raw_get(served, path)
        assert b"content-encoding" not in head.lower(), path
        decoded = httpx.get(f"{served}{path}")  # httpx asks for gzip and decodes it
        assert decoded.status_code == 200
        assert decoded.content == exact[path], path
    # Hash tiles (incompressible) are never gzip-encoded, even when asked; entry bundles
    # are from GZIP_MINIMUM bytes up, and decode to the exact bytes.
    assert "content-encoding" not in httpx.get(f"{served}{tile}").headers
    zipped_head, zipped = _raw_get(served, bundle, "Accept-Encoding: gzip\r\n")
    gzipped = b"content-encoding: gzip" in zipped_head.lower()
    assert gzipped == (len(exact[bundle]) >= GZIP_MINIMUM)
    if gzipped:
        assert gzip.decompress(zipped) == exact[bundle]


# Observed: every request counted, whatever the middleware answered


def test_metrics_count_304s_and_gzipped_answers(served: str) -> None:
    tag = httpx.get(f"{served}/checkpoint").headers["etag"]
    httpx.get(f"{served}/checkpoint", headers={"If-None-Match": tag})
    httpx.get(f"{served}/openapi.json", headers={"Accept-Encoding": "gzip"})

    metrics = httpx.get(f"{served}/metrics").text
    samples = metric_samples(metrics)
    requests = "nenjim_http_requests_total"
    assert samples[requests, (("route", "/checkpoint"), ("status", "200"))] == 1
    assert samples[requests, (("route", "/checkpoint"), ("status", "304"))] == 1
    assert samples[requests, (("route", "/openapi.json"), ("status", "200"))] == 1


# CORS


def test_without_cors_there_are_no_cors_headers(served: str) -> None:
    answer = httpx.get(f"{served}/checkpoint", headers={"Origin": "https://app.example"})
    preflight = httpx.options(
        f"{served}/checkpoint",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
    )

    assert not any(name.startswith("access-control-") for name in answer.headers)
    assert not any(name.startswith("access-control-") for name in preflight.headers)


def test_cors_lets_the_origins_named_get(store: str, key: Path) -> None:
    allowed = "https://app.example"
    options = ["--cors", allowed, "--cors", "https://other.example"]
    with serving(store, key, *options) as url:
        answer = httpx.get(f"{url}/journal/coordinates", headers={"Origin": allowed})
        stranger = httpx.get(f"{url}/checkpoint", headers={"Origin": "https://evil.example"})
        preflight = httpx.options(
            f"{url}/checkpoint",
            headers={"Origin": allowed, "Access-Control-Request-Method": "GET"},
        )
        post = httpx.options(
            f"{url}/checkpoint",
            headers={"Origin": allowed, "Access-Control-Request-Method": "POST"},
        )

    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == allowed
    assert "etag" in answer.headers["access-control-expose-headers"].lower()
    assert "access-control-allow-origin" not in stranger.headers
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == allowed
    assert preflight.headers["access-control-allow-methods"] == "GET"
    assert post.status_code == 400


# Served from the store


def test_a_chain_cache_of_one_answers_every_artifact_and_what_others_append(
    sample: Any, store: str, key: Path, write_revision: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """With room for one chain, each artifact's chain is read again from the store's table
    when another one was asked for in between: the answers do not change."""
    with serving(store, str(key), "--chain-cache", "1") as url:
        first = [httpx.get(f"{url}/journal/{name}/latest").json() for name in (WIDGET, CORE)]
        again = [httpx.get(f"{url}/journal/{name}/latest").json() for name in (WIDGET, CORE)]
        _append(sample, store, write_revision, capsys, "com.example.new")
        added = httpx.get(f"{url}/journal/com.example.new/latest")
        listed = httpx.get(f"{url}/journal/coordinates").json()

    assert [answer["coordinate"] for answer in first] == [WIDGET, CORE]
    assert again == first
    assert added.status_code == 200
    assert added.json()["journal_version"] == "20250101T000000Z"
    assert listed == {"coordinates": [CORE, "com.example.new", WIDGET], "next": None}
