"""The xiaozhi proxy body, end to end on loopback: fake robot <-> real adapter <-> fake xiaozhi-server.

Speech uses the real `soulstack tts` server (espeak-ng) and real libopus.
"""

import asyncio
import base64
import json
import shutil

import aiohttp
import pytest
import websockets

from soulstack.adapters.stackchan.frames import wrap_audio
from soulstack.adapters.stackchan.speech import opus_packets
from soulstack.serving import listening
from soulstack.protocol.check import run_checks
from soulstack.tts.server import make_tts_app as tts_app
from soulstack.fakes.loopback import LoopbackServer
from soulstack.fakes.xiaozhi_robot import DESK_JPEG, FakeRobot
from soulstack.fakes.xiaozhi_upstream import VISION_TOKEN, FakeUpstream
from tests.bodies.helpers import rig, wait_until

pytestmark = pytest.mark.timeout(60)
needs_espeak = pytest.mark.skipif(
    not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it)"
)


# --- status ---------------------------------------------------------------------


async def test_status_is_true_exactly_while_a_robot_session_is_open():
    async with rig() as r:
        assert not await r.online()
        robot = await r.robot()
        assert await r.online()
        await robot.close()
        started = asyncio.get_running_loop().time()
        await wait_until(lambda: _not(r.online()), timeout_s=1.0)
        assert asyncio.get_running_loop().time() - started < 1.0
        status, answer = await r.post("look", {"question": "anyone?"})
        assert status == 503 and "no robot" in answer["message"]


async def _not(coroutine):
    return not await coroutine


async def test_a_robot_reconnects_and_the_body_works_again():
    async with rig() as r:
        robot = await r.robot()
        await robot.close()
        await wait_until(lambda: _not(r.online()))
        robot = await r.robot()
        assert (await r.post("express", {"emotion": "happy"}))[0] == 200
        await wait_until(lambda: _has(robot, "llm"))
        assert len(r.upstream.connections) == 2


async def _has(robot, kind):
    return any(message["type"] == kind for message in robot.texts())


# --- relaying ------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_frames_are_relayed_byte_identical_both_ways(version):
    async with rig() as r:
        robot = await r.robot(version=version)
        headers = r.upstream.connections[0]["headers"]
        assert headers["Protocol-Version"] == str(version)
        assert headers["Authorization"] == "Bearer robot-token" and headers["Device-Id"] == robot.device_id
        assert headers["Client-Id"] == robot.client_id
        up = [
            json.dumps({"session_id": "x", "type": "listen", "state": "start", "mode": "auto"}),
            wrap_audio(version, bytes(range(256)) * 3),
            '{"type":"abort",  "reason" : "wake_word_detected"}',
        ]
        for frame in up:
            await robot.send(frame)
        down = [
            json.dumps({"type": "stt", "text": "你好 robot", "session_id": "upstream-session-1"}),
            wrap_audio(version, b"\x01\x02\x03" * 100),
            '{"type": "llm", "emotion": "happy", "text": "🙂"}',
        ]
        for frame in down:
            await r.upstream.send(frame)
        received = r.upstream.connections[0]["received"]
        await wait_until(
            lambda: _true(all(frame in received for frame in up) and all(frame in robot.received for frame in down))
        )
        assert [frame for frame in received if not _mcp_or_hello(frame)] == up
        assert robot.received[-3:] == down


def _mcp_or_hello(frame):
    return isinstance(frame, str) and json.loads(frame)["type"] in ("mcp", "hello")


async def _true(value):
    return value


# --- express, look, speak ------------------------------------------------------------------


async def test_express_sends_the_nearest_xiaozhi_face():
    async with rig() as r:
        robot = await r.robot()
        for asked in ("curious", "happy", "completely unknown feeling"):
            assert await r.post("express", {"emotion": asked}) == (200, {})
        await wait_until(lambda: _true(len([m for m in robot.texts() if m["type"] == "llm"]) == 3))
        faces = [(m["emotion"], m["session_id"]) for m in robot.texts() if m["type"] == "llm"]
        assert faces == [
            ("thinking", "upstream-session-1"),
            ("happy", "upstream-session-1"),
            ("neutral", "upstream-session-1"),
        ]


