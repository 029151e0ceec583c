"""The page of ``nenjim serve`` in a real browser: Debian's Chromium, headless, by Playwright.

One ``nenjim serve`` process over a SQLite store of 3,000 artifacts (9,000 revisions)
serves every test of the module; each test opens the page in a fresh browser context.
Screenshots of each step are kept in ``test-artifacts/browser/`` at the checkout's root.
Chromium is the system's (``/usr/bin/chromium``, installed by ``.ci/run``), never one
that Playwright downloads; a Chromium that cannot be started fails the tests under
``CI=true`` and skips them elsewhere.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    Error,
    Locator,
    Page,
    Playwright,
    Route,
    expect,
    sync_playwright,
)

from benchmarks.sample_roots import generate_root
from benchmarks.served_log import served_log
from nenjim.cli import main

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps calling out to a network it lacks.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = 3000
REVISIONS = 3
WAIT_MS = 20_000
"""How long a step may take on a loaded machine before it counts as not happening."""
PHONE = {"width": 390, "height": 844}

expect.set_options(timeout=WAIT_MS)


@dataclass(frozen=True)
class Served:
    """The server's URL and one artifact of its store, with its chain as the JSON says."""

    url: str
    coordinate: str
    revisions: list[dict[str, Any]]

    @property
    def versions(self) -> list[str]:
        return [revision["journal_version"] for revision in self.revisions]

    def get(self, path: str, **params: str) -> Any:
        return httpx.get(f"{self.url}{path}", params=params).json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("browsed")
    store = f"sqlite:///{base / 'journal.db'}"
    generate_root(base / "root", artifacts=ARTIFACTS, revisions=REVISIONS, seed=7)
    assert main(["journal", "verify", str(base / "root"), "--store", store, "--json"]) == 0
    assert main(["keys", "new", "example.com/log", "--out", str(base / "log.key")]) == 0
    with served_log(store, base / "log.key") as url:
        # One artifact of the thousands, whose name no other coordinate holds.
        coordinate = httpx.get(f"{url}/journal/coordinates", params={"contains": "_1025"}).json()[
            "coordinates"
        ][0]
        revisions = httpx.get(f"{url}/journal/{coordinate}/revisions").json()["revisions"]
        yield Served(url, coordinate, revisions)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    playwright: Playwright | None = None
    try:
        playwright = sync_playwright().start()
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Error as error:
        if playwright is not None:
            playwright.stop()
        reason = f"Chromium ({CHROMIUM}) could not be started: {error.message.splitlines()[0]}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield launched
    finally:
        launched.close()
        playwright.stop()


@pytest.fixture(scope="module")
def screenshots(request: pytest.FixtureRequest) -> Path:
    folder = request.config.rootpath / "test-artifacts" / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


Shoot = Callable[[str], None]


