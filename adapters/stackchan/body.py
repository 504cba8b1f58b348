"""The StackChan body: Body Protocol v1 for the soul, a xiaozhi proxy for the robot.

Three listeners: Body Protocol (loopback, 9201) for the soul; the robot's
WebSocket (LAN, 8001), each conversation relayed to the upstream
xiaozhi-server; the vision upload endpoint (LAN, the robot port + 1) where the
robot posts photos. The robot speaks only while its conversation is open, so
`online` is true exactly while one is open and its hello answered.

Only one robot is the body: the one `--device-id` names, else the first to come
online (robots.RobotGate). Any other is relayed and nothing more. What the
body's robot hears is a person's words only when its connection proved itself
with a token; otherwise it reaches the soul as a reason, marked unchecked.
"""

import asyncio
import base64
import contextlib
import logging
from urllib.parse import urlsplit

import aiohttp
import websockets
from websockets.asyncio.server import serve

from soulstack.adapters.stackchan.frames import (
    XIAOZHI_EMOJI,
    XIAOZHI_EMOTIONS,
    FrameError,
    parse_message,
    protocol_version,
)
from soulstack.adapters.stackchan.robots import RobotGate
from soulstack.adapters.stackchan.session import RobotSession, SessionGone
from soulstack.adapters.stackchan.speech import DEFAULT_TTS_URL, SpeechError, opus_packets, synthesize, wav_to_pcm
from soulstack.adapters.stackchan.vision import make_vision_app, new_secret
from soulstack.adapters.stackchan.wake import XIAOZHI_WAKE_WORDS, WakeWords
from soulstack.protocol.body_app import BodyUnavailable, make_body_app
from soulstack.protocol.nudges import quoted
from soulstack.serving import listening

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 10.0  # the device itself gives up on a server hello after 10 s
CUT_OFF = "the person cut the robot off while it spoke"
RELAYED_HEADERS = ("Authorization", "Protocol-Version", "Device-Id", "Client-Id")


