"""Tools from MCP servers (`mcp[]` in the config): every tool a server lists becomes a soul tool.

The wire is MCP's Streamable HTTP transport, spoken over aiohttp: each JSON-RPC
message is one POST to the server's URL, accepting both `application/json` and
`text/event-stream`; the server answers a request with one JSON object or with
an SSE stream that carries the answer (perhaps after a few notifications). A
session starts with `initialize` (the server may hand out an `Mcp-Session-Id`,
sent back on every later request together with `MCP-Protocol-Version`) and the
`notifications/initialized` notification. A 404 on a request carrying a session
id means the server forgot the session: the client starts a new one and retries.

Names: `<server>__<tool>`, cut down to what the model APIs accept
(^[a-zA-Z0-9_-]{1,64}$). A name that is taken (a built-in tool, or another
server's) gets a numbered suffix and a warning; it never shadows anything. A
name, once given, stays for the life of the process, and the tools are sorted,
so the tool list sent to the model stays byte-identical between wakings.

A server that cannot be reached at start-up is warned about and asked again at
each later waking until it answers. A call to a server that went away, a
timeout, a JSON-RPC error or `isError` reaches the soul as a failed tool result.
"""

import asyncio
import base64
import binascii
import itertools
import json
import logging
import re
from typing import TYPE_CHECKING

import aiohttp

from soulstack.llm.types import ImageBlock, TextBlock
from soulstack.soul.tools import Outcome, SoulTool
from soulstack.soul.tools.shell import cap

