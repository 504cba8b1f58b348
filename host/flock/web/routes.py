"""The flock's web page: its own files (this folder), the browser libraries it borrows
from npm, and the crows' Rive file (the flock's own, host/flock/rive/, or the owner's --rive FILE).

No build step and no copies: the libraries (marked, DOMPurify, @rive-app/canvas) are
installed into node_modules/ by the project's setup (`npm ci`, which tools/test runs)
and served from there, a fixed list of files and nothing else. Where node_modules/ is
missing (a wheel install without npm) `/api/ui` says so, and the page falls back
honestly: answers as plain text, crows drawn in SVG.
"""

import re
from pathlib import Path

from aiohttp import web

from soulstack.flock import payloads
from soulstack.flock.rive.builtin import built_in
from soulstack.serving import error_response

WEB_DIR = Path(__file__).parent
# Where `npm ci` puts them: the repository root (an editable install), else the working directory.
NODE_MODULES = [Path(__file__).resolve().parents[3] / "node_modules", Path.cwd() / "node_modules"]
VENDOR = {  # URL name -> the file inside node_modules/ (ES modules, or Rive's script and its wasm)
    "marked.js": "marked/lib/marked.esm.js",
    "purify.js": "dompurify/dist/purify.es.mjs",
    "rive.js": "@rive-app/canvas/rive.js",
    "rive.wasm": "@rive-app/canvas/rive.wasm",
}
RIVE: web.AppKey[str | None] = web.AppKey("rive")
MIND = web.AppKey("mind", dict)
BUILT_IN_NAME = "the built-in crows"  # how the page names the flock's own file
NEST_MESSAGES = re.compile(r"^/api/nests/\{[^}]+\}/messages$")  # the contract's route, whatever its placeholder


def vendor_file(name: str) -> Path | None:
    relative = VENDOR.get(name)
    if not relative:
        return None
    for root in NODE_MODULES:
        if (root / relative).is_file():
            return root / relative
    return None


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})


async def favicon(request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB_DIR / "favicon.svg", headers={"Content-Type": "image/svg+xml"})


WEB_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".html": "text/html"}


async def web_file(request: web.Request) -> web.StreamResponse:
    """One of the page's own files. A name is looked up among them, never joined onto a path, so
    nothing outside web/ can be named; a missing one is a {"message"} like every other error."""
    name = request.match_info["name"]
    path = WEB_DIR / name
    if name not in WEB_FILES:
        return error_response(404, f"the page has no file {name[:80]!r}")
    return web.FileResponse(
        path,
        headers={"Content-Type": WEB_TYPES.get(path.suffix, "application/octet-stream"), "Cache-Control": "no-cache"},
    )


async def vendor(request: web.Request) -> web.StreamResponse:
    path = vendor_file(request.match_info["name"])
    if path is None:
        return error_response(404, "not installed here; run `npm ci` in the soulstack checkout")
    kind = "application/wasm" if path.suffix == ".wasm" else "text/javascript"
    return web.FileResponse(path, headers={"Content-Type": kind})


async def rive_file(request: web.Request) -> web.StreamResponse:
    """The owner's --rive FILE, else the flock's own crows (host/flock/rive/), written once."""
    path = request.app[RIVE]
    if path is None:
        return web.Response(body=built_in(), content_type="application/octet-stream")
    if not Path(path).is_file():  # noqa: ASYNC240 - one stat of a local file
        return error_response(404, f"the Rive file {Path(path).name} was not found")
    return web.FileResponse(path, headers={"Content-Type": "application/octet-stream"})


# The server's names the page needs, served by /api/ui so the page never repeats them: the events
# of the all-lists stream and the nest stream's event, with their fields (declared once, in
# soulstack.flock.payloads), and the cookie the page keeps a token in (its EventSource cannot send
# a header), which app.py's bearer check reads.
TOKEN_COOKIE = "soulstack_flock_token"


async def ui(request: web.Request) -> web.Response:
    """What the page may use here: which libraries are installed, whether this flock serves nest
    messages (so the page never asks for a route that is not there), the Rive file (the owner's,
    else the built-in one), what thinks here (`mind`: none, the demo's scripted brain, or a model, so
    the page says at open what a list will meet), and the server's names (its events with their fields,
    the skip reasons' codes and words, its token cookie). A locked flock answers it only with the
    token: the page tries a typed token on it as a bearer header, then keeps it in that cookie."""
    path = request.app[RIVE]
    routes = {resource.canonical for resource in request.app.router.resources()}
    return web.json_response(
        {
            "vendor": {name: vendor_file(name) is not None for name in VENDOR},
            "nest_messages": any(NEST_MESSAGES.match(route) for route in routes),
            "rive": {"url": "/rive/flock.riv", "name": BUILT_IN_NAME, "exists": True, "builtin": True}
            if path is None
            else {"url": "/rive/flock.riv", "name": Path(path).name, "exists": Path(path).is_file(), "builtin": False},  # noqa: ASYNC240
            "mind": request.app[MIND],
            "events": [event.NAME for event in payloads.LIST_EVENTS],
            "nest_event": payloads.NestMessage.NAME,
            **payloads.catalogue(),  # "names" {declaration: event}, "fields" {event: [...]}, "skip_reasons"
            "token_cookie": TOKEN_COOKIE,
        }
    )


WEB_FILES = frozenset(path.name for path in WEB_DIR.iterdir() if path.is_file() and path.suffix in WEB_TYPES)


def add_routes(app: web.Application, rive: str | None, mind: dict) -> None:
    app[RIVE], app[MIND] = rive, mind
    app.router.add_get("/", index)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/api/ui", ui)
    app.router.add_get("/vendor/{name}", vendor)
    app.router.add_get("/rive/flock.riv", rive_file)
    app.router.add_get("/web/{name}", web_file)
