"""The browser guard and the LAN rule (host/exposure.py, serving.py's read_json, commandline's secrets).

Proves, function by function, how a Host header and an Origin are read (IPv6, ports, default
ports, "null"), which addresses count as loopback and when `listening` must refuse; then, through
a real aiohttp server on loopback built with `make_server_app`, that a rebinding Host is a 421
naming SOULSTACK_ALLOWED_HOSTS (unless the owner lists the name), a foreign page's POST is a 403
(same origin, a program with no Origin and a listed origin pass), a `text/plain` JSON body is a
415 and no handler ever runs for a refused request; and that `--token-file` reads the token, and a
missing or empty file is one line on stderr, exit 2, from the real `soulstack` command.
"""

import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from soulstack.exposure import (
    ALLOWED_HOSTS_ENV,
    ALLOWED_ORIGINS_ENV,
    Exposure,
    exposure_problem,
    host_allowed,
    is_loopback,
    same_origin,
    split_host,
)
from soulstack.serving import make_server_app, read_json

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("Name:8470", ("name", 8470)),
        ("127.0.0.1:9202", ("127.0.0.1", 9202)),
        ("[::1]:9202", ("::1", 9202)),
        ("[::1]", ("::1", None)),
        ("::1", ("::1", None)),  # a bare IPv6 address is no name:port
        ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
        ("localhost", ("localhost", None)),
        ("robot.lan.:8001", ("robot.lan", 8001)),  # the root dot is dropped
        ("evil.example:http", ("evil.example", None)),
        (" Evil.Example ", ("evil.example", None)),
    ],
)
def test_split_host(value, expected):
    assert split_host(value) == expected


@pytest.mark.parametrize(
    "name, allowed",
    [
        ("127.0.0.1", True),
        ("10.0.0.7", True),
        ("::1", True),  # an address cannot be a rebinding name
        ("localhost", True),
        ("pip.localhost", True),
        ("robot.lan", True),  # listed by the owner (below)
        ("evil.example", False),
        ("localhost.evil.example", False),
        ("evillocalhost", False),
        ("", False),
    ],
)
def test_host_allowed(name, allowed):
    assert host_allowed(name, {"robot.lan"}) is allowed


@pytest.mark.parametrize(
    "origin, host, same",
    [
        ("http://127.0.0.1:8470", "127.0.0.1:8470", True),
        ("HTTP://LocalHost:8470", "localhost:8470", True),
        ("http://127.0.0.1", "127.0.0.1:80", True),
        ("http://127.0.0.1:80", "127.0.0.1", True),
        ("https://robot.lan", "robot.lan", True),
        ("https://robot.lan", "robot.lan:443", True),
        ("http://[::1]:9202", "[::1]:9202", True),
        ("http://127.0.0.1:8471", "127.0.0.1:8470", False),  # another port is another origin
        ("http://localhost:8470", "127.0.0.1:8470", False),
        ("http://robot.lan", "robot.lan:443", False),
        ("https://robot.lan", "robot.lan:80", False),
        ("null", "127.0.0.1:8470", False),  # a sandboxed frame or a file:// page
        ("file://", "127.0.0.1:8470", False),
        ("ftp://127.0.0.1:8470", "127.0.0.1:8470", False),
        ("http://127.0.0.1:99999", "127.0.0.1:99999", False),
        ("http://[::1", "[::1]:9202", False),  # urlsplit refuses it: no origin, not a crash
        ("", "127.0.0.1:8470", False),
    ],
)
def test_same_origin(origin, host, same):
    assert same_origin(origin, host) is same


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("pip.localhost", True),
        ("0.0.0.0", False),
        ("", False),
        ("::", False),
        ("192.168.1.5", False),
        ("robot.lan", False),
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_exposure_problem_names_the_address_the_fix_and_the_escape_hatch():
    unlocked = Exposure(locked=False, how_to_lock="nudge.token in the soul's config")
    assert exposure_problem("127.0.0.1", unlocked, False) is None
    assert exposure_problem("0.0.0.0", Exposure(locked=True), False) is None
    assert exposure_problem("0.0.0.0", unlocked, True) is None
    problem = exposure_problem("0.0.0.0", unlocked, False)
    assert "0.0.0.0 without a token" in problem and "nudge.token in the soul's config" in problem
    assert "--insecure-no-token" in problem and "\n" not in problem
    assert "every address without a token" in exposure_problem("", Exposure(locked=False), False)