async def test_look_returns_exactly_the_jpeg_the_robot_uploaded():
    async with rig() as r:
        robot = await r.robot()
        status, answer = await r.post("look", {"question": "who is at the desk?"})
        assert status == 200 and answer["mimeType"] == "image/jpeg"
        assert base64.b64decode(answer["image"]) == DESK_JPEG
        assert robot.vision["url"].startswith("http://127.0.0.1:") and "/vision/" in robot.vision["url"]
        assert robot.uploads[0][0] == 200
        # Our call and its answer stay between adapter and robot; upstream's vision saw nothing.
        assert r.upstream.vision.uploads == []
        upstream_saw = [json.loads(f) for f in r.upstream.connections[0]["received"] if isinstance(f, str)]
        assert [m["payload"]["id"] for m in upstream_saw if m["type"] == "mcp"] == [1, 2]


async def test_an_upload_the_adapter_did_not_ask_for_reaches_upstream_unchanged():
    async with rig() as r:
        robot = await r.robot()
        await r.upstream.send(
            json.dumps(
                {
                    "session_id": "upstream-session-1",
                    "type": "mcp",
                    "payload": {
                        "jsonrpc": "2.0",
                        "id": 7,
                        "method": "tools/call",
                        "params": {"name": "self.camera.take_photo", "arguments": {"question": "what is on the desk?"}},
                    },
                }
            )
        )
        await wait_until(
            lambda: _true(any('"id": 7' in f for f in r.upstream.connections[0]["received"] if isinstance(f, str)))
        )
        headers, body = r.upstream.vision.uploads[0]
        assert DESK_JPEG in body and b'name="question"\r\n\r\nwhat is on the desk?' in body
        assert headers["Authorization"] == f"Bearer {VISION_TOKEN}" and headers["Device-Id"] == robot.device_id
        answer = [
            json.loads(f) for f in r.upstream.connections[0]["received"] if isinstance(f, str) and '"id": 7' in f
        ][0]
        assert "upstream saw a desk" in answer["payload"]["result"]["content"][0]["text"]


async def test_look_without_a_camera_tool_says_so():
    async with rig() as r:
        await r.robot(camera=False)
        await wait_until(lambda: _true(r.body.session.tools is not None))
        assert await r.post("look", {"question": "hello?"}) == (
            200,
            {"text": "this robot has no camera tool (its tools/list names no take_photo)"},
        )


async def test_look_when_upstream_sends_no_initialize_the_adapter_sends_its_own():
    async with rig({"send_initialize": False}) as r:
        robot = await r.robot()
        status, answer = await r.post("look", {"question": "anything?"})
        assert status == 200 and base64.b64decode(answer["image"]) == DESK_JPEG
        assert "/vision/" in robot.vision["url"]


async def test_a_photo_that_never_comes_is_a_503():
    async with rig(look_timeout_s=0.5) as r:
        robot = await r.robot()
        robot.vision = {"url": "http://127.0.0.1:9/nowhere"}  # its uploads go nowhere
        robot.upload = _never
        status, answer = await r.post("look", {"question": "anything?"})
        assert status == 503 and "no photo within 0.5 s" in answer["message"]


async def _never(question):
    await asyncio.sleep(3600)


