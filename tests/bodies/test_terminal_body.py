"""The terminal body: its screen on a stream, its HTTP face, and the real command driven through a pipe."""

import asyncio
import io
import os
import signal

import pytest

from soulstack.adapters.terminal.body import TerminalBody
from soulstack.adapters.terminal.screen import CLEAR, FACES, Scene, Screen, describe, face_lines, frame
from soulstack.protocol.client import BodyClient, BodyError
from soulstack.protocol.shapes import REFERENCE_EMOTIONS
from soulstack.protocol.body_app import make_body_app
from tests.helpers import free_port
from tests.fakes.nudge_receiver import NudgeReceiver

# --- the screen ---------------------------------------------------------------


def test_every_reference_emotion_has_its_own_face():
    assert set(FACES) == set(REFERENCE_EMOTIONS)
    drawings = {"\n".join(face_lines(face)) for face in REFERENCE_EMOTIONS}
    assert len(drawings) == len(REFERENCE_EMOTIONS)


def test_plain_mode_appends_lines_without_cursor_tricks():
    stream = io.StringIO()
    screen = Screen(stream, live=False)
    scene = Scene(face="happy", asked_emotion="joyful", words="hello")
    screen.paint(scene, "face")
    screen.paint(scene, "words")
    text = stream.getvalue()
    assert "\x1b" not in text
    assert "^   ^" in text and "feeling happy (joyful)" in text
    assert text.endswith('says: "hello"\n')


def test_live_mode_redraws_the_whole_screen():
    stream = io.StringIO()
    scene = Scene(face="sad", words="oh no")
    scene.typed.append("are you ok?")
    Screen(stream, live=True).paint(scene, "words")
    assert stream.getvalue() == CLEAR + frame(scene)
    assert ";   ;" in frame(scene) and "you: are you ok?" in frame(scene)


def test_describe_says_what_is_on_the_screen():
    scene = Scene(face="sleepy", asked_emotion="tired", words="good night", looked_for="a cat")
    scene.typed.extend(["hi", "sleep well"])
    text = describe(scene)
    for part in ("sleepy", '"tired"', '"good night"', '"hi" / "sleep well"', '"a cat"', "no camera"):
        assert part in text


# --- the body over HTTP -------------------------------------------------------


@pytest.fixture
async def terminal(aiohttp_server):
    stream = io.StringIO()
    body = TerminalBody(Screen(stream, live=False))
    server = await aiohttp_server(make_body_app(body.handlers()))
    client = BodyClient.at(str(server.make_url("")))
    yield body, stream, client
    await client.close()


async def test_express_and_speak_paint_and_look_describes(terminal):
    body, stream, client = terminal
    await client.express("furious")
    await client.speak("stop poking me")
    seen = await client.look("my human")
    assert "looking angry" in seen["text"] and '"stop poking me"' in seen["text"] and '"my human"' in seen["text"]
    assert ">   <" in stream.getvalue() and 'says: "stop poking me"' in stream.getvalue()
    assert await client.status() == {"online": True}


async def test_a_screen_that_cannot_be_painted_is_offline_and_refuses_to_act(terminal):
    body, stream, client = terminal
    stream.close()
    assert await client.status() == {"online": False}
    with pytest.raises(BodyError) as caught:
        await client.speak("is anyone there?")
    assert caught.value.status == 503 and "can no longer be painted" in caught.value.message
    with pytest.raises(BodyError):
        await client.look("")


# --- the real command through a pipe --------------------------------------------


class Running:
    """`soulstack body terminal` as a subprocess with piped stdin and stdout."""

    def __init__(self, process):
        self.process = process
        self.output = ""

    async def wait_for_text(self, text, timeout_s=15.0):
        async def until():
            while text not in self.output:
                line = await self.process.stdout.readline()
                if not line:
                    raise AssertionError(f"the body exited before showing {text!r}; it showed:\n{self.output}")
                self.output += line.decode()

        await asyncio.wait_for(until(), timeout_s)

    async def type(self, line):
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def stop(self, sig=signal.SIGINT):
        if self.process.returncode is None:
            self.process.send_signal(sig)
        out, err = await asyncio.wait_for(self.process.communicate(), 15)
        self.output += out.decode()
        return self.process.returncode, err.decode()


@pytest.fixture
async def start_terminal(soulstack_cmd):
    started = []

    async def start(*args):
        port = free_port()
        process = await asyncio.create_subprocess_exec(
            *soulstack_cmd,
            "body",
            "terminal",
            "--port",
            str(port),
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "BODY_TOKEN": "", "NUDGE_TOKEN": ""},
        )
        body = Running(process)
        started.append(body)
        await body.wait_for_text("terminal body at")
        return body, f"http://127.0.0.1:{port}"

    yield start
    for body in started:
        if body.process.returncode is None:
            body.process.kill()
            await body.process.wait()