# --- the guard in a real server --------------------------------------------------


def recording_app(token=None):
    """An app on the shared serving layer whose routes record every request they run."""
    ran = []

    async def change(request):
        ran.append(("POST", await read_json(request)))
        return web.json_response({"ok": True})

    async def look(request):
        ran.append(("GET", None))
        return web.json_response({"ok": True})

    app = make_server_app(token)
    app.router.add_post("/change", change)
    app.router.add_get("/look", look)
    return app, ran


@pytest.fixture
async def serve(aiohttp_server):
    """serve(app) -> (base URL, ClientSession); the app is built by the test, after its env."""
    sessions = []

    async def start(app):
        server = await aiohttp_server(app, host="127.0.0.1")
        sessions.append(aiohttp.ClientSession())
        return f"http://127.0.0.1:{server.port}", server.port, sessions[-1]

    yield start
    for session in sessions:
        await session.close()


async def call(http, method, url, **kwargs):
    async with http.request(method, url, **kwargs) as response:
        return response.status, await response.json()


async def test_a_rebinding_host_is_421_naming_the_setting_and_nothing_runs(serve, monkeypatch):
    monkeypatch.delenv(ALLOWED_HOSTS_ENV, raising=False)
    app, ran = recording_app()
    url, port, http = await serve(app)
    for method, path, extra in (("GET", "/look", {}), ("POST", "/change", {"json": {"a": 1}})):
        status, body = await call(http, method, url + path, headers={"Host": f"evil.example:{port}"}, **extra)
        assert status == 421 and ALLOWED_HOSTS_ENV in body["message"] and "'evil.example'" in body["message"]
    assert (await call(http, "GET", url + "/look", headers={"Host": f"localhost:{port}"}))[0] == 200
    assert (await call(http, "GET", url + "/look", headers={"Host": f"[::1]:{port}"}))[0] == 200
    assert ran == [("GET", None)] * 2


async def test_a_rebinding_host_is_refused_before_the_token_is_asked_for(serve):
    app, ran = recording_app(token="s3cret")
    url, port, http = await serve(app)
    assert (await call(http, "GET", url + "/look", headers={"Host": "evil.example"}))[0] == 421
    assert (await call(http, "GET", url + "/look"))[0] == 401
    assert ran == []


async def test_a_name_the_owner_lists_is_answered(serve, monkeypatch):
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, " robot.lan , Evil.Example")  # read when the app is built
    app, ran = recording_app()
    url, port, http = await serve(app)
    for name in ("evil.example", "ROBOT.LAN"):
        assert (await call(http, "GET", url + "/look", headers={"Host": f"{name}:{port}"}))[0] == 200
    assert (await call(http, "GET", url + "/look", headers={"Host": "other.example"}))[0] == 421
    assert len(ran) == 2


async def test_a_foreign_page_cannot_change_anything_but_its_own_page_and_programs_can(serve, monkeypatch):
    monkeypatch.delenv(ALLOWED_ORIGINS_ENV, raising=False)
    app, ran = recording_app()
    url, port, http = await serve(app)
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", f"http://localhost:{port}", "null"):
        status, body = await call(http, "POST", url + "/change", json={"a": 1}, headers={"Origin": origin})
        assert status == 403 and ALLOWED_ORIGINS_ENV in body["message"], (origin, body)
    assert ran == []
    # Reading is no change: a foreign Origin on a GET passes (what it may read is CORS's business).
    assert (await call(http, "GET", url + "/look", headers={"Origin": "http://evil.example"}))[0] == 200
    assert (await call(http, "POST", url + "/change", json={"a": 2}, headers={"Origin": f"http://127.0.0.1:{port}"}))[
        0
    ] == 200
    assert (await call(http, "POST", url + "/change", json={"a": 3}))[0] == 200  # a program sends no Origin
    assert ran == [("GET", None), ("POST", {"a": 2}), ("POST", {"a": 3})]