if TYPE_CHECKING:
    from soulstack.soul.config import McpServer

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "2025-06-18"  # the revision we ask for
KNOWN_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # revisions with this transport and these shapes
CLIENT_INFO = {"name": "soulstack-soul", "version": "0.1.0"}
NAME_LIMIT = 64
MAX_PAGES = 100  # tools/list pages followed before we call the server's paging broken
MAX_IMAGES = 4  # images kept from one tool answer
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # what the model APIs take per image
IMAGE_SIGNATURES = {
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


class McpError(Exception):
    """The server did not answer, or answered with an error; the words say which."""


class SessionGone(McpError):
    """The server answered 404 to our session id: it forgot us; start a new session."""


# --- signing: AWS SigV4 for gateways that want it (AgentCore) --------------------------


class SigV4Signer:
    """Signs each request with AWS SigV4 (botocore's signer), credentials from the standard AWS chain."""

    def __init__(self, region: str, service: str):
        self.region, self.service = region, service

    def headers(self, method: str, url: str, headers: dict, body: bytes) -> dict:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.session import get_session

        credentials = get_session().get_credentials()
        if credentials is None:
            raise McpError(
                "has auth aws-sigv4 but no AWS credentials were found (environment, ~/.aws or an instance role)"
            )
        request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        SigV4Auth(credentials.get_frozen_credentials(), self.service, self.region).add_auth(request)
        return {
            name: value
            for name, value in request.headers.items()
            if name.lower() in ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")
        }


# --- the client: one server, Streamable HTTP ---------------------------------------------


class McpClient:
    def __init__(self, server: "McpServer", http: aiohttp.ClientSession):
        self.name = server.name
        self.url = server.url
        self.http = http
        self.headers = dict(server.headers or {})
        if server.auth == "bearer" and server.token:
            self.headers["Authorization"] = f"Bearer {server.token}"
        self.signer: SigV4Signer | None = None
        # load_servers leaves out an aws-sigv4 server that lacks its region or service
        if server.auth == "aws-sigv4" and server.region and server.service:
            self.signer = SigV4Signer(server.region, server.service)
        self.timeout_s = server.timeout_seconds
        self.session_id: str | None = None
        self.version: str | None = None  # set once initialized
        self._ids = itertools.count(1)

    async def connect(self) -> dict:
        """The initialize handshake; the server's InitializeResult."""
        self.session_id = self.version = None
        result = await self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            },
        )
        version = result.get("protocolVersion")
        if version not in KNOWN_VERSIONS:
            raise McpError(f"speaks MCP {version!r}, which this soul does not know ({', '.join(KNOWN_VERSIONS)})")
        self.version = version
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def list_tools(self) -> list:
        """Every tool the server has, following nextCursor page by page."""
        tools, cursor, seen = [], None, set()
        for _ in range(MAX_PAGES):
            result = await self.request("tools/list", {"cursor": cursor} if cursor is not None else {})
            page = result.get("tools")
            if not isinstance(page, list):
                raise McpError("answered tools/list without a list of tools")
            tools += [tool for tool in page if isinstance(tool, dict)]
            cursor = result.get("nextCursor")
            if cursor is None:
                return tools
            if cursor in seen:
                raise McpError("tools/list pages go round in a circle")
            seen.add(cursor)
        raise McpError(f"tools/list has more than {MAX_PAGES} pages")

    async def call_tool(self, name: str, arguments: dict) -> dict:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def request(self, method: str, params: dict) -> dict:
        """One request in the session; a forgotten or missing session is started (again) once."""
        if self.version is None:
            await self.connect()
        try:
            return await self._request(method, params)
        except SessionGone:
            log.info("mcp %s: the server forgot our session; starting a new one", self.name)
            await self.connect()
            return await self._request(method, params)

    async def close(self) -> None:
        """End the session politely (DELETE); a server that does not care may refuse."""
        if self.session_id is None:
            return
        try:
            async with self.http.delete(
                self.url, headers=self._headers("DELETE"), timeout=aiohttp.ClientTimeout(total=2)
            ):
                pass
        except (TimeoutError, aiohttp.ClientError):
            pass
        self.session_id = self.version = None

    # --- the wire ---------------------------------------------------------------------

    async def _request(self, method: str, params: dict) -> dict:
        message_id = next(self._ids)
        answer = await self._send({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params})
        if answer is None:  # _send answers None only for a notification, which this is not
            raise McpError(f"answered {method} with nothing")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise McpError(f"answered {method} with error {error.get('code')}: {error.get('message', '')}".rstrip(": "))
        result = answer.get("result")
        if not isinstance(result, dict):
            raise McpError(f"answered {method} without a result object")
        return result

    def _headers(self, method: str = "POST", body: bytes = b"") -> dict:
        headers = {**self.headers, "Accept": "application/json, text/event-stream"}
        if body:
            headers["Content-Type"] = "application/json"
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        if self.signer:
            headers.update(self.signer.headers(method, self.url, headers, body))
        return headers

    async def _send(self, message: dict) -> dict | None:
        """POST one message; the JSON-RPC answer to it (None for a notification)."""
        body = json.dumps(message).encode()
        try:
            async with self.http.post(
                self.url,
                data=body,
                headers=self._headers("POST", body),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            ) as response:
                if response.status == 404 and self.session_id:
                    raise SessionGone("forgot our session")
                if response.status >= 400:
                    said = (await response.text(errors="replace"))[:200].strip()
                    raise McpError(f"answered HTTP {response.status}{': ' + said if said else ''}")
                if message.get("method") == "initialize":
                    self.session_id = response.headers.get("Mcp-Session-Id")
                if "id" not in message or "method" not in message:
                    return None  # a notification or our answer to the server: 202 Accepted, nothing to read
                if response.content_type == "text/event-stream":
                    return await self._from_stream(response, message["id"])
                if response.content_type == "application/json":
                    found = self._answer_in(json.loads(await response.read()), message["id"])
                    if found is None:
                        raise McpError("answered with JSON that holds no answer to our request")
                    return found
                raise McpError(
                    f"answered with {response.content_type or 'no content type'}, not JSON or an event stream"
                )
        except TimeoutError:
            raise McpError(f"did not answer within {self.timeout_s:g} s") from None
        except aiohttp.ClientError as error:
            raise McpError(f"cannot be reached ({type(error).__name__}: {error})") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise McpError(f"answered with something that is not JSON ({error})") from None

    async def _from_stream(self, response, wanted_id) -> dict:
        """Read SSE events until one carries the answer to `wanted_id`.

        Lines are split here rather than with readline(), whose buffer limit is
        smaller than one event carrying an image.
        """
        buffer, data = b"", []
        async for chunk in response.content.iter_any():
            buffer += chunk
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                line = raw.rstrip(b"\r").decode("utf-8")
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line and data:  # a blank line ends an event
                    event, data = "\n".join(data), []
                    found = await self._on_message(json.loads(event), wanted_id)
                    if found is not None:
                        return found
        raise McpError("ended its event stream without answering")

    async def _on_message(self, message, wanted_id) -> dict | None:
        """The answer we wait for, or None after dealing with anything else the server sent."""
        found = self._answer_in(message, wanted_id)
        if found is not None:
            return found
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and "method" in item and "id" in item:
                await self._answer_server(item)
        return None

    @staticmethod
    def _answer_in(message, wanted_id) -> dict | None:
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and item.get("id") == wanted_id and ("result" in item or "error" in item):
                return item
        return None

    async def _answer_server(self, request: dict) -> None:
        """The server asked us something mid-stream: a ping is answered; anything else is declined."""
        if request["method"] == "ping":
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": {}}
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32601, "message": f"this client does not offer {request['method']}"},
            }
        try:
            await self._send(reply)
        except McpError as error:
            log.info("mcp %s: could not answer its %s (%s)", self.name, request["method"], error)


