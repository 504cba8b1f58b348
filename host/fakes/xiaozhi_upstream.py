"""A xiaozhi-esp32-server, as a fake: the server side of the xiaozhi WebSocket protocol, plus its vision endpoint.

It answers the device's hello (after `hello_delay_s`, to play a slow server)
with a session id and 24 kHz / 60 ms downlink audio (or, with
`echo_audio_params`, the device's own `audio_params` back, as xiaozhi-server
does), sends its own MCP
`initialize` with `capabilities.vision` pointing at its vision endpoint, and
records every frame and the handshake headers of each connection. Tests push
frames through `send()` and whole utterances through `speak()`. The vision
endpoint records each upload's raw body and headers and answers as
xiaozhi-server does.
"""

import asyncio
import json
import time

import websockets
from aiohttp import web

from soulstack.fakes.loopback import LoopbackServer

VISION_TOKEN = "upstream-vision-token"


def is_hello(text: str) -> bool:
    try:
        message = json.loads(text)
    except ValueError:
        return False  # the server logs and ignores text that is not JSON
    return isinstance(message, dict) and message.get("type") == "hello"


class FakeVision(LoopbackServer):
    def __init__(self):
        self.uploads: list = []  # (headers, raw body)

    def make_app(self):
        app = web.Application()
        app.router.add_post("/mcp/vision/explain", self._explain)
        return app

    async def _explain(self, request):
        self.uploads.append((dict(request.headers), await request.read()))
        return web.json_response({"success": True, "action": "RESPONSE", "response": "upstream saw a desk"})

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/mcp/vision/explain"


class FakeUpstream:
    def __init__(
        self,
        hello_delay_s: float = 0.0,
        send_initialize: bool = True,
        send_tools_list: bool = True,
        sample_rate: int = 24000,
        echo_audio_params: bool = False,
    ):
        self.hello_delay_s = hello_delay_s
        self.echo_audio_params = echo_audio_params
        self.send_initialize = send_initialize
        self.send_tools_list = send_tools_list  # False: a server that initializes but never lists tools
        self.sample_rate = sample_rate
        self.vision = FakeVision()
        self.connections: list = []  # one dict per connection: headers, received frames
        self.ws = None
        self.port = 0
        self._server = None
        self._connected = asyncio.Event()

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/xiaozhi/v1/"

    async def __aenter__(self):
        await self.vision.start()
        self._server = await websockets.serve(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self._server.close()
        await self._server.wait_closed()
        await self.vision.stop()

    async def _handle(self, ws):
        record = {
            "headers": ws.request.headers,
            "path": ws.request.path,
            "received": [],
            "arrived": [],
            "closed": asyncio.Event(),
        }
        self.connections.append(record)
        self.ws = ws
        try:
            async for frame in ws:
                record["received"].append(frame)
                record["arrived"].append(time.perf_counter())  # for tools/bench-stackchan
                if isinstance(frame, str) and is_hello(frame):
                    await asyncio.sleep(self.hello_delay_s)
                    audio = {"format": "opus", "sample_rate": self.sample_rate, "channels": 1, "frame_duration": 60}
                    if self.echo_audio_params:
                        audio = json.loads(frame).get("audio_params") or audio
                    await ws.send(
                        json.dumps(
                            {
                                "type": "hello",
                                "transport": "websocket",
                                "session_id": "upstream-session-1",
                                "audio_params": audio,
                            }
                        )
                    )
                    if self.send_initialize:
                        await ws.send(
                            json.dumps(
                                {
                                    "session_id": "upstream-session-1",
                                    "type": "mcp",
                                    "payload": {
                                        "jsonrpc": "2.0",
                                        "id": 1,
                                        "method": "initialize",
                                        "params": {
                                            "protocolVersion": "2024-11-05",
                                            "capabilities": {"vision": {"url": self.vision.url, "token": VISION_TOKEN}},
                                        },
                                    },
                                }
                            )
                        )
                    if self.send_initialize and self.send_tools_list:
                        await ws.send(
                            json.dumps(
                                {
                                    "session_id": "upstream-session-1",
                                    "type": "mcp",
                                    "payload": {
                                        "jsonrpc": "2.0",
                                        "id": 2,
                                        "method": "tools/list",
                                        "params": {"cursor": ""},
                                    },
                                }
                            )
                        )
                    self._connected.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            record["closed"].set()

    async def wait_connected(self, timeout_s: float = 5.0):
        await asyncio.wait_for(self._connected.wait(), timeout_s)
        self._connected.clear()

    async def send(self, frame):
        await self.ws.send(frame)

    async def speak(self, packets: list[bytes], text: str = "upstream speaking", frame_s: float = 0.0):
        """One utterance of upstream's own TTS: start, sentence_start, the frames, stop."""
        await self.send(json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "start"}))
        await self.send(
            json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "sentence_start", "text": text})
        )
        for packet in packets:
            await self.send(packet)
            await asyncio.sleep(frame_s)
        await self.send(json.dumps({"session_id": "upstream-session-1", "type": "tts", "state": "stop"}))
