"""A protocol-true fake MCP server on loopback: the Streamable HTTP transport over aiohttp.

It does what the MCP specification asks of a server (revisions 2025-03-26 and
2025-06-18), strictly, so a sloppy client fails against it:

- one endpoint (`/mcp`): POST carries one JSON-RPC 2.0 message; the client
  must accept both `application/json` and `text/event-stream` (else 406) and
  send `Content-Type: application/json` (else 415);
- `initialize` negotiates the protocol version and hands out an
  `Mcp-Session-Id`; later requests without it get 400, with an unknown (or
  forgotten) one 404; an unsupported `MCP-Protocol-Version` header gets 400,
  and a missing one means 2025-03-26 (the spec's fallback);
- requests other than ping before `notifications/initialized` are refused;
- notifications and responses are answered 202 with no body;
- `tools/list` is paginated with an opaque `nextCursor` (`page_size`);
- `tools/call` answers from the tool's handler (text, images, `isError`);
  an unknown tool is a JSON-RPC error;
- `sse=True`: requests are answered with an SSE stream carrying a log
  notification, optionally a ping request to the client (`ping_first`), then
  the response, its JSON spread over several `data:` lines;
- GET is 405 (no standalone stream); DELETE ends the session.

    async with FakeMcp([echo_tool()], page_size=2) as server:
        server.url          # http://127.0.0.1:<port>/mcp
        server.requests     # every message received: Received(http_method, headers, message)
        server.calls        # (tool name, arguments) of every tools/call
        server.forget_sessions()   # as a restarted server would

`FakeMcp(port=free_port())` lets a test start it late, at a known address.
"""

import asyncio
import base64
import inspect
import json
import re
import uuid
from dataclasses import dataclass, field
from collections.abc import Callable

from aiohttp import web

from soulstack.fakes.loopback import LoopbackServer

VERSIONS = ("2025-06-18", "2025-03-26")
FALLBACK_VERSION = "2025-03-26"  # assumed when a request has no MCP-Protocol-Version header
# A 1x1 PNG (a real one: signature, IHDR, IDAT, IEND).
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


@dataclass
class FakeTool:
    name: str
    handler: Callable  # arguments -> a CallToolResult dict (sync or async)
    description: str = ""
    input_schema: dict | None = field(default_factory=lambda: {"type": "object", "properties": {}})

    def listed(self) -> dict:
        entry = {"name": self.name, "description": self.description}
        if self.input_schema is not None:
            entry["inputSchema"] = self.input_schema
        return entry


@dataclass
class Received:
    http_method: str
    headers: dict  # lower-cased names
    message: object  # the parsed JSON-RPC message (None for GET/DELETE)