async def test_a_typed_line_nudges_the_soul(aiohttp_server, start_terminal):
    receiver = NudgeReceiver(token="nudge-token")
    soul = await aiohttp_server(receiver.app())
    body, url = await start_terminal("--nudge-url", str(soul.make_url("/nudge")), "--nudge-token", "nudge-token")
    await body.type("hello soul")
    assert await receiver.wait_for(1) == ["your human typed: hello soul"]
    assert receiver.nudges[0].words == "hello soul"  # the line itself, as the nudge contract's words
    assert receiver.sent[0].pop("nudge_id")  # the sender's (test_nudge_ids.py)
    assert receiver.sent == [{"words": "hello soul"}]  # once: the soul renders the reason above
    await body.wait_for_text("the soul got it")

    async with BodyClient.at(url) as client:
        await client.express("joyful")
        await body.wait_for_text("feeling happy (joyful)")
    code, err = await body.stop(signal.SIGINT)
    assert code == 0
    assert "Traceback" not in err
    assert "powers off" in body.output


async def test_a_nudge_url_with_no_path_goes_to_the_souls_nudge_and_says_so(aiohttp_server, start_terminal):
    receiver = NudgeReceiver()  # serves /nudge only, as the soul does: a nudge to / would be a 404
    soul = await aiohttp_server(receiver.app())
    given = f"http://127.0.0.1:{soul.port}"
    body, _ = await start_terminal("--nudge-url", given)
    await body.type("hello soul")
    assert await receiver.wait_for(1) == ["your human typed: hello soul"]
    code, err = await body.stop(signal.SIGTERM)
    assert code == 0
    assert f"note: --nudge-url {given} names no path: nudges go to {given}/nudge" in err


async def test_a_nudge_url_with_the_wrong_path_is_named_as_the_thing_to_fix(aiohttp_server, start_terminal):
    soul = await aiohttp_server(NudgeReceiver().app())  # serves /nudge only
    body, _ = await start_terminal("--nudge-url", str(soul.make_url("/nudges")))
    await body.type("hello soul")
    await body.wait_for_text("check --nudge-url (the soul's is http://HOST:9202/nudge)")
    assert "check --nudge-token" not in body.output
    code, _ = await body.stop(signal.SIGTERM)
    assert code == 0


async def test_while_the_soul_is_down_the_screen_says_so_and_the_line_waits(aiohttp_server, start_terminal):
    soul_port = free_port()
    body, url = await start_terminal("--nudge-url", f"http://127.0.0.1:{soul_port}/nudge")
    await body.type("are you awake?")
    await body.wait_for_text("the soul is unreachable")
    async with BodyClient.at(url) as client:
        seen = await client.look("")
    assert "the soul is unreachable" in seen["text"]

    receiver = NudgeReceiver()
    await aiohttp_server(receiver.app(), port=soul_port)
    assert await receiver.wait_for(1, timeout_s=15) == ["your human typed: are you awake?"]
    await body.wait_for_text("the soul got it")
    code, err = await body.stop(signal.SIGTERM)
    assert code == 0 and "Traceback" not in err


async def test_eof_on_stdin_keeps_the_body_serving_with_its_token(start_terminal, soulstack_cmd):
    body, url = await start_terminal("--token", "body-token", "--nudge-url", "")
    await body.type("nobody hears this")
    await body.wait_for_text("nudges are off")
    body.process.stdin.close()
    await body.wait_for_text("stdin is closed")
    async with BodyClient.at(url, token="body-token") as client:
        assert await client.status() == {"online": True}

    check = await asyncio.create_subprocess_exec(
        *soulstack_cmd,
        "body-check",
        url,
        "--token",
        "body-token",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(check.communicate(), 60)
    assert check.returncode == 0, out.decode()
    code, err = await body.stop()
    assert code == 0 and "Traceback" not in err


async def test_a_taken_port_is_one_line_not_a_traceback(start_terminal, soulstack_cmd):
    body, url = await start_terminal("--nudge-url", "")
    port = url.rsplit(":", 1)[1]
    second = await asyncio.create_subprocess_exec(
        *soulstack_cmd,
        "body",
        "terminal",
        "--port",
        port,
        "--nudge-url",
        "",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(second.communicate(), 15)
    assert second.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err.decode() and "Traceback" not in err.decode()
    await body.stop()
