"""A protocol-true fake of Anthropic's Messages API (POST /v1/messages) on loopback.

The real `anthropic` SDK talks to it through `base_url`. It answers from a
script, records every request, validates what the real API validates most
often (roles, tool_use/tool_result pairing, image sources, at most 4 cache
breakpoints, 1h breakpoints before 5m ones) and reports usage from a simple,
honest prompt-cache simulation (see `PromptCache`).

Example (any async test; pytest-aiohttp runs it)::

    from soulstack.fakes.anthropic_api import FakeAnthropic, text, tool_use, error

    async def test_it():
        async with FakeAnthropic() as fake:
            fake.reply(error(529), tool_use("look", {"question": "who?"}), "I see you.")
            model = AnthropicModel("claude-sonnet-5-5", api_key="k", base_url=fake.base_url)
            ...                                      # call the model three times
            assert fake.requests[1].headers["x-api-key"] == "k"
            assert fake.bodies[2]["messages"][-1]["role"] == "user"
            assert fake.usages[2]["cache_read_input_tokens"] > 0

Replies: a string (a text reply), `text(...)`, `tool_use(...)`, `message(*blocks)`
for any content blocks (thinking too), `error(status)`, or a callable taking
the request JSON and returning one of those (sync or async: it may wait on an
`asyncio.Event` to play a slow model). `FakeAnthropic(default=...)` answers
once the script is empty. `stream: true` requests get the real SSE event
sequence; `steered(reply, after_event=..., cut_after=...)` (host/fakes/scripted_server.py)
paces, holds or cuts that stream. `fake.requests` holds `Recorded(method, path, headers, body, raw)`.
Importing the `fake_anthropic` fixture into a test module gives a started fake.
"""

import base64
import hashlib
import itertools
import json
import math
import re
import struct
import time
import zlib

from aiohttp import web

from soulstack.fakes.scripted_server import ScriptedServer, sse

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
TTL_SECONDS = {"5m": 300, "1h": 3600}
# An image costs about width x height / 750 tokens; one over ~1600 tokens (or 1568 px on its long
# edge) is first scaled down to fit, so no image costs more (Anthropic's vision guide).
PIXELS_PER_TOKEN = 750
IMAGE_TOKENS = 1600  # the most one image costs, and what an image of unreadable size is counted as
IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
# Models that think unless told otherwise (Claude 5 and later): they refuse a forced tool choice.
THINKS_BY_DEFAULT = ("claude-sonnet-5", "claude-opus-5", "claude-haiku-5", "claude-fable", "claude-mythos")


# --- reply builders ------------------------------------------------------
def message(*blocks, stop_reason=None, usage=None, model=None):
    """A reply with these content blocks (API-shaped dicts)."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return {"content": list(blocks), "stop_reason": stop_reason, "usage": usage or {}, "model": model}


def text(words, *, stop_reason="end_turn", usage=None):
    return message({"type": "text", "text": words}, stop_reason=stop_reason, usage=usage)


_ids = itertools.count(1)


def tool_use(name, input=None, *, id=None, text=None, usage=None):
    """A reply calling one tool, optionally with some words before the call."""
    blocks = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": id or f"toolu_fake{next(_ids):04d}", "name": name, "input": input or {}})
    return message(*blocks, usage=usage)


def error(status, message=None, *, type=None, headers=None):
    """An error answer in Anthropic's shape: {"type": "error", "error": {"type", "message"}}."""
    return {
        "error_status": status,
        "error_type": type or ERROR_TYPES.get(status, "api_error"),
        "message": message or f"fake error {status}",
        "headers": headers or {},
    }


# --- prompt cache simulation ---------------------------------------------
# The fake has no tokenizer: it counts a block's JSON (its structure included), this many bytes a token.
BYTES_PER_TOKEN = 4


def estimate_tokens(value, bytes_per_token: float = BYTES_PER_TOKEN) -> int:
    """About `bytes_per_token` bytes of JSON per token; an image (also one inside a tool result) by its pixels."""
    if isinstance(value, dict) and value.get("type") == "image":
        return image_tokens(value)
    if isinstance(value, dict) and value.get("type") == "tool_result" and isinstance(value.get("content"), list):
        images = [b for b in value["content"] if isinstance(b, dict) and b.get("type") == "image"]
        if images:
            rest = dict(value, content=[b for b in value["content"] if b not in images])
            return estimate_tokens(rest, bytes_per_token) + sum(map(image_tokens, images))
    return max(1, int(len(json.dumps(value, ensure_ascii=False)) / bytes_per_token))


