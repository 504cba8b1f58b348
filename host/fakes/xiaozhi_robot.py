"""A StackChan running xiaozhi-esp32, as a fake: the device side of the xiaozhi WebSocket protocol.

It connects with the device's headers (Authorization, Protocol-Version,
Device-Id, Client-Id), says hello and waits up to 10 s for the server's, records
every frame it receives (and when: `arrived`, perf_counter seconds), and runs
the device's MCP server: `initialize` (keeps `capabilities.vision`),
`tools/list`, and its camera tool, which uploads a real JPEG as multipart form
data with chunked transfer encoding to the vision URL it was given, then
answers with the server's text, as the firmware does. The camera tool is the
firmware's `self.camera.take_photo`, or py-xiaozhi's `take_photo`
(`camera_tool=`); `answer_late_s` holds the tools/call answer back after the
upload got its answer, as devices do. It decodes the Opus it receives at the
rate the server's hello named. `device_id` is its MAC; `source` is the local
address it connects from (127.0.0.2 plays a second machine on loopback).

What a person does at the robot: `say_wake_word`, `type_text` (py-xiaozhi's
typed text: `listen detect` with the text), `start_listening` (a touch or the
button: `listen start`), `talk` (their voice, while it listens),
`stop_listening` (push-to-talk let go: `listen stop`), `abort`.

It keeps the device's state as py-xiaozhi and the firmware do: `listening`
from a `listen start` it sends, `speaking` from a `tts start` it receives (the
device's gate then sends no microphone audio: `talk` counts what it dropped),
and after a `tts stop` while speaking (the firmware's rule) either `idle` or,
in auto mode (`auto_listen=True`: py-xiaozhi's auto conversation, the
firmware's auto-stop mode), `listening` again by itself, said at once with
`listen start` and mode "auto".
"""

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import opuslib
import websockets

from soulstack.adapters.stackchan.frames import downlink_params, unwrap_audio, wrap_audio

DESK_JPEG = (Path(__file__).parent / "desk_qvga.jpg").read_bytes()


def hello(version: int = 1, frame_ms: int = 60) -> str:
    return json.dumps(
        {
            "type": "hello",
            "version": version,
            "features": {"mcp": True},
            "transport": "websocket",
            "audio_params": {"format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": frame_ms},
        }
    )


