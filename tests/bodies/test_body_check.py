"""body-check: passes a good body (the terminal body), fails a broken one with named reasons."""

import asyncio
import base64
import io

import pytest
from aiohttp import web

from soulstack.adapters.terminal.body import TerminalBody
from soulstack.adapters.terminal.screen import Screen
from soulstack.protocol.check import endpoint_in_url, run_checks
from soulstack.protocol.body_app import make_body_app
from tests.helpers import free_port
from tests.fakes.broken_body import make_broken_body_app
from tests.fakes.reference_terminal_body import make_reference_terminal_body_app

TOKEN = "check-token"


def terminal_app(token=None):
    return make_body_app(TerminalBody(Screen(io.StringIO(), live=False)).handlers(), token=token)


async def url_of(aiohttp_server, app):
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


def failures(results):
    return {r.name: r.detail for r in results if not r.passed}


@pytest.mark.parametrize("token", [None, TOKEN])
async def test_the_terminal_body_passes(aiohttp_server, token):
    url = await url_of(aiohttp_server, terminal_app(token))
    results = await run_checks(url, token)
    assert failures(results) == {}
    names = {r.name for r in results}
    assert {
        "status answers",
        "look answers",
        "speak answers",
        "express accepts an unknown emotion",
        "speak refuses malformed JSON",
        "express refuses GET",
    } <= names
    assert ("status refuses a wrong token" in names) == bool(token)


async def test_the_broken_body_fails_with_named_reasons(aiohttp_server):
    url = await url_of(aiohttp_server, make_broken_body_app())
    failed = failures(await run_checks(url, TOKEN))
    assert "wrong shape" in failed["status answers"] and '"online"' in failed["status answers"]
    assert "JPEG SOI" in failed["look answers"]
    assert "without a JSON body" in failed["speak answers"]
    for endpoint in ("status", "look", "speak", "express"):
        assert "a fake success" in failed[f"{endpoint} refuses malformed JSON"]
        assert "a fake success" in failed[f"{endpoint} refuses GET"]
        assert "expected 401/403" in failed[f"{endpoint} refuses no token"]
        assert "expected 401/403" in failed[f"{endpoint} refuses a wrong token"]
    # /express on the broken body does answer {} to a proper request: that much is right.
    assert "express answers" not in failed


def image_body(data: bytes, mime: str):
    """A camera body that refuses bad requests properly and answers `data` labelled as `mime`."""

    async def look(request):
        if request.method != "POST":
            return web.json_response({"message": "POST only"}, status=405)
        try:
            payload = await request.json()
        except ValueError:
            return web.json_response({"message": "not JSON"}, status=400)
        if not isinstance(payload, dict) or not isinstance(payload.get("question"), str):
            return web.json_response({"message": "needs a question"}, status=400)
        return web.json_response({"image": base64.b64encode(data).decode(), "mimeType": mime})

    app = web.Application()
    app.router.add_route("*", "/look", look)
    return app


@pytest.mark.parametrize(
    "data, mime, problem",
    [
        (b"\xff\xd8\xff\xe0 jpeg bytes", "image/jpeg", None),
        (b"\x89PNG\r\n\x1a\n png bytes", "image/png", None),
        (b"\xff\xd8\xff\xe0 jpeg bytes", "image/png", "PNG signature"),
        (b"\x89PNG\r\n\x1a\n png bytes", "image/jpeg", "JPEG SOI"),
        (b"\xff\xd8", "image/gif", "mimeType"),
    ],
)
async def test_look_images_must_be_what_they_say(aiohttp_server, data, mime, problem):
    url = await url_of(aiohttp_server, image_body(data, mime))
    results = await run_checks(url, endpoints=("look",))
    look = next(r for r in results if r.name == "look answers")
    assert look.passed == (problem is None), look.detail
    if problem:
        assert problem in look.detail


async def test_look_must_carry_exactly_one_shape(aiohttp_server):
    async def both(request):
        if request.method != "POST" or (await request.text()).count("question") == 0:
            return web.json_response({"message": "bad"}, status=400)
        return web.json_response({"text": "a desk", "image": "AAAA", "mimeType": "image/jpeg"})

    app = web.Application()
    app.router.add_route("*", "/look", both)
    results = await run_checks(await url_of(aiohttp_server, app), endpoints=("look",))
    assert "exactly one of" in failures(results)["look answers"]


async def test_a_slow_status_fails(aiohttp_server):
    never = asyncio.Event()

    async def slow(request):
        await never.wait()

    url = await url_of(aiohttp_server, make_body_app({"status": slow}))
    failed = failures(await run_checks(url, endpoints=("status",), status_within_s=0.2))
    assert "no answer within 0.2 s" in failed["status answers"]
    never.set()


async def test_a_5xx_on_malformed_json_is_a_crash_not_a_refusal(aiohttp_server):
    async def status(request):
        try:
            await request.json()
        except ValueError:
            return web.Response(status=500, text="Traceback ...")
        return web.json_response({"online": True})

    app = web.Application()
    app.router.add_post("/status", status)
    failed = failures(await run_checks(await url_of(aiohttp_server, app), endpoints=("status",)))
    assert "expected 4xx, got 500" in failed["status refuses malformed JSON"]