@needs_espeak
@pytest.mark.parametrize("version", [1, 3])
async def test_speak_plays_opus_of_the_right_length_and_never_overlaps_upstream_speech(version):
    async with rig() as r:
        robot = await r.robot(version=version)
        text = "Hello there, I can see you."
        async with (
            listening(tts_app(), "127.0.0.1", 0) as port,
            r.http.post(f"http://127.0.0.1:{port}/tts", json={"text": text}) as tts,
        ):
            expected_s = _wav_seconds(await tts.read())
        upstream_packets = opus_packets(bytes(24000), 24000, 60)  # half a second of silence
        assert await r.post("speak", {"text": text}) == (200, {})
        # Upstream starts its own speech while ours plays: it must wait for ours to end.
        await r.upstream.speak([wrap_audio(version, p) for p in upstream_packets])
        await wait_until(
            lambda: _true(sum(1 for m in robot.texts() if m == {**m, "type": "tts", "state": "stop"}) == 2), 15
        )
        turns = _tts_turns(robot.received, version)
        assert [t["text"] for t in turns] == [text, "upstream speaking"]
        assert turns[1]["packets"] == upstream_packets
        assert robot.decoded_seconds(turns[0]["packets"]) == pytest.approx(expected_s, rel=0.10, abs=0.06)


def _wav_seconds(wav):
    import io
    import wave

    with wave.open(io.BytesIO(wav)) as audio:
        return audio.getnframes() / audio.getframerate()


def _tts_turns(frames, version):
    """Each tts start..stop with its sentence and audio; fails if a turn starts inside another."""
    from soulstack.adapters.stackchan.frames import unwrap_audio

    turns, current = [], None
    for frame in frames:
        if isinstance(frame, bytes):
            if current is not None:
                current["packets"].append(unwrap_audio(version, frame))
            continue
        message = json.loads(frame)
        if message["type"] != "tts":
            continue
        if message["state"] == "start":
            assert current is None, "a tts start arrived inside another utterance"
            current = {"text": None, "packets": []}
        elif message["state"] == "sentence_start":
            current["text"] = message["text"]
        elif message["state"] == "stop":
            turns.append(current)
            current = None
    return turns


@needs_espeak
async def test_body_check_passes_while_a_robot_is_connected():
    async with rig() as r:
        await r.robot()
        results = await run_checks(r.body_url)
        assert all(result.passed for result in results), [result.line() for result in results if not result.passed]


# --- nudges -------------------------------------------------------------------------------


async def test_nudges_for_waking_the_wake_word_and_leaving():
    async with rig() as r:
        robot = await r.robot()
        await robot.send(
            json.dumps({"session_id": "upstream-session-1", "type": "listen", "state": "detect", "text": "你好小智"})
        )
        await robot.close()
        reasons = await r.nudges.wait_for(3)
        assert reasons[0] == "the robot woke up and opened a conversation"
        assert reasons[1] == 'someone called the robot by its wake word: "你好小智"'
        assert reasons[2] == "the robot's conversation ended and it went quiet"
        # The paired robot, with its token: what it heard is a person's words; the rest is not.
        assert [nudge.words for nudge in r.nudges.nudges] == [None, "你好小智", None]


# --- bad input and trouble on every side --------------------------------------------------------


async def test_malformed_frames_from_either_side_are_dropped_and_the_session_lives():
    async with rig() as r:
        robot = await r.robot()
        for junk in ("not json", "[1, 2]", '{"no": "type"}'):
            await robot.send(junk)
            await r.upstream.send(junk)
        # Odd but well-formed frames are relayed, and break nothing of ours.
        odd = [
            '{"type": "mcp", "payload": {"jsonrpc": "2.0", "id": [1], "result": {}}}',
            '{"type": "mcp", "payload": {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}}',
            '{"type": "mcp", "payload": "not an object"}',
            '{"type": "hello", "audio_params": "odd"}',
        ]
        for frame in odd:
            await robot.send(frame)
            await r.upstream.send(frame)
        await robot.send('{"type": "listen", "state": "stop"}')
        await r.upstream.send('{"type": "stt", "text": "still here"}')
        await wait_until(lambda: _true('{"type": "stt", "text": "still here"}' in robot.received))
        await wait_until(lambda: _true('{"type": "listen", "state": "stop"}' in r.upstream.connections[0]["received"]))
        assert not any(
            j in robot.received or j in r.upstream.connections[0]["received"] for j in ("not json", "[1, 2]")
        )
        assert all(frame in robot.received and frame in r.upstream.connections[0]["received"] for frame in odd)
        assert await r.online()