def text_result(text: str, is_error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def echo_tool(name="echo") -> FakeTool:
    return FakeTool(
        name,
        lambda args: text_result(f"echo: {args.get('text', '')}"),
        "Say the text back.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )


class FakeMcp(LoopbackServer):
    def __init__(
        self,
        tools=(),
        *,
        page_size=None,
        sse=False,
        ping_first=False,
        port=0,
        token=None,
        versions=VERSIONS,
        path="/mcp",
        sigv4=None,
    ):
        self.tools = list(tools)
        self.page_size = page_size
        self.sse = sse
        self.ping_first = ping_first
        self.port = port
        self.token = token
        self.sigv4 = sigv4  # (region, service): every request must carry a well-formed AWS SigV4 signature
        self.versions = tuple(versions)
        self.path = path
        self.requests: list = []
        self.calls: list = []
        self.sessions: dict = {}  # session id -> {"version": str, "ready": bool}
        self._event_ids = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def forget_sessions(self) -> None:
        self.sessions.clear()

    def received(self, method: str) -> list:
        """The JSON-RPC messages of this method, in order."""
        return [r.message for r in self.requests if isinstance(r.message, dict) and r.message.get("method") == method]

    # --- serving ---------------------------------------------------------------------

    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", self.path, self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        if self.token and headers.get("authorization") != f"Bearer {self.token}":
            return web.json_response({"error": "unauthorized"}, status=401)
        if self.sigv4 and not sigv4_well_formed(headers, *self.sigv4):
            return web.json_response({"message": "Missing or malformed SigV4 signature"}, status=403)
        if request.method == "GET":
            self.requests.append(Received("GET", headers, None))
            return web.Response(status=405)
        if request.method == "DELETE":
            self.requests.append(Received("DELETE", headers, None))
            return web.Response(status=200 if self.sessions.pop(headers.get("mcp-session-id"), None) else 404)
        if request.method != "POST":
            return web.Response(status=405)
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return web.Response(status=406, text="Accept must list application/json and text/event-stream")
        if request.content_type != "application/json":
            return web.Response(status=415, text="Content-Type must be application/json")
        try:
            message = json.loads(await request.read())
        except ValueError:
            return web.json_response(rpc_error(None, -32700, "Parse error"), status=400)
        self.requests.append(Received("POST", headers, message))
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return web.json_response(rpc_error(None, -32600, "Invalid Request"), status=400)
        if message.get("method") == "initialize" and "id" in message:
            return await self.initialize(request, message)
        session_id = headers.get("mcp-session-id")
        if not session_id:
            return web.json_response(
                rpc_error(message.get("id"), -32600, "Mcp-Session-Id header is required"), status=400
            )
        session = self.sessions.get(session_id)
        if session is None:
            return web.json_response(rpc_error(message.get("id"), -32001, "Session not found"), status=404)
        version = headers.get("mcp-protocol-version", FALLBACK_VERSION)
        if version not in self.versions:
            return web.json_response(
                rpc_error(message.get("id"), -32600, f"Unsupported protocol version {version}"), status=400
            )
        if "method" not in message or "id" not in message:  # a notification or a response
            if message.get("method") == "notifications/initialized":
                session["ready"] = True
            return web.Response(status=202)
        if not session["ready"] and message["method"] != "ping":
            return await self.answer(request, rpc_error(message["id"], -32600, "not initialized yet"))
        return await self.answer(request, await self.dispatch(message))

    async def initialize(self, request, message) -> web.StreamResponse:
        params = message.get("params") or {}
        if not isinstance(params.get("clientInfo"), dict) or "capabilities" not in params:
            return await self.answer(
                request, rpc_error(message["id"], -32602, "initialize needs clientInfo and capabilities")
            )
        asked = params.get("protocolVersion")
        version = asked if asked in self.versions else self.versions[0]
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = {"version": version, "ready": False}
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "fake-mcp", "version": "1.0"},
        }
        return await self.answer(
            request, {"jsonrpc": "2.0", "id": message["id"], "result": result}, {"Mcp-Session-Id": session_id}
        )

    async def dispatch(self, message: dict) -> dict:
        method, params, mid = message["method"], message.get("params") or {}, message["id"]
        if method == "ping":
            return {"jsonrpc": "2.0", "id": mid, "result": {}}
        if method == "tools/list":
            start = 0
            if params.get("cursor") is not None:
                try:
                    start = int(base64.b64decode(params["cursor"]).decode().removeprefix("page-at:"))
                except ValueError:
                    return rpc_error(mid, -32602, "Invalid cursor")
            size = self.page_size or len(self.tools) or 1
            result = {"tools": [tool.listed() for tool in self.tools[start : start + size]]}
            if start + size < len(self.tools):
                result["nextCursor"] = base64.b64encode(f"page-at:{start + size}".encode()).decode()
            return {"jsonrpc": "2.0", "id": mid, "result": result}
        if method == "tools/call":
            tool = next((t for t in self.tools if t.name == params.get("name")), None)
            if tool is None:
                return rpc_error(mid, -32602, f"Unknown tool: {params.get('name')}")
            arguments = params.get("arguments") or {}
            self.calls.append((tool.name, arguments))
            try:
                result = tool.handler(arguments)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as error:
                return rpc_error(mid, -32603, f"Internal error: {error}")
            return {"jsonrpc": "2.0", "id": mid, "result": result}
        return rpc_error(mid, -32601, f"Method not found: {method}")

    async def answer(self, request, reply: dict, headers=None) -> web.StreamResponse:
        if not self.sse:
            return web.json_response(reply, headers=headers)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **(headers or {})}
        )
        await response.prepare(request)
        await self.event(
            response,
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working on it"}},
        )
        if self.ping_first:
            await self.event(response, {"jsonrpc": "2.0", "id": f"server-ping-{self._event_ids}", "method": "ping"})
        await asyncio.sleep(0)
        await self.event(response, reply)
        await response.write_eof()
        return response

    async def event(self, response, message: dict) -> None:
        """One SSE event; the JSON is indented so it spans several data: lines, as the SSE format allows."""
        self._event_ids += 1
        lines = json.dumps(message, indent=1).split("\n")
        text = f"event: message\nid: {self._event_ids}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"
        await response.write(text.encode())


def rpc_error(mid, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}


def sigv4_well_formed(headers: dict, region: str, service: str) -> bool:
    """An AWS SigV4 Authorization header for this region and service, with its X-Amz-Date."""
    pattern = (
        r"^AWS4-HMAC-SHA256 Credential=[A-Z0-9]+/(\d{8})/"
        + re.escape(region)
        + "/"
        + re.escape(service)
        + r"/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$"
    )
    match = re.match(pattern, headers.get("authorization", ""))
    date = headers.get("x-amz-date", "")
    return bool(match) and date[:8] == match.group(1) and "x-amz-date" in match.group(2).split(";")