@pytest.fixture
def page(browser: Browser, served: Served) -> Iterator[Page]:
    """A page of a fresh context, at desktop width; an uncaught script error fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    thrown: list[str] = []
    opened.on("pageerror", lambda error: thrown.append(str(error)))
    try:
        yield opened
    finally:
        context.close()
    assert thrown == []


@pytest.fixture
def shoot(page: Page, screenshots: Path, request: pytest.FixtureRequest) -> Shoot:
    """``shoot(step)`` keeps a screenshot of the whole page as ``<test>-<step>.png``."""
    name = request.node.name.removeprefix("test_").replace("[", "-").rstrip("]")

    def take(step: str) -> None:
        page.screenshot(path=screenshots / f"{name}-{step}.png", full_page=True)

    return take


def _open_artifact(page: Page, served: Served) -> None:
    page.goto(f"{served.url}/#/a/{served.coordinate}")
    expect(page.locator("#revision-title")).to_have_text(f"Revision {served.versions[-1]}")


def _timeline(page: Page) -> Locator:
    return page.locator("#timeline li")


def _input_of(version: str, seconds: int = 0) -> str:
    """The as-of picker's value for a Journal version, moved by ``seconds``."""
    moment = datetime.strptime(version, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return (moment + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")


def _no_horizontal_overflow(page: Page) -> None:
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= inner


# Loading and searching


def test_the_page_lists_the_artifacts_a_page_at_a_time(
    page: Page, served: Served, shoot: Shoot
) -> None:
    page.goto(f"{served.url}/")

    expect(page.locator("#checkpoint")).to_have_text(
        f"example.com/log: {ARTIFACTS * REVISIONS} revisions logged"
    )
    links = page.locator("#artifacts a")
    expect(links).to_have_count(50)
    expect(page.locator("#artifacts-status")).to_have_text("50 artifacts, more to come.")
    shoot("first-page")
    page.get_by_role("button", name="More artifacts").click()
    expect(links).to_have_count(100)
    whole = served.get("/journal/coordinates", limit="100")["coordinates"]
    assert links.all_text_contents() == whole
    shoot("second-page")


def test_searching_lists_the_coordinates_that_hold_the_text(
    page: Page, served: Served, shoot: Shoot
) -> None:
    page.goto(f"{served.url}/")
    expect(page.locator("#artifacts a")).to_have_count(50)

    page.get_by_label("Coordinate contains").fill("AGENT_10")
    page.get_by_label("Coordinate contains").press("Enter")

    wanted = served.get("/journal/coordinates", contains="agent_10", limit="1000")
    assert wanted["next"] is None
    assert 0 < len(wanted["coordinates"]) < 50
    expect(page.locator("#artifacts a")).to_have_text(wanted["coordinates"])
    expect(page.locator("#artifacts-status")).to_have_text(
        f"{len(wanted['coordinates'])} artifacts containing \u201cAGENT_10\u201d."
    )
    expect(page.get_by_role("button", name="More artifacts")).to_be_hidden()
    shoot("found")


# An artifact and its revisions


def test_an_artifact_shows_its_chain_releases_text_and_diff(
    page: Page, served: Served, shoot: Shoot
) -> None:
    page.goto(f"{served.url}/")
    page.get_by_label("Coordinate contains").fill(served.coordinate)
    page.get_by_label("Coordinate contains").press("Enter")
    page.get_by_role("link", name=served.coordinate, exact=True).click()

    head = served.revisions[-1]
    expect(page.locator("#artifact-title")).to_have_text(served.coordinate)
    expect(page.locator("#revision-title")).to_have_text(f"Revision {head['journal_version']}")
    # The timeline: newest first, the head current.
    expect(_timeline(page).locator("a")).to_have_text(served.versions[::-1])
    expect(page.locator("#timeline a[aria-current]")).to_have_text(head["journal_version"])
    # The releases and their content digests, as the JSON says.
    rows = page.locator("#releases tbody tr")
    expect(rows.locator("th")).to_have_text([r["version"] for r in head["releases"]])
    expect(rows.locator("code")).to_have_text([r["content"] for r in head["releases"]])
    # The exact text, and its differences from its predecessor.
    text = served.get(f"/journal/{served.coordinate}/text/{head['journal_version']}")
    assert page.locator("#text").text_content() == text["text"]
    expect(page.locator("#diff .removed").first).to_have_text(
        f"-JOURNAL_VERSION {served.versions[-2]}"
    )
    expect(page.locator("#diff .added").first).to_have_text(
        f"+JOURNAL_VERSION {head['journal_version']}"
    )
    shoot("head")

    _timeline(page).get_by_role("link", name=served.versions[0]).click()
    expect(page.locator("#revision-title")).to_have_text(f"Revision {served.versions[0]}")
    expect(page.locator("#diff")).to_have_text("The genesis: no predecessor.")
    shoot("genesis")


def test_an_artifact_the_log_does_not_hold_is_one_line_naming_it(
    page: Page, served: Served, shoot: Shoot
) -> None:
    _open_artifact(page, served)

    page.goto(f"{served.url}/#/a/com.example.nothing")

    expect(page.get_by_role("alert")).to_have_text("no artifact com.example.nothing")
    expect(page.locator("#timeline li")).to_have_count(0)
    expect(page.locator("#revision-view")).to_be_hidden()
    shoot("missing")


def test_as_of_shows_the_chain_as_it_was_step_by_step(
    page: Page, served: Served, shoot: Shoot
) -> None:
    _open_artifact(page, served)
    first, second, third = served.versions
    status = page.locator("#as-of-status")
    shown = _timeline(page).locator("a")

    page.get_by_label("As of (UTC)").fill(_input_of(first, seconds=-1))
    page.get_by_role("button", name="Show as of").click()
    expect(status).to_contain_text(": no revision yet.")
    expect(shown).to_have_count(0)
    expect(page.locator("#revision-view")).to_be_hidden()
    shoot("before-genesis")

    page.get_by_label("As of (UTC)").fill(_input_of(second, seconds=1))
    page.get_by_role("button", name="Show as of").click()
    expect(status).to_contain_text(f"2 of 3 revisions, the newest {second}.")
    expect(shown).to_have_text([second, first])
    expect(page.locator("#revision-title")).to_have_text(f"Revision {second}")
    shoot("as-of-second")

    for step, newest, count in (("Earlier", first, 1), ("Later", second, 2), ("Later", third, 3)):
        page.get_by_role("button", name=step).click()
        expect(status).to_contain_text(f"{count} of 3 revisions, the newest {newest}.")
        expect(shown).to_have_text([first, second, third][:count][::-1])
        expect(page.get_by_label("As of (UTC)")).to_have_value(_input_of(newest))
    page.get_by_role("button", name="Later").click()
    expect(status).to_have_text("Now: 3 revisions.")
    expect(page.get_by_role("button", name="Later")).to_be_disabled()
    shoot("now")


# The inclusion proof, checked in the page


def test_a_served_proof_is_verified_in_the_page(page: Page, served: Served, shoot: Shoot) -> None:
    _open_artifact(page, served)

    page.get_by_role("button", name="Check inclusion proof").click()

    status = page.locator("#proof-status")
    expect(status).to_have_class("pass")
    proof = served.get(f"/lookup/{served.coordinate}/{served.versions[-1]}")
    root = proof["checkpoint"].splitlines()[2]
    expect(status).to_have_text(
        f"Proof verified: leaf {proof['index']} of the tree of {ARTIFACTS * REVISIONS} "
        f"leaves, root {root} as example.com/log signs it."
    )
    shoot("verified")


def _flip(hash_text: str) -> str:
    """A base64 hash with its first byte changed."""
    data = bytearray(base64.b64decode(hash_text))
    data[0] ^= 1
    return base64.b64encode(bytes(data)).decode()


def _forge_hash(document: dict[str, Any]) -> None:
    document["inclusion_proof"][3] = _flip(document["inclusion_proof"][3])


def _drop_hash(document: dict[str, Any]) -> None:
    document["inclusion_proof"].pop()


def _move_index(document: dict[str, Any]) -> None:
    document["index"] += 1


def _other_leaf(document: dict[str, Any]) -> None:
    coordinate, version, _ = document["leaf"].split()
    document["leaf"] = f"{coordinate} {version} sha256:{'0' * 64}\n"


def _other_root(document: dict[str, Any]) -> None:
    lines = document["checkpoint"].split("\n")
    lines[2] = _flip(lines[2])
    document["checkpoint"] = "\n".join(lines)


@pytest.mark.parametrize(
    ("forge", "reason"),
    [
        (_forge_hash, "the root recomputed from the proof is not the checkpoint's root"),
        (_drop_hash, "the proof is shorter than the path to the root"),
        (_move_index, "the root recomputed from the proof is not the checkpoint's root"),
        (_other_leaf, "the proof's leaf is not this revision's"),
        (_other_root, "the proof's checkpoint is not the served checkpoint of its size"),
    ],
    ids=["a-hash-altered", "a-hash-dropped", "another-index", "another-leaf", "another-root"],
)
def test_a_forged_proof_fails_in_the_page(
    page: Page,
    served: Served,
    shoot: Shoot,
    forge: Callable[[dict[str, Any]], None],
    reason: str,
) -> None:
    def forged(route: Route) -> None:
        document = route.fetch().json()
        forge(document)
        route.fulfill(status=200, content_type="application/json", body=json.dumps(document))

    page.route("**/lookup/**", forged)
    _open_artifact(page, served)

    page.get_by_role("button", name="Check inclusion proof").click()

    status = page.locator("#proof-status")
    expect(status).to_have_text(f"Proof failed: {reason}.")
    expect(status).to_have_class("fail")
    shoot("failed")


# Keyboard and phone


def _focused(locator: Locator) -> bool:
    return bool(locator.evaluate("element => element === document.activeElement"))


def _tab_to(page: Page, locator: Locator) -> None:
    """Press Tab until ``locator`` has the focus (at most 40 times), and check it shows."""
    for _ in range(40):
        if _focused(locator):
            outline = locator.evaluate(
                "e => [getComputedStyle(e).outlineStyle, getComputedStyle(e).outlineWidth]"
            )
            assert outline[0] != "none"
            assert float(outline[1].removesuffix("px")) >= 2
            return
        page.keyboard.press("Tab")
    pytest.fail(f"Tab never reached {locator}")


def test_everything_is_reachable_by_keyboard(page: Page, served: Served, shoot: Shoot) -> None:
    page.goto(f"{served.url}/")
    expect(page.locator("#artifacts a")).to_have_count(50)

    _tab_to(page, page.get_by_label("Coordinate contains"))
    page.keyboard.type(served.coordinate)
    page.keyboard.press("Enter")
    found = page.get_by_role("link", name=served.coordinate, exact=True)
    expect(page.locator("#artifacts a")).to_have_count(1)
    _tab_to(page, found)
    page.keyboard.press("Enter")
    expect(page.locator("#artifact-title")).to_be_focused()
    _tab_to(page, page.get_by_role("button", name="Earlier"))
    page.keyboard.press("Enter")
    expect(page.locator("#as-of-status")).to_contain_text("2 of 3 revisions")
    proof = page.get_by_role("button", name="Check inclusion proof")
    _tab_to(page, proof)
    shoot("focused")
    page.keyboard.press("Enter")
    expect(page.locator("#proof-status")).to_have_class("pass")


def test_the_page_fits_a_phone_width(browser: Browser, served: Served, screenshots: Path) -> None:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    try:
        phone = context.new_page()
        phone.goto(f"{served.url}/")
        expect(phone.locator("#artifacts a")).to_have_count(50)
        _no_horizontal_overflow(phone)
        phone.screenshot(path=screenshots / "phone-artifacts.png", full_page=True)

        phone.goto(f"{served.url}/#/a/{served.coordinate}")
        phone.get_by_role("button", name="Check inclusion proof").click()
        expect(phone.locator("#proof-status")).to_have_class("pass")
        _no_horizontal_overflow(phone)
        phone.screenshot(path=screenshots / "phone-artifact.png", full_page=True)
    finally:
        context.close()