def image_tokens(block: dict) -> int:
    """What the API charges for one image block: its pixels / 750, at most IMAGE_TOKENS."""
    try:
        size = image_size(base64.b64decode((block.get("source") or {}).get("data") or ""))
    except ValueError:
        size = None
    if size is None:
        return IMAGE_TOKENS
    width, height = size
    return max(1, min(IMAGE_TOKENS, math.ceil(width * height / PIXELS_PER_TOKEN)))


def image_size(data: bytes) -> tuple | None:
    """(width, height) from a JPEG's frame header or a PNG's IHDR; None when neither is found."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:2] != b"\xff\xd8":
        return None
    at = 2
    while at + 4 <= len(data) and data[at] == 0xFF:
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2 : at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC) and at + 9 <= len(data):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])  # start of frame: precision, height, width
            return width, height
        at += 2 + length
    return None


def cacheable_blocks(body, bytes_per_token: float = BYTES_PER_TOKEN):
    """The request in the order the cache sees it (tools, system, messages), one
    entry per block: (canonical JSON without cache_control, tokens, ttl or None)."""

    def entry(prefix, block):
        ttl = None
        if isinstance(block, dict) and block.get("cache_control"):
            ttl = block["cache_control"].get("ttl", "5m")
            block = {k: v for k, v in block.items() if k != "cache_control"}
        canon = json.dumps([prefix, block], sort_keys=True, ensure_ascii=False)
        return canon, estimate_tokens(block, bytes_per_token), ttl

    out = [entry("tool", tool) for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    out += [entry("system", block) for block in system or []]
    for index, msg in enumerate(body.get("messages", [])):
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out += [entry(f"{index}:{msg.get('role')}", block) for block in content or []]
    return out


class PromptCache:
    """Anthropic's prompt cache, simplified but honest.

    Each breakpoint stores the hash of the request prefix ending at its block,
    with the breakpoint's TTL. A later request reads the longest stored prefix
    ending at one of its breakpoints or at most `lookback` blocks before one
    (20, as the real API). Tokens after that, up to the last breakpoint, are
    written. A hit refreshes the entry's TTL. Prefixes shorter than
    `min_tokens` are not cached (the real minimum is 1024 tokens or more,
    depending on the model). `clock` returns seconds (a seam for virtual time).
    """

    def __init__(self, *, min_tokens=0, lookback=20, clock=time.monotonic):
        self.min_tokens = min_tokens
        self.lookback = lookback
        self.clock = clock
        self.entries = {}  # prefix hash -> (expires_at, ttl)

    def candidates(self, breakpoints):
        """Block positions where a cache hit is looked for: each breakpoint and
        up to `lookback` blocks before it (None: every earlier block)."""
        if self.lookback is None:
            return set(range(breakpoints[-1] + 1))
        return {i for b in breakpoints for i in range(max(0, b - self.lookback + 1), b + 1)}

    def account(self, model, blocks):
        """-> (uncached input, cache read, cache write, writes by ttl) for one request."""
        now = self.clock()
        digest = hashlib.sha256(model.encode())
        hashes, totals, total = [], [], 0
        for canon, tokens, _ttl in blocks:
            digest.update(canon.encode())
            total += tokens
            hashes.append(digest.hexdigest())
            totals.append(total)
        breakpoints = [i for i, (_c, _t, ttl) in enumerate(blocks) if ttl]
        if not breakpoints:
            return total, 0, 0, {}
        read_end = -1
        for i in sorted(self.candidates(breakpoints), reverse=True):
            hit = self.entries.get(hashes[i])
            if hit and hit[0] > now:
                read_end = i
                self.entries[hashes[i]] = (now + TTL_SECONDS[hit[1]], hit[1])
                break
        read = totals[read_end] if read_end >= 0 else 0
        written, by_ttl, start = 0, {}, read_end
        for i in breakpoints:
            ttl = blocks[i][2]
            if i > read_end and totals[i] >= self.min_tokens:
                segment = totals[i] - (totals[start] if start >= 0 else 0)
                written += segment
                by_ttl[ttl] = by_ttl.get(ttl, 0) + segment
                start = i
            if totals[i] >= self.min_tokens:
                old = self.entries.get(hashes[i])
                expires = now + TTL_SECONDS[ttl]
                if not old or old[0] < expires:
                    self.entries[hashes[i]] = (expires, ttl)
        return total - read - written, read, written, by_ttl


# --- request validation --------------------------------------------------
def problem(body):
    """What the real API would reject in this request, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    pending = set()  # tool_use ids awaiting their results
    used = set()  # every tool_use id of the request: the API refuses a repeat
    for index, msg in enumerate(messages):
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            return f'messages.{index}.role: must be "user" or "assistant"'
        if index and messages[index - 1].get("role") == role and pending:
            return f"messages.{index}: tool_use ids {sorted(pending)} have no tool_result right after them"
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            return f"messages.{index}: content must be a non-empty string or list"
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        if role == "user" and results - pending:
            return f"messages.{index}: unexpected tool_use_id in tool_result blocks: {sorted(results - pending)}"
        if role == "user" and pending - results:
            return f"messages.{index}: tool_use ids were found without tool_result blocks immediately after: {sorted(pending - results)}"
        pending = set()
        for j, block in enumerate(blocks):
            where = f"messages.{index}.content.{j}"
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                return f"{where}: text content blocks must be non-empty"
            if kind == "image" and (why := image_problem(block)):
                return f"{where}: {why}"
            if kind == "tool_use":
                if role != "assistant":
                    return f"{where}: tool_use blocks belong to assistant messages"
                if block.get("id") in used:
                    return f"{where}: `tool_use` ids must be unique"
                used.add(block.get("id"))
                pending.add(block.get("id"))
            if kind == "tool_result":
                inners = (
                    block.get("content") if isinstance(block.get("content"), list) else []
                )  # a string is allowed too
                for k, inner in enumerate(inners):
                    if inner.get("type") == "image" and (why := image_problem(inner)):
                        return f"{where}.content.{k}: {why}"
            if kind in ("thinking", "redacted_thinking") and block.get("cache_control"):
                return f"{where}: thinking blocks cannot carry cache_control"
            if kind == "thinking" and not block.get("signature"):
                return f"{where}.signature: field required"
    ttls = [ttl for _c, _t, ttl in cacheable_blocks(body) if ttl]
    if len(ttls) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(ttls)}."
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        return "cache_control: a ttl='1h' block must not come after a ttl='5m' block"
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        names = {t.get("name") for t in body.get("tools") or []}
        if choice.get("name") not in names:
            return f"tool_choice: tool {choice.get('name')!r} is not among the tools"
    thinking = (body.get("thinking") or {}).get("type")
    thinks = thinking in ("enabled", "adaptive", "between_tools") or (
        thinking is None and body["model"].startswith(THINKS_BY_DEFAULT)
    )
    if choice.get("type") in ("tool", "any") and thinks:
        return "tool_choice: forced tool use is not supported while thinking is on; use tool_choice auto"
    return None