class FakeRobot:
    def __init__(
        self,
        url: str,
        version: int = 1,
        token: str | None = "robot-token",
        camera: bool = True,
        photo: bytes = DESK_JPEG,
        device_id: str = "aa:bb:cc:dd:ee:ff",
        source: str | None = None,
        camera_tool: str = "self.camera.take_photo",
        answer_late_s: float = 0.0,
        frame_ms: int = 60,
        auto_listen: bool = False,
        tools_page: int | None = None,
    ):
        self.url = url
        self.source = source
        self.version = version
        self.token = token
        self.camera = camera
        self.photo = photo
        self.device_id = device_id
        self.camera_tool = camera_tool
        self.answer_late_s = answer_late_s
        self.frame_ms = frame_ms  # its hello's frame_duration: 60 on the firmware, 20 on py-xiaozhi
        self.auto_listen = auto_listen
        self.tools_page = tools_page  # tools per tools/list page (nextCursor), as the firmware pages a long list
        self.tools_lists: list = []  # the id of every tools/list it was asked, in order
        self.state = "idle"  # the device's: idle, listening, speaking
        self.dropped = 0  # frames of the person's voice the device's gate dropped (it was speaking)
        self.client_id = str(uuid.uuid4())
        self.received: list = []  # every frame from the server, in order (str or bytes)
        self.arrived: list = []  # time.perf_counter() when each of `received` arrived
        self.vision: dict | None = None
        self.uploads: list = []  # (status, answer text) of each photo upload
        self.server_hello: dict | None = None
        self.ws: websockets.ClientConnection | None = None
        self._hello = asyncio.Event()
        self._reader: asyncio.Task | None = None
        self.closed = asyncio.Event()
        self.tool_calls: set[asyncio.Task] = set()  # those running: the loop holds a task only weakly

    @property
    def _ws(self) -> websockets.ClientConnection:
        if self.ws is None:
            raise RuntimeError("the fake robot is not connected: connect() first")
        return self.ws

    def headers(self) -> dict:
        headers = {"Protocol-Version": str(self.version), "Device-Id": self.device_id, "Client-Id": self.client_id}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def connect(self, send_hello: bool = True, wait_hello_s: float = 10.0):
        bind: dict[str, Any] = {"local_addr": (self.source, 0)} if self.source else {}
        self.ws = ws = await websockets.connect(self.url, additional_headers=self.headers(), ping_interval=None, **bind)
        self._reader = asyncio.create_task(self._read())
        if send_hello:
            await ws.send(hello(self.version, self.frame_ms))
            await asyncio.wait_for(self._hello.wait(), wait_hello_s)
        return self

    async def close(self):
        if self.ws is not None:
            await self.ws.close()
            await asyncio.wait_for(self.closed.wait(), 5)

    async def send(self, frame):
        await self._ws.send(frame)

    async def say_wake_word(self, words: str):
        """What the firmware sends when it hears its wake word (py-xiaozhi sends typed text the same way)."""
        await self.send_json({"type": "listen", "state": "detect", "text": words})

    async def type_text(self, text: str):
        """py-xiaozhi's typed text: a `listen detect` carrying the text."""
        await self.send_json({"type": "listen", "state": "detect", "text": text})

    async def start_listening(self, mode: str = "manual"):
        """A touch or the button (or push-to-talk pressed): the device starts listening."""
        self.state = "listening"
        await self.send_json({"type": "listen", "state": "start", "mode": mode})

    async def stop_listening(self):
        """Push-to-talk let go: the device stops listening and says so."""
        self.state = "idle"
        await self.send_json({"type": "listen", "state": "stop"})

    async def talk(self, packets: list[bytes]) -> int:
        """The person speaks: each Opus packet goes out while the device listens; the rest its gate drops.

        How many went out."""
        sent = 0
        for index, packet in enumerate(packets):
            if self.state != "listening":
                self.dropped += 1
                continue
            await self._ws.send(wrap_audio(self.version, packet, index * self.frame_ms))
            sent += 1
        return sent

    async def abort(self, reason: str | None = None):
        await self.send_json({"type": "abort", **({"reason": reason} if reason else {})})

    async def send_json(self, message: dict):
        session_id = (self.server_hello or {}).get("session_id", "")
        await self._ws.send(json.dumps({"session_id": session_id, **message}, ensure_ascii=False))

    async def _read(self):
        try:
            async for frame in self._ws:
                self.received.append(frame)
                self.arrived.append(time.perf_counter())
                if isinstance(frame, str):
                    await self._on_text(frame)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    async def _on_text(self, text: str):
        try:
            message = json.loads(text)
        except ValueError:
            return
        if message.get("type") == "hello" and message.get("transport") == "websocket":
            self.server_hello = message
            self._hello.set()
        elif message.get("type") == "tts" and message.get("state") == "start":
            self.state = "speaking"
        elif message.get("type") == "tts" and message.get("state") == "stop" and self.state == "speaking":
            if self.auto_listen:  # listens again by itself, and says so before anything else
                await self.start_listening("auto")
            else:
                self.state = "idle"
        elif message.get("type") == "mcp" and isinstance(message.get("payload"), dict):
            # The device runs tool calls in the background and keeps reading frames meanwhile.
            call = asyncio.create_task(self._mcp(message["payload"]))
            self.tool_calls.add(call)
            call.add_done_callback(self.tool_calls.discard)

    async def _mcp(self, request: dict):
        result: dict[str, Any]
        method, rpc_id, params = request.get("method"), request.get("id"), request.get("params") or {}
        if method == "initialize":
            self.vision = (params.get("capabilities") or {}).get("vision")
            result = {
                "protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-stackchan", "version": "1.0"},
            }
        elif method == "tools/list":
            tools: list[dict[str, Any]] = [
                {"name": "self.get_device_status", "description": "status", "inputSchema": {"type": "object"}}
            ]
            if self.camera:
                tools.append(
                    {
                        "name": self.camera_tool,
                        "description": "take a photo",
                        "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}},
                    }
                )
            self.tools_lists.append(rpc_id)
            result = {"tools": tools}
            if self.tools_page:  # the device's own extra tools first, so the camera sits on a later page
                tools[:0] = [{"name": f"self.extra.tool_{n}", "inputSchema": {"type": "object"}} for n in range(5)]
                start = int(params.get("cursor") or 0)
                result = {"tools": tools[start : start + self.tools_page]}
                if start + self.tools_page < len(tools):
                    result["nextCursor"] = str(start + self.tools_page)
        elif method == "tools/call" and params.get("name") == self.camera_tool and self.camera:
            text = await self.upload((params.get("arguments") or {}).get("question", ""))
            await asyncio.sleep(self.answer_late_s)  # the answer follows the upload's answer, often late
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            await self._answer(
                {
                    "jsonrpc": "2.0",
                    "id": rpc_id,
                    "error": {"code": -32601, "message": f"Unknown tool: {params.get('name', method)}"},
                }
            )
            return
        await self._answer({"jsonrpc": "2.0", "id": rpc_id, "result": result})

    async def _answer(self, payload: dict):
        session_id = (self.server_hello or {}).get("session_id", "")
        try:
            await self._ws.send(json.dumps({"session_id": session_id, "type": "mcp", "payload": payload}))
        except websockets.ConnectionClosed:  # the conversation ended before the tool finished, as on a device
            pass

    async def upload(self, question: str) -> str:
        """POST the photo as the firmware does: multipart, chunked, with the vision token."""
        if not self.vision or not self.vision.get("url"):
            return '{"success": false, "message": "Image explain URL or token is not set"}'
        boundary = "----ESP32_CAMERA_BOUNDARY"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="question"\r\n\r\n{question}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="camera.jpg"\r\n'
                f"Content-Type: image/jpeg\r\n\r\n"
            ).encode()
            + self.photo
            + f"\r\n--{boundary}--\r\n".encode()
        )

        async def chunks():
            for start in range(0, len(body), 1024):
                yield body[start : start + 1024]

        headers = {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Device-Id": self.device_id,
            "Client-Id": self.client_id,
        }
        if self.vision.get("token"):
            headers["Authorization"] = f"Bearer {self.vision['token']}"
        connector = aiohttp.TCPConnector(local_addr=(self.source, 0)) if self.source else None
        async with aiohttp.ClientSession(connector=connector) as http:
            async with http.post(self.vision["url"], data=chunks(), headers=headers) as answer:
                text = await answer.text()
                self.uploads.append((answer.status, text))
                return text

    # --- what the robot heard ----------------------------------------------------

    def texts(self) -> list[dict]:
        return [json.loads(f) for f in self.received if isinstance(f, str)]

    def audio_packets(self) -> list[bytes]:
        return [unwrap_audio(self.version, f) for f in self.received if isinstance(f, bytes)]

    def decoded_seconds(self, packets: list[bytes]) -> float:
        """Seconds of audio in `packets`, decoded with libopus at the rate the server's hello named."""
        params = downlink_params(self.server_hello or {})
        rate = params["sample_rate"]
        decoder = opuslib.Decoder(rate, 1)
        max_samples = rate * 120 // 1000
        samples = sum(len(decoder.decode(packet, max_samples)) // 2 for packet in packets)
        return samples / rate