# --- names ----------------------------------------------------------------------------


def clean_name(text: str) -> str:
    """Only the characters the model APIs allow in a tool name."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", text)


def tool_name(server: str, tool: str, taken: set) -> str:
    """`<server>__<tool>`, within NAME_LIMIT; a taken name gets `_2`, `_3`, ..."""
    base = f"{clean_name(server)}__{clean_name(tool)}"[:NAME_LIMIT]
    name, number = base, 1
    while name in taken:
        number += 1
        suffix = f"_{number}"
        name = base[: NAME_LIMIT - len(suffix)] + suffix
    return name


# --- answers -> what the soul reads -----------------------------------------------------


def image_problem(data: object, mime_type: object) -> str | None:
    """Why this image must not enter the conversation (a bad one would break every later request)."""
    if not isinstance(mime_type, str) or mime_type not in IMAGE_SIGNATURES:
        return f"an image of type {mime_type!r}, which cannot be shown"
    if not isinstance(data, str):
        return "an image that is not valid base64"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "an image that is not valid base64"
    if len(raw) > MAX_IMAGE_BYTES:
        return f"an image of {len(raw)} bytes, too large to be shown"
    if not raw.startswith(IMAGE_SIGNATURES[mime_type]):
        return f"an image labelled {mime_type} whose bytes are not one"
    return None


def describe_item(item: dict) -> str:
    """Words for a content item that is neither text nor an image we can show."""
    kind = item.get("type")
    if kind == "resource_link":
        return f"[link: {item.get('uri', '?')}{' — ' + item['name'] if item.get('name') else ''}]"
    if kind == "resource":
        resource = item.get("resource") or {}
        if isinstance(resource.get("text"), str):
            return resource["text"]
        return f"[a resource {resource.get('uri', '')} of type {resource.get('mimeType', 'unknown')}, not shown]"
    return f"[{kind or 'unknown'} content, not shown]"


def to_outcome(result: dict, limit: int) -> Outcome:
    """A tools/call result as the soul's tool result: text (capped at `limit` characters) and images."""
    texts: list[str] = []
    images: list = []
    for item in result.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text":
            texts.append(str(item.get("text", "")))
        elif item.get("type") == "image":
            problem = image_problem(item.get("data"), item.get("mimeType"))
            if problem is None and len(images) >= MAX_IMAGES:
                problem = f"more than {MAX_IMAGES} images"
            if problem:
                texts.append(f"[left out: {problem}]")
            else:
                images.append(ImageBlock(item["data"], item["mimeType"]))
        else:
            texts.append(describe_item(item))
    if not texts and not images and result.get("structuredContent") is not None:
        texts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    text = cap("\n".join(texts), limit)
    if not text.strip() and not images:
        text = "(no output)"  # an empty text block is refused by the model APIs
    blocks = ([TextBlock(text)] if text.strip() else []) + images
    return Outcome(blocks, ok=not result.get("isError"))


# --- the tools ------------------------------------------------------------------------