def image_problem(block):
    source = block.get("source") or {}
    if source.get("type") != "base64":
        return "source.type: only base64 images are accepted by this fake"
    if source.get("media_type") not in IMAGE_TYPES:
        return f"source.media_type: must be one of {sorted(IMAGE_TYPES)}"
    if not source.get("data"):
        return "source.data: must be non-empty base64"
    return None


# --- the server ----------------------------------------------------------
class FakeAnthropic(ScriptedServer):
    """Fake Messages API. `min_cache_tokens`, `cache_lookback` and `clock` go to its `PromptCache`;
    `bytes_per_token` sets how it counts tokens (see estimate_tokens)."""

    def __init__(
        self,
        replies=(),
        *,
        default=None,
        min_cache_tokens=0,
        cache_lookback=20,
        clock=time.monotonic,
        bytes_per_token=BYTES_PER_TOKEN,
    ):
        super().__init__(replies, default=default)
        self.bytes_per_token = bytes_per_token
        self.cache = PromptCache(min_tokens=min_cache_tokens, lookback=cache_lookback, clock=clock)
        self.usages = []  # the usage object sent with each answered request, None for errors
        self._message_ids = itertools.count(1)

    def routes(self, app):
        app.router.add_post("/v1/messages", self.handle_messages)

    def error_response(self, status, kind, msg, headers=None):
        body = {"type": "error", "error": {"type": kind, "message": msg}, "request_id": "req_fake"}
        return web.json_response(body, status=status, headers={"request-id": "req_fake", **(headers or {})})

    async def handle_messages(self, request):
        entry = await self.record(request)
        if "x-api-key" not in entry.headers and "authorization" not in entry.headers:
            self.usages.append(None)
            return self.error_response(401, "authentication_error", "x-api-key header is required")
        if "anthropic-version" not in entry.headers:
            self.usages.append(None)
            return self.error_response(400, "invalid_request_error", "anthropic-version header is required")
        return await self.answer(request, entry)

    async def answer(self, request, entry):
        """The scripted reply to a checked request (`entry.body` is a Messages API body)."""
        if why := problem(entry.body):
            self.usages.append(None)
            return self.error_response(400, "invalid_request_error", why)
        spec = await self.next_reply(entry.body)
        if spec is None:
            self.usages.append(None)
            return self.error_response(400, "invalid_request_error", "fake anthropic: the script has no reply left")
        if isinstance(spec, str):
            spec = text(spec)
        if "error_status" in spec:
            self.usages.append(None)
            return self.error_response(spec["error_status"], spec["error_type"], spec["message"], spec["headers"])
        reply = self.build_message(entry.body, spec)
        self.usages.append(reply["usage"])
        if entry.body.get("stream"):
            return await self.stream(request, stream_events(reply), spec)
        return web.json_response(reply, headers={"request-id": "req_fake"})

    async def stream(self, request, events, spec):
        return await sse(request, events, after_event=spec.get("after_event"), cut_after=spec.get("cut_after"))

    def build_message(self, body, spec):
        fresh, read, written, by_ttl = self.cache.account(body["model"], cacheable_blocks(body, self.bytes_per_token))
        usage = {
            "input_tokens": fresh,
            "output_tokens": max(1, sum(estimate_tokens(b, self.bytes_per_token) for b in spec["content"])),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "cache_creation": {
                "ephemeral_5m_input_tokens": by_ttl.get("5m", 0),
                "ephemeral_1h_input_tokens": by_ttl.get("1h", 0),
            },
            "service_tier": "standard",
        }
        usage.update(spec.get("usage") or {})
        return {
            "id": f"msg_fake{next(self._message_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": spec.get("model") or body["model"],
            "content": spec["content"],
            "stop_reason": spec["stop_reason"],
            "stop_sequence": None,
            "usage": usage,
        }