async def test_the_reference_terminal_body_keeps_v1_and_breaks_only_stricter_rules(aiohttp_server):
    url = await url_of(aiohttp_server, make_reference_terminal_body_app())
    results = await run_checks(url)
    assert [r.name for r in results if r.fails()] == []
    warned = {r.name for r in results if not r.passed}
    assert len(warned) == 20 and all(r.strict for r in results if not r.passed)
    assert {"status refuses GET", "speak refuses malformed JSON", "look refuses the wrong shape"} <= warned
    assert sum(r.passed for r in results) == 6
    assert all(r.fails(strict=True) for r in results if not r.passed)


async def test_a_wrong_token_is_not_a_refusal_of_the_request(aiohttp_server):
    url = await url_of(aiohttp_server, terminal_app(TOKEN))
    results = {r.name: r for r in await run_checks(url, "not-the-token")}
    status = results["status answers"]
    assert status.fails() and "is --token the body's token?" in status.detail and "need --token" not in status.detail
    malformed = results["speak refuses malformed JSON"]
    assert not malformed.passed and "the token, not the request" in malformed.detail
    no_token = await run_checks(url)
    assert "does the body need --token?" in next(r for r in no_token if r.name == "status answers").detail


@pytest.mark.parametrize("path", ["/status", "/speak/"])
def test_a_url_naming_an_endpoint_is_named_with_its_base(path):
    """body-check refuses it before checking (exit 2: tests/test_cli.py); the body is not at fault."""
    url = "http://127.0.0.1:9310"
    assert endpoint_in_url(url + path) == f"{url + path} names the {path.rstrip('/')} endpoint; " + (
        f"give the body's base URL: {url}"
    )
    assert endpoint_in_url(url) is None and endpoint_in_url(url + "/robot") is None


async def test_https_to_a_plain_body_and_a_wrong_path_are_one_line(aiohttp_server):
    url = await url_of(aiohttp_server, terminal_app())
    for wrong in (url.replace("http://", "https://"), url + "/body"):
        results = await run_checks(wrong)
        assert len(results) == 1 and not results[0].passed, [r.line() for r in results]
        assert "base URL" in results[0].detail


async def test_an_unreachable_url_is_one_clear_failure():
    results = await run_checks(f"http://127.0.0.1:{free_port()}")
    assert len(results) == 1
    assert not results[0].passed and "nothing answers" in results[0].detail


# --- the real command -----------------------------------------------------------


async def run_cli(soulstack_cmd, *args):
    process = await asyncio.create_subprocess_exec(
        *soulstack_cmd, "body-check", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode, out.decode(), err.decode()


async def test_cli_passes_the_terminal_body_with_a_token(aiohttp_server, soulstack_cmd):
    url = await url_of(aiohttp_server, terminal_app(TOKEN))
    code, out, err = await run_cli(soulstack_cmd, url, "--token", TOKEN)
    assert code == 0, out + err
    assert "FAIL" not in out
    assert out.strip().splitlines()[-1].startswith("34 passed, 0 failed")


async def test_cli_passes_the_reference_body_with_warnings_and_strict_fails_it(aiohttp_server, soulstack_cmd):
    url = await url_of(aiohttp_server, make_reference_terminal_body_app())
    code, out, err = await run_cli(soulstack_cmd, url)
    assert code == 0, out + err
    assert out.count("WARN  ") == 20 and "FAIL" not in out
    assert out.strip().splitlines()[-1].startswith("6 passed, 0 failed, 20 warnings")
    code, out, err = await run_cli(soulstack_cmd, url, "--strict")
    assert code == 1 and out.count("FAIL  ") == 20 and "WARN" not in out
    assert "does NOT keep Body Protocol v1" in out


async def test_cli_fails_the_broken_body(aiohttp_server, soulstack_cmd):
    url = await url_of(aiohttp_server, make_broken_body_app())
    code, out, err = await run_cli(soulstack_cmd, url, "--endpoints", "status,look")
    assert code == 1
    assert "FAIL  look answers: wrong shape: the image is labelled image/jpeg" in out
    assert "does NOT keep Body Protocol v1" in out
    assert "Traceback" not in err


async def test_cli_unreachable_and_usage_errors(soulstack_cmd):
    code, out, err = await run_cli(soulstack_cmd, f"http://127.0.0.1:{free_port()}")
    assert code == 1
    assert out.count("FAIL") == 1 and "nothing answers" in out
    code, out, err = await run_cli(soulstack_cmd, "not-a-url")
    assert code == 2 and err.count("\n") == 1 and "URL must look like" in err
    code, out, err = await run_cli(soulstack_cmd, "http://127.0.0.1:9", "--endpoints", "status,smell")
    assert code == 2 and "--endpoints" in err