async def test_a_robot_that_never_says_hello_is_closed():
    async with rig(hello_timeout_s=0.3) as r:
        robot = await FakeRobot(r.robot_url).connect(send_hello=False)
        await asyncio.wait_for(robot.closed.wait(), 2)
        assert robot.ws.close_code == 1008 and "hello" in robot.ws.close_reason
        other = await FakeRobot(r.robot_url).connect(send_hello=False)
        await other.send('{"type": "listen", "state": "start"}')
        await asyncio.wait_for(other.closed.wait(), 2)
        assert other.ws.close_code == 1008 and not r.upstream.connections


async def test_upstream_down_refuses_the_robot_cleanly():
    async with rig() as r:
        r.body.upstream_url = "ws://127.0.0.1:9/xiaozhi/v1/"  # nothing listens on the discard port
        robot = FakeRobot(r.robot_url)
        with pytest.raises(TimeoutError):
            await robot.connect(wait_hello_s=0.5)  # no hello comes: the adapter has no upstream to get one from
        await asyncio.wait_for(robot.closed.wait(), 2)
        assert robot.ws.close_code == 1011 and "xiaozhi server is unavailable" in robot.ws.close_reason
        assert not await r.online()


async def test_the_robots_query_string_reaches_upstream():
    async with rig() as r:
        r.robot_url += "?device-id=aa:bb&client-id=c1"
        await r.robot()
        assert r.upstream.connections[0]["path"] == "/xiaozhi/v1/?device-id=aa:bb&client-id=c1"


async def test_a_wrong_device_token_is_refused_before_the_upgrade():
    async with rig(device_token="s3cret") as r:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await FakeRobot(r.robot_url, token="guess").connect()
        assert refused.value.response.status_code == 401
        robot = await r.robot(token="s3cret")
        assert robot.server_hello["session_id"] == "upstream-session-1"


async def test_a_slow_upstream_does_not_block_body_protocol_calls():
    async with rig({"hello_delay_s": 2.0}) as r:
        robot = FakeRobot(r.robot_url)
        connecting = asyncio.create_task(robot.connect())
        await asyncio.sleep(0.2)
        started = asyncio.get_running_loop().time()
        assert not await r.online()
        status, answer = await r.post("speak", {"text": "hello"})
        assert status == 503
        assert asyncio.get_running_loop().time() - started < 0.5
        await connecting
        await wait_until(r.online)


async def test_bad_requests_get_honest_answers():
    async with rig() as r:
        await r.robot()
        assert (await r.post("speak", {"words": "hi"}))[0] == 400
        assert (await r.post("express", {"emotion": ""}))[0] == 400
        async with r.http.post(
            f"{r.body_url}/look", data=b"{not json", headers={"Content-Type": "application/json"}
        ) as answer:
            assert answer.status == 400 and "JSON" in (await answer.json())["message"]
        vision = r.body.session.vision_url
        async with r.http.post(vision, data=b"just bytes", headers={"Content-Type": "text/plain"}) as answer:
            assert answer.status == 400 and "multipart" in (await answer.json())["message"]
        async with r.http.post(vision.rsplit("/", 1)[0] + "/guessed", data=b"x") as answer:
            assert answer.status == 404
        assert await r.online()


async def test_a_text_the_voice_has_no_sound_for_is_a_400_naming_it():
    """The real `soulstack tts` answers 400 for "...": the soul's request is what to mend, not a body
    that is unavailable (503 would tell the soul its voice is gone)."""
    async with rig() as r:
        await r.robot()
        status, answer = await r.post("speak", {"text": "..."})
        assert status == 400 and answer["message"].startswith('"text" has nothing to speak: espeak-ng'), answer
        assert await r.online()


