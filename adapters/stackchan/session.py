"""One robot conversation, relayed: robot <-> adapter <-> upstream xiaozhi-server.

Every frame is relayed unchanged both ways, with three exceptions the adapter
owns: upstream's MCP `initialize` gets its `capabilities.vision.url` pointed at
the adapter (the original is kept, and uploads the adapter did not ask for go
there unchanged); the robot's answers to the adapter's own JSON-RPC ids stay
here; a text frame that is not a JSON object with a "type" is logged and
dropped. The adapter adds its own frames: `llm` emotions, `tts` with Opus, MCP
calls.

The robot has one speaker. Upstream's speech (from `tts start` to `tts stop`)
and ours take turns through `voice`, a lock: while we speak, upstream's frames
wait in the socket, unread, until we finish, and the other way round. Ours
also waits while a person has the robot listening (turns.py): never over them.

The person may cut our speech off: when they make the robot listen, it detects
its wake word or aborts while our Opus streams, we stop at once (a `tts stop`
after the frame in flight), drop the rest and every utterance still waiting
for the speaker, and tell the body what the person heard (`heard`, the nudge
contract's shape): the utterances played in full since the person last made
it listen, and the one cut off with the part of it played. The device's own
re-listen after a `tts stop` (auto mode) is no person and cuts nothing.

Our own JSON-RPC ids never go upstream, however late the robot answers them
(devices answer the camera call only after their photo upload got its HTTP
answer, often after `look` stopped waiting).
"""

import asyncio
import contextlib
import itertools
import json
import logging
import time

import websockets

from soulstack.adapters.stackchan.frames import FrameError, downlink_params, parse_message, wrap_audio
from soulstack.adapters.stackchan.turns import Turns
from soulstack.protocol.nudges import MAX_PLAYED, MAX_WORDS_CHARS
from soulstack.protocol.nudges import cut as cut_text

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 8  # pages of our own tools/list (the firmware pages its list at about 8 KB): a bound, not a need
TAKE_PHOTO = "self.camera.take_photo"  # the firmware's name; py-xiaozhi's is "take_photo"
# Our JSON-RPC ids start far above the small counters xiaozhi-server uses, so they never collide.
OUR_FIRST_ID = 900_000_001
PREBUFFER_FRAMES = 3  # sent at once so the robot's player starts without a gap; the rest are paced


class SessionGone(Exception):
    """The robot's conversation ended (or never opened) while we were acting through it."""


class SpeechCut(SessionGone):
    """The person cut the robot's speech off (it started listening) before this utterance could play."""


def is_camera_tool(name) -> bool:
    """A camera tool by the names devices give it: `take_photo` (py-xiaozhi) or `*.take_photo` (the firmware)."""
    return isinstance(name, str) and (name == "take_photo" or name.endswith(".take_photo"))