def stream_events(reply):
    """The SSE event sequence the real API sends for this message."""
    start = dict(reply, content=[], stop_reason=None)
    start["usage"] = dict(reply["usage"], output_tokens=1)
    events = [("message_start", {"type": "message_start", "message": start}), ("ping", {"type": "ping"})]
    for index, block in enumerate(reply["content"]):
        kind = block["type"]
        if kind == "text":
            first, deltas = (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])],
            )
        elif kind == "tool_use":
            first = dict(block, input={})
            deltas = [
                {"type": "input_json_delta", "partial_json": piece} for piece in pieces(json.dumps(block["input"]))
            ]
        elif kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
        else:
            first, deltas = block, []
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}))
        for delta in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": reply["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return [(name, json.dumps(data)) for name, data in events]


def pieces(s, size=8):
    """Split a string into small chunks, as a streaming model would (at least one)."""
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


# Amazon Bedrock's InvokeModel for Claude: the Messages body without "model" (the path names
# it) and with an "anthropic_version" (the SDK sends its own), signed with AWS SigV4 for
# the "bedrock" service.
SIGV4 = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=[A-Z0-9]+/\d{8}/([a-z0-9-]+)/bedrock/aws4_request, "
    r"SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$"
)


def eventstream_frame(_name, data: str) -> bytes:
    """One message of AWS's binary event stream carrying one Messages API event, as Bedrock's
    InvokeModelWithResponseStream sends it: a prelude (total and header lengths, CRC32), string
    headers, the JSON payload {"bytes": base64 of the event}, and a CRC32 of the whole message."""
    payload = json.dumps({"bytes": base64.b64encode(data.encode()).decode()}).encode()
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    head = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode() for k, v in headers.items()
    )
    prelude = struct.pack(">II", 12 + len(head) + len(payload) + 4, len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


class FakeBedrock(FakeAnthropic):
    """Fake Bedrock runtime (POST /model/{id}/invoke, and /invoke-with-response-stream answering in
    AWS's event stream); `regions` lists the region each request was signed for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.regions = []

    def routes(self, app):
        app.router.add_post("/model/{model}/invoke", self.handle_invoke)
        app.router.add_post("/model/{model}/invoke-with-response-stream", self.handle_invoke)

    async def stream(self, request, events, spec):
        return await sse(
            request,
            events,
            after_event=spec.get("after_event"),
            cut_after=spec.get("cut_after"),
            frame=eventstream_frame,
            content_type="application/vnd.amazon.eventstream",
        )

    def error_response(self, status, kind, msg, headers=None):
        return web.json_response({"message": msg}, status=status, headers={"x-amzn-ErrorType": kind, **(headers or {})})

    async def handle_invoke(self, request):
        entry = await self.record(request)
        signed = SIGV4.match(entry.headers.get("authorization", ""))
        if not signed or "x-amz-date" not in entry.headers:
            self.usages.append(None)
            return self.error_response(
                403, "UnrecognizedClientException", "The security token included in the request is invalid."
            )
        self.regions.append(signed.group(1))
        body = entry.body if isinstance(entry.body, dict) else {}
        if not isinstance(body.get("anthropic_version"), str) or "model" in body:
            self.usages.append(None)
            return self.error_response(
                400, "ValidationException", "anthropic_version is required; model belongs in the path"
            )
        body["model"] = request.match_info["model"]
        body["stream"] = request.path.endswith("/invoke-with-response-stream")  # the path says it, not the body
        return await self.answer(request, entry)