async def test_speak_with_the_tts_server_down_is_a_503():
    async with rig() as r:
        await r.robot()
        r.body.tts_url = "http://127.0.0.1:9/tts"
        status, answer = await r.post("speak", {"text": "hello"})
        assert status == 503 and "text-to-speech server" in answer["message"]


# --- the command ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, complaint",
    [
        (["--upstream", "http://127.0.0.1:8000/xiaozhi/v1/"], "--upstream must look like ws://"),
        (["--upstream", "ws://127.0.0.1:8000/", "--device-listen", "8001"], "--device-listen must look like"),
        (["--upstream", "ws://127.0.0.1:8000/", "--tts-url", "espeak"], "--tts-url must look like"),
    ],
)
async def test_command_line_mistakes_are_one_line(soulstack_cmd, argv, complaint):
    process = await asyncio.create_subprocess_exec(
        *soulstack_cmd, "body", "stackchan", *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and complaint in lines[0]


def taken_port(below_free: bool):
    """A listening socket on a free port; with `below_free`, one whose port below is free too."""
    import socket

    while True:
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        if not below_free:
            break
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port - 1))
                break
            except OSError:
                taken.close()
    taken.listen()
    return taken, port


# The robot port itself, or the one above it (robots upload their photos there): each is one line naming it.
@pytest.mark.parametrize(
    "photos, said",
    [
        (False, "(Address already in use); choose another --device-listen"),
        (True, "(Address already in use); robots upload photos to their port + 1: choose another --device-listen"),
    ],
)
async def test_a_taken_robot_or_photo_port_is_one_line_naming_it(soulstack_cmd, photos, said):
    taken, port = taken_port(below_free=photos)
    with taken:
        process = await asyncio.create_subprocess_exec(
            *soulstack_cmd,
            "body",
            "stackchan",
            "--upstream",
            "ws://127.0.0.1:9/",
            "--port",
            "0",
            "--device-listen",
            f"127.0.0.1:{port - 1 if photos else port}",
            "--nudge-url",
            "",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port} {said}" in lines[0], lines