class RobotSession:
    def __init__(self, robot, upstream, version: int, vision_url: str, events, who=None):
        self.robot = robot  # websockets ServerConnection (the device)
        self.who = who  # robots.Robot: its Device-Id, and whether its token was checked
        self.upstream = upstream  # websockets ClientConnection (xiaozhi-server)
        self.version = version
        self.vision_url = vision_url  # where the robot should upload photos: the adapter
        self.events = events  # callbacks: on_online(session), on_wake_word(session, text)
        self.online = False
        self.session_id = ""
        self.downlink = downlink_params({})
        self.voice = asyncio.Lock()
        self.turns = Turns()  # whether a person has the robot listening; the device's own re-listen
        self.original_vision: dict | None = None  # upstream's own {url, token}
        self.initialized = False  # the robot got an MCP initialize (upstream's or ours)
        self.tools: set | None = None  # tool names from the robot's last tools/list answer
        self._asked_tools = False  # we sent our own tools/list (upstream had sent none)
        self._ids = itertools.count(OUR_FIRST_ID)
        self._our_calls: dict = {}  # our JSON-RPC id -> future of the robot's answer
        self._issued: set = set()  # every id we sent, answered or not: none of their answers goes upstream
        self.waiting = 0  # our utterances waiting for their turn at the speaker
        self.played: list = []  # our utterances played in full since the person last made the robot listen
        self._speaking: tuple | None = None  # (text, cut event, started, seconds) of the utterance playing now
        self._cuts = 0  # how many times the person cut us off: a speech waiting from before a cut is dropped
        self._upstream_lists: set = set()  # ids of upstream's tools/list requests
        self.upstream_photo_calls: dict = {}  # upstream take_photo id -> its question
        self.look_question: str | None = None
        self.photo: asyncio.Future | None = None  # resolved by the vision endpoint with the JPEG
        self._upstream_holds_voice = False
        self._saw_hello = False
        self._eyes = asyncio.Lock()  # one look at a time, so an upload matches its look

    # --- relaying ----------------------------------------------------------------

    async def relay(self):
        """Relay both ways until either side closes."""
        pumps = [asyncio.create_task(self._robot_to_upstream()), asyncio.create_task(self._upstream_to_robot())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.online = False
            self.turns.end()
            for pump in pumps:
                pump.cancel()
            for outcome in await asyncio.gather(*pumps, return_exceptions=True):
                if isinstance(outcome, Exception):  # a bug of ours, not the network: say so
                    log.error("the relay failed: %s: %s", type(outcome).__name__, outcome, exc_info=outcome)
            self._release_voice()
            for future in [*self._our_calls.values(), self.photo]:
                if future is not None and not future.done():
                    future.set_exception(SessionGone("the robot's conversation ended"))

    async def _robot_to_upstream(self):
        with contextlib.suppress(websockets.ConnectionClosed):
            async for frame in self.robot:
                if isinstance(frame, str) and not self._from_robot(frame):
                    continue
                await self.upstream.send(frame)

    async def _upstream_to_robot(self):
        with contextlib.suppress(websockets.ConnectionClosed):
            async for frame in self.upstream:
                if isinstance(frame, str):
                    frame = await self._from_upstream(frame)
                    if frame is None:
                        continue
                await self.robot.send(frame)
                if self._saw_hello and not self.online:
                    self.online = True  # the robot has its hello answer: acting works from now on
                    self.events.on_online(self)

    def _from_robot(self, text: str) -> bool:
        """Look at a text frame from the robot; False when it is not to be relayed."""
        try:
            message = parse_message(text)
        except FrameError as error:
            log.warning("dropped a malformed frame from the robot: %s: %.80r", error, text)
            return False
        kind = message["type"]
        why = self.turns.from_robot(message)
        if why is not None:
            self._interrupted(why)
        if kind == "listen" and message.get("state") == "detect":
            words = message.get("text")
            self.events.on_detect(self, words if isinstance(words, str) else "")
        elif kind == "mcp":
            return self._robot_mcp(message.get("payload"))
        return True

    def _robot_mcp(self, payload) -> bool:
        rpc_id = json_rpc_id(payload)
        if rpc_id is None or "method" in payload:
            return True
        if rpc_id in self._issued:
            future = self._our_calls.pop(rpc_id, None)
            if future is not None and not future.done():
                future.set_result(payload)
            return False  # ours, however late: upstream never asked it
        if rpc_id in self._upstream_lists:
            self._upstream_lists.discard(rpc_id)
            self._note_tools(payload)
        self.upstream_photo_calls.pop(rpc_id, None)
        return True

    def _note_tools(self, answer: dict):
        tools = (answer.get("result") or {}).get("tools") if isinstance(answer.get("result"), dict) else None
        if isinstance(tools, list):
            self.tools = {tool.get("name") for tool in tools if isinstance(tool, dict)}

    @property
    def camera_tool(self) -> str | None:
        """The camera tool's name in the robot's own tools/list; the firmware's before any list came."""
        if self.tools is None:
            return TAKE_PHOTO
        return next((name for name in sorted(self.tools, key=str) if is_camera_tool(name)), None)

    async def _from_upstream(self, text: str):
        """A text frame from upstream as it should reach the robot, or None to drop it."""
        try:
            message = parse_message(text)
        except FrameError as error:
            log.warning("dropped a malformed frame from upstream: %s: %.80r", error, text)
            return None
        kind = message["type"]
        self.turns.from_upstream(message)  # first: an upstream tts start must not wait behind us for the floor
        if kind == "hello":
            self.downlink = downlink_params(message)
            session_id = message.get("session_id")
            self.session_id = session_id if isinstance(session_id, str) else ""
            self._saw_hello = True
        elif kind == "tts":
            await self._upstream_tts(message.get("state"))
        elif kind == "mcp" and isinstance(message.get("payload"), dict):
            return self._upstream_mcp(message, text)
        return text

    async def _upstream_tts(self, state):
        if state == "start" and not self._upstream_holds_voice:
            await self.voice.acquire()  # waits while we speak; upstream's frames wait unread meanwhile
            self._upstream_holds_voice = True
        elif state == "stop":
            self._release_voice()

    def _release_voice(self):
        if self._upstream_holds_voice:
            self._upstream_holds_voice = False
            self.voice.release()

    def _upstream_mcp(self, message: dict, text: str) -> str:
        payload = message["payload"]
        method, params, rpc_id = payload.get("method"), payload.get("params"), json_rpc_id(payload)
        if method == "tools/list" and rpc_id is not None:
            self._upstream_lists.add(rpc_id)
        elif (
            method == "tools/call"
            and rpc_id is not None
            and isinstance(params, dict)
            and is_camera_tool(params.get("name"))
        ):
            arguments = params["arguments"] if isinstance(params.get("arguments"), dict) else {}
            self.upstream_photo_calls[rpc_id] = arguments.get("question")
        elif method == "initialize" and isinstance(params, dict):
            self.initialized = True
            vision = (
                (params.get("capabilities") or {}).get("vision")
                if isinstance(params.get("capabilities"), dict)
                else None
            )
            if isinstance(vision, dict) and isinstance(vision.get("url"), str):
                self.original_vision = {"url": vision["url"], "token": vision.get("token")}
                vision["url"] = self.vision_url
                return json.dumps(message, ensure_ascii=False)
            capabilities = params.setdefault("capabilities", {})
            if isinstance(capabilities, dict):
                capabilities["vision"] = {"url": self.vision_url, "token": ""}
                return json.dumps(message, ensure_ascii=False)
        return text

    # --- acting through the robot -----------------------------------------------

    async def send_json(self, message: dict):
        try:
            await self.robot.send(json.dumps({"session_id": self.session_id, **message}, ensure_ascii=False))
        except websockets.ConnectionClosed:
            raise SessionGone("the robot's conversation ended") from None

    async def call(self, method: str, params: dict, timeout_s: float) -> dict:
        """A JSON-RPC call to the robot's MCP server with our own id; its answer (result or error)."""
        rpc_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._our_calls[rpc_id] = future
        self._issued.add(rpc_id)
        try:
            await self.send_json(
                {"type": "mcp", "payload": {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}}
            )
            return await asyncio.wait_for(future, timeout_s)
        finally:
            self._our_calls.pop(rpc_id, None)

    async def ensure_initialized(self, timeout_s: float):
        """Upstream sent no MCP initialize: send our own, so the robot knows where to upload photos."""
        if self.initialized:
            return
        self.initialized = True
        await self.call(
            "initialize",
            {
                "protocolVersion": "2024-11-05",
                "capabilities": {"vision": {"url": self.vision_url, "token": ""}},
                "clientInfo": {"name": "soulstack", "version": "1"},
            },
            timeout_s,
        )

    async def ensure_tools(self, timeout_s: float):
        """Upstream never listed the robot's tools: list them ourselves, once, so /look calls the camera by
        the name this robot gives it (py-xiaozhi's `take_photo`, not the firmware's). Our call carries our
        own id, so its answer stays here (`_robot_mcp`). A robot whose tools/list fails keeps the
        firmware's name; one that pages its list (`nextCursor`) is read page by page."""
        if self.tools is not None or self._asked_tools:
            return
        self._asked_tools = True
        names: set = set()
        params: dict = {}
        for _page in range(MAX_TOOL_PAGES):
            try:
                answer = await self.call("tools/list", params, timeout_s)
            except TimeoutError:
                self._asked_tools = False  # the next look asks again
                raise TimeoutError(f"the robot did not answer tools/list within {timeout_s:g} s") from None
            result = answer["result"] if isinstance(answer.get("result"), dict) else {}
            tools = result.get("tools")
            if not isinstance(tools, list):
                log.info("the robot's tools/list gave no list (%.200s); calling %s", answer.get("error"), TAKE_PHOTO)
                return
            names |= {tool.get("name") for tool in tools if isinstance(tool, dict)}
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
            params = {"cursor": cursor}
        if self.tools is None:  # upstream's own list may have come meanwhile: it is as good
            self.tools = names

    async def speak(self, text: str, packets: list[bytes], on_first_frame):
        """Play `packets` as one utterance, paced in real time; `on_first_frame()` once audio is on its way.

        SpeechCut when the person cut the robot off while this waited for the speaker (it is not said)."""
        cuts = self._cuts
        self.waiting += 1
        try:
            await self._take_turn(cuts)
        finally:
            self.waiting -= 1
        try:
            self.turns.speech_starts()
            await self.send_json({"type": "tts", "state": "start"})
            await self.send_json({"type": "tts", "state": "sentence_start", "text": text})
            frame_s = self.downlink["frame_duration"] / 1000
            cut = asyncio.Event()
            started = time.monotonic()
            self._speaking = (text, cut, started, len(packets) * frame_s)
            try:
                for index, packet in enumerate(packets):
                    due = started + max(0, index - PREBUFFER_FRAMES + 1) * frame_s
                    if await _cut_before(cut, due - time.monotonic()):
                        break
                    await self.robot.send(wrap_audio(self.version, packet, int(index * frame_s * 1000)))
                    if index == 0:
                        on_first_frame()
                else:
                    self.played.append(text)
            except websockets.ConnectionClosed:
                raise SessionGone("the robot's conversation ended while it spoke") from None
            finally:
                self._speaking = None
            self.turns.speech_stops()  # before it goes: the device may answer it with its own re-listen
            await self.send_json({"type": "tts", "state": "stop"})
        finally:
            self.voice.release()

    async def _take_turn(self, cuts: int):
        """Hold the speaker once no person has the robot listening; SpeechCut if they cut us off meanwhile."""
        while True:
            await self.turns.floor.wait()
            await self.voice.acquire()
            if self._cuts != cuts:
                self.voice.release()
                raise SpeechCut("the person started talking to the robot, so this was not said")
            if self.turns.floor.is_set():
                return
            self.voice.release()  # the person made it listen while we waited for the speaker: after them

    def busy(self, waited_s: float) -> str:
        """Why an utterance still waits for the speaker after `waited_s`, for an honest failure."""
        if self.turns.person_listening:
            return (
                f"the robot was listening to the person for {waited_s:g} s (they have not finished), "
                "so this was not said over them"
            )
        return f"the robot's speaker stayed busy with its server's speech for {waited_s:g} s"

    def _interrupted(self, why: str):
        """The person made the robot listen (or abort): stop our speech now and tell the body what was heard."""
        speaking, played = self._speaking, self.played
        self.played = []  # what it heard before it listened is told now, or was news no more
        if self.voice.locked():
            self._cuts += 1  # speeches of ours waiting for the speaker were meant for before the person spoke
        if speaking is None or speaking[1].is_set():
            return
        text, cut, started, seconds = speaking
        cut.set()
        fraction = min(1.0, (time.monotonic() - started) / seconds) if seconds > 0 else 1.0
        fit = [cut_text(said, MAX_WORDS_CHARS) for said in played[-MAX_PLAYED:]]  # within the nudge contract's caps
        heard = {"played": fit, "cut": cut_text(text, MAX_WORDS_CHARS), "cut_fraction": round(fraction, 3)}
        log.info("the robot cut our speech off (%s) %.0f%% into %r", why, 100 * fraction, text)
        self.events.on_cut(self, heard)

    async def look(self, question: str, timeout_s: float) -> dict:
        """Ask the robot's camera for a photo; the exact JPEG, or an honest text when it has none."""
        async with self._eyes:
            await self.ensure_initialized(timeout_s)
            await self.ensure_tools(timeout_s)
            tool = self.camera_tool
            if tool is None:
                return {"text": "this robot has no camera tool (its tools/list names no take_photo)"}
            self.look_question = question
            self.photo = asyncio.get_running_loop().create_future()
            call = asyncio.create_task(
                self.call("tools/call", {"name": tool, "arguments": {"question": question}}, timeout_s)
            )
            try:
                done, _ = await asyncio.wait({call, self.photo}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if self.photo in done:
                    photo = self.photo.result()  # the JPEG, or why the upload held none
                    return {"photo": photo} if isinstance(photo, bytes) else {"text": photo}
                if call in done:
                    return {"text": f"the robot took no photo: {tool_failure(call.result())}"}
                raise TimeoutError(f"the robot sent no photo within {timeout_s:g} s")
            finally:
                call.cancel()
                self.photo = self.look_question = None

    def claims_upload(self, question: str) -> bool:
        """Whether an upload is the photo our /look asked for (not one upstream's own call asked for)."""
        if self.photo is None or self.photo.done():
            return False
        return not self.upstream_photo_calls or question == self.look_question

    def photo_arrived(self, jpeg: bytes):
        if self.photo is not None and not self.photo.done():
            self.photo.set_result(jpeg)

    def photo_failed(self, reason: str):
        if self.photo is not None and not self.photo.done():
            self.photo.set_result(reason)


async def _cut_before(cut: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds` (no wait when <= 0); True as soon as `cut` is set."""
    if cut.is_set() or seconds <= 0:
        return cut.is_set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(cut.wait(), seconds)
    return cut.is_set()


def json_rpc_id(payload):
    """The id of a JSON-RPC message when it is one JSON-RPC allows (a number or a string), else None."""
    rpc_id = payload.get("id") if isinstance(payload, dict) else None
    return rpc_id if isinstance(rpc_id, (int, float, str)) and not isinstance(rpc_id, bool) else None


def tool_failure(answer: dict) -> str:
    """What a JSON-RPC answer to take_photo says went wrong (it answered without uploading to us)."""
    error = answer.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error)
    result = answer.get("result")
    if isinstance(result, dict):
        texts = [item.get("text") for item in result.get("content") or [] if isinstance(item, dict)]
        return "; ".join(t for t in texts if isinstance(t, str)) or "its camera tool answered without a photo"
    return "its camera tool answered without a photo"