class StackChanBody:
    def __init__(
        self,
        upstream_url: str,
        tts_url: str = DEFAULT_TTS_URL,
        sender=None,
        device_token: str | None = None,
        look_timeout_s: float = 20.0,
        voice_wait_s: float = 30.0,
        hello_timeout_s: float = HELLO_TIMEOUT_S,
        tts_voice: str | None = None,
        tts_model: str | None = None,
        tts_key: str | None = None,
        device_auth_key: str | None = None,
        device_id: str | None = None,
        wake_words=XIAOZHI_WAKE_WORDS,
    ):
        self.upstream_url = upstream_url
        self.tts_url = tts_url
        self.tts_voice, self.tts_model, self.tts_key = tts_voice, tts_model, tts_key
        self.sender = sender
        self.gate = RobotGate(device_token, device_auth_key, device_id)
        self.look_timeout_s = look_timeout_s
        self.voice_wait_s = voice_wait_s
        self.hello_timeout_s = hello_timeout_s
        self.wake_words = WakeWords(wake_words)
        self.session: RobotSession | None = None  # the robot conversation the soul acts through
        self.vision_sessions: dict = {}  # secret path -> session, read by the vision endpoint
        self.vision_port = 0  # set once the vision listener is bound
        self._speeches: set = set()
        self._http: aiohttp.ClientSession | None = None

    def handlers(self) -> dict:
        return {"status": self.status, "look": self.look, "speak": self.speak, "express": self.express}

    def _live_session(self) -> RobotSession:
        session = self.session
        if session is None or not session.online:
            raise BodyUnavailable(
                "no robot is connected: the StackChan opens its link only during a conversation "
                "(say its wake word or press its button)"
            )
        return session

    # --- Body Protocol handlers -----------------------------------------------------

    async def status(self, request: dict) -> dict:
        return {"online": self.session is not None and self.session.online}

    async def express(self, request: dict) -> dict:
        session = self._live_session()
        face = XIAOZHI_EMOTIONS.nearest(request["emotion"])
        try:
            await session.send_json({"type": "llm", "text": XIAOZHI_EMOJI[face], "emotion": face})
        except SessionGone as error:
            raise BodyUnavailable(str(error)) from None
        return {}

    async def speak(self, request: dict) -> dict:
        session = self._live_session()
        assert self._http is not None, "the body speaks only while it serves (its HTTP session is open)"
        wav = await synthesize(self._http, self.tts_url, request["text"], self.tts_voice, self.tts_model, self.tts_key)
        rate, frame_ms = session.downlink["sample_rate"], session.downlink["frame_duration"]
        packets = opus_packets(wav_to_pcm(wav, rate), rate, frame_ms)  # SpeechError: a 502, our TTS's fault
        if not packets:
            raise SpeechError("the text-to-speech server answered no audio")
        # Acknowledge once the first frame is on its way; the rest plays on, paced, after we answer.
        first_frame = asyncio.get_running_loop().create_future()

        def on_first_frame() -> None:
            if not first_frame.done():
                first_frame.set_result(True)

        playing = asyncio.create_task(session.speak(request["text"], packets, on_first_frame))
        self._speeches.add(playing)
        playing.add_done_callback(self._speeches.discard)
        playing.add_done_callback(lambda task: _report_failure(task, first_frame))
        try:
            await asyncio.wait_for(asyncio.shield(first_frame), self.voice_wait_s)
        except TimeoutError:
            playing.cancel()
            raise BodyUnavailable(session.busy(self.voice_wait_s)) from None
        except SessionGone as error:
            raise BodyUnavailable(str(error)) from None
        return {}

    async def look(self, request: dict) -> dict:
        session = self._live_session()
        try:
            seen = await session.look(request["question"], self.look_timeout_s)
        except (SessionGone, TimeoutError) as error:
            raise BodyUnavailable(str(error) or "the robot sent no photo in time") from None
        if "photo" in seen:
            return {"image": base64.b64encode(seen["photo"]).decode("ascii"), "mimeType": "image/jpeg"}
        return seen

    # --- the robot side --------------------------------------------------------------

    def check_robot(self, connection, request):
        """websockets' process_request: refuse a robot without the device token before the upgrade."""
        refusal = self.gate.refusal(request)
        if refusal is None:
            return None
        log.info("refused a robot connection from %s: %s", _peer(connection), refusal[1].strip())
        return connection.respond(*refusal)

    async def robot_connected(self, robot):
        """One robot conversation: wait for its hello, open the same session upstream, relay until one side ends."""
        try:
            hello_text = await asyncio.wait_for(robot.recv(), self.hello_timeout_s)
            hello = parse_message(hello_text) if isinstance(hello_text, str) else {}
        except TimeoutError:
            await robot.close(1008, f"no hello within {self.hello_timeout_s:g} s")
            return
        except (FrameError, websockets.ConnectionClosed):
            hello = {}
        if hello.get("type") != "hello":
            await robot.close(1008, "the first frame must be a hello")
            return
        headers = {name: robot.request.headers[name] for name in RELAYED_HEADERS if name in robot.request.headers}
        try:
            upstream = await websockets.connect(
                upstream_url(self.upstream_url, robot.request.path), additional_headers=headers, open_timeout=10
            )
        except (OSError, TimeoutError, websockets.InvalidHandshake) as error:
            log.warning("upstream %s refused the robot's session: %s", self.upstream_url, error)
            await robot.close(1011, "the xiaozhi server is unavailable")
            return
        version = protocol_version(robot.request.headers.get("Protocol-Version", hello.get("version")))
        secret = new_secret()
        session = RobotSession(
            robot,
            upstream,
            version,
            self._vision_url(robot, secret),
            self,
            who=self.gate.identify(robot.request, _peer(robot)),
        )
        self.vision_sessions[secret] = session
        try:
            with contextlib.suppress(websockets.ConnectionClosed):  # upstream hung up at once: we close the robot below
                await upstream.send(hello_text)
                await session.relay()
        finally:
            del self.vision_sessions[secret]
            await asyncio.gather(upstream.close(), robot.close(), return_exceptions=True)
            if self.session is session:
                self.session = None
                self._nudge("the robot's conversation ended and it went quiet")

    def _vision_url(self, robot, secret: str) -> str:
        # The robot reached us at the host in its Host header, so it can reach the vision port there too.
        host = robot.request.headers.get("Host", "127.0.0.1").rsplit(":", 1)[0] if robot.request else "127.0.0.1"
        return f"http://{host}:{self.vision_port}/vision/{secret}"

    def on_online(self, session: RobotSession):
        if not self.gate.is_body(session.who):
            return  # relayed, never the body: the soul neither acts through it nor hears from it
        self.session = session
        self._nudge("the robot woke up and opened a conversation")

    def on_detect(self, session: RobotSession, text: str):
        """A `listen detect`: the wake word when its text is one (as xiaozhi-server decides), else typed text."""
        if not text or text in self.wake_words:
            self.on_wake_word(session, text)
        else:
            self.on_typed(session, text)

    def on_wake_word(self, session: RobotSession, words: str):
        if session is not self.session:
            return  # not the body's robot (or not online yet): its text never reaches the soul
        said = f': "{words}"' if words else ""
        if session.who.authenticated:
            # The paired robot, proven by its token: what the person said is their own words
            # (the nudge contract's `words`), and it counts as contact.
            self._nudge(f"someone called the robot by its wake word{said}", words or None)
        else:
            # No token was checked, so anyone could have sent this: a reason, never a person's words,
            # quoted so that no part of it reads as a phrasing of a person's words either.
            said = f': "{quoted(words)}"' if words else ""
            self._nudge(
                f"the robot reported its wake word{said} (unchecked: robots connect without a device token, "
                "so this may not be a person)"
            )

    def on_typed(self, session: RobotSession, text: str):
        if session is not self.session:
            return
        if session.who.authenticated:
            self._nudge(f'someone typed to the robot: "{text}"', text)
        else:
            self._nudge(
                f'the robot reported typed text: "{quoted(text)}" (unchecked: robots connect without a device '
                "token, so this may not be a person)"
            )

    def on_cut(self, session: RobotSession, heard: dict):
        """The person cut our speech off: the soul hears what of it they heard (the nudge's `heard`)."""
        if session is self.session and self.sender is not None:
            self.sender.nudge(CUT_OFF, heard=heard)

    def _nudge(self, reason: str, words: str | None = None):
        if self.sender is not None:
            self.sender.nudge(reason, words)

    # --- running ----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def serving(
        self,
        host: str,
        port: int,
        device_host: str,
        device_port: int,
        vision_port: int | None = None,
        token: str | None = None,
        insecure_no_token: bool = False,
    ):
        """Serve all three listeners inside the block; yields (body port, robot port, vision port).

        The robot side's own rule (a LAN address needs a device token) is the command's to check, before this.
        """
        body_app = make_body_app(self.handlers(), token=token)
        vision_app = make_vision_app(self.vision_sessions)
        async with (
            aiohttp.ClientSession() as self._http,
            listening(body_app, host, port, insecure_no_token=insecure_no_token) as body_port,
            serve(
                self.robot_connected, device_host, device_port, ping_interval=None, process_request=self.check_robot
            ) as robot_server,
        ):
            robot_port = robot_server.sockets[0].getsockname()[1]
            if vision_port is None:  # the robot port + 1, or any free port when the robot port was any (0):
                vision_port = robot_port + 1 if device_port else 0  # robots are told the bound one (session.py)
            photos_hint = "robots upload photos to their port + 1: choose another --device-listen"
            async with listening(vision_app, device_host, vision_port, hint=photos_hint) as self.vision_port:
                tasks = [asyncio.create_task(self.sender.run())] if self.sender else []
                try:
                    yield body_port, robot_port, self.vision_port
                finally:
                    for task in [*tasks, *self._speeches]:
                        task.cancel()


def _peer(connection) -> str:
    address = connection.remote_address
    return f"{address[0]}:{address[1]}" if address else "an unknown address"


def upstream_url(base: str, robot_path: str) -> str:
    """The upstream URL with the robot's query string kept (browser clients send device-id and client-id there)."""
    query = urlsplit(robot_path).query
    if not query:
        return base
    return base + ("&" if urlsplit(base).query else "?") + query


def _report_failure(task: asyncio.Task, first_frame: asyncio.Future):
    """A speech that failed before its first frame fails its /speak; one that failed later is logged."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        if not first_frame.done():
            first_frame.set_exception(error if isinstance(error, SessionGone) else SessionGone(str(error)))
        log.warning("speech to the robot failed: %s", error)