async def test_the_command_serves_a_robot_end_to_end(soulstack_cmd):
    async with FakeUpstream() as upstream, aiohttp.ClientSession() as http:
        process = await asyncio.create_subprocess_exec(
            *soulstack_cmd,
            "body",
            "stackchan",
            "--upstream",
            upstream.url,
            "--port",
            "0",
            "--token",
            "t",
            "--device-listen",
            "127.0.0.1:0",
            "--nudge-url",
            "",
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            body_line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
            robot_line = (await asyncio.wait_for(process.stdout.readline(), 5)).decode()
            body_url = body_line.split(" on ", 1)[1].split()[0]
            robot_url = robot_line.split("connect to ", 1)[1].split()[0] + "xiaozhi/v1/"
            robot = await FakeRobot(robot_url).connect()
            async with http.post(
                f"{body_url}/look", json={"question": "hi"}, headers={"Authorization": "Bearer t"}
            ) as answer:
                assert answer.status == 200 and base64.b64decode((await answer.json())["image"]) == DESK_JPEG
            await robot.close()
        finally:
            process.terminate()
            assert await asyncio.wait_for(process.wait(), 10) == 0


async def test_upstream_ending_the_conversation_closes_the_robot_and_status_follows():
    async with rig() as r:
        robot = await r.robot()
        await r.upstream.ws.close()  # xiaozhi-server's close_connection_no_voice_time ran out
        await asyncio.wait_for(robot.closed.wait(), 2)
        assert not await r.online()
        assert (await r.post("express", {"emotion": "happy"}))[0] == 503
        assert (await r.nudges.wait_for(2))[-1] == "the robot's conversation ended and it went quiet"


async def test_speak_through_an_openai_compatible_speech_url():
    from soulstack.fakes.openai_api import FakeOpenAI

    async with FakeOpenAI() as openai, rig() as r:
        robot = await r.robot()
        r.body.tts_url, r.body.tts_voice = f"http://127.0.0.1:{openai.port}/v1/audio/speech", "nova"
        r.body.tts_key = "sk-test"
        text = "a voice from elsewhere"
        assert await r.post("speak", {"text": text}) == (200, {})
        await wait_until(lambda: _true(any(m == {**m, "type": "tts", "state": "stop"} for m in robot.texts())), 10)
        request = openai.requests[0]
        assert request.body == {"model": "tts-1", "input": text, "voice": "nova", "response_format": "wav"}
        assert request.headers["authorization"] == "Bearer sk-test"
        turn = _tts_turns(robot.received, 1)[0]
        assert robot.decoded_seconds(turn["packets"]) == pytest.approx(0.06 * len(text), rel=0.10, abs=0.06)


class JunkTts(LoopbackServer):
    """A TTS server that answers 200 with something that is not a WAV."""

    def make_app(self):
        from aiohttp import web

        async def answer(request):
            return web.Response(body=b"<html>surprise</html>", content_type="text/html")

        app = web.Application()
        app.router.add_post("/tts", answer)
        return app


async def test_speech_that_is_not_a_wav_is_a_502_and_nothing_plays():
    async with JunkTts() as junk, rig() as r:
        robot = await r.robot()
        r.body.tts_url = f"http://127.0.0.1:{junk.port}/tts"
        status, answer = await r.post("speak", {"text": "hello"})
        assert status == 502 and "not a WAV file" in answer["message"]
        assert not any(m["type"] == "tts" for m in robot.texts())
        assert await r.online()


@needs_espeak
async def test_speak_waits_for_upstream_speech_to_end_and_gives_up_honestly():
    async with rig(voice_wait_s=0.5) as r:
        robot = await r.robot()
        silence = [wrap_audio(1, p) for p in opus_packets(bytes(2 * 2400), 24000, 60)]
        await r.upstream.send(json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "start"}))
        await r.upstream.send(
            json.dumps(
                {"session_id": "upstream-session-1", "type": "tts", "state": "sentence_start", "text": "upstream first"}
            )
        )
        await wait_until(lambda: _true(r.body.session.voice.locked()))
        status, answer = await r.post("speak", {"text": "too long a wait"})
        assert status == 503 and "busy with its server's speech" in answer["message"]

        r.body.voice_wait_s = 10
        speaking = asyncio.create_task(r.post("speak", {"text": "my turn"}))
        await asyncio.sleep(0.3)
        assert not speaking.done()  # upstream still holds the speaker
        for frame in silence:
            await r.upstream.send(frame)
        await r.upstream.send(json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "stop"}))
        assert await speaking == (200, {})
        await wait_until(lambda: _true(len(_tts_turns(robot.received, 1)) == 2), 10)
        assert [turn["text"] for turn in _tts_turns(robot.received, 1)] == ["upstream first", "my turn"]


async def test_simultaneous_photos_go_each_to_whoever_asked():
    async with rig() as r:
        await r.robot()
        upstream_call = json.dumps(
            {
                "session_id": "upstream-session-1",
                "type": "mcp",
                "payload": {
                    "jsonrpc": "2.0",
                    "id": 8,
                    "method": "tools/call",
                    "params": {"name": "self.camera.take_photo", "arguments": {"question": "is the plant watered?"}},
                },
            }
        )
        ours = asyncio.create_task(r.post("look", {"question": "who is there?"}))
        await r.upstream.send(upstream_call)
        status, answer = await ours
        assert status == 200 and base64.b64decode(answer["image"]) == DESK_JPEG
        await wait_until(lambda: _true(len(r.upstream.vision.uploads) == 1))
        assert b"is the plant watered?" in r.upstream.vision.uploads[0][1]
