"""What the flock serves for its page besides the API: the favicon, the npm libraries from
node_modules/ (a fixed list, nothing else), the crows' Rive file (the built-in one, or the owner's),
and /api/ui saying which exist."""

import json
import re

import pytest

from soulstack.flock.app import TOKEN_COOKIE
from soulstack.flock.rive.builtin import built_in
from soulstack.flock.web.routes import VENDOR, vendor_file
from tests.flock.helpers import Flock
from tests.helpers import ROOT


@pytest.fixture
async def flock(tmp_path):
    flock = await Flock(tmp_path / "data").start()
    yield flock
    await flock.stop()


async def test_the_favicon_is_an_svg(flock):
    async with flock.session.get("/favicon.ico") as response:
        assert response.status == 200 and response.content_type == "image/svg+xml"
        assert (await response.text()).startswith("<svg")


async def test_installed_libraries_are_served_and_nothing_else_from_node_modules(flock):
    status, ui = await flock.get("/api/ui")
    assert status == 200 and ui["rive"] == {
        "url": "/rive/flock.riv",
        "name": "the built-in crows",
        "exists": True,
        "builtin": True,
    }
    assert ui["nest_messages"] is any("/messages" in r.canonical for r in flock.runner.app.router.resources())
    # tools/test runs `npm ci`, so in this checkout every library is there.
    assert ui["vendor"] == {name: True for name in VENDOR}
    async with flock.session.get("/vendor/marked.js") as response:
        assert response.status == 200 and response.content_type == "text/javascript"
        assert "export" in await response.text()
    async with flock.session.get("/vendor/rive.wasm") as response:
        assert response.content_type == "application/wasm" and (await response.read())[:4] == b"\0asm"
    for name in ("marked/package.json", "..%2Fpackage.json", "purify.min.js", "nope.js"):
        async with flock.session.get(f"/vendor/{name}") as response:
            assert response.status == 404 and (await response.json())["message"], name


def test_a_missing_library_is_reported_missing():
    assert vendor_file("not-a-library.js") is None


async def test_without_a_rive_file_the_built_in_crows_are_served(flock):
    async with flock.session.get("/rive/flock.riv") as response:
        assert response.status == 200 and response.content_type == "application/octet-stream"
        assert await response.read() == built_in()


async def test_the_rive_file_given_is_served_and_a_missing_one_is_reported(tmp_path):
    riv = tmp_path / "crows.riv"
    riv.write_bytes(b"RIVE\x07\x00not really")
    for path, exists in ((riv, True), (tmp_path / "gone.riv", False)):
        flock = await Flock(tmp_path / f"data-{exists}", rive=str(path)).start()
        try:
            _, ui = await flock.get("/api/ui")
            assert ui["rive"] == {"url": "/rive/flock.riv", "name": path.name, "exists": exists, "builtin": False}
            async with flock.session.get("/rive/flock.riv") as response:
                assert response.status == (200 if exists else 404)
                assert (
                    await response.read() == riv.read_bytes()
                    if exists
                    else "gone.riv was not found" in (await response.json())["message"]
                )
        finally:
            await flock.stop()


def documented_events():
    """The event names of docs/events.md's table of the list stream's messages."""
    text = (ROOT / "docs" / "events.md").read_text()
    table = text.split("## Messages on the stream", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z]+(?:\.[a-z]+)?)` \|", table, re.MULTILINE)


async def test_ui_serves_the_event_names_and_the_token_cookie_so_the_page_repeats_neither(flock):
    _, ui = await flock.get("/api/ui")
    assert sorted(ui["events"]) == sorted(documented_events()) and len(ui["events"]) == 11
    recorded = {
        m["event"] for path in (ROOT / "tests" / "web" / "streams").glob("*.json") for m in json.loads(path.read_text())
    }
    assert recorded <= set(ui["events"])  # every event a real flock sent the recorder
    assert ui["token_cookie"] == TOKEN_COOKIE  # the cookie the server reads a token from
    async with flock.events(nest_id="todo") as stream:
        assert (await flock.post("/api/nests/todo/messages", {"author": "owner", "text": "hello"}))[0] == 201
        assert (await stream.next(timeout=30))["event"] == ui["nest_event"]
    for script in (ROOT / "host" / "flock" / "web").glob("*.js"):  # the page reads them from /api/ui
        assert TOKEN_COOKIE not in script.read_text() and ui["nest_event"] not in script.read_text(), script.name