class McpCall:
    """The `run` of one MCP tool. `soul` is positional-only, so an argument named "soul" passes through."""

    def __init__(self, server: "McpServer", client: McpClient, remote_name: str):
        self.server, self.client, self.remote_name = server, client, remote_name

    async def __call__(self, soul, /, **arguments) -> Outcome:
        try:
            result = await self.client.call_tool(self.remote_name, arguments)
        except McpError as error:
            problem = f"the MCP server {self.server.name} {error}"
            return Outcome.text(soul.lang.TEXT["tool_failed"].format(problem=problem), ok=False)
        return to_outcome(result, self.server.max_output_chars)


def input_schema(tool: dict) -> dict | None:
    """The tool's input schema as the model APIs want it (an object schema), or None when unusable."""
    schema = tool.get("inputSchema")
    if schema is None:
        return {"type": "object"}
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return None
    return {"type": "object", **schema}


class McpTools:
    """Every configured server's tools, for the Toolbox: `refresh(taken)` at each waking, `tools()`, `close()`."""

    def __init__(self, servers: "list[McpServer]"):
        self.servers = []
        for server in servers:
            if server.auth == "aws-sigv4" and not (server.region and server.service):
                log.warning('mcp %s: auth aws-sigv4 needs "region" and "service"; the server is left out', server.name)
            else:
                self.servers.append(server)
        self.http: aiohttp.ClientSession | None = None
        self.clients: dict = {}  # server name -> McpClient
        self.listed: dict = {}  # server name -> its tool dicts, once it answered
        self.named: dict = {}  # (server name, tool name) -> our name; kept for the life of the process
        self.problems: dict = {}  # server name -> the last reason it could not be listed (warned once)
        self._tools: list = []

    async def refresh(self, taken: set) -> bool:
        """Ask every server not yet listed for its tools; True when new tools joined."""
        waiting = [server for server in self.servers if server.name not in self.listed]
        if not waiting:
            return False
        if self.http is None:
            self.http = aiohttp.ClientSession()
        for server in waiting:
            self.clients.setdefault(server.name, McpClient(server, self.http))
        answered = await asyncio.gather(*(self._list(server) for server in waiting))
        if not any(answered):
            return False
        self._name_all(set(taken))
        return True

    async def _list(self, server: "McpServer") -> bool:
        name = server.name
        try:
            tools = await self.clients[name].list_tools()
        except McpError as error:
            if self.problems.get(name) != str(error):
                log.warning("mcp %s: no tools yet — the server %s; asking again at the next waking", name, error)
            self.problems[name] = str(error)
            return False
        self.problems.pop(name, None)
        self.listed[name] = tools
        log.info("mcp %s: %d tool(s) at %s", name, len(tools), server.url)
        return True

    def _name_all(self, taken: set) -> None:
        """Give every listed tool its name (sticky), in config order, then sort."""
        tools = []
        taken |= set(self.named.values())
        for server in self.servers:
            for tool in sorted(self.listed.get(server.name, []), key=lambda t: str(t.get("name"))):
                made = self._make(server, tool, taken)
                if made:
                    tools.append(made)
        self._tools = sorted(tools, key=lambda t: t.name)

    def _make(self, server: "McpServer", tool: dict, taken: set) -> SoulTool | None:
        remote = tool.get("name")
        schema = input_schema(tool)
        if not isinstance(remote, str) or not remote or schema is None:
            log.warning(
                "mcp %s: tool %r is left out (no name, or an input schema that is not an object)",
                server.name,
                remote,
            )
            return None
        key = (server.name, remote)
        if key not in self.named:
            name = tool_name(server.name, remote, taken)
            wanted = f"{clean_name(server.name)}__{clean_name(remote)}"[:NAME_LIMIT]
            if name != wanted:
                log.warning(
                    "mcp %s: tool %s would be called %s, which is taken; it is called %s",
                    server.name,
                    remote,
                    wanted,
                    name,
                )
            self.named[key] = name
            taken.add(name)
        description = tool.get("description") or tool.get("title") or ""
        description = f"(from {server.name}) {description}".strip()
        return SoulTool(
            self.named[key],
            description,
            schema.get("properties") or {},
            McpCall(server, self.clients[server.name], remote),
            [r for r in schema.get("required") or [] if isinstance(r, str)],
            schema=schema,
        )

    def tools(self) -> list:
        return list(self._tools)

    async def close(self) -> None:
        for client in self.clients.values():
            await client.close()
        if self.http is not None:
            await self.http.close()
            self.http = None