async def test_an_origin_the_owner_lists_may_post(serve, monkeypatch):
    monkeypatch.setenv(ALLOWED_ORIGINS_ENV, "http://dashboard.lan:8080/")
    app, ran = recording_app()
    url, port, http = await serve(app)
    assert (await call(http, "POST", url + "/change", json={"a": 1}, headers={"Origin": "http://dashboard.lan:8080"}))[
        0
    ] == 200
    assert (await call(http, "POST", url + "/change", json={"a": 1}, headers={"Origin": "http://dashboard.lan"}))[
        0
    ] == 403
    assert ran == [("POST", {"a": 1})]


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json-seq",
        None,
    ],
)
async def test_json_only_as_application_json(serve, content_type):
    app, ran = recording_app()
    url, port, http = await serve(app)
    headers = {"Content-Type": content_type} if content_type else {}
    async with http.post(
        url + "/change", data=b'{"a": 1}', headers=headers, skip_auto_headers=() if content_type else ("Content-Type",)
    ) as response:
        body = await response.json()
        assert response.status == 415 and "application/json" in body["message"], body
    ok = await call(
        http, "POST", url + "/change", data=b'{"a": 1}', headers={"Content-Type": "Application/JSON; charset=utf-8"}
    )
    assert ok[0] == 200 and ran == [("POST", {"a": 1})]


# --- --token-file through the real command ---------------------------------------------


def soulstack(*argv):
    return subprocess.run(
        [sys.executable, "-m", "soulstack.cli", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_token_file_holds_the_token_and_the_environment_is_the_default(tmp_path, monkeypatch):
    from soulstack.cli import build_parser

    path = tmp_path / "tts.token"
    path.write_text("  s3cret-from-a-file \n")
    monkeypatch.setenv("TTS_TOKEN", "from-the-env")
    assert build_parser().parse_args(["tts"]).token == "from-the-env"
    assert build_parser().parse_args(["tts", "--token-file", str(path)]).token == "s3cret-from-a-file"
    assert build_parser().parse_args(["flock", "--token-file", str(path)]).token == "s3cret-from-a-file"


def test_a_token_and_a_token_file_together_are_one_line_exit_2(tmp_path):
    """Both given, one silently won (the last): a person testing the other one got 401s."""
    path = tmp_path / "token"
    path.write_text("abc\n")
    path.chmod(0o600)
    result = soulstack("flock", "--token", "a", "--token-file", str(path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "argument --token-file: not allowed with argument --token" in result.stderr


def test_a_token_file_others_can_read_is_used_and_said(tmp_path, capsys):
    from soulstack.cli import build_parser

    path = tmp_path / "token"
    path.write_text("s3cret\n")
    path.chmod(0o644)
    assert build_parser().parse_args(["tts", "--token-file", str(path)]).token == "s3cret"
    assert capsys.readouterr().err == f"warning: {path} is readable by other accounts (mode 644); chmod 600 {path}\n"
    path.chmod(0o600)
    assert build_parser().parse_args(["tts", "--token-file", str(path)]).token == "s3cret"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "content, why",
    [
        (None, "cannot read"),
        ("", "must hold the token alone on one line"),
        ("  \n\n", "must hold the token alone on one line"),
        ("one\ntwo\n", "must hold the token alone on one line"),
        ("my secret\n", "holds a token with a space in it"),  # never matched: "Bearer my secret"
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_a_bad_token_file_is_one_line_exit_2(tmp_path, content, why):
    path = tmp_path / "token"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    for argv in (
        ["tts", "--port", "1", "--token-file", str(path)],
        ["body", "terminal", "--nudge-token-file", str(path)],
    ):
        result = soulstack(*argv)
        assert result.returncode == 2, result
        assert result.stderr.count("\n") == 1 and why in result.stderr and str(path) in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
